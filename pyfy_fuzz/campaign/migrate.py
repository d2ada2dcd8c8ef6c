"""`pyfy-fuzz migrate CORPUS`: re-key entries of an older case.json format as bug identities.

(Format 2 and 3 entries are migrated the same way: format 3 refined the identity --
consequences folded into causes, variant calls by what they compiled -- and format 4 reads a
symbolic size in a crash's message as a size, so their keys may have moved.)

Format 1 signed a finding by kind, oracle, subject, wrapper paths and exception type, so one
root cause was split across signatures and distinct crashes merged. Format 2 signs it by its
identity (Note [Bug identity] in oracles/identity.py), which needs what format 1 never stored:
the normalised message and the innermost torch frame of a crash, the aspect of a divergence.
So each old entry's spec is run again (on serve workers, as replay does) and the finding of
the same kind, oracle and subject gives the identity; an entry that no longer reproduces (a
fixed bug) is re-keyed from its stored explanation. Old entries that turn out to be one bug
become one entry: the smallest spec, the counts added, every triage note kept. Entries of one
identity whose wrapper paths are comparable are listed as fold candidates, and `--fold` folds
them once a person has read them: merging a GPU corpus into this one is copying its entries in
and migrating (Note [One entry per identity across wrapper paths]).

Nothing is lost: an old entry is moved to ``CORPUS/.migrated/<old name>`` only after its new
entry is in place, and every write goes through `Corpus.put` (staged, renamed).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracles import Finding
from oracles.finding import CAMPAIGN_KINDS
from pyfy_fuzz.campaign.replay import run_specs
from pyfy_fuzz.corpus.entry import derived_fields, entry_files, readme_of
from pyfy_fuzz.corpus.repro import check_repro, repro_record
from pyfy_fuzz.corpus.store import CASE, FORMAT, OLD_FORMATS, Corpus, Entry, free_name
from pyfy_fuzz.corpus.trace import TRACE_DIR
from pyfy_fuzz.schema.case import CaseError, CaseRecord
from pyfy_fuzz.schema.messages import Died, Done

__all__ = ["MigrateReport", "migrate", "old_entries", "render"]


@dataclass
class MigrateReport:
    migrated: list[tuple[str, str, str]] = field(default_factory=list)  # (old, new, how)
    notes: list[str] = field(default_factory=list)


def old_entries(root: Path) -> list[Entry]:
    """Entries under `root` whose case.json has an older format (unreadable ones are left to
    the corpus's own problem reporting)."""
    found = []
    for p in sorted(root.iterdir()):
        if p.name.startswith(".") or not (p / CASE).is_file():
            continue
        try:
            case = json.loads((p / CASE).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(case, dict) and case.get("format") in OLD_FORMATS:
            found.append(Entry(p, case))
    return found


def _finding_from_result(case: dict[str, Any], result: Done | Died | None) -> Finding | None:
    """The finding of a re-run that is the old entry's bug: same kind, oracle and subject,
    the same exception type first."""
    if isinstance(result, Died):
        if result.kind == case["kind"]:
            return Finding(
                case["kind"], case["oracle"], case["subject"], (), case.get("explanation", ""),
                case.get("exc_type"),
            )  # fmt: skip
        return None
    if result is None:
        return None
    found = [Finding.from_dict(f) for f in result.outcome.findings]
    same = [f for f in found if (f.kind, f.oracle, f.subject) == _kos(case)]
    if not same and case["kind"] == "crash":  # format 5 names a crash by its exception
        same = [f for f in found if (f.kind, f.subject) == _kos(case)[::2]]
    same.sort(key=lambda f: f.exc_type != case.get("exc_type"))
    return same[0] if same else next((f for f in found if _moved(case, f)), None)


def _kos(case: dict[str, Any]) -> tuple[str, str, str]:
    return case["kind"], case["oracle"], case["subject"]


def _moved(case: dict[str, Any], f: Finding) -> bool:
    """`f` is the old entry's bug under another oracle or kind of format 3: a consequence
    folded into its cause (Note [Consequences]), or a variant call's finding identified by
    what the call compiled (Note [Variant-call identity])."""
    if f.subject != case["subject"]:
        return False
    if any(o == case["oracle"] for o, _ in f.consequences):
        return f.kind == case["kind"]
    return case["oracle"] == "guards" and any(d.call.later for d in f.differences)


def _found_on(root: Path, device: str, report: MigrateReport) -> list[Entry]:
    """The old entries found on `device`; the others are noted in `report` and left."""
    old = []
    for e in old_entries(root):
        found_on = str(e.case.get("device") or "cpu")
        if found_on == device:
            old.append(e)
        else:
            report.notes.append(
                f"{e.path.name}: found on {found_on}: left as it is "
                f"(migrate it with --device {found_on} there)"
            )
    return old


def _kept_case(old: dict[str, Any]) -> dict[str, Any]:
    """An entry that no longer reproduces (a fixed bug, or a program this torch refuses):
    its stored identity is kept as it was -- no difference is known to re-key it from, and
    a guess parsed from its words would be a key no campaign makes -- and it is marked so."""
    if "identity" not in old or "coarse" not in old:
        raise CaseError("it does not reproduce, and its format has no identity to keep")
    case = dict(old)
    case.update(format=FORMAT, migrated_from=[old["signature"]], migrated_by="kept")
    return CaseRecord.from_json(case).to_json()


def _new_case(old: dict[str, Any], f: Finding) -> dict[str, Any]:
    """The entry of a re-run's finding: its identity, its differences and the words made
    from them; the old entry's triage, counts and dates kept."""
    d = f.to_dict()
    case = dict(old)
    case.update(
        format=FORMAT,
        signature=f.signature,
        coarse=f.coarse,
        identity=f.identity(),
        wrappers=list(f.wrappers) or old.get("wrappers", []),
        exc_type=f.exc_type,
        aspect=d["aspect"],
        message=f.message,
        frame=f.frame,
        consequences=d["consequences"],
        explanation=f.explanation,  # the re-run's: its lines name what the identity rests on
        differences=d["differences"],
        migrated_from=[old["signature"]],
        migrated_by="re-run",
    )
    case.update(_derived(case))
    return CaseRecord.from_json(case).to_json()  # a readable entry of this format, or raise


def _files(case: dict[str, Any], source: Entry, *, has_pythonified: bool) -> dict[str, str]:
    """The entry's generated files: rendered from its differences; for an entry kept as it
    was (it did not reproduce: no difference to render a check from), its own files."""
    if case.get("migrated_by") != "kept":
        return entry_files(case, has_pythonified=has_pythonified)
    names = ("repro.py", "program.py", "README.md")
    return {n: (source.path / n).read_text() for n in names if (source.path / n).is_file()}


def _merge(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Old entries that are one bug: the smallest spec, counts added, every triage kept."""
    cases = sorted(cases, key=lambda c: tuple(c.get("size", ())))
    merged = dict(cases[0])
    merged["count"] = sum(int(c.get("count", 1)) for c in cases)
    merged["first_seen"] = min(str(c.get("first_seen", "")) for c in cases)
    merged["migrated_from"] = [s for c in cases for s in c["migrated_from"]]
    notes = [f"{c['migrated_from'][0]}: {c['triage']}" for c in cases if c.get("triage")]
    if len(notes) > 1:
        merged["triage"] = " | ".join(notes)
    return merged


def migrate(
    root: Path, *, workers: int = 1, case_timeout: float = 120.0, device: str = "cpu"
) -> MigrateReport:
    """Re-key every old-format entry of the corpus at `root` found on `device` (see the module
    docstring); an entry found on another device is left as it is, and said so: a bug seen
    on a GPU is re-run on one (`--device cuda`), never judged by a CPU run."""
    corpus = Corpus.open(root, create=False)
    report = MigrateReport()
    old = _found_on(root, device, report)
    results: dict[Path, Done | Died] = {}
    traces = {e.path: corpus.new_staging() / TRACE_DIR for e in old}
    run_specs(
        old,
        lambda e, r: results.__setitem__(e.path, r),
        workers=workers,
        device=device,
        impl=None,
        case_timeout=case_timeout,
        trace_dirs=traces,
    )
    groups: dict[str, list[tuple[Entry, dict[str, Any]]]] = {}
    for e in old:
        f = _finding_from_result(e.case, results.get(e.path))
        try:
            case = _new_case(e.case, f) if f is not None else _kept_case(e.case)
        except CaseError as why:
            report.notes.append(f"{e.path.name}: left as it was: {why}")
            continue
        groups.setdefault(case["signature"], []).append((e, case))
    for sig, members in sorted(groups.items()):
        case = _merge([c for _, c in members])
        source = next(e for e, c in members if c["migrated_from"][0] == case["migrated_from"][0])
        staging = traces[source.path].parent  # holds the re-run's trace
        for e, _ in members:
            if e is not source:
                shutil.rmtree(traces[e.path].parent, ignore_errors=True)
        has_file = (source.path / "pythonified.py").is_file()
        if has_file:
            shutil.copy2(source.path / "pythonified.py", staging / "pythonified.py")
        files = _files(case, source, has_pythonified=has_file)  # before anything moves
        # An old entry whose identity did not move holds the new entry's name: set it aside
        # first (kept under .migrated/), and back if the new one cannot be put in place.
        same_name = next((e for e, _ in members if e.path == root / sig), None)
        aside = _retire(root, same_name.path) if same_name is not None else None
        path, how = corpus.put(staging, case, files)
        if how == "blocked":
            if aside is not None:
                os.rename(aside, root / sig)
            report.notes.append(f"{sig}: a directory of that name does not load; left alone")
            continue
        for e, c in members:
            if e is not same_name:
                _retire(root, e.path)
            report.migrated.append((e.path.name, path.name, c["migrated_by"]))
        if case["kind"] != "hang" and case["migrated_by"] != "kept":  # the new repro.py, run
            # where pyfy-fuzz cannot be imported
            code, tail = check_repro(path)
            corpus.annotate(sig, {"repro": repro_record(path, code, tail, case["kind"])})
    return report


def render(root: Path) -> list[tuple[str, list[str], str | None]]:
    """`pyfy-fuzz migrate --render`: write every current-format entry's generated files anew
    from its case.json, and the words case.json holds that are made from its differences
    (severity, title, difference), for a renderer that changed while the identities held
    (no re-run, no re-key). A rewritten repro.py is checked again where pyfy-fuzz cannot be
    imported. Returns (entry, files rewritten, the new repro's verdict or None)."""
    corpus = Corpus.open(root, create=False)
    done: list[tuple[str, list[str], str | None]] = []
    for sig, e in sorted(corpus.entries.items()):
        if not e.case.get("differences") and e.case["kind"] not in CAMPAIGN_KINDS:
            continue  # kept as it was (did not reproduce when migrated): nothing to render from
        derived = _derived(e.case)
        if any(e.case.get(k) != v for k, v in derived.items()):
            corpus.annotate(sig, derived)  # the words made from the differences, anew
            e = corpus.entries[sig]
        has_file = (e.path / "pythonified.py").is_file()
        changed = corpus.refresh(sig, entry_files(e.case, has_pythonified=has_file))
        verdict = None
        if "repro.py" in changed and e.case["kind"] != "hang":
            record = repro_record(e.path, *check_repro(e.path), e.case["kind"])
            corpus.annotate(sig, {"repro": record})
            verdict = str(record["verdict"])
            e = corpus.entries[sig]  # README.md says what the new check showed (releases.py)
            corpus.refresh(sig, {"README.md": readme_of(e.path, e.case)})
        done.append((sig, changed, verdict))
    return done


def _derived(case: dict[str, Any]) -> dict[str, Any]:
    """What case.json holds that is made from the differences (entry.derived_fields), under
    the entry's own backend, mode and device."""
    mode = case["spec"].get("plan", {}).get("mode")
    backend, device = case.get("backend", "aot_eager"), case.get("device", "cpu")
    return derived_fields(case, backend, mode, device)


def _retire(root: Path, path: Path) -> Path:
    """Move a migrated old entry under .migrated/ (kept, out of the corpus's way); where it
    went."""
    target = free_name(root / ".migrated", path.name)
    os.rename(path, target)
    return target
