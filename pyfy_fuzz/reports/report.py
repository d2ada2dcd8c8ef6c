"""`pyfy-fuzz report`: which wrapper paths campaigns reached, from their --json summaries.

    rows = path_rows(load_runs([Path("run1.json"), Path("run2.json")]))

One row per wrapper path of the catalogue (`schema.paths.ALL_PATHS`, plus any path a run
reached that the catalogue lacks): cases that reached it, runs that did, new findings whose
wrapper paths include it, and when it was last reached. Paths never reached come first: they
are what the next generator work should aim at. Rendered for the terminal and as markdown
(tabulate) and as a self-contained HTML page; given a history (reports/history.json), the
page embeds the trend plot across nights and the markdown links it. Files are written
atomically.

Given a corpus (`triage_view.load_findings`), every output leads with its findings, grouped by
root cause and most severe first; the wrapper-path table follows. Either part may be absent
(no runs: only findings; no corpus: only the table). `severity_of`, `title_of` and
`difference_of` (one finding in a number and two lines) are re-exported from triage_view.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

from pyfy_fuzz.reports.triage_render import (
    FINDINGS_CSS,
    render_findings_html,
    render_findings_markdown,
    render_findings_text,
)
from pyfy_fuzz.reports.triage_view import (
    Findings,
    FindingsError,
    difference_of,
    load_findings,
    severity_of,
    title_of,
)
from pyfy_fuzz.schema.atomic import atomic_write
from pyfy_fuzz.schema.paths import ALL_PATHS, CUDA_ONLY

__all__ = [
    "difference_of",
    "FindingsError",
    "latest_coverage",
    "load_findings",
    "load_runs",
    "path_rows",
    "PathRow",
    "render_html",
    "render_markdown",
    "render_text",
    "ReportError",
    "RunSummary",
    "severity_of",
    "title_of",
    "write_report",
]

_REQUIRED = ("cases", "elapsed_s", "findings", "wrapper_hits")


class ReportError(Exception):
    """A summary file that is missing, unreadable or not a run summary."""


@dataclass(frozen=True)
class RunSummary:
    path: Path
    data: dict[str, Any]

    @property
    def when(self) -> str:
        """When the run finished; for summaries older than that field, the file's mtime."""
        if self.data.get("finished_at"):
            return str(self.data["finished_at"])
        mtime = dt.datetime.fromtimestamp(self.path.stat().st_mtime, dt.UTC)
        return mtime.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class PathRow:
    path: str
    cases: int
    runs: int
    findings: int
    last_reached: str | None
    in_catalogue: bool = True
    latest: int = 0  # cases of the most recent run that reached it

    @property
    def family(self) -> str:
        return self.path.split("/", 1)[0]


def load_runs(paths: list[Path], warnings: list[str] | None = None) -> list[RunSummary]:
    """Raise ReportError on the first bad summary; with a `warnings` list, note it there and
    skip it instead (nightly reads every past night: one damaged file must not stop it)."""
    runs = []
    for p in paths:
        try:
            runs.append(_load_run(Path(p)))
        except ReportError as e:
            if warnings is None:
                raise
            warnings.append(f"{e}; skipped")
    return runs


