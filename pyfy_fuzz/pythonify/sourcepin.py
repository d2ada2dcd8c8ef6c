"""Pin a module's source as this process imported it, for the code pythonify copies.

The generator writes real functions into its files (the file's runtime, each wrapper's
helpers, a region's break block) by copying their text with `inspect`, which reads from disk
while the names around it come from the imported code. Edited under a running process, the
two disagree. `pin` puts the module's imported text in `linecache`, marked as not from a file
(mtime None) so `linecache.checkcache` keeps it. This is pythonify's own copy of the harness's
`pyfy_fuzz.schema.sourcepin` (Note [The emitted source is the imported source] there): the
generator under test imports nothing of the harness, so it can be lifted out whole.
"""

from __future__ import annotations

import linecache
import types

__all__ = ["pin"]


def pin(module: types.ModuleType) -> None:
    """Make `inspect` read `module`'s source as it is now (call it while it is imported)."""
    path = getattr(module, "__file__", None)
    if path and path.endswith(".py"):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
