"""Coverage across campaign workers: which files are measured, and the workers' data combined.

`run --coverage` measures torch's files that decide what a wrapper does (`torch_files`, Note
[What coverage measures]) and the bundled generator; each worker saves its own data file, the
campaign combines them here (`combine_coverage`), writes coverage.py's HTML, and reads the
numbers the summary, the report and the nightly history carry: per file, the statements and
branches *reached by cases* out of those a case can reach (Note [Reached by cases]).

Torch-free: torch's files are found with `importlib.util.find_spec`, without importing torch,
so the campaign's process can name them.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

__all__ = [
    "DYNAMO_FILES",
    "combine_coverage",
    "reachable",
    "short_name",
    "torch_files",
]

# Note [What coverage measures]
# The yardstick is the torch code whose branches decide what a wrapper does with aliased and
# mutated inputs and outputs, where pythonify's bugs and torch's own live:
# - all of AOTAutograd's Python, torch/_functorch/_aot_autograd/*.py (the metadata analysis,
#   functionalization's helpers, the runtime wrappers, subclass handling, the cache, ...);
# - torch/_functorch/partitioners.py (what is saved for backward, recomputed, and where a
#   mutation of an input lands between forward and backward);
# - torch/_subclasses/functional_tensor.py (functionalization itself: FunctionalTensor and
#   its mode, which turn views and in-place ops into functional ones and record mutations);
# - Dynamo's handling of aliasing and mutation of inputs, read from torch 2.13's source:
#   variables/builder.py (wrapping each input: an object reached through two sources becomes
#   one variable with a DUPLICATE_INPUT guard -- `make_dupe_guard` in `_call_impl` -- and a
#   tensor read again through one source is deduplicated -- `is_duplicate_tensor` in
#   `wrap_tensor`), side_effects.py (mutation of inputs' attributes, of lists and dicts passed
#   in, of tensors' .grad/.data and hooks: tracked while tracing and replayed after the graph,
#   `codegen_update_mutated`), output_graph.py (the graph's inputs by source,
#   `has_input_mutation` / `has_aliasing` for higher-order ops, the side effects codegen around
#   the compiled graph), guards.py (the aliasing guards between inputs: DUPLICATE_INPUT and
#   `check_no_aliasing`, NO_TENSOR_ALIASING) and variables/tensor.py (a tensor argument's
#   in-place methods, `.data` and `requires_grad_` writes, `set_`).
# Each is measured whole (coverage.py counts per file). A file of the list that a torch
# release lacks is left out (the summary lists what was measured).
DYNAMO_FILES = (
    "_dynamo/variables/builder.py",
    "_dynamo/side_effects.py",
    "_dynamo/output_graph.py",
    "_dynamo/guards.py",
    "_dynamo/variables/tensor.py",
)
_TORCH_FILES = ("_functorch/partitioners.py", "_subclasses/functional_tensor.py", *DYNAMO_FILES)


def torch_files() -> list[str]:
    """The torch files `run --coverage` measures (Note [What coverage measures]), absolute,
    in the installed torch; found without importing torch."""
    found = importlib.util.find_spec("torch")
    if found is None or found.origin is None:
        return []
    # as coverage.py names a file (its canonical path): the names must match its data's
    root = Path(os.path.realpath(found.origin)).parent
    aot = sorted(str(p) for p in (root / "_functorch" / "_aot_autograd").glob("*.py"))
    return aot + [str(root / f) for f in _TORCH_FILES if (root / f).is_file()]


# Note [Reached by cases]
# A worker starts measuring after torch is imported and after every measured module has been
# imported (worker.start_coverage): lines that run at import -- def and class statements,
# module-level code, functions a module calls while it is imported -- are never recorded as
# reached. What a case cannot run at all is left out of the counts as well: only statements
# and branches inside function bodies count (coverage.py's own code regions; a module's or a
# class body's statements run only at import). So "branches reached" is the branches inside
# functions that cases took, out of all branches inside functions: 100% is reachable.
# coverage.py's HTML pages keep its own view (import-time lines shown as missed).


def reachable(cov: Any, filename: str) -> dict[str, int]:
    """Statements and branches of `filename` inside function bodies, and how many of each the
    measured data reached (Note [Reached by cases]). `cov`: a coverage.Coverage with the
    combined data loaded. Uses coverage.py's analysis (private `_analyze`: the caller guards)."""
    from coverage.python import PythonFileReporter

    inside: set[int] = set()
    for region in PythonFileReporter(filename, cov).code_regions():
        if region.kind == "function":
            inside |= region.lines
    a = cov._analyze(filename)
    statements = a.statements & inside
    branch_lines = {ln for ln, n in a.exit_counts.items() if n > 1 and ln in inside}
    arcs = {arc for arc in a.arc_possibilities_set if arc[0] in branch_lines}
    return {
        "statements_total": len(statements),
        "statements_reached": len(statements & a.executed),
        "branches_total": len(arcs),
        "branches_reached": len(arcs & a.arcs_executed_set),
    }


