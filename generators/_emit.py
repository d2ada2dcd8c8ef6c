"""Copying real functions into the text of a rendered program: the one way generators emit a
helper.

A helper the rendered program (or a repro.py) defines -- building the arguments, driving a
call, relating a later call's arguments to call 0's, the hooks -- is an ordinary function in
one of generators' modules, so ruff, mypy (check_untyped_defs) and the tests see it, and the
text is copied with `inspect.getsource`. Each such module pins its source (Note [The emitted
source is the imported source] in pyfy_fuzz/schema/sourcepin.py). A helper carries no
annotations (the program imports only torch) and names only `torch`, the modules the
program's header imports, the other helpers and the names the program defines itself (its
module declares those for mypy in a block that is never emitted). A `# type: ignore[...]` a
helper needs is not copied.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["IGNORE", "emitted_source"]

# A mypy ignore at the end of a line: for the checker, not part of the helper.
IGNORE = re.compile(r"  # type: ignore\[[a-z-]+(, [a-z-]+)*\]$", re.MULTILINE)


def emitted_source(*objects: Any) -> str:
    """The definitions of `objects` (functions or classes) as written, two blank lines apart."""
    return "\n\n".join(IGNORE.sub("", inspect.getsource(o)) for o in objects)
