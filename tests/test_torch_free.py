"""A module whose docstring says it is torch-free imports where torch cannot be imported.

The claim matters where a process must not pay for torch, or has none: the campaign's own
process writes corpus entries (entry.py, repro.py and its parts), the schema is what every
stage reads, and procstat watches a campaign from outside. The list is read off the modules'
docstrings, so a new claim is checked the day it is written, and a false one fails here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pyfy_fuzz", "generators", "oracles")

# Run in a fresh interpreter: torch made unimportable before anything else is imported (a None
# in sys.modules makes `import torch`, and `import torch.<anything>`, raise ImportError).
_IMPORT = """
import importlib, sys
sys.modules["torch"] = None
importlib.import_module({name!r})
"""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _claims_torch_free(path: Path) -> bool:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return "torch-free" in doc.lower()


def _torch_free_modules() -> list[str]:
    return [
        _module_name(p)
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
        if _claims_torch_free(p)
    ]


def test_the_claims_are_found() -> None:
    """The scan finds the modules known to make the claim (a broken scan passes vacuously)."""
    found = set(_torch_free_modules())
    assert {"pyfy_fuzz.schema.spec", "pyfy_fuzz.corpus.repro", "pyfy_fuzz.corpus.entry"} <= found


@pytest.mark.parametrize("name", _torch_free_modules())
def test_imports_without_torch(name: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _IMPORT.format(name=name)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, (
        f"{name} says it is torch-free, but does not import without torch:\n" + run.stderr[-3000:]
    )
