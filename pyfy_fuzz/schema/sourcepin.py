"""Pin a module's source as this process imported it.

Note [The emitted source is the imported source]
------------------------------------------------
pyfy-fuzz writes real functions into the files it generates (the pythonified file's runtime,
a repro's helpers, a program's relationship functions) by copying their text with `inspect`,
and `inspect` reads text from disk, while the code around it (which names to emit, what calls
them, at which line a function starts) is the code the process imported. Read after
pyfy-fuzz was edited or upgraded under a running campaign, the two disagree: a new helper's
text arrives without the names it calls, or a line range cuts another function in half. The
11-27 1-hour campaign, run while this session edited the code, saved 9 such "bugs" (8
NameErrors in pythonified files, a repro that was not Python). `pin` puts the module's text
in `linecache` as of import, marked as not from a file (mtime None), which
`linecache.checkcache` leaves alone: every later `inspect.getsource` reads what was imported.
"""

from __future__ import annotations

import linecache
import types

__all__ = ["pin"]


def pin(module: types.ModuleType) -> None:
    """Make `inspect` read `module`'s source as it is now (call it while it is imported)."""
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return
    with open(path, encoding="utf-8") as f:
        text = f.read()
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
