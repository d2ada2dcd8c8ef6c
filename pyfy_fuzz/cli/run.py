"""``pyfy-fuzz run``: flags in, one `CampaignConfig` to the campaign (campaign/config.py).

Every check a user can fail (budget, shard, families, device, corpus, --json path, the
pythonify plug-in, the configuration's own invariants) happens here, before any worker starts,
and ends in one line and exit 2. The configuration is built once and goes to the campaign and
its workers as it is.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyfy_fuzz.cli.common import (
    Commands,
    check_device,
    check_impl,
    check_json_path,
    cli_error,
    worker_count,
)

if TYPE_CHECKING:
    from pyfy_fuzz.campaign.campaign import CampaignResult
    from pyfy_fuzz.campaign.config import CampaignConfig

__all__ = [
    "CASE_TIMEOUT_S",
    "cmd_run",
    "ORACLE_WIDTH",
    "print_summary",
    "register",
    "repro_line",
    "run_and_summarise",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 0


ORACLE_WIDTH = 12
# --case-timeout by device: on the H200 one Inductor case passed 60 s while Triton compiled
# its kernels with 8 workers compiling beside it (issue 18's first GPU campaign).
CASE_TIMEOUT_S = {"cpu": 60.0, "cuda": 180.0}


def register(commands: Commands) -> None:
    """`pyfy-fuzz run` and its flags.

    Long: one add_argument per flag, in the order --help lists them."""
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
    p.add_argument(
        "--backend",
        choices=["aot_eager", "inductor"],
        default=None,
        help="compile every case with this backend (default: a mix; on cpu aot_eager with one "
        "case in 10 compiled by Inductor, on cuda Inductor with CUDA graphs for the "
        "reduce-overhead cases and one case in 4 compiled by aot_eager)",
    )
    p.add_argument(
        "--config",
        default=None,
        metavar="KNOB[,KNOB]",
        help="run every case under these knobs of the configuration catalogue (default: each "
        "case draws its own; see pyfy_fuzz.schema.config.CATALOGUE). The shrinker still tries "
        "torch's defaults, so a finding keeps a knob only if the bug needs it",
    )
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
        "--case-timeout",
        type=float,
        default=None,
        help="seconds before a case is a hang (default 60 on cpu; 180 on cuda, where Triton "
        "compiles every kernel of an Inductor case before its first call)",
    )
    p.add_argument(
        "--shrink-seconds", type=float, default=None, help="per finding (default: from budget)"
    )
    p.add_argument("--progress", choices=["auto", "rich", "plain", "quiet"], default="auto")
    p.add_argument(
        "--coverage",
        action="store_true",
        help="measure branch coverage of torch's wrapper files (AOTAutograd, the partitioner, "
        "functionalization, Dynamo's handling of aliased and mutated inputs) and the bundled "
        "generator, reached by cases (import-time lines left out), and steer by it: programs "
        "that reach a branch first are kept and mutated; the summary and --json get the numbers",
    )
    p.add_argument(
        "--no-steer",
        dest="steer",
        action="store_false",
        help="with --coverage: measure, but never draw from the pool of programs that reached "
        "a branch first (compare steered and unsteered runs of one budget and seed)",
    )
    p.set_defaults(run=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from pyfy_fuzz.campaign.budget import parse_budget
    from pyfy_fuzz.campaign.streams import parse_shard

    try:
        budget = parse_budget(args.budget)
        shard = parse_shard(args.shard)
    except ValueError as e:
        raise cli_error(str(e)) from None
    wrappers = None
    if args.wrappers is not None:
        from generators import FAMILIES

        wrappers = tuple(w.strip() for w in args.wrappers.split(",") if w.strip())
        unknown = [w for w in wrappers if w not in FAMILIES]
        if unknown or not wrappers:
            raise cli_error(
                f"--wrappers: unknown or no families {unknown or list(wrappers)}; "
                f"choose from {', '.join(FAMILIES)}"
            )
    pinned = _config_knobs(args.config)
    if args.max_cases is not None and args.max_cases < 1:
        raise cli_error(f"--max-cases must be at least 1, got {args.max_cases}")
    if args.case_timeout is None:
        args.case_timeout = CASE_TIMEOUT_S[args.device]
    if args.case_timeout <= 0:
        raise cli_error("--case-timeout must be positive")
    if args.shrink_seconds is not None and args.shrink_seconds < 0:
        raise cli_error("--shrink-seconds must not be negative")
    workers = worker_count(args.workers)
    check_json_path(args.json)
    check_device(args.device)
    check_impl(args.pythonify)
    from pyfy_fuzz.campaign.config import BackendMix, CampaignConfig, default_mix

    try:  # the one configuration of the run, checked whole; workers receive it as it is
        config = CampaignConfig(
            budget_s=budget,
            corpus=args.corpus,
            device=args.device,
            mix=BackendMix(args.backend) if args.backend else default_mix(args.device),
            config=pinned,
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
            steer=args.steer,
        )
    except ValueError as e:
        raise cli_error(str(e)) from None
    return run_and_summarise(config).exit_code


def _config_knobs(text: str | None) -> tuple[str, ...] | None:
    """--config's knobs, checked against the catalogue (one line and exit 2 when not)."""
    if text is None:
        return None
    from pyfy_fuzz.schema.config import check_config

    knobs = tuple(k.strip() for k in text.split(",") if k.strip())
    if not knobs:
        raise cli_error("--config: no knob given")
    try:
        check_config(knobs)
    except ValueError as e:
        raise cli_error(f"--config: {e}") from None
    return knobs


