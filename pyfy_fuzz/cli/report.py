"""``pyfy-fuzz report``: the corpus's findings (triage view) and the wrapper paths campaigns
reached."""

from __future__ import annotations

import argparse
from pathlib import Path

from pyfy_fuzz.cli.common import Commands, check_out_dir, cli_error, load_history, warn

__all__ = [
    "register",
    "cmd_report",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 4


def register(commands: Commands) -> None:
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

    from pyfy_fuzz.reports.report import (
        FindingsError,
        ReportError,
        load_findings,
        load_runs,
        path_rows,
        render_text,
        write_report,
    )

    if not args.runs and args.corpus is None:
        raise cli_error("report: give --corpus DIR, --run SUMMARY.json, or both")
    try:
        runs = load_runs(args.runs)
    except ReportError as e:
        raise cli_error(str(e)) from None
    findings = None
    if args.corpus is not None:
        try:
            findings = load_findings(args.corpus)
        except FindingsError as e:
            raise cli_error(str(e)) from None
        warn(findings.warnings)
    entries = None
    if args.history is not None:
        if not args.history.is_file():
            raise cli_error(f"no such history: {args.history}")
        entries = load_history(args.history).entries
    check_out_dir(args.out)
    name = "report" if runs and findings else "findings" if findings else "wrapper-paths"
    stem = f"{name}-" + dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    try:
        md, page = write_report(runs, args.out, stem, history=entries, findings=findings)
    except OSError as e:
        raise cli_error(f"cannot write the report under {args.out}: {e.strerror or e}") from None
    print(render_text(path_rows(runs), runs, findings))
    print(f"wrote {md} and {page}")
    return 0
