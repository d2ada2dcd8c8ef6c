"""The human-facing files of a corpus entry: repro.py, program.py and README.md, a pt2 bug
report (case.json is the data).

torch-free: the campaign process writes entries without importing the subjects.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from generators import render, spec_from_dict
from oracles.groups import GROUPS, group_of
from oracles.identity import difference_of, severity_of, title_of
from oracles.upstream import known_upstream
from pyfy_fuzz.corpus.releases import fixed_in, records_of, releases_line
from pyfy_fuzz.corpus.repro import render_repro, title
from pyfy_fuzz.schema.config import call_context
from pyfy_fuzz.schema.difference import Difference, reference_of

__all__ = [
    "derived_fields",
    "entry_files",
    "readme",
    "readme_of",
]

_WHO = {
    "torch": "a bug in torch (torch.compile differs from eager, or torch crashed)",
    "pythonify": "a bug in pyfy-fuzz's bundled pythonify generator",
    "pyfy-fuzz": "a bug in pyfy-fuzz itself (the harness)",
}
# What render_repro reads of a case (the rest of case.json is the campaign's bookkeeping).
_FINDING_KEYS = (
    "signature",
    "kind",
    "oracle",
    "subject",
    "explanation",
    "exc_type",
    "aspect",
    "message",
    "title",
    "difference",
    "differences",
    "wrappers",
    "device",
)
_CONFIG_LINE = re.compile(r"^torch\._(inductor|functorch|dynamo)\.config\.\w+ = .*")


def derived_fields(
    finding: dict[str, Any], backend: str, mode: str | None, device: str
) -> dict[str, Any]:
    """What case.json holds that is made from a finding's differences -- its severity, group,
    known upstream issues, title and first difference in words -- as the campaign writes
    them and `migrate` (re-keying, or `--render`) writes them anew."""
    return {
        "severity": severity_of(finding),
        "group": group_of(finding),
        "upstream": known_upstream(finding),
        "title": title_of(finding, backend, mode, device),
        "difference": difference_of(finding),
    }


def entry_files(case: dict[str, Any], *, has_pythonified: bool) -> dict[str, str]:
    """{"repro.py", "program.py", "README.md"} for a case.json dict."""
    spec = spec_from_dict(case["spec"])
    finding = {k: case[k] for k in _FINDING_KEYS if k in case}
    repro = render_repro(spec, finding, backend=case["backend"], device=case["device"])
    return {
        "repro.py": repro,
        "program.py": render(spec, case["device"]),
        "README.md": readme(case, has_pythonified=has_pythonified, repro=repro),
    }


def readme(case: dict[str, Any], *, has_pythonified: bool, repro: str | None = None) -> str:
    """The entry as a pt2 bug report: title, expected vs actual, the repro, backend / mode /
    config, versions, then what pyfy-fuzz knows of it. `repro` is the entry's repro.py (made
    from the case when not given)."""
    if repro is None:
        finding = {k: case[k] for k in _FINDING_KEYS if k in case}
        spec = spec_from_dict(case["spec"])
        repro = render_repro(spec, finding, backend=case["backend"], device=case["device"])
    lines = [f"# {_title(case)}", ""]
    known = [f"pytorch/pytorch#{n}" for n in case.get("upstream") or ()]
    if known:  # Note [Known upstream] in oracles/upstream.py: a hint, not a proof
        lines += [f"Known upstream: {', '.join(known)} (the same shape of bug).", ""]
    group = case.get("group")
    if group in ("refusal", "metadata"):
        lines += [f"Group: {GROUPS[group]}.", ""]
    lines += ["## Expected vs actual", "", *_expected_vs_actual(case), ""]
    lines += ["## Repro", "", "```python", repro.rstrip("\n"), "```", ""]
    run = (
        "`python repro.py` exits 1 while the bug is present, 0 once it is fixed (2: it raised "
        "something else, 3: the reference raises)"
    )
    if case.get("subject") == "pythonify":
        run += "; it loads `pythonified.py` from next to it"
    lines += [f"{run}.", ""]
    lines += ["## Backend / mode / config", "", *_setup(case, repro), ""]
    lines += ["## Versions", "", *_versions(case), ""]
    lines += ["## pyfy-fuzz details", "", *_details(case, has_pythonified), ""]
    return "\n".join(lines)


def readme_of(entry_dir: Path, case: dict[str, Any]) -> str:
    """README.md anew for an entry on disk whose case.json changed (a repro check, a release
    record), around the repro.py it has."""
    repro = entry_dir / "repro.py"
    return readme(
        case,
        has_pythonified=(entry_dir / "pythonified.py").is_file(),
        repro=repro.read_text() if repro.is_file() else None,
    )


def _title(case: dict[str, Any]) -> str:
    mode = case["spec"].get("plan", {}).get("mode")
    return title(case, str(case.get("backend")), mode)


def _expected_vs_actual(case: dict[str, Any]) -> list[str]:
    """Expected (the reference: eager, or torch.compile for pythonify) against actual (the
    subject), from the first difference's fields; the whole explanation below."""
    subject = str(case.get("subject", "torch.compile"))
    ref = reference_of(subject)
    diffs = case.get("differences") or ()
    if diffs:
        d = Difference.from_dict(diffs[0])
        at = "" if d.call.kind == "setup" else f", {d.call.label()}"
        pair = _sides(d)
        lines = [f"- Expected ({ref}{at}): {pair[0]}", f"- Actual ({subject}): {pair[1]}"]
    else:  # a campaign's own finding (a dead worker, a hang)
        lines = [f"- {case.get('difference') or case.get('kind')}"]
    explanation = str(case.get("explanation") or "").strip()
    if explanation:
        lines += ["", "What pyfy-fuzz saw:", "", "```", explanation, "```"]
    return lines