def run_and_summarise(config: CampaignConfig) -> CampaignResult:
    """Run it, turn what stops it from starting into a one-line exit 2, print the summary."""
    from pyfy_fuzz.campaign.campaign import run_campaign
    from pyfy_fuzz.campaign.pool import WorkerStartError
    from pyfy_fuzz.corpus.store import CorpusError

    try:
        result = run_campaign(config)
    except CorpusError as e:
        raise cli_error(str(e)) from None
    except WorkerStartError as e:
        raise cli_error(f"workers cannot start: {str(e).splitlines()[0]}") from None
    print_summary(result.summary, sys.stdout)
    return result


def _backends(c: dict[str, Any], s: dict[str, Any]) -> str:
    """ "aot_eager", or the mix and how many cases each backend ran."""
    share = c.get("partner_share") or 0
    if share <= 1:
        return str(c["backend"])
    partner = c.get("partner")
    ran = s.get("backends") or {}
    counts = ", ".join(f"{b} {n}" for b, n in sorted(ran.items()))
    return f"{c['backend']} + {partner} (1 case in {share}" + (f": {counts})" if counts else ")")


# bugs first, then torch's refusals, then metadata (oracles/groups.py, Note [Finding groups])
_GROUP_ORDER = {"bug": 0, "refusal": 1, "metadata": 2}
_COUNTED = (*_GROUP_ORDER, "unproven")


def repro_line(findings: list[dict[str, Any]]) -> str:
    """How the new findings' repro.py fared when run on their own: "5 reproduce, 1 not
    checked yet"; one that passes or errs is a repro that does not show its bug (ours)."""
    verdicts = Counter(f.get("repro") or "not checked yet" for f in findings)
    words = {"reproduces": "reproduce", "passes": "pass (the repro misses the bug: ours)"}
    return ", ".join(f"{n} {words.get(v, v)}" for v, n in verdicts.most_common())


def _print_findings(found: list[dict[str, Any]], out: Any, torch: str = "") -> None:
    """The new findings, bugs first and worst first, counted by group; the repro line says on
    which torch the repros ran (Note [Which releases have a bug])."""
    findings = sorted(
        found, key=lambda f: (_GROUP_ORDER.get(str(f.get("group")), 0), f.get("severity") or 5)
    )
    # A finding whose repro ran and showed something else is not counted as what it claims
    # (Note [A repro's exit codes]); the repro line below says how each fared.
    groups = Counter(
        (f.get("group") or "bug") if f.get("repro") in (None, "reproduces") else "unproven"
        for f in findings
    )
    print(
        f"new findings: {len(findings)}"
        + (
            f" ({', '.join(f'{groups[g]} {g}' for g in _COUNTED if groups[g])})" if findings else ""
        ),
        file=out,
    )
    for f in findings:
        print(
            f"  {f['kind']:<20} {f['oracle']:<{ORACLE_WIDTH}} {f['subject']:<14} {f['path']}",
            file=out,
        )
    if findings:
        on = f" (torch {torch.split('+')[0]})" if torch else ""
        print(f"repros run on their own{on}: {repro_line(findings)}", file=out)


