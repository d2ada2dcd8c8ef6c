"""The structure numbers issues 15 and 30 are measured by, and the rules issue 30 set.

    .venv/bin/python benchmarks/structure.py [--root .] [--check]

Over `pyfy_fuzz/`, `generators/` and `oracles/` (tests left out), read as source, nothing
imported:

- modules, modules with `__all__`, modules over 600 lines;
- functions (methods included): median length, how many run over 80 lines, the ten longest;
- `Any`: the name's uses in the code (annotations and casts; import lines not counted);
- import cycles between modules, from module-level imports (a function-level import is
  deferred and cannot cycle at import time; `if TYPE_CHECKING:` blocks are skipped);
- imports between the project's areas -- its layers: schema, pythonify, generators, oracles,
  case, corpus, reports, campaign, bench, selftest, cli --, function-level ones included, and
  the pairs of areas that import each other;
- the rules (`rules`, printed last; `--check` exits 1 when one is broken): no module cycle, no
  module over LONG_MODULE lines, no function over LONG_FUNCTION lines without a written
  reason, `generators/` and `oracles/` importing nothing of the harness but the schema, and
  `pyfy_fuzz/pythonify/` importing nothing of the harness at all. The layer order itself is
  pyproject.toml's import-linter contract, which CI checks with `lint-imports`.
"""

from __future__ import annotations

import argparse
import ast
import statistics
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGES = ("pyfy_fuzz", "generators", "oracles")
LONG_MODULE = 600
LONG_FUNCTION = 80
# The areas `generators/` and `oracles/` may import (the schema below them, and each other as
# the data flows: an oracle reads a program, a generator never reads an oracle).
_MAY_IMPORT = {
    "generators": {"schema", "generators"},
    "oracles": {"schema", "generators", "oracles"},
}