def _load_run(p: Path) -> RunSummary:
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise ReportError(f"no such run summary: {p}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReportError(f"run summary {p} is unreadable: {e}") from None
    if not isinstance(data, dict) or any(k not in data for k in _REQUIRED):
        raise ReportError(
            f"{p} is not a `pyfy-fuzz run --json` summary (needs {', '.join(_REQUIRED)})"
        )
    if not isinstance(data["wrapper_hits"], dict) or not isinstance(data["findings"], list):
        raise ReportError(f"{p}: wrapper_hits must be an object and findings a list")
    return RunSummary(p, data)


def path_rows(runs: list[RunSummary]) -> list[PathRow]:
    """Never-reached paths first (catalogue order), then the reached ones, fewest cases first."""
    seen = {p for r in runs for p in r.data["wrapper_hits"]}
    newest = max(runs, key=lambda r: r.when) if runs else None
    rows = []
    for path in [*ALL_PATHS, *sorted(seen - set(ALL_PATHS))]:
        hits = [(r, int(r.data["wrapper_hits"].get(path, 0))) for r in runs]
        reached = [(r, n) for r, n in hits if n > 0]
        findings = sum(
            1 for r in runs for f in r.data["findings"] if path in (f.get("wrappers") or ())
        )
        rows.append(
            PathRow(
                path=path,
                cases=sum(n for _, n in reached),
                runs=len(reached),
                findings=findings,
                last_reached=max((r.when for r, _ in reached), default=None),
                in_catalogue=path in ALL_PATHS,
                latest=int(newest.data["wrapper_hits"].get(path, 0)) if newest else 0,
            )
        )
    never = [r for r in rows if r.cases == 0]
    reached_rows = sorted((r for r in rows if r.cases > 0), key=lambda r: (r.cases, r.path))
    return never + reached_rows


def _label(r: PathRow) -> str:
    """The path as the table shows it: marked when it is outside the catalogue, or a path
    only a GPU run can reach."""
    if not r.in_catalogue:
        return r.path + " (not in catalogue)"
    return r.path + (" (CUDA only)" if r.path in CUDA_ONLY else "")


_HEADERS = ["wrapper path", "cases", "runs", "findings", "last reached", "latest run"]


def _table(rows: list[PathRow]) -> list[list[Any]]:
    return [
        [
            _label(r),
            r.cases,
            r.runs,
            r.findings,
            r.last_reached or "never",
            r.latest,
        ]
        for r in rows
    ]


def render_text(
    rows: list[PathRow], runs: list[RunSummary], findings: Findings | None = None
) -> str:
    """The findings (when there is a corpus) first, then the wrapper-path table (when there
    are runs)."""
    parts = [render_findings_text(findings)] if findings is not None else []
    if runs or findings is None:
        never = sum(1 for r in rows if r.cases == 0)
        head = (
            f"{len(rows) - never} of {len(rows)} wrapper paths reached in {len(runs)} run(s), "
            f"{sum(int(r.data['cases']) for r in runs)} cases; never reached: {never}"
        )
        parts.append(
            head + "\n\n" + tabulate(_table(rows), headers=_HEADERS, tablefmt="simple") + "\n"
        )
    return "\n".join(parts)


def render_markdown(
    rows: list[PathRow],
    runs: list[RunSummary],
    title: str,
    trend: str | None = None,
    findings: Findings | None = None,
) -> str:
    """`trend`: the trend PNG's file name, linked relative to the markdown file."""
    lines = [f"# {title}", ""]
    if findings is None:
        lines += [_runs_line(runs), ""]
    else:
        lines.append(render_findings_markdown(findings))
    if trend:
        lines += [f"![Trend across nights: paths reached, coverage, findings]({trend})", ""]
    if findings is not None and runs:
        lines += ["## Wrapper paths", "", _runs_line(runs), ""]
    if runs or findings is None:
        lines.append(tabulate(_table(rows), headers=_HEADERS, tablefmt="github"))
    cov = latest_coverage(runs)
    if cov is not None:
        lines += [
            "",
            f"## Coverage ({cov['run']}, {cov['when']}): {_headline(cov)}",
            "",
            f"coverage.py's pages: {cov['html']}",
            "",
            _torch_line(cov),
            "",
            tabulate(_coverage_rows(cov), headers=_COV_HEADERS, tablefmt="github"),
        ]
    return "\n".join(lines) + "\n"


_COV_HEADERS = ["file", "line %", "branch %", "branches reached"]
_REACHED_NOTE = (
    "Lines and branches reached by cases, of those inside functions: what runs at import is "
    "neither measured nor counted (coverage.py's own pages show import-time lines as missed)."
)


def _headline(cov: dict[str, Any]) -> str:
    t = cov.get("torch")
    if t and t.get("branch_percent") is not None:
        return f"{t['branch_percent']}% of torch's branches reached by cases"
    return f"{cov['percent']}% overall"


def _torch_line(cov: dict[str, Any]) -> str:
    """torch's branches reached, and the files whose branches no case reached."""
    t = cov.get("torch")
    if not t:
        return _REACHED_NOTE
    never = ", ".join(_short(n) for n in t["never_reached"]) or "none"
    return (
        f"torch's branches reached by cases: {t['branches_reached']} of {t['branches_total']} "
        f"({t['branch_percent']}%) in {t['files']} files; never reached: {never}. " + _REACHED_NOTE
    )


def _run_line(r: RunSummary) -> str:
    c = r.data.get("config", {})
    return (
        f"{r.path.name}: {r.data['cases']} cases, {len(r.data['findings'])} new findings, "
        f"{c.get('backend', '?')} on {c.get('device', '?')}, torch "
        f"{r.data.get('torch', '?')}, finished {r.when}"
    )


def _runs_line(runs: list[RunSummary]) -> str:
    """Each run for a few; past that (a month of nights) a span and the latest run."""
    if len(runs) <= 3:
        return "Runs: " + "; ".join(_run_line(r) for r in runs) + "."
    ordered = sorted(runs, key=lambda r: r.when)
    total = sum(int(r.data["cases"]) for r in runs)
    return (
        f"{len(runs)} runs from {ordered[0].when} to {ordered[-1].when}, {total} cases in all; "
        f"latest: {_run_line(ordered[-1])}."
    )


def render_html(
    rows: list[PathRow],
    runs: list[RunSummary],
    title: str,
    trend_png: bytes | None = None,
    findings: Findings | None = None,
) -> str:
    """One self-contained page (no external assets): the findings of a corpus first (when
    given), then the wrapper-path table (never-reached rows marked; when there are runs, or
    nothing else to show), the trend plot embedded as a data URI when there is one, and the
    coverage numbers."""
    esc = html.escape
    parts = []
    if findings is not None:
        parts.append(render_findings_html(findings))
    parts.append(_trend_html(trend_png))
    if runs or findings is None:
        parts += [_paths_html(rows, runs), _coverage_html(latest_coverage(runs))]
    body = "\n".join(p for p in parts if p)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; }}
