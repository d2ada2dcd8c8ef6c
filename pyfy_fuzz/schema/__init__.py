"""The torch-free schema every stage of pyfy-fuzz imports (issue 15's bottom layer).

Only what the stages share as data lives here, with no import of torch, of the generator under
test, or of any other pyfy-fuzz package: today the wrapper-path vocabulary (`paths`). A test
imports it with torch made unimportable.
"""

from __future__ import annotations

from .paths import (
    ALL_PATHS,
    FAMILY_TARGETS,
    OUTPUT_ALIAS_KINDS,
    REFINEMENTS,
    reached,
    signature_paths,
)

__all__ = [
    "ALL_PATHS",
    "FAMILY_TARGETS",
    "OUTPUT_ALIAS_KINDS",
    "REFINEMENTS",
    "reached",
    "signature_paths",
]