def short_name(name: str) -> str:
    """torch/... or pyfy_fuzz/...: the part of a measured file's path a reader recognises."""
    for marker in ("site-packages/", "/pyfy_fuzz/"):
        if marker in name:
            tail = name.rsplit(marker, 1)[1]
            return tail if marker == "site-packages/" else "pyfy_fuzz/" + tail
    return name


def _percent(done: int, total: int) -> float | None:
    return round(100.0 * done / total, 1) if total else None


def combine_coverage(directory: Path, torch_names: list[str] | None = None) -> dict[str, Any]:
    """Combine the workers' coverage files, write coverage.py's HTML pages next to them, and
    return the numbers: {"data", "html", "percent" (coverage.py's, all measured files),
    "branch_percent", "files": {path: {"lines", "branches" (percentages reached by cases),
    "statements_total", "statements_reached", "branches_total", "branches_reached", "torch"}},
    "torch": {"files", "branches_total", "branches_reached", "branch_percent", "never_reached":
    [paths]}}.
    `torch_names`: torch's measured files (default `torch_files()`), each listed even when no case
    reached it.

    Long: one pass over the files, then the two totals, in the order the summary reads."""
    import coverage

    torch_list = torch_files() if torch_names is None else torch_names
    cov = coverage.Coverage(data_file=str(directory / ".coverage"), branch=True)
    cov.combine([str(directory)], keep=False)
    cov.save()
    data = cov.get_data()
    measured = set(data.measured_files())
    if not measured:
        return {
            "data": None,
            "html": None,
            "files": {},
            "percent": None,
            "branch_percent": None,
            "torch": None,
        }
    names = sorted(measured | {f for f in torch_list if os.path.isfile(f)})
    html_dir = directory / "html"
    percent = cov.html_report(
        morfs=names, directory=str(html_dir), title="pyfy-fuzz wrapper coverage"
    )
    files: dict[str, dict[str, Any]] = {}
    totals = {"all": [0, 0], "torch": [0, 0]}  # branches reached, branches
    for name in names:
        try:
            n = reachable(cov, name)
        except Exception:  # noqa: BLE001 - coverage.py's private analysis: lines only
            _, statements, _, missing, _ = cov.analysis2(name)
            done = len(statements) - len(missing)
            files[name] = {"lines": _percent(done, len(statements)), "torch": name in torch_list}
            continue
        files[name] = {
            "lines": _percent(n["statements_reached"], n["statements_total"]),
            "branches": _percent(n["branches_reached"], n["branches_total"]),
            **n,
            "torch": name in torch_list,
        }
        for key in ("all", "torch") if name in torch_list else ("all",):
            totals[key][0] += n["branches_reached"]
            totals[key][1] += n["branches_total"]
    torch_rows = {k: v for k, v in files.items() if v["torch"]}
    return {
        "data": str(directory / ".coverage"),
        "html": str(html_dir / "index.html"),
        "files": files,
        "percent": round(percent, 1),
        "branch_percent": _percent(*totals["all"]),
        "torch": {
            "files": len(torch_rows),
            "branches_total": totals["torch"][1],
            "branches_reached": totals["torch"][0],
            "branch_percent": _percent(*totals["torch"]),
            "never_reached": [
                k
                for k, v in torch_rows.items()
                if v.get("branches_total") and not v["branches_reached"]
            ],
        },
    }
