"""Coverage across campaign workers: each worker saves its own data file (`run --coverage`);
the campaign combines them here, writes coverage.py's HTML, and reads per-file numbers for the
nightly report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["combine_coverage"]


def combine_coverage(directory: Path) -> dict[str, Any]:
    """Combine the workers' coverage files, write coverage.py's HTML pages next to them, and
    return {"data", "html", "files": {path: {"lines": %, "branches": %}}, "percent"}."""
    import coverage

    cov = coverage.Coverage(data_file=str(directory / ".coverage"), branch=True)
    cov.combine([str(directory)], keep=False)
    cov.save()
    data = cov.get_data()
    if not data.measured_files():
        return {"data": None, "html": None, "files": {}, "percent": None, "branch_percent": None}
    html_dir = directory / "html"
    percent = cov.html_report(directory=str(html_dir), title="pyfy-fuzz wrapper coverage")
    files = {}
    branches = [0, 0]  # covered, total, over the files whose branch numbers could be read
    for name in sorted(data.measured_files()):
        try:  # coverage's own per-file numbers (a private helper: guarded)
            n = cov._analyze(name).numbers
            files[name] = {
                "lines": round(100.0 * n.n_executed / max(n.n_statements, 1), 1),
                "branches": round(100.0 * n.n_executed_branches / max(n.n_branches, 1), 1),
            }
            branches[0] += n.n_executed_branches
            branches[1] += n.n_branches
        except Exception:  # noqa: BLE001 - lines only, from the public API
            _, statements, _, missing, _ = cov.analysis2(name)
            done = len(statements) - len(missing)
            files[name] = {"lines": round(100.0 * done / max(len(statements), 1), 1)}
    return {
        "data": str(directory / ".coverage"),
        "html": str(html_dir / "index.html"),
        "files": files,
        "percent": round(percent, 1),
        "branch_percent": round(100.0 * branches[0] / branches[1], 1) if branches[1] else None,
    }
