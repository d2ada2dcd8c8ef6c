"""``pyfy-fuzz migrate``: old-format entries re-keyed; ``--render``: generated files anew."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyfy_fuzz.cli.common import Commands, check_device, cli_error, worker_count

__all__ = [
    "register",
    "cmd_migrate",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 3


def register(commands: Commands) -> None:
    p = commands.add_parser(
        "migrate",
        help="re-key corpus entries of an older format as bug identities",
        description=(
            "Run every old-format entry of a corpus again and save it under its bug identity "
            "(format 5); old entries that are one bug become one entry, triage notes kept. "
            "Entries of one identity whose wrapper paths are comparable (one set inside the "
            "other) are listed as fold candidates; --fold folds each into the most general "
            "one once you have read them, --apart records a pair as two causes (merging "
            "another corpus: copy its entries in, migrate, read the candidates, then --fold "
            "or --apart each). "
            "Only entries found on --device are re-run (a GPU's bugs on a GPU). "
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
    p.add_argument(
        "--fold",
        action="append",
        metavar="ENTRY",
        default=[],
        help="fold this candidate (the entry with more paths; repeatable, or 'all') into its "
        "more general entry; the folded directory is kept in .superseded/",
    )
    p.add_argument(
        "--apart",
        action="append",
        metavar="ENTRY",
        default=[],
        help="this fold candidate (the entry with more paths; repeatable) is another cause: "
        "recorded in its case.json (apart_from), never listed again",
    )
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--case-timeout", type=float, default=120.0)
    p.add_argument(
        "--device",
        default="cpu",
        help="re-run the entries found on this device (default cpu); others are left as they are",
    )
    p.set_defaults(run=cmd_migrate)


def cmd_migrate(args: argparse.Namespace) -> int:
    from pyfy_fuzz.campaign.migrate import migrate, old_entries
    from pyfy_fuzz.campaign.pool import WorkerStartError
    from pyfy_fuzz.corpus.store import CorpusError

    workers = worker_count(args.workers)
    check_device(args.device)
    if not args.corpus.is_dir():
        raise cli_error(f"{args.corpus} is not a directory")
    if args.render:
        return _render(args.corpus)
    if not old_entries(args.corpus):
        print(f"migrate: no old-format entries in {args.corpus}")
        return _fold(args.corpus, args.fold, args.apart)
    try:
        report = migrate(
            args.corpus, workers=workers, case_timeout=args.case_timeout, device=args.device
        )
    except CorpusError as e:
        raise cli_error(str(e)) from None
    except WorkerStartError as e:
        raise cli_error(f"workers cannot start: {str(e).splitlines()[0]}") from None
    for old, new, how in report.migrated:
        print(f"{old:<48} -> {new}  ({how})")
    for note in report.notes:
        print(f"warning: {note}", file=sys.stderr)
    from pyfy_fuzz.corpus.trace import TLPARSE_NOTICE, find_tlparse

    if find_tlparse() is None:
        print(f"note: {TLPARSE_NOTICE}")
    news = {new for _, new, _ in report.migrated}
    print(f"migrate: {len(report.migrated)} entries -> {len(news)} entries")
    return _fold(args.corpus, args.fold, args.apart)


def _fold(corpus: Path, chosen: list[str], apart: list[str]) -> int:
    """The fold candidates, listed; those named by --fold (or all) folded, those named by
    --apart recorded as two causes (Note [One entry per identity across wrapper paths] in
    pyfy_fuzz/corpus/store.py)."""
    from pyfy_fuzz.corpus.store import Corpus, CorpusError

    try:
        c = Corpus.open(corpus, create=False)
        pairs = c.fold_candidates()
        named = {bigger for bigger, _ in pairs}
        unknown = sorted((set(chosen) - {"all"} | set(apart)) - named)
        if unknown:
            raise cli_error(f"not a fold candidate of {corpus}: {', '.join(unknown)}")
        folding = named - set(apart) if "all" in chosen else set(chosen)
        if set(apart) & folding:
            raise cli_error("an entry cannot be both folded (--fold) and kept apart (--apart)")
        separate = c.keep_apart([p for p in pairs if p[0] in apart])
        folded = c.fold([p for p in pairs if p[0] in folding])
    except CorpusError as e:
        raise cli_error(str(e)) from None
    for bigger, general in pairs:
        how = "folded" if (bigger, general) in folded else "fold candidate"
        how = "kept apart" if (bigger, general) in separate else how
        print(f"{bigger:<48} -> {general}  ({how})")
    left = len(pairs) - len(folded) - len(separate)
    if left:
        print(
            f"migrate: {left} fold candidate(s): one identity, wrapper paths inside the other "
            "entry's; read both, then `--fold ENTRY` (one cause) or `--apart ENTRY` (two)"
        )
    if folded:
        print(f"migrate: {len(folded)} folded (kept in {corpus / '.superseded'})")
    return 0


def _render(corpus: Path) -> int:
    from pyfy_fuzz.campaign.migrate import render
    from pyfy_fuzz.corpus.store import CorpusError

    try:
        done = render(corpus)
    except CorpusError as e:
        raise cli_error(str(e)) from None
    for sig, changed, verdict in done:
        if changed:
            print(f"{sig:<48} {', '.join(changed)}" + (f"  (repro {verdict})" if verdict else ""))
    n = sum(1 for _, changed, _ in done if changed)
    print(f"migrate --render: {n} of {len(done)} entries rewritten")
    return 0
