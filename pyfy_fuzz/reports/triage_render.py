"""The corpus's findings rendered for a reader: the terminal (plain text), markdown, and the
HTML page's section with its CSS. What is shown is triage_view's model (`Findings`: groups of
entries by root cause, most severe first); `report.py` puts these first in its outputs.
"""

from __future__ import annotations

import html

from oracles.groups import GROUPS
from oracles.identity import SEVERITIES
from pyfy_fuzz.reports.triage_view import FindingEntry, FindingGroup, Findings

__all__ = [
    "FINDINGS_CSS",
    "TEXT_F_LINES",
    "TEXT_WIDTH",
    "render_findings_html",
    "render_findings_markdown",
    "render_findings_text",
]

TEXT_F_LINES = 12  # of f in the terminal
TEXT_WIDTH = 160  # a difference longer than this is cut in the terminal


def _cut(text: str, width: int = TEXT_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _headline(findings: Findings) -> str:
    n = len(findings.entries)
    if not n:
        return f"No findings in {findings.corpus}."
    labelled = sum(1 for g in findings.groups if g.root_cause)
    causes = (
        f"{len(findings.groups)} root causes ({labelled} labelled in triage, the others "
        "one entry each)"
        if labelled
        else "none labelled with a root cause yet (each entry is its own group)"
    )
    fixed = sum(1 for e in findings.entries if e.fixed)
    groups = [
        f"{n_} {GROUPS[g].split(' (')[0]}"  # type: ignore[index]
        for g in GROUPS
        if (n_ := sum(1 for e in findings.entries if e.group == g))
    ]
    return (
        f"{n} entries in {findings.corpus} ({', '.join(groups)}), {causes}; "
        + ", ".join(f"{len(_entries(gs))} of severity {s}" for s, gs in findings.by_severity())
        + (f"; {fixed} of them fixed (replay must not reproduce them)" if fixed else "")
        + "."
    )


def _entries(groups: list[FindingGroup]) -> list[FindingEntry]:
    return [e for g in groups for e in g.entries]


def _status(e: FindingEntry) -> str:
    what = {"refusal": "torch refusal", "metadata": "metadata in"}.get(e.group, "bug in")
    what = f"{what} {e.bug_in}" if e.group != "refusal" else what
    known = "".join(f", known upstream: pytorch#{n}" for n in e.upstream)
    return f"{what}, seen {e.count}x" + (", fixed" if e.fixed else "") + known + _repro_word(e)


def _repro_word(e: FindingEntry) -> str:
    """What a reader must know before pasting the repro: whether it was seen to fail alone."""
    if e.fixed or e.repro == "reproduces":
        return ""
    if e.repro is None:
        return ", repro not run yet"
    return f", repro.py {e.repro} on its own (not yet a repro)"


def render_findings_text(findings: Findings) -> str:
    out = ["Findings", "", _headline(findings)]
    for sev, groups in findings.by_severity():
        out += ["", f"Severity {sev}: {SEVERITIES[sev]}"]
        for g in groups:
            pad = "  "
            if g.root_cause:
                out.append(
                    f"  root cause {g.root_cause}: {len(g.entries)} entries, seen {g.count}x"
                )
                pad = "    "
            for e in g.entries:
                out.append(f"{pad}{e.shown}  ({_status(e)})")
                out.append(f"{pad}  {_cut(e.title)}")
                if e.difference:
                    out.append(f"{pad}  {_cut(e.difference)}")
                if e.releases:
                    out.append(f"{pad}  releases: {e.releases}")
                f_lines = e.f.splitlines()
                for line in f_lines[:TEXT_F_LINES]:
                    out.append(f"{pad}    | {line}".rstrip())
                if len(f_lines) > TEXT_F_LINES:
                    out.append(f"{pad}    | ... ({len(f_lines) - TEXT_F_LINES} more lines)")
    return "\n".join(out) + "\n"


def render_findings_markdown(findings: Findings) -> str:
    out = ["## Findings", "", _headline(findings)]
    for sev, groups in findings.by_severity():
        out += ["", f"### Severity {sev}: {SEVERITIES[sev]}", ""]
        for g in groups:
            pad = ""
            if g.root_cause:
                out.append(
                    f"- root cause **{_md(g.root_cause)}**: {len(g.entries)} entries, "
                    f"seen {g.count}x"
                )
                pad = "  "
            for e in g.entries:
                out.append(f"{pad}- `{e.shown}`: {_md(e.title)} ({_status(e)})")
                if e.difference:
                    out.append(f"{pad}  <br>{_md(e.difference)}")
                if e.releases:
                    out.append(f"{pad}  <br>releases: {_md(e.releases)}")
                if e.triage:
                    out.append(f"{pad}  <br>triage: {_md(e.triage)}")
                out.append("")
                out.append(f"{pad}  ```python")
                out += [f"{pad}  {line}".rstrip() for line in e.f.splitlines()]
                out.append(f"{pad}  ```")
                out.append("")
    return "\n".join(out).rstrip() + "\n"


def _md(text: str) -> str:
    """Text inside markdown prose: HTML escaped (GitHub renders inline tags), no stray
    emphasis or code."""
    out = html.escape(text, quote=False)
    for ch in "\\`*_[]|":
        out = out.replace(ch, "\\" + ch)
    return out


FINDINGS_CSS = """
section#findings table.findings { width: 100%; table-layout: fixed; margin-bottom: 1.5rem; }
section#findings col.entry { width: 50%; }
section#findings col.bug { width: 6.5rem; }
section#findings col.count { width: 4.5rem; }
section#findings th, section#findings td { text-align: left; vertical-align: top; }
section#findings td { overflow-wrap: anywhere; }
section#findings th.count, section#findings td.count { text-align: right; }
section#findings .title { font-weight: 600; margin: 0.3rem 0 0.2rem; }
section#findings .difference { margin: 0.2rem 0; color: #333; font-size: 0.95em; }
section#findings .triage { margin: 0.2rem 0; color: #555; font-size: 0.85em; }
section#findings pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0;
  background: #f6f8fa; padding: 0.4rem 0.5rem; font-size: 0.8rem; line-height: 1.35; }
section#findings tr.root-cause td { background: #eef3fb; }
section#findings tr.fixed td { background: #f7f7f7; color: #666; }
section#findings tr.fixed .title { font-weight: 500; }
section#findings .fixed-tag { display: inline-block; color: #2e7d32; font-size: 0.85em;
  border: 1px solid #a5d6a7; border-radius: 0.3em; padding: 0 0.3em; }
section#findings h3 { margin-bottom: 0.4rem; }
section#findings p.jump a { text-decoration: none; }
section#findings p.jump .sev { margin-left: 0.8em; }
section#findings .sev { display: inline-block; min-width: 1.5em; text-align: center;
  border-radius: 0.3em; color: #fff; margin-right: 0.4em; }
section#findings .sev-1 { background: #b71c1c; } section#findings .sev-2 { background: #e65100; }
section#findings .sev-3 { background: #f9a825; } section#findings .sev-4 { background: #546e7a; }
section#findings .sev-5 { background: #90a4ae; }
"""


def render_findings_html(findings: Findings) -> str:
    """The page's findings section: one table per severity, most severe first."""
    esc = html.escape
    parts = [
        '<section id="findings">',
        "<h2>Findings</h2>",
        f"<p>{esc(_headline(findings))}</p>",
    ]
    if findings.groups:
        links = " ".join(
            f'<a href="#severity-{s}"><span class="sev sev-{s}">{s}</span></a>'
            f"{esc(SEVERITIES[s].split(' (')[0])} ({len(_entries(gs))})"
            for s, gs in findings.by_severity()
        )
        parts.append(f'<p class="jump">Severity: {links}</p>')
    for sev, groups in findings.by_severity():
        parts.append(
            f'<h3 id="severity-{sev}"><span class="sev sev-{sev}">{sev}</span>'
            f"Severity {sev}: {esc(SEVERITIES[sev])}</h3>"
        )
        parts.append(
            f'<table class="findings" data-severity="{sev}">'
            '<colgroup><col class="entry"><col class="bug"><col class="count"><col class="f">'
            '</colgroup><thead><tr><th>entry</th><th>bug in</th><th class="count">count</th>'
            "<th>the repro's f</th></tr></thead><tbody>"
        )
        for g in groups:
            if g.root_cause:
                parts.append(
                    f'<tr class="root-cause"><td colspan="4">root cause '
                    f"<strong>{esc(g.root_cause)}</strong>: {len(g.entries)} entries, "
                    f"seen {g.count} times</td></tr>"
                )
            for e in g.entries:
                parts.append(_row_html(e, sev))
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "\n".join(parts)


def _row_html(e: FindingEntry, sev: int) -> str:
    esc = html.escape
    path = f"<code>{esc(e.shown)}</code>"
    if e.path is not None:
        path = f'<a href="{esc(e.path.as_uri())}">{path}</a>'
    own = f" <em>(severity {e.severity} on its own)</em>" if e.severity != sev else ""
    fixed = (
        ' <span class="fixed-tag" title="expected &quot;pass&quot;: replay must not '
        'reproduce it">fixed</span>'
        if e.fixed
        else ""
    )
    cls = "finding fixed" if e.fixed else "finding"
    cell = [
        f'<div class="path">{path}{own}</div>',
        f'<div class="title">{esc(e.title)}</div>',
    ]
    if e.difference:
        cell.append(f'<div class="difference">{esc(e.difference)}</div>')
    if e.releases:
        cell.append(f'<div class="releases">releases: {esc(e.releases)}</div>')
    if e.triage:
        cell.append(f'<div class="triage">triage: {esc(e.triage)}</div>')
    if word := _repro_word(e):
        cell.append(f'<div class="repro-status">{esc(word[2:])}</div>')
    return (
        f'<tr class="{cls}" data-severity="{sev}" data-path="{esc(e.shown)}">'
        f"<td>{''.join(cell)}</td><td>{esc(e.bug_in)}{fixed}</td>"
        f'<td class="count">{e.count}</td>'
        f'<td><pre class="f">{esc(e.f or "(no repro.py)")}</pre></td></tr>'
    )