@cache
def _modules(root: Path) -> dict[str, tuple[Path, ast.Module]]:
    """Dotted module name -> (path, parsed tree); read and parsed once per tree (every measure
    and rule walks them)."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = (path, ast.parse(path.read_text()))
    return out


def _imported(name: str, path: Path, node: ast.stmt | ast.expr) -> list[str]:
    """The dotted names an import statement names (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
    # `from . import records` needs the submodule, not the package's own code: the owner of
    # "base.name" is the submodule where there is one, else base itself.
    return [f"{base}.{a.name}" for a in node.names]


def _owner(target: str, names: set[str]) -> str | None:
    """The project module a dotted import target lands in (a name inside it: its module)."""
    while target and target not in names:
        target = target.rpartition(".")[0]
    return target or None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
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
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _area(module: str) -> str:
    """The layer a module is in: its top-level package, or pyfy_fuzz's sub-package (the
    package's own __init__ and __main__ are "pyfy_fuzz")."""
    parts = module.split(".")
    if parts[:2] == ["pyfy_fuzz", "__main__"]:
        return "cli"  # `python -m pyfy_fuzz` is the command line
    if parts[0] == "pyfy_fuzz" and len(parts) > 1:
        return parts[1]
    return parts[0]


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def says_why_long(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A function over LONG_FUNCTION lines says why splitting it would hurt, in its
    docstring: a line "Long: ..."."""
    doc = ast.get_docstring(node) or ""
    return any(line.strip().startswith("Long:") for line in doc.splitlines())


def unexplained_long_functions(root: Path) -> list[str]:
    """`path:function` of every function over LONG_FUNCTION lines that does not say why."""
    out = []
    for path, tree in _modules(root).values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONG_FUNCTION and not says_why_long(node):
                    out.append(f"{path.relative_to(root)}:{node.name}")
    return sorted(out)


def long_modules(root: Path) -> list[str]:
    """`path (lines)` of every module over LONG_MODULE lines."""
    out = []
    for path, _ in _modules(root).values():
        lines = len(path.read_text().splitlines())
        if lines > LONG_MODULE:
            out.append(f"{path.relative_to(root)} ({lines})")
    return sorted(out)


def cross_imports(root: Path) -> dict[tuple[str, str], set[str]]:
    """(area, area it imports) -> {"module -> module"}, every import statement counted,
    function-level ones included (they run later, but they are still a dependency)."""
    modules = _modules(root)
    names = set(modules)
    areas: dict[tuple[str, str], set[str]] = {}
    for name, (path, tree) in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(name, path, node):
                    owner = _owner(target, names)
                    if owner is not None and _area(owner) != _area(name):
                        areas.setdefault((_area(name), _area(owner)), set()).add(
                            f"{name} -> {owner}"
                        )
    return areas


def _module_edges(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules its module-level imports load (TYPE_CHECKING skipped)."""
    modules = _modules(root)
    names = set(modules)
    edges: dict[str, set[str]] = {}
    for name, (path, tree) in modules.items():
        edges[name] = set()
        for stmt in tree.body:
            if _is_type_checking(stmt):
                continue
            for target in _imported(name, path, stmt):
                owner = _owner(target, names)
                if owner is not None and owner != name:
                    edges[name].add(owner)
    return edges


def rules(root: Path) -> list[tuple[str, list[str]]]:
    """Issue 30's rules: (rule, what breaks it); a rule holds where the list is empty."""
    areas = cross_imports(root)
    upward = sorted(
        why
        for (a, b), whys in areas.items()
        if a in _MAY_IMPORT and b not in _MAY_IMPORT[a]
        for why in whys
    )
    pythonify_out = sorted(
        why for (a, _), whys in areas.items() if a == "pythonify" for why in whys
    )
    return [
        ("no module import cycles", [" <-> ".join(c) for c in cycles(_module_edges(root))]),
        (f"no module over {LONG_MODULE} lines", long_modules(root)),
        (
            f"no function over {LONG_FUNCTION} lines without a reason",
            unexplained_long_functions(root),
        ),
        ("generators/ and oracles/ import no harness layer above the schema", upward),
        ("pythonify/ imports nothing of the harness", pythonify_out),
    ]


def measure(root: Path) -> list[str]:
    """The report's lines."""
    modules = _modules(root)
    functions: list[tuple[int, str]] = []
    unexplained = unexplained_long_functions(root)
    anys = with_all = 0
    for path, tree in modules.values():
        where = str(path.relative_to(root))
        with_all += any(
            isinstance(t, ast.Assign) and any(getattr(x, "id", "") == "__all__" for x in t.targets)
            for t in tree.body
        )
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                functions.append((length, f"{where}:{node.name}"))
            elif isinstance(node, ast.Name) and node.id == "Any":
                anys += 1
    functions.sort(reverse=True)
    lengths = [n for n, _ in functions]
    areas = cross_imports(root)
    out = [
        f"modules: {len(modules)}, with __all__: {with_all}",
        f"functions: {len(functions)}, median {statistics.median(lengths)} lines, "
        f"over {LONG_FUNCTION}: {sum(n > LONG_FUNCTION for n in lengths)} "
        f"({len(unexplained)} without a reason written in them)",
        "longest: " + ", ".join(f"{where} {n}" for n, where in functions[:10]),
        f"Any (uses, imports not counted): {anys}",
        "imports between areas (all, function-level included):",
    ]
    for (a, b), why in sorted(areas.items()):
        out.append(f"  {a} -> {b}: {len(why)}, e.g. {sorted(why)[0]}")
    both = sorted(f"{a} <-> {b}" for a, b in areas if a < b and (b, a) in areas)
    out.append("areas importing each other: " + (", ".join(both) or "none"))
    out.append("rules:")
    for rule, broken in rules(root):
        out.append(
            f"  {'ok  ' if not broken else 'FAIL'} {rule}"
            + "".join(f"\n         {b}" for b in broken)
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--check", action="store_true", help="exit 1 when a rule is broken")
    args = parser.parse_args()
    print("\n".join(measure(args.root)))
    if args.check and any(broken for _, broken in rules(args.root)):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
