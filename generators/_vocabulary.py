"""The derived op vocabulary for the installed torch (torch-free: a JSON table per release).

`pyfy-fuzz vocabulary --write` derives `vocabulary/torch-<major>.<minor>.json` from a torch
(pyfy_fuzz/vocabulary/derive.py); this module picks the table of the installed release without
importing torch -- the same release, else the newest older one, else the oldest -- and indexes
it for the statement group that draws from it (`_stmts_aten.py`).
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path

from pyfy_fuzz.schema.vocabulary import Table, VocabOp, load_table

__all__ = ["TABLES_DIR", "by_class", "by_name", "installed_release", "table", "table_path"]

TABLES_DIR = Path(__file__).with_name("vocabulary")


def _release(text: str) -> tuple[int, int]:
    major, minor = text.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def installed_release() -> tuple[int, int]:
    """The installed torch's (major, minor), read from its metadata (torch is not imported)."""
    try:
        return _release(metadata.version("torch"))
    except (metadata.PackageNotFoundError, ValueError):
        return (0, 0)


def table_path(release: tuple[int, int] | None = None) -> Path:
    """The table for `release` (default: the installed one): its own, else the newest older
    one, else the oldest there is."""
    release = installed_release() if release is None else release
    tables = sorted(
        (_release(p.stem.removeprefix("torch-")), p) for p in TABLES_DIR.glob("torch-*.json")
    )
    if not tables:
        raise FileNotFoundError(f"no vocabulary table in {TABLES_DIR}")
    older = [p for r, p in tables if r <= release]
    return older[-1] if older else tables[0][1]


@functools.cache
def table() -> Table:
    return load_table(table_path())


@functools.cache
def by_class() -> dict[str, tuple[VocabOp, ...]]:
    """The table's ops per class (Note [Op classes]), in the table's order."""
    out: dict[str, list[VocabOp]] = {}
    for op in table().ops:
        out.setdefault(op.cls, []).append(op)
    return {k: tuple(v) for k, v in out.items()}


@functools.cache
def by_name() -> dict[str, VocabOp]:
    """The table's ops by overload name ("aten.narrow.default"): what a spec's aten statement
    names, looked up once per statement instead of a scan of the table."""
    return {op.name: op for op in table().ops}
