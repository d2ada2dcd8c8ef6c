"""``pyfy-fuzz vocabulary``: derive the op vocabulary from the installed torch, check it, and
render docs/VOCABULARY.md (Note [Op classes] in pyfy_fuzz/schema/vocabulary.py).

`--write` replaces the installed release's table in generators/vocabulary/ (atomically) and
renders the page from every table there; without it the command derives and compares: exit 1
when the checked-in table is not what this torch derives, so a stale table is seen.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

from pyfy_fuzz.cli.common import Commands, cli_error

__all__ = [
    "POSITION",
    "cmd_vocabulary",
    "register",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 9

_DOC = Path(__file__).resolve().parents[2] / "docs" / "VOCABULARY.md"


def register(commands: Commands) -> None:
    p = commands.add_parser(
        "vocabulary",
        help="derive the aten op vocabulary the generator draws from the installed torch",
        description=(
            "Class every aten overload by its schema and tags, run OpInfo's CPU samples of "
            "each on the generator's shapes and dtypes, and compare the result with the "
            "checked-in table of this torch release (exit 1 if it differs). --write replaces "
            "the table and renders docs/VOCABULARY.md from all tables. Needs expecttest "
            "(OpInfo's import); takes about half a minute."
        ),
    )
    p.add_argument("--write", action="store_true", help="write the table and docs/VOCABULARY.md")
    p.add_argument(
        "--doc", type=Path, default=_DOC, metavar="FILE", help="where the page goes (--write)"
    )
    p.set_defaults(run=cmd_vocabulary)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null: c10's warnings are written there, not through Python."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def cmd_vocabulary(args: argparse.Namespace) -> int:
    try:
        import expecttest  # noqa: F401  (OpInfo's test utilities import it)
    except ImportError:
        raise cli_error(
            "vocabulary needs expecttest for torch's OpInfo database: pip install expecttest"
        ) from None
    from generators import VOCABULARY_DIR, installed_release
    from pyfy_fuzz.schema.atomic import atomic_write
    from pyfy_fuzz.schema.vocabulary import load_table
    from pyfy_fuzz.vocabulary import render_doc
    from pyfy_fuzz.vocabulary.derive import derive

    major, minor = installed_release()
    path = VOCABULARY_DIR / f"torch-{major}.{minor}.json"
    with _quiet_stderr():  # torch's kernels warn on samples by the thousand (var, cov, ...)
        table = derive()
    text = table.to_json()
    if not args.write:
        if path.exists() and path.read_text() == text:
            print(f"{path.name}: up to date with torch {table.torch}")
            return 0
        print(f"{path.name}: differs from what torch {table.torch} derives (--write replaces it)")
        return 1
    atomic_write(path, text)
    tables = [load_table(p) for p in sorted(VOCABULARY_DIR.glob("torch-*.json"))]
    atomic_write(args.doc, render_doc(tables))
    print(f"wrote {path} ({len(table.ops)} overloads) and {args.doc}")
    return 0
