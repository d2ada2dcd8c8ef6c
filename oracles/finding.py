"""Finding lives in the torch-free schema (pyfy_fuzz/schema/finding.py), which every stage
imports; the oracles make findings and re-export it from here."""

from __future__ import annotations

from pyfy_fuzz.schema import finding as _finding
from pyfy_fuzz.schema.finding import *  # noqa: F403  (the schema's __all__, re-exported)

__all__ = list(_finding.__all__)
