"""``pyfy-fuzz versions``: which torch releases have each entry's bug (Note [Which releases have
a bug] in releases.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyfy_fuzz.cli.common import Commands, check_json_path, cli_error

if TYPE_CHECKING:  # imported where used: the CLI starts without the corpus layer
    from pyfy_fuzz.corpus.releases import Interpreter
    from pyfy_fuzz.corpus.store import Entry

__all__ = [
    "register",
    "cmd_versions",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 2


def register(commands: Commands) -> None:
    p = commands.add_parser(
        "versions",
        help="run each entry's repro.py under other torch releases; record which have the bug",
        description=(
            "Run every entry's repro.py (a corpus directory, or entry directories) under each "
            "--python interpreter's torch, record in the entry's case.json which releases "
            "reproduce it, with the date, and rewrite its README.md to say so "
            '("reproduces on 2.13.0; fixed in 2.15.0"). An entry found on a GPU is not run '
            "under a torch without CUDA: it is recorded as not reproducible on CPU. Exit "
            "status: 0 every repro ran and said yes or no, 1 a repro erred or timed out under "
            "some torch, 2 usage error (a path or an interpreter without torch)."
        ),
    )
    p.add_argument("paths", nargs="*", type=Path, default=[Path("corpus")], metavar="PATH")
    p.add_argument(
        "--python",
        action="append",
        default=None,
        metavar="PYTHON",
        help="an interpreter with the torch to try (repeatable); default: this one",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per repro run")
    p.add_argument("--jobs", type=int, default=1, help="repros run at once (default 1)")
    p.add_argument("--json", type=Path, default=None, metavar="VERSIONS.json")
    p.set_defaults(run=cmd_versions)


def cmd_versions(args: argparse.Namespace) -> int:
    """Check the arguments, probe each interpreter, run the repros, write each record into
    its entry as it comes, then print one line per entry; 1 where a repro erred or timed out."""
    from pyfy_fuzz.campaign.replay import collect
    from pyfy_fuzz.corpus.entry import readme_of
    from pyfy_fuzz.corpus.releases import ReleaseRecord, merge, run_versions
    from pyfy_fuzz.corpus.store import Corpus, CorpusError

    check_json_path(args.json)
    if not args.timeout > 0:
        raise cli_error(f"--timeout must be positive, got {args.timeout}")
    if args.jobs < 1:
        raise cli_error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        entries, problems = collect(args.paths)
    except (FileNotFoundError, CorpusError) as e:
        raise cli_error(str(e)) from None
    for p in problems:
        print(f"{'error' if p.damaged else 'warning'}: {p.path}: {p.message}", file=sys.stderr)
    if not entries:
        raise cli_error(f"no corpus entries under {', '.join(map(str, args.paths))}")
    interpreters = _interpreters(args.python or [sys.executable])

    corpora: dict[Path, Corpus] = {}
    by_path: dict[Path, Entry] = {e.path: e for e in entries}

    def write(path: Path, rec: ReleaseRecord) -> None:
        """Into case.json, and README.md anew; one thread writes, so merges never race."""
        e = by_path[path]
        corpus = corpora.setdefault(path.parent, Corpus(path.parent))
        corpus.entries[e.signature] = e
        corpus.annotate(e.signature, {"releases": merge(e.case, [rec])})
        e = by_path[path] = corpus.entries[e.signature]
        corpus.refresh(e.signature, {"README.md": readme_of(path, e.case)})
        print(f"{rec.verdict:<17} torch {rec.release:<8} {e.signature}", flush=True)

    run_versions(
        [(e.path, e.case) for e in entries],
        interpreters,
        timeout=args.timeout,
        jobs=args.jobs,
        on_record=write,
    )
    rows, bad = _summary(by_path, {i.python for i in interpreters})
    if args.json is not None:
        from pyfy_fuzz.schema.atomic import atomic_write

        doc = {
            "interpreters": [vars(i) for i in interpreters],
            "entries": rows,
        }
        atomic_write(args.json, json.dumps(doc, indent=1) + "\n")
    return 1 if bad else 0


def _interpreters(pythons: list[str]) -> list[Interpreter]:
    """Each interpreter once, probed for its torch and CUDA, and printed; a usage error for
    one without torch."""
    from pyfy_fuzz.corpus.releases import InterpreterError, probe

    interpreters = []
    for python in dict.fromkeys(pythons):
        try:
            interpreters.append(probe(python))
        except InterpreterError as e:
            raise cli_error(str(e)) from None
    for i in interpreters:
        print(f"torch {i.torch} ({'with' if i.cuda else 'no'} CUDA): {i.python}")
    return interpreters


def _summary(by_path: dict[Path, Entry], ran_by: set[str]) -> tuple[list[dict[str, Any]], int]:
    """One line per entry (its releases), the rows of --json, and how many entries had a repro
    err or time out under one of this run's interpreters (`ran_by`)."""
    from pyfy_fuzz.corpus.releases import records_of, releases_line

    rows: list[dict[str, Any]] = []
    bad = 0
    for path, done in sorted(by_path.items(), key=lambda kv: kv[1].signature):
        records = records_of(done.case)
        line = releases_line(records, str(done.case.get("device") or "cpu"))
        ran = [r for r in records if r.python in ran_by]
        bad += any(r.verdict in ("error", "timeout") for r in ran)
        print(f"{done.signature:<48} {line or '(not run: a hang entry)'}")
        rows.append(
            {
                "signature": done.signature,
                "path": str(path),
                "releases": [r.to_dict() for r in records],
                "line": line,
            }
        )
    return rows, bad