def _sides(d: Difference) -> tuple[str, str]:
    """(the reference's side, the subject's side) of a difference, in words."""
    if d.locus == "exception":
        e = d.exc
        assert e is not None
        if d.prop == "raised":
            return "runs without an error", f"raises {e.type}: {e.message}"
        if d.prop == "returned":
            return f"raises {e.type}: {e.message}", "returns"
        if d.prop == "not_guard":
            return f"raises {d.expected}", f"raises {e.type}: {e.message}"
        r = d.ref_exc
        return (f"raises {r.type}: {r.message}" if r else "raises"), f"raises {e.type}: {e.message}"
    if d.locus in ("seq_nr", "cudagraph_skip", "guard"):
        return "as torch's graphs say", d.note
    where = _where(d)
    if d.prop == "values":
        return f"{where} is {d.expected}", f"{where} is {d.actual}"
    what = d.prop.replace("_", " ")
    return f"{where} {what} {d.expected}", f"{where} {what} {d.actual}"


def _where(d: Difference) -> str:
    """The tensor or fact a difference is of, with the program's own names."""
    inner = f".{d.inner}" if d.inner else ""
    if d.locus in ("output", "write", "later"):
        return f"output {d.index}{inner}"
    if d.locus == "input":
        return f"input {d.name}{inner} after the call"
    if d.locus == "grad":
        return f"grad of {d.name}{inner}"
    if d.locus == "grad2":
        return f"grad of {d.name}{inner} after the second backward"
    if d.locus == "version":
        return f"the version counter of {d.name}: moved"
    return d.locus.replace("_", " ")


def _setup(case: dict[str, Any], repro: str) -> list[str]:
    plan = case["spec"].get("plan", {})
    frontend = (
        "the AOT front-end (`aot_function`, no Dynamo)"
        if plan.get("frontend") == "aot"
        else "Dynamo (`torch.compile`)"
    )
    calls = f"{plan.get('calls', 1)} call(s)"
    if plan.get("backward"):
        calls += f", backward with {plan.get('tangents', 'randn')} tangents"
    if plan.get("second_backward"):
        calls += f", a second backward ({plan['second_backward']})"
    if plan.get("saved_tensor_hooks"):
        calls += ", inside saved_tensors_hooks"
    if plan.get("grad_fn_hooks"):
        calls += ", a hook and a pre-hook on each non-leaf argument's grad_fn"
    if plan.get("through"):
        calls += f", each call through torch.utils.checkpoint ({plan['through']})"
    if plan.get("variant"):
        calls += f", then a call with other inputs ({plan['variant']})"
    drawn = tuple(plan.get("config", ()))
    context = call_context(drawn)
    if context is not None:
        calls += f", each call under {context}"
    config = [line for line in repro.splitlines() if _CONFIG_LINE.match(line)]
    return [
        f"- backend: `{case.get('backend')}`, device: `{case.get('device')}`, front-end: "
        f"{frontend}",
        f"- mode: `{plan.get('mode') or 'default'}`, dynamic: `{bool(plan.get('dynamic'))}`",
        f"- plan: {calls}",
        "- config (the campaign's settings that matter to this program, set in repro.py): "
        + (", ".join(f"`{c.split('  #')[0]}`" for c in config) or "none, torch's defaults"),
        "- drawn configuration (pyfy-fuzz's catalogue): "
        + (", ".join(f"`{n}`" for n in drawn) or "none, torch's defaults"),
    ]