table {{ border-collapse: collapse; }}
img#trend {{ max-width: 100%; border: 1px solid #ddd; }}
th, td {{ border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
tr.never td {{ background: #fff3e0; }}
{FINDINGS_CSS}
</style></head>
<body>
<h1>{esc(title)}</h1>
{body}
</body></html>
"""


def _paths_html(rows: list[PathRow], runs: list[RunSummary]) -> str:
    esc = html.escape
    body = []
    for r in rows:
        cls = ' class="never"' if r.cases == 0 else ""
        body.append(
            f"<tr{cls}><td><code>{esc(r.path)}</code>"
            + ("" if r.in_catalogue else " <em>(not in catalogue)</em>")
            + (" <em>(CUDA only)</em>" if r.path in CUDA_ONLY else "")
            + f"</td><td>{r.cases}</td><td>{r.runs}</td><td>{r.findings}</td>"
            f"<td>{esc(r.last_reached or 'never')}</td><td>{r.latest}</td></tr>"
        )
    never = sum(1 for r in rows if r.cases == 0)
    return f"""<h2>Wrapper paths</h2>
<p>{len(rows) - never} of {len(rows)} wrapper paths reached; <strong>{never} never reached</strong>
(listed first, highlighted): what the next generator work should aim at.</p>
<p>{esc(_runs_line(runs)) if runs else "No run summaries."}</p>
<table id="wrapper-paths">
<thead><tr>{"".join(f"<th>{esc(h)}</th>" for h in _HEADERS)}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody></table>"""


def _trend_html(png: bytes | None) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return (
        '<h2>Trend across nights</h2>\n<img id="trend" alt="Trend across nights: wrapper paths '
        'reached, coverage and findings" src="data:image/png;base64,' + data + '">'
    )


def _coverage_html(cov: dict[str, Any] | None) -> str:
    if cov is None:
        return "<p>No run was measured with <code>pyfy-fuzz run --coverage</code>.</p>"
    esc = html.escape
    rows = "".join(
        f"<tr><td><code>{esc(str(f))}</code></td><td>{esc(str(ln))}</td><td>{esc(str(br))}</td>"
        f"<td>{esc(str(n))}</td></tr>"
        for f, ln, br, n in _coverage_rows(cov)
    )
    link = f'<a href="{esc(Path(cov["html"]).as_uri())}">coverage.py\'s pages</a>'
    return (
        f"<h2>Coverage: {esc(_headline(cov))}</h2>"
        f"<p>{esc(cov['run'])}, {esc(cov['when'])}; {link}. {esc(_torch_line(cov))}</p>"
        '<table id="coverage"><thead><tr><th>file</th><th>line %</th><th>branch %</th>'
        "<th>branches reached</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
    )


def latest_coverage(runs: list[RunSummary]) -> dict[str, Any] | None:
    """The coverage numbers of the most recent run measured with `run --coverage`."""
    measured = [r for r in runs if (r.data.get("coverage") or {}).get("files")]
    if not measured:
        return None
    latest = max(measured, key=lambda r: r.when)
    return {"run": latest.path.name, "when": latest.when, **latest.data["coverage"]}


def _short(name: str) -> str:
    """torch/... or pyfy_fuzz/...: the part of a measured file's path a reader recognises."""
    for marker in ("site-packages/", "/pyfy_fuzz/"):
        if marker in name:
            tail = name.rsplit(marker, 1)[1]
            return tail if marker == "site-packages/" else "pyfy_fuzz/" + tail
    return name


def _coverage_rows(cov: dict[str, Any]) -> list[list[Any]]:
    """file, line %, branch %, "reached of total" (branches inside functions, Note [Reached by
    cases]); "-" where a run's summary (an older one) lacks the number."""

    def reached(v: dict[str, Any]) -> str:
        if "branches_total" not in v:
            return "-"
        return f"{v['branches_reached']} of {v['branches_total']}"

    return [
        [_short(name), _or_dash(v.get("lines")), _or_dash(v.get("branches")), reached(v)]
        for name, v in cov["files"].items()
    ]


def _or_dash(value: Any) -> Any:
    return "-" if value is None else value


def write_report(
    runs: list[RunSummary],
    out: Path,
    stem: str,
    history: list[dict[str, Any]] | None = None,
    findings: Findings | None = None,
) -> tuple[Path, Path]:
    """`<out>/<stem>.md` and `<out>/<stem>.html` (and `<stem>-trend.png` when `history` has
    entries), each written atomically; the PNG first, so the markdown never links a missing
    file. `findings` (a corpus, `load_findings`) lead both."""
    out.mkdir(parents=True, exist_ok=True)
    rows = path_rows(runs)
    title = (
        f"pyfy-fuzz wrapper-path report ({stem})"
        if findings is None
        else f"pyfy-fuzz report ({stem})"
    )
    md, page = out / f"{stem}.md", out / f"{stem}.html"
    png = None
    if history:
        from pyfy_fuzz.reports.trend import trend_png

        png = trend_png(history)
        atomic_write(out / f"{stem}-trend.png", png)
    trend = f"{stem}-trend.png" if png else None
    atomic_write(md, render_markdown(rows, runs, title, trend, findings))
    atomic_write(page, render_html(rows, runs, title, png, findings))
    return md, page
