"""`__all__` on every public module, checked both ways (as Hypothesis's _check_exports does).

A public module (one whose own name does not start with an underscore, under pyfy_fuzz,
generators and oracles) declares `__all__`; every name in it is bound in the module, and every
public name the module itself defines (def, class, assignment; not an import) is in it. A name a
module defines but does not export is private: its name starts with an underscore.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pyfy_fuzz", "generators", "oracles")


def _modules() -> list[Path]:
    out = []
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            rel = p.relative_to(ROOT)
            if any(part.startswith("_") and part != "__init__.py" for part in rel.parts):
                continue  # private modules and packages (and __main__)
            out.append(p)
    return out


def _declared_all(tree: ast.Module) -> list[str] | None:
    """The literal `__all__`, [] when built from another module's (a re-export), None if none."""
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value
            if isinstance(value, ast.List | ast.Tuple):
                return [ast.literal_eval(e) for e in value.elts]
            return []
    return None


def _bindings(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names the module defines itself, names it imports), at top level and under `if`/`try`."""
    defined: set[str] = set()
    imported: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    defined.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(
                node.target, ast.Name
            ):
                defined.add(node.target.id)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for a in node.names:
                    if a.name != "*":
                        imported.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for h in getattr(node, "handlers", []):
                    visit(h.body)

    visit(tree.body)
    return defined, imported


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_all_is_declared_and_matches_both_ways(path: Path) -> None:
    tree = ast.parse(path.read_text())
    declared = _declared_all(tree)
    assert declared is not None, f"{path.relative_to(ROOT)} has no __all__"
    defined, imported = _bindings(tree)
    star = any(
        isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body
    )
    if not star:
        unbound = sorted(set(declared) - defined - imported)
        assert not unbound, f"__all__ names what the module does not bind: {unbound}"
    public = {n for n in defined if not n.startswith("_")}
    if declared or not star:
        unexported = sorted(public - set(declared))
        assert not unexported, f"public but not in __all__ (export or rename with _): {unexported}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _emitted(module: str) -> set[str]:
    """Names a module lists in RUNTIME: helpers copied into the generated file, which shares one
    namespace, so one helper may name another wherever it is defined."""
    base = ROOT.joinpath(*module.split("."))
    path = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "RUNTIME" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def _private_owner(module: str) -> str | None:
    """The package a private module belongs to (None if no part of the name is private)."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def _all_modules() -> list[Path]:
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_no_private_name_is_imported_across_modules() -> None:
    """A private name (one underscore) stays in its module, and a private module in its package;
    the exception is an emitted runtime helper (see _emitted)."""
    bad = []
    for path in _all_modules():
        me = _module_name(path)
        package = me if path.name == "__init__.py" else me.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[tuple[str, str | None]] = []  # (module, name imported from it)
            if isinstance(node, ast.Import):
                targets = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                mod = ".".join(
                    [*(base if node.level else []), *([node.module] if node.module else [])]
                )
                for a in node.names:
                    if _is_module(f"{mod}.{a.name}"):
                        targets.append((f"{mod}.{a.name}", None))
                    else:
                        targets.append((mod, a.name))
            for mod, name in targets:
                if mod.split(".")[0] not in PACKAGES:
                    continue  # torch's privates are the point of pythonify (see _compat.py)
                owner = _private_owner(mod)
                if owner is not None and not (me == owner or me.startswith(owner + ".")):
                    bad.append(f"{me} imports {mod}, private to {owner}")
                if (
                    name is not None
                    and name.startswith("_")
                    and not name.startswith("__")
                    and name not in _emitted(mod)
                ):
                    bad.append(f"{me} imports {mod}.{name}")
    assert not bad, "\n".join(bad)