def _versions(case: dict[str, Any]) -> list[str]:
    device = str(case.get("device") or "cpu")
    lines = [f"- torch: {case.get('torch') or 'not recorded'} (found on {device})"]
    records = records_of(case)
    if records:  # Note [Which releases have a bug] in releases.py
        latest = max(r.checked for r in records)[:10]
        lines.append(
            f"- Releases: **{releases_line(records, device)}** (repro.py run under each torch; "
            f"latest run {latest}; `pyfy-fuzz versions` adds releases)"
        )
    lines += [
        f"- Python: {case.get('python') or 'not recorded'}",
        f"- OS: {case.get('os') or 'not recorded'}",
    ]
    if case.get("collect_env"):
        env = str(case["collect_env"]).strip()
        lines += [
            "",
            "<details><summary>collect_env</summary>",
            "",
            "```",
            env,
            "```",
            "</details>",
        ]
    return lines


def _details(case: dict[str, Any], has_pythonified: bool) -> list[str]:
    shrink = case.get("shrink") or {}
    if shrink.get("interrupted"):
        shrunk = "shrink interrupted (budget or worker death): the smallest spec seen is saved"
    else:
        shrunk = f"shrunk by {shrink.get('by', '?')}" + (
            f" in {shrink['cases']} cases" if "cases" in shrink else ""
        )
    status = (
        "expected to keep failing on stock torch (a torch bug): `pyfy-fuzz replay` reports it "
        "as a known failure until torch fixes it"
        if case.get("expected") == "fail"
        else "must pass once fixed: `pyfy-fuzz replay` fails while it still reproduces"
    )
    fixed = fixed_in(records_of(case))
    if fixed and case.get("expected") == "fail":
        status = (
            f"fixed upstream in {', '.join(fixed)} (`pyfy-fuzz replay` under it says "
            "fixed-upstream); a regression test, known failure, on the older releases"
        )
    lines = [
        f"- Signature: `{case.get('signature')}`: **{case.get('kind')}** found by the "
        f"**{case.get('oracle')}** oracle in **{case.get('subject')}**, "
        f"{_WHO.get(case.get('bug_in', ''), 'unclassified')}.",
        f"- Wrapper paths: {', '.join(case.get('wrappers') or []) or '(none recorded)'}",
        f"- Seen {case.get('count', 1)} time(s); {shrunk}.",
        f"- Status: {status}.",
    ]
    if case.get("triage"):
        lines.append(f"- Triage: {case['triage']}")
    if case.get("reason"):
        lines.append(f"- The worker died: {case['reason']} during {case.get('phase') or 'setup'}.")
    if case.get("phase") == "compile":
        lines.append(
            "- The compile phase runs torch.compile and pythonify's capture together, so "
            "`bug_in` is a first guess: `repro.py` compiles with plain torch.compile."
        )
    lines += [
        f"- The full oracles, as the campaign ran them: `pyfy-fuzz replay {_here(case)}`.",
        "- `program.py` is the program alone (eager only); "
        + (
            "`pythonified.py` is the file pythonify generated for it."
            if has_pythonified
            else "no pythonified file was produced for this case."
        ),
    ]
    return lines


def _here(case: dict[str, Any]) -> str:
    return f"corpus/{case['signature']}" if case.get("signature") else "<this directory>"
