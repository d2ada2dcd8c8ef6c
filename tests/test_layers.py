"""The layer contract (issue 15): data flows one way, schema <- generators, pythonify <-
subjects/observe <- oracles <- harness <- cli (pyproject.toml [tool.importlinter], which CI
checks with `lint-imports`), and no module of the project imports itself through others."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pyfy_fuzz", "generators", "oracles")


def _structure() -> Any:
    """benchmarks/structure.py (one implementation of what it measures; it reports the same
    figures before and after issue 15's restructuring)."""
    spec = importlib.util.spec_from_file_location("structure", ROOT / "benchmarks" / "structure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = _structure().cycles(edges)
    return found


def _rules() -> list[tuple[str, list[str]]]:
    rules: list[tuple[str, list[str]]] = _structure().rules(ROOT)
    return rules


def test_issue_30s_structure_rules_hold() -> None:
    """benchmarks/structure.py's rules: no module cycle, no module over LONG_MODULE lines, no
    function over LONG_FUNCTION lines without a "Long:" line in its docstring saying why,
    generators/ and oracles/ importing only the schema of the harness, pythonify/ nothing."""
    broken = {rule: what for rule, what in _rules() if what}
    assert broken == {}


def test_the_rules_see_what_breaks_them(tmp_path: Path) -> None:
    """The rules read a tree: a copy with a long module, a long function, an oracle that
    imports the campaign and a pythonify module that imports the schema breaks each."""
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    for sub in ("schema", "campaign", "pythonify"):
        (tmp_path / "pyfy_fuzz" / sub).mkdir()
        (tmp_path / "pyfy_fuzz" / sub / "__init__.py").write_text("")
    body = "\n".join(f"    x{k} = {k}" for k in range(90))
    (tmp_path / "generators" / "long.py").write_text(f"def f():\n{body}\n" + "\n" * 600)
    (tmp_path / "oracles" / "up.py").write_text("from pyfy_fuzz.campaign import x\n")
    (tmp_path / "pyfy_fuzz" / "pythonify" / "out.py").write_text("from ..schema import y\n")
    (tmp_path / "pyfy_fuzz" / "schema" / "a.py").write_text("from . import b\n")
    (tmp_path / "pyfy_fuzz" / "schema" / "b.py").write_text("from . import a\n")
    broken = dict(_structure().rules(tmp_path))
    assert list(broken.values()) == [
        ["pyfy_fuzz.schema.a <-> pyfy_fuzz.schema.b"],
        ["generators/long.py (691)"],
        ["generators/long.py:f"],
        ["oracles.up -> pyfy_fuzz.campaign"],
        ["pyfy_fuzz.pythonify.out -> pyfy_fuzz.schema"],
    ]


def test_each_layer_is_one_package() -> None:
    """Issue 30: the contract lists each layer as a package (siblings may be independent,
    `|`), never a group of peer modules (`:`)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    for layer in contract["layers"]:
        assert ":" not in layer, layer
        for name in layer.split("|"):
            path = ROOT.joinpath(*name.strip().split("."))
            assert (path / "__init__.py").is_file() or name.strip() == "pyfy_fuzz.__main__", name


def test_no_import_cycle_between_the_projects_modules() -> None:
    """Every import counts, those inside functions too (grimp reads them all)."""
    graph = grimp.build_graph(*PACKAGES)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert len(edges) > 80
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_layer_contract_holds() -> None:
    run = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports"))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert "1 kept, 0 broken" in run.stdout


def test_every_module_sits_in_a_layer() -> None:
    """A module the contract does not name escapes it: each one is in a layer (itself, or a
    package that is), or is a package whose children are."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    named = {
        m.strip()
        for layer in contract["layers"]
        for part in layer.replace("|", ":").split(":")
        for m in [part]
        if m.strip()
    }
    graph = grimp.build_graph(*PACKAGES)
    loose = sorted(
        m
        for m in graph.modules
        if not any(m == n or m.startswith(n + ".") for n in named)
        and not any(n.startswith(m + ".") for n in named)  # a parent package of layers
    )
    assert loose == [], f"modules in no layer of pyproject.toml's contract: {loose}"