def _print_coverage(s: dict[str, Any], out: Any) -> None:
    """--coverage: torch's branches reached by cases, per file, the files never reached, and
    what steering did (reports/coverage_data.py, Note [Steering])."""
    from pyfy_fuzz.reports.coverage_data import short_name

    cov = s.get("coverage") or {}
    t = cov.get("torch")
    if not t:
        return
    print(
        f"torch branches reached by cases: {t['branches_reached']} of {t['branches_total']} "
        f"({t['branch_percent']}%) in {t['files']} files",
        file=out,
    )
    for name, v in cov["files"].items():
        if v.get("torch") and "branches_total" in v:
            print(
                f"  {short_name(name):<56} {v['branches_reached']:>5} of "
                f"{v['branches_total']:<5} "
                + ("-" if v["branches"] is None else f"{v['branches']}%"),
                file=out,
            )
    never = [short_name(n) for n in t["never_reached"]]
    print("never reached: " + (", ".join(never) if never else "none"), file=out)
    st = s.get("steering")
    if st:
        print(
            f"steering {'on' if st['on'] else 'off'}: pool {st['pool']} programs; "
            f"{st['pool_cases']} cases drawn from it, {st['pool_kept']} reached an arc first; "
            f"fresh {st['fresh_cases']}, {st['fresh_kept']}",
            file=out,
        )


def print_summary(s: dict[str, Any], out: Any) -> None:
    from pyfy_fuzz.campaign.budget import format_duration

    c = s["config"]
    print(
        f"\npyfy-fuzz run: {s['cases']} cases in {format_duration(s['elapsed_s'])} "
        f"({s['cases_per_min']:.0f}/min, {s['shrink_cases']} of them shrinking); "
        f"torch {s['torch']}, {_backends(c, s)} on {c['device']}, {c['workers']} workers, "
        f"shard {c['shard']}"
        + (f", every case under {', '.join(c['knobs'])}" if c.get("knobs") else ""),
        file=out,
    )
    _print_findings(s["findings"], out, str(s.get("torch") or ""))
    seen = s["known_seen"]
    if seen:
        print(
            f"known findings seen again: {len(seen)} signatures, {sum(seen.values())} times",
            file=out,
        )
    fold = s.get("fold_candidates") or []
    if fold:
        pairs = ", ".join(f"{a} ~ {b}" for a, b in fold[:3]) + (", ..." if len(fold) > 3 else "")
        print(
            f"possible duplicates: {len(fold)} pair(s) of one identity over comparable wrapper "
            f"paths ({pairs}); read both, then `pyfy-fuzz migrate --fold`",
            file=out,
        )
    hits = s["wrapper_hits"]
    top = ", ".join(f"{p} {n}" for p, n in list(hits.items())[:8])
    print(f"wrapper paths reached: {len(hits)}" + (f" ({top}, ...)" if top else ""), file=out)
    warm = s.get("warm_cache") or {}
    if warm:
        tried = sum(warm.values())
        judged = warm.get("hit", 0) + warm.get("partial", 0)
        kinds = ("partial", "miss", "bypass", "unsaved")
        rest = ", ".join(f"{k} {warm[k]}" for k in kinds if warm.get(k))
        print(
            f"warm-cache subject: {judged} of {tried} cases served from AOTAutograd's cache "
            f"({100 * judged / tried:.0f}%)" + (f"; {rest}" if rest else ""),
            file=out,
        )
    _print_coverage(s, out)
    if s["deaths"]:
        print(f"worker deaths: {s['deaths']}", file=out)
    for note in s["notes"]:
        if note.startswith(("corpus:", "config:")):
            print(f"warning: {note}", file=out)
        elif note.startswith("tlparse:"):
            print(f"note: {note.split(': ', 1)[1]}", file=out)
