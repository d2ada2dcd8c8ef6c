"""``pyfy-fuzz nightly``: a campaign with coverage, then the dated report and the history."""

from __future__ import annotations

import argparse
from pathlib import Path

from pyfy_fuzz.cli import (
    run as run_cli,  # looked up per call: a test's stub of it is undone with it
)
from pyfy_fuzz.cli.common import (
    Commands,
    check_device,
    check_out_dir,
    cli_error,
    load_history,
    warn,
    worker_count,
)

__all__ = [
    "NIGHTS_IN_REPORT",
    "register",
    "cmd_nightly",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 6


NIGHTS_IN_REPORT = 30  # run summaries (newest) that the nightly table spans


def register(commands: Commands) -> None:
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

    from pyfy_fuzz.campaign.budget import parse_budget
    from pyfy_fuzz.reports.history import entry_for
    from pyfy_fuzz.reports.report import FindingsError, load_findings, load_runs, write_report

    try:
        budget = parse_budget(args.budget)
    except ValueError as e:
        raise cli_error(str(e)) from None
    workers = worker_count(args.workers)
    check_device(args.device)
    check_out_dir(args.out)
    history = load_history(args.out / "history.json")  # fail before hours of work
    now = dt.datetime.now(dt.UTC)
    date, stamp = now.strftime("%Y-%m-%d"), now.strftime("%Y-%m-%dT%H%M%SZ")
    runs_dir = args.out / "runs"
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise cli_error(f"cannot create {runs_dir}: {e.strerror or e}") from None
    summary_path = runs_dir / f"{stamp}-{socket.gethostname()}.json"  # never overwrites
    from pyfy_fuzz.campaign.config import BackendMix, CampaignConfig

    config = CampaignConfig(
        budget_s=budget,
        corpus=args.corpus,
        device=args.device,
        mix=BackendMix(args.backend),
        workers=workers,
        seed=args.seed,
        json_path=summary_path,
        progress=args.progress,
        coverage=True,
    )
    result = run_cli.run_and_summarise(config)
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
    warn(warnings)
    md, page = write_report(
        runs, args.out, f"nightly-{date}", history=history.entries, findings=findings
    )
    print(f"wrote {md}, {page}; history: {history.path} ({len(history.entries)} nights)")
    return result.exit_code
