"""docs/ARCHITECTURE.md is the project's map: every module and folder it names must exist, so a
move that leaves the map behind fails here (issue 15)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Named in the map but not modules of the tree: a placeholder, a tool, files of a corpus entry.
NOT_MODULES = {"FILE.py", "coverage.py", "program.py", "repro.py", "pythonified.py"}
# torch's own files, which the map names as what the models are read beside.
TORCH_FILES = {"runtime_wrappers.py", "schemas.py"}
# Folders a campaign makes inside a corpus as it runs (not checked in).
RUNTIME_FOLDERS = {".superseded/", ".migrated/", "corpus/.hypothesis/", "corpus/.campaign/"}
_PY = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.py)\b")
_DIR = re.compile(r"`((?:[\w.-]+/)+)`")


def _tree() -> set[str]:
    """Every file and folder of the checkout (folders end in /), the corpus's entries aside."""
    out = set()
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT)
        if rel.parts[0] in (".venv", ".git") or "__pycache__" in rel.parts:
            continue
        if rel.parts[0] == "corpus" and len(rel.parts) > 2:
            continue
        out.add(str(rel) + ("/" if p.is_dir() else ""))
    return out


def test_every_module_and_folder_the_map_names_exists() -> None:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    named = set(_PY.findall(text)) | set(_DIR.findall(text))
    tree = _tree()
    missing = sorted(
        n
        for n in named - NOT_MODULES - TORCH_FILES - RUNTIME_FOLDERS
        if not n.startswith("torch/")  # torch's own, named by their path in torch
        and n not in tree
        and not any(t.endswith("/" + n) for t in tree)
    )
    assert named and not missing, f"docs/ARCHITECTURE.md names what is not there: {missing}"


def _contract() -> list[str]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    block = text.split("<!-- contract -->", 1)[1].split("<!-- /contract -->", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("```")]


def test_the_contract_is_what_the_code_declares() -> None:
    """Every call the map's Contract section names exists with exactly that signature."""
    import importlib
    import inspect

    lines = _contract()
    assert len(lines) >= 10
    for line in lines:
        dotted = line.split("(", 1)[0]
        module, _, name = dotted.rpartition(".")
        fn = getattr(importlib.import_module(module), name)
        declared = dotted + str(inspect.signature(fn))
        # annotations are strings (postponed evaluation): compare without quotes
        assert line.replace("'", "") == declared.replace("'", ""), (
            f"docs/ARCHITECTURE.md says\n  {line}\nthe code declares\n  {declared}"
        )
