"""The human-facing files of a corpus entry: repro.py and README.md (case.json is the data).

torch-free: the campaign process writes entries without importing the subjects.
"""

from __future__ import annotations

from typing import Any

from generators import render, spec_from_dict

_WHO = {
    "torch": "a bug in torch (torch.compile differs from eager, or torch crashed)",
    "pythonify": "a bug in pyfy-fuzz's bundled pythonify generator",
    "pyfy-fuzz": "a bug in pyfy-fuzz itself (the harness)",
}


def entry_files(case: dict[str, Any], *, has_pythonified: bool) -> dict[str, str]:
    """{"repro.py": ..., "README.md": ..., "program.py": ...} for a case.json dict."""
    from .repro import render_repro

    spec = spec_from_dict(case["spec"])
    finding = {
        k: case.get(k)
        for k in ("signature", "kind", "oracle", "subject", "explanation", "wrappers")
    }
    return {
        "repro.py": render_repro(spec, finding, backend=case["backend"], device=case["device"]),
        "program.py": render(spec, case["device"]),
        "README.md": readme(case, has_pythonified=has_pythonified),
    }


def readme(case: dict[str, Any], *, has_pythonified: bool) -> str:
    plan = case["spec"].get("plan", {})
    how = [f"backend={case['backend']}", f"device={case['device']}"]
    how += [f"{k}={plan[k]}" for k in ("frontend", "mode", "dynamic") if plan.get(k)]
    shrink = case.get("shrink") or {}
    if shrink.get("interrupted"):
        shrunk = "shrink interrupted (budget or worker death): the smallest spec seen is saved"
    else:
        shrunk = f"shrunk by {shrink.get('by', '?')}" + (
            f" in {shrink['cases']} cases" if "cases" in shrink else ""
        )
    expected = (
        "expected to keep failing on stock torch (a torch bug): `pyfy-fuzz replay` reports it "
        "as a known failure until torch fixes it"
        if case["expected"] == "fail"
        else "must pass once fixed: `pyfy-fuzz replay` fails while it still reproduces"
    )
    lines = [
        f"# {case['signature']}",
        "",
        f"**{case['kind']}** found by the **{case['oracle']}** oracle in **{case['subject']}**: "
        f"{_WHO.get(case.get('bug_in', ''), 'unclassified')}.",
        "",
        f"> {case.get('explanation', '').strip()}",
        "",
        f"- Wrapper paths: {', '.join(case.get('wrappers') or []) or '(none recorded)'}",
        f"- Run with: {', '.join(how)}; torch {case.get('torch')}, "
        f"pyfy-fuzz {case.get('pyfy_fuzz')}",
        f"- Seen {case.get('count', 1)} time(s); {shrunk}.",
        f"- Status: {expected}.",
    ]
    if case.get("triage"):
        lines.append(f"- Triage: {case['triage']}")
    if case.get("reason"):
        lines.append(f"- The worker died: {case['reason']} during {case.get('phase') or 'setup'}.")
    if case.get("phase") == "compile":
        lines.append(
            "- The compile phase runs torch.compile and pythonify's capture together, so "
            "`bug_in` is a first guess: `repro.py` compiles with plain torch.compile before it "
            "loads the pythonified file, and tells which one dies."
        )
    lines += [
        "",
        "Reproduce:",
        "",
        "```sh",
        "python repro.py             # exits 1 while the bug is present, 0 once fixed",
        "pyfy-fuzz replay .          # the full oracles, as the campaign ran them",
        "```",
        "",
        "`program.py` is the program alone (eager only); "
        + (
            "`pythonified.py` is the file pythonify generated for it."
            if has_pythonified
            else "no pythonified file was produced for this case."
        ),
        "",
    ]
    return "\n".join(lines)
