"""The layer contract (issue 15): data flows one way, schema <- generators, pythonify <-
subjects/observe <- oracles <- harness <- cli (pyproject.toml [tool.importlinter], which CI
checks with `lint-imports`), and no module of the project imports itself through others."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pyfy_fuzz", "generators", "oracles")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while (w := stack.pop()) != v:
                    on_stack.discard(w)
                    component.append(w)
                on_stack.discard(v)
                if component:
                    found.append(sorted([v, *component]))
    return found


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
