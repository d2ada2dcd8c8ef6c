"""``pyfy-fuzz run`` and ``pyfy-fuzz replay``: flags in, plain values to the campaign/replay.

Every check a user can fail (budget, shard, families, device, corpus, --json path, the
pythonify plug-in) happens here, before any worker starts, and ends in one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyfy_fuzz.history import History

_ORACLE_WIDTH = 12


def _cli_error(message: str) -> Exception:
    from pyfy_fuzz.cli import CliError

    return CliError(message)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def add_run_parser(commands: Any) -> None:
    p = commands.add_parser(
        "run",
        help="fuzz: generate programs, compare eager / torch.compile / pythonify, save findings",
        description=(
            "Run a campaign for --budget: worker processes generate programs and compare eager, "
            "torch.compile and the pythonified file; every new finding is shrunk and saved to "
            "--corpus as a directory named by its signature. Exit status: 0 no new findings, "
            "1 new findings, 2 usage or environment error."
        ),
    )
    p.add_argument("--budget", default="10m", help="90s, 10m, 1h, 1h30m (default 10m)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--backend", choices=["aot_eager", "inductor"], default="aot_eager")
    p.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: one per core)"
    )
    p.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    p.add_argument("--corpus", type=Path, default=Path("corpus"), help="default ./corpus")
    p.add_argument(
        "--wrappers",
        default=None,
        help="comma-separated program families to generate (default: all); "
        "see `generators.FAMILIES`",
    )
    p.add_argument("--json", type=Path, default=None, metavar="SUMMARY.json")
    p.add_argument("--max-cases", type=int, default=None, help="stop after N cases")
    p.add_argument(
        "--shard", default="1/1", metavar="K/N", help="this machine's share of the seed space"
    )
    p.add_argument(
        "--pythonify",
        choices=["bundled", "torch"],
        default="bundled",
        help="implementation under test: the bundled generator, or torch.compile(pythonify=)",
    )
    p.add_argument(
        "--case-timeout", type=float, default=60.0, help="seconds before a case is a hang"
    )
    p.add_argument(
        "--shrink-seconds", type=float, default=None, help="per finding (default: from budget)"
    )
    p.add_argument("--progress", choices=["auto", "rich", "plain", "quiet"], default="auto")
    p.add_argument(
        "--coverage",
        action="store_true",
        help="measure line and branch coverage of torch's AOTAutograd runtime wrappers and of "
        "the bundled generator across workers (slower); --json gets the numbers",
    )
    p.set_defaults(run=cmd_run)


def add_replay_parser(commands: Any) -> None:
    p = commands.add_parser(
        "replay",
        help="re-run saved corpus entries; report which still fail and which are fixed",
        description=(
            "Re-run corpus entries (a corpus directory, or entry directories). Entries marked "
            'expected "fail" (torch bugs) are known failures; entries marked expected "pass" '
            "(fixed bugs of the bundled generator or of pyfy-fuzz) must not reproduce. "
            "Exit status: 0 all as expected, 1 an expected-pass entry still fails or an entry "
            "could not be judged (error), 2 usage error."
        ),
    )
    p.add_argument("paths", nargs="*", type=Path, default=[Path("corpus")], metavar="PATH")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument(
        "--pythonify",
        choices=["bundled", "torch"],
        default=None,
        help="implementation to replay with (default: the one each entry was found with)",
    )
    p.add_argument("--case-timeout", type=float, default=120.0)
    p.add_argument("--json", type=Path, default=None, metavar="REPORT.json")
    p.set_defaults(run=cmd_replay)


# -- checks shared by both ----------------------------------------------------------------------
def _check_device(device: str) -> None:
    if device == "cuda":
        import torch

        if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
            raise _cli_error("--device cuda: no usable GPU (torch.cuda.is_available() is False)")


def _check_impl(name: str | None) -> None:
    if name == "torch":
        from pyfy_fuzz.subjects.impl import torch_has_pythonify

        if not torch_has_pythonify():
            import torch

            raise _cli_error(
                f"--pythonify torch: the installed torch {torch.__version__} has no "
                "torch.compile(pythonify=...); use --pythonify bundled"
            )


def _check_json_path(path: Path | None) -> None:
    if path is None:
        return
    if path.is_dir():
        raise _cli_error(f"--json {path} is a directory")
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        raise _cli_error(
            f"--json {path}: directory {path.parent} does not exist or is not writable"
        )


def _workers(n: int | None) -> int:
    if n is None:
        return _cores()
    if n < 1:
        raise _cli_error(f"--workers must be at least 1, got {n}")
    return n


# -- run ---------------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    from pyfy_fuzz.budget import parse_budget
    from pyfy_fuzz.streams import parse_shard

    try:
        budget = parse_budget(args.budget)
        shard = parse_shard(args.shard)
    except ValueError as e:
        raise _cli_error(str(e)) from None
    wrappers = None
    if args.wrappers is not None:
        from generators import FAMILIES

        wrappers = [w.strip() for w in args.wrappers.split(",") if w.strip()]
        unknown = [w for w in wrappers if w not in FAMILIES]
        if unknown or not wrappers:
            raise _cli_error(
                f"--wrappers: unknown or no families {unknown or wrappers}; "
                f"choose from {', '.join(FAMILIES)}"
            )
    if args.max_cases is not None and args.max_cases < 1:
        raise _cli_error(f"--max-cases must be at least 1, got {args.max_cases}")
    if args.case_timeout <= 0:
        raise _cli_error("--case-timeout must be positive")
    if args.shrink_seconds is not None and args.shrink_seconds < 0:
        raise _cli_error("--shrink-seconds must not be negative")
    workers = _workers(args.workers)
    _check_json_path(args.json)
    _check_device(args.device)
    _check_impl(args.pythonify)
    from pyfy_fuzz.campaign import CampaignConfig

    config = CampaignConfig(
        budget_s=budget,
        corpus=args.corpus,
        device=args.device,
        backend=args.backend,
        workers=workers,
        seed=args.seed,
        wrappers=wrappers,
        max_cases=args.max_cases,
        shard=shard,
        impl=args.pythonify,
        case_timeout=args.case_timeout,
        shrink_seconds=args.shrink_seconds,
        json_path=args.json,
        progress=args.progress,
        coverage=args.coverage,
    )
    return _run_campaign(config).exit_code


def _run_campaign(config: Any) -> Any:
    """Run it, turn what stops it from starting into a one-line exit 2, print the summary."""
    from pyfy_fuzz.campaign import run_campaign
    from pyfy_fuzz.corpus import CorpusError
    from pyfy_fuzz.pool import WorkerStartError

    try:
        result = run_campaign(config)
    except CorpusError as e:
        raise _cli_error(str(e)) from None
    except WorkerStartError as e:
        raise _cli_error(f"workers cannot start: {str(e).splitlines()[0]}") from None
    print_summary(result.summary, sys.stdout)
    return result


def _check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise _cli_error(f"--out {out} is not a directory")


def print_summary(s: dict[str, Any], out: Any) -> None:
    from pyfy_fuzz.budget import format_duration

    c = s["config"]
    print(
        f"\npyfy-fuzz run: {s['cases']} cases in {format_duration(s['elapsed_s'])} "
        f"({s['cases_per_min']:.0f}/min, {s['shrink_cases']} of them shrinking); "
        f"torch {s['torch']}, {c['backend']} on {c['device']}, {c['workers']} workers, "
        f"shard {c['shard']}",
        file=out,
    )
    findings = s["findings"]
    print(f"new findings: {len(findings)}", file=out)
    for f in findings:
        print(
            f"  {f['kind']:<20} {f['oracle']:<{_ORACLE_WIDTH}} {f['subject']:<14} {f['path']}",
            file=out,
        )
    seen = s["known_seen"]
    if seen:
        print(
            f"known findings seen again: {len(seen)} signatures, {sum(seen.values())} times",
            file=out,
        )
    hits = s["wrapper_hits"]
    top = ", ".join(f"{p} {n}" for p, n in list(hits.items())[:8])
    print(f"wrapper paths reached: {len(hits)}" + (f" ({top}, ...)" if top else ""), file=out)
    if s["deaths"]:
        print(f"worker deaths: {s['deaths']}", file=out)
    for note in s["notes"]:
        if note.startswith("corpus:"):
            print(f"warning: {note}", file=out)
        elif note.startswith("tlparse:"):
            print(f"note: {note.split(': ', 1)[1]}", file=out)


# -- replay ------------------------------------------------------------------------------------
def cmd_replay(args: argparse.Namespace) -> int:
    from pyfy_fuzz.corpus import CorpusError
    from pyfy_fuzz.replay import collect, replay

    workers = _workers(args.workers)
    _check_json_path(args.json)
    _check_device(args.device)
    _check_impl(args.pythonify)
    try:
        entries, problems = collect(args.paths)
    except (FileNotFoundError, CorpusError) as e:
        raise _cli_error(str(e)) from None
    for p in problems:
        print(f"warning: {p.path}: {p.message}", file=sys.stderr)
    if not entries:
        raise _cli_error(f"no corpus entries under {', '.join(map(str, args.paths))}")

    def show(o: Any) -> None:
        print(f"{o.verdict:<15} {o.entry.signature:<48} {o.detail}", flush=True)

    from pyfy_fuzz.pool import WorkerStartError

    try:
        report = replay(
            args.paths,
            workers=workers,
            device=args.device,
            impl=args.pythonify,
            case_timeout=args.case_timeout,
            on_outcome=show,
        )
    except WorkerStartError as e:
        raise _cli_error(f"workers cannot start: {str(e).splitlines()[0]}") from None
    for o in report.outcomes:
        if o.verdict == "skipped":
            show(o)
    counts: dict[str, int] = {}
    for o in report.outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    print("replay: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    if args.json is not None:
        from pyfy_fuzz.atomic import atomic_write

        atomic_write(args.json, json.dumps(report.to_dict(), indent=1) + "\n")
    return report.exit_code


# -- migrate -----------------------------------------------------------------------------------
def add_migrate_parser(commands: Any) -> None:
    p = commands.add_parser(
        "migrate",
        help="re-key corpus entries of an older format as bug identities",
        description=(
            "Run every old-format entry of a corpus again and save it under its bug identity "
            "(format 4); old entries that are one bug become one entry, triage notes kept. "
            "Old directories move to CORPUS/.migrated/. With --render, every current entry's "
            "repro.py, program.py and README.md are written anew from its case.json instead "
            "(after an upgrade of pyfy-fuzz's renderer; replaced files are kept in "
            "CORPUS/.migrated/). Exit status: 0 done, 2 usage error."
        ),
    )
    p.add_argument("corpus", type=Path, nargs="?", default=Path("corpus"))
    p.add_argument(
        "--render",
        action="store_true",
        help="rewrite the generated files of current-format entries; re-check changed repros",
    )
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--case-timeout", type=float, default=120.0)
    p.set_defaults(run=cmd_migrate)


def cmd_migrate(args: argparse.Namespace) -> int:
    from pyfy_fuzz.corpus import CorpusError
    from pyfy_fuzz.migrate import migrate, old_entries
    from pyfy_fuzz.pool import WorkerStartError

    workers = _workers(args.workers)
    if not args.corpus.is_dir():
        raise _cli_error(f"{args.corpus} is not a directory")
    if args.render:
        return _render(args.corpus)
    if not old_entries(args.corpus):
        print(f"migrate: no old-format entries in {args.corpus}")
        return 0
    try:
        report = migrate(args.corpus, workers=workers, case_timeout=args.case_timeout)
    except CorpusError as e:
        raise _cli_error(str(e)) from None
    except WorkerStartError as e:
        raise _cli_error(f"workers cannot start: {str(e).splitlines()[0]}") from None
    for old, new, how in report.migrated:
        print(f"{old:<48} -> {new}  ({how})")
    for note in report.notes:
        print(f"warning: {note}", file=sys.stderr)
    from pyfy_fuzz.trace import TLPARSE_NOTICE, find_tlparse

    if find_tlparse() is None:
        print(f"note: {TLPARSE_NOTICE}")
    news = {new for _, new, _ in report.migrated}
    print(f"migrate: {len(report.migrated)} entries -> {len(news)} entries")
    return 0


def _render(corpus: Path) -> int:
    from pyfy_fuzz.corpus import CorpusError
    from pyfy_fuzz.migrate import render

    try:
        done = render(corpus)
    except CorpusError as e:
        raise _cli_error(str(e)) from None
    for sig, changed, verdict in done:
        if changed:
            print(f"{sig:<48} {', '.join(changed)}" + (f"  (repro {verdict})" if verdict else ""))
    n = sum(1 for _, changed, _ in done if changed)
    print(f"migrate --render: {n} of {len(done)} entries rewritten")
    return 0


# -- report ------------------------------------------------------------------------------------
def add_report_parser(commands: Any) -> None:
    p = commands.add_parser(
        "report",
        help="findings of a corpus, most severe first, and wrapper paths reached by campaigns",
        description=(
            "With --corpus: the corpus's findings grouped by root cause, most severe first "
            "(severity 1 silent wrong values or gradients ... 5 other), each with its path, "
            "what differs, who has the bug, how often it was seen and the repro's f. With "
            "--run: which AOTAutograd wrapper paths the given campaign summaries reached "
            "(cases, runs, findings, last reached), never-reached paths first. Print it and "
            "write <out>/<name>-<date>.md and .html (findings first). Exit status 2 on a "
            "missing or corrupt summary, or a missing corpus; a damaged corpus entry is "
            "skipped with a warning."
        ),
    )
    p.add_argument(
        "--run",
        dest="runs",  # `run` is the command dispatcher's
        action="append",
        type=Path,
        default=[],
        metavar="SUMMARY.json",
        help="a `pyfy-fuzz run --json` summary; repeat for several runs",
    )
    p.add_argument(
        "--corpus",
        type=Path,
        default=None,
        metavar="DIR",
        help="a corpus directory (e.g. corpus/): its findings lead the report",
    )
    p.add_argument("--out", type=Path, default=Path("reports"), help="default ./reports")
    p.add_argument(
        "--history",
        type=Path,
        metavar="HISTORY.json",
        help="a nightly history (reports/history.json): adds the trend plot across nights",
    )
    p.set_defaults(run=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    import datetime as dt

    from pyfy_fuzz.report import (
        FindingsError,
        ReportError,
        load_findings,
        load_runs,
        path_rows,
        render_text,
        write_report,
    )

    if not args.runs and args.corpus is None:
        raise _cli_error("report: give --corpus DIR, --run SUMMARY.json, or both")
    try:
        runs = load_runs(args.runs)
    except ReportError as e:
        raise _cli_error(str(e)) from None
    findings = None
    if args.corpus is not None:
        try:
            findings = load_findings(args.corpus)
        except FindingsError as e:
            raise _cli_error(str(e)) from None
        _warn(findings.warnings)
    entries = None
    if args.history is not None:
        if not args.history.is_file():
            raise _cli_error(f"no such history: {args.history}")
        entries = _load_history(args.history).entries
    _check_out_dir(args.out)
    name = "report" if runs and findings else "findings" if findings else "wrapper-paths"
    stem = f"{name}-" + dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    try:
        md, page = write_report(runs, args.out, stem, history=entries, findings=findings)
    except OSError as e:
        raise _cli_error(f"cannot write the report under {args.out}: {e.strerror or e}") from None
    print(render_text(path_rows(runs), runs, findings))
    print(f"wrote {md} and {page}")
    return 0


def _load_history(path: Path) -> History:
    """A nightly history (absent: empty); unreadable: a one-line error, its skipped entries
    warned about."""
    from pyfy_fuzz.history import History, HistoryError

    try:
        history = History.load(path)
    except HistoryError as e:
        raise _cli_error(str(e)) from None
    _warn(history.warnings)
    return history


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)


# -- nightly -----------------------------------------------------------------------------------
NIGHTS_IN_REPORT = 30  # run summaries (newest) that the nightly table spans


def add_nightly_parser(commands: Any) -> None:
    p = commands.add_parser(
        "nightly",
        help="a campaign with coverage, then a dated report and a history entry",
        description=(
            "Run a campaign with --coverage into --corpus, save its summary under "
            "<out>/runs/, append an entry to <out>/history.json, and write "
            "<out>/nightly-<date>.md and .html: the corpus's findings, most severe first, then "
            "the wrapper-path table over the newest "
            f"{NIGHTS_IN_REPORT} summaries in <out>/runs/ (a damaged one is skipped with a "
            "warning) and the trend plot of the history. "
            "Exit status as `run`: 0 no new findings, 1 new findings, "
            "2 usage or environment error (including an unreadable history.json, which is "
            "never overwritten)."
        ),
    )
    p.add_argument("--budget", default="1h")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--backend", choices=["aot_eager", "inductor"], default="aot_eager")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--corpus", type=Path, default=Path("corpus"))
    p.add_argument("--out", type=Path, default=Path("reports"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--progress", choices=["auto", "rich", "plain", "quiet"], default="plain")
    p.set_defaults(run=cmd_nightly)


def cmd_nightly(args: argparse.Namespace) -> int:
    import datetime as dt
    import socket

    from pyfy_fuzz.budget import parse_budget
    from pyfy_fuzz.history import entry_for
    from pyfy_fuzz.report import FindingsError, load_findings, load_runs, write_report

    try:
        budget = parse_budget(args.budget)
    except ValueError as e:
        raise _cli_error(str(e)) from None
    workers = _workers(args.workers)
    _check_device(args.device)
    _check_out_dir(args.out)
    history = _load_history(args.out / "history.json")  # fail before hours of work
    now = dt.datetime.now(dt.UTC)
    date, stamp = now.strftime("%Y-%m-%d"), now.strftime("%Y-%m-%dT%H%M%SZ")
    runs_dir = args.out / "runs"
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _cli_error(f"cannot create {runs_dir}: {e.strerror or e}") from None
    summary_path = runs_dir / f"{stamp}-{socket.gethostname()}.json"  # never overwrites
    from pyfy_fuzz.campaign import CampaignConfig

    config = CampaignConfig(
        budget_s=budget,
        corpus=args.corpus,
        device=args.device,
        backend=args.backend,
        workers=workers,
        seed=args.seed,
        json_path=summary_path,
        progress=args.progress,
        coverage=True,
    )
    result = _run_campaign(config)
    history.append(entry_for(result.summary, summary_path))  # tonight is in the trend
    # The table spans recent nights, so "last reached" says when a path stopped being reached.
    recent = sorted(runs_dir.glob("*.json"))[-NIGHTS_IN_REPORT:]
    if summary_path not in recent:
        recent.append(summary_path)
    warnings: list[str] = []
    runs = load_runs(recent, warnings)
    try:  # the corpus's findings lead the page; after hours of work, never fatal
        findings = load_findings(args.corpus, warnings)
    except FindingsError as e:
        findings = None
        warnings.append(f"{e}; the report has no findings section")
    _warn(warnings)
    md, page = write_report(
        runs, args.out, f"nightly-{date}", history=history.entries, findings=findings
    )
    print(f"wrote {md}, {page}; history: {history.path} ({len(history.entries)} nights)")
    return result.exit_code
