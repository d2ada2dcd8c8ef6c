"""The corpus as a reader triages it: findings grouped by root cause, most severe first.

    findings = load_findings(Path("corpus"), warnings)   # FindingsError: not a corpus at all
    for group in findings.groups: ...                     # sorted: severity, then count (desc)

What a finding is, in one line each, comes from ONE place so that the report and the campaign
(which stores them in case.json from format 2 on) agree: `severity_of(case)`,
`title_of(case)`, `difference_of(case)`. Each prefers the value stored in case.json and
derives it from kind / oracle / subject / explanation for entries that lack it (format 1).

Severity (`SEVERITIES`): 1 silent wrong values or gradients; 2 a crash where eager runs
(interpreter crash, hang); 3 autograd metadata, aliasing or error-handling differences;
4 seq_nr mapping; 5 anything else.

Grouping: entries with the same "root_cause" (a person's triage label in case.json) are one
group; an entry without one is its own group. A group's severity is its most severe entry's,
its count the sum of its entries' counts.

The repro's `f`: the source of the function under test, read from repro.py with `ast` (the
top-level `def f`, or `class Program`'s `forward`; in format-1 repros the program is the
string `PROGRAM`), else program.py, else repro.py's first lines. Never imported or run.

Damaged entries never stop a report: each is skipped with a line in `warnings`. The
renderers for the terminal, markdown and the HTML page's section are in triage_render.py.
"""

from __future__ import annotations

import ast
import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracles import identity
from oracles.groups import group_of
from oracles.identity import SEVERITIES
from oracles.upstream import known_upstream
from pyfy_fuzz.corpus.releases import records_of, releases_line
from pyfy_fuzz.corpus.store import FORMAT, OLD_FORMATS

__all__ = [
    "CASE",
    "difference_of",
    "entry_from_case",
    "F_MAX_LINES",
    "FALLBACK_LINES",
    "FindingEntry",
    "FindingGroup",
    "Findings",
    "FindingsError",
    "FORMATS",
    "group_entries",
    "load_findings",
    "repro_f",
    "SEVERITIES",
    "severity_of",
    "title_of",
]

CASE = "case.json"
FORMATS = (*OLD_FORMATS, FORMAT)  # case.json formats this view reads
_REQUIRED = ("signature", "kind", "oracle", "subject")

F_MAX_LINES = 40  # of the repro's f kept for the report (a shrunk f is a few lines)
FALLBACK_LINES = 8


class FindingsError(Exception):
    """The corpus directory is missing or is not a pyfy-fuzz corpus."""


# -- what a finding is, in one line each --------------------------------------------------------
# Stored values win; entries without them (format 1) get what the campaign would store, from
# the one implementation in oracles/identity.py.
def severity_of(case: dict[str, Any]) -> int:
    """case.json's "severity" when it is an int 1..5, else derived as the campaign does."""
    stored = case.get("severity")
    if isinstance(stored, int) and not isinstance(stored, bool) and stored in SEVERITIES:
        return stored
    return identity.severity_of(case)


def title_of(case: dict[str, Any]) -> str:
    """case.json's "title", else derived as the campaign does."""
    stored = case.get("title")
    if isinstance(stored, str) and stored.strip():
        return _one_line(stored)
    spec = case.get("spec")
    mode = spec.get("plan", {}).get("mode") if isinstance(spec, dict) else None
    device = str(case.get("device") or "cpu")
    return _one_line(identity.title_of(case, case.get("backend"), mode, device))


def difference_of(case: dict[str, Any]) -> str:
    """case.json's "difference", else the first difference in words, from the data."""
    stored = case.get("difference")
    if isinstance(stored, str) and stored.strip():
        return _one_line(stored)
    return _one_line(identity.difference_of(case))


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- the repro's f ------------------------------------------------------------------------------
def repro_f(entry_dir: Path) -> str:
    """The source of the function under test (see the module docstring); "" when the entry
    has neither repro.py nor program.py."""
    repro = _read(entry_dir / "repro.py")
    if repro is not None:
        found = _f_in_source(repro)
        if found is None:
            program = _program_string(repro)
            found = _f_in_source(program) if program is not None else None
        if found is not None:
            return found
    program_py = _read(entry_dir / "program.py")
    if program_py is not None and (found := _f_in_source(program_py)) is not None:
        return found
    if repro is not None:
        return "\n".join(repro.splitlines()[:FALLBACK_LINES])
    return ""


def _read(p: Path) -> str | None:
    try:
        return p.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _f_in_source(source: str) -> str | None:
    """The top-level `def f` (with its decorators), else `class Program`'s `forward`."""
    tree = _parse(source)
    if tree is None:
        return None
    lines = source.splitlines()

    def block(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        text = textwrap.dedent("\n".join(lines[start - 1 : end]))
        kept = text.splitlines()
        if len(kept) > F_MAX_LINES:
            more = len(kept) - F_MAX_LINES
            kept = [*kept[:F_MAX_LINES], f"# ... {more} more line(s) in the file"]
        return "\n".join(kept)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "f":
            return block(node)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Program":
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if item.name == "forward":
                        return block(item)
    return None


def _program_string(source: str) -> str | None:
    """A format-1 repro embeds the program as `PROGRAM = '''...'''`."""
    tree = _parse(source)
    if tree is None:
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "PROGRAM" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    return None


# -- entries and groups -------------------------------------------------------------------------
@dataclass(frozen=True)
class FindingEntry:
    """One corpus entry as the report shows it."""

    shown: str  # the entry's path as the reader typed the corpus (relative where it can be)
    signature: str
    severity: int
    title: str
    difference: str
    bug_in: str
    group: str  # bug | refusal | metadata (oracles/groups.py)
    count: int
    f: str  # the repro's f
    root_cause: str | None = None
    triage: str | None = None
    expected: str | None = None
    path: Path | None = None  # the entry directory, absolute (links)
    # repro.py run on its own (case.json "repro"): reproduces | passes | error | timeout |
    # interpreter died | not run (the campaign ended first: repro.NOT_RUN); None: no record
    repro: str | None = None
    upstream: tuple[int, ...] = ()  # pytorch issues it matches (oracles/upstream.py)
    # which torch releases reproduce it, in a line (releases.py); "" when none is recorded
    releases: str = ""

    @property
    def fixed(self) -> bool:
        """expected "pass": a fixed bug of the generator or of pyfy-fuzz (replay must not
        reproduce it)."""
        return self.expected == "pass"


@dataclass(frozen=True)
class FindingGroup:
    """Entries of one root cause (one entry where no person labelled it), most severe and
    most seen first."""

    entries: tuple[FindingEntry, ...]

    @property
    def root_cause(self) -> str | None:
        return self.entries[0].root_cause

    @property
    def severity(self) -> int:
        return min(e.severity for e in self.entries)

    @property
    def count(self) -> int:
        return sum(e.count for e in self.entries)

    @property
    def lead(self) -> FindingEntry:
        return self.entries[0]


@dataclass
class Findings:
    corpus: str  # as shown
    groups: list[FindingGroup]
    warnings: list[str] = field(default_factory=list)

    @property
    def entries(self) -> list[FindingEntry]:
        return [e for g in self.groups for e in g.entries]

    def by_severity(self) -> list[tuple[int, list[FindingGroup]]]:
        """(severity, its groups in report order) for each severity that has any."""
        return [
            (s, [g for g in self.groups if g.severity == s])
            for s in SEVERITIES
            if any(g.severity == s for g in self.groups)
        ]


def _entry_key(e: FindingEntry) -> tuple[int, int, str]:
    return (e.severity, -e.count, e.shown)


def group_entries(entries: list[FindingEntry]) -> list[FindingGroup]:
    """By root_cause (unlabelled entries alone), sorted by severity, then count (desc), then
    path; entries inside a group in the same order."""
    buckets: dict[str, list[FindingEntry]] = {}
    for e in entries:
        key = f"root_cause:{e.root_cause}" if e.root_cause else f"entry:{e.shown}"
        buckets.setdefault(key, []).append(e)
    groups = [FindingGroup(tuple(sorted(b, key=_entry_key))) for b in buckets.values()]
    return sorted(groups, key=lambda g: (g.severity, -g.count, g.lead.shown))


def entry_from_case(
    case: dict[str, Any], shown: str, f: str = "", path: Path | None = None
) -> FindingEntry:
    """A FindingEntry from a case.json dict; ValueError when it is too damaged to show."""
    missing = [k for k in _REQUIRED if not isinstance(case.get(k), str) or not case[k]]
    if missing:
        raise ValueError(f"{CASE} lacks {', '.join(missing)}")
    fmt = case.get("format", 1)
    if fmt not in FORMATS:
        raise ValueError(f"{CASE} has format {fmt!r}; this build reads {FORMATS}")
    count = case.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(f"{CASE} count {count!r} is not a count")
    root = case.get("root_cause")
    triage = case.get("triage")
    return FindingEntry(
        shown=shown,
        signature=case["signature"],
        severity=severity_of(case),
        title=title_of(case),
        difference=difference_of(case),
        bug_in=str(case.get("bug_in") or "?"),
        group=group_of(case),
        upstream=tuple(known_upstream(case)),
        count=count,
        f=f,
        root_cause=_one_line(root) if isinstance(root, str) and root.strip() else None,
        triage=_one_line(triage) if isinstance(triage, str) and triage.strip() else None,
        expected=case.get("expected") if isinstance(case.get("expected"), str) else None,
        path=path,
        repro=_repro_verdict(case),
        releases=releases_line(records_of(case), str(case.get("device") or "cpu")),
    )


def _repro_verdict(case: dict[str, Any]) -> str | None:
    record = case.get("repro")
    verdict = record.get("verdict") if isinstance(record, dict) else None
    return verdict if isinstance(verdict, str) else None


def _shown(root: Path, name: str | None = None) -> str:
    """The path as typed; an absolute one under the working directory, relative to it."""
    p = root / name if name else root
    if p.is_absolute():
        try:
            return str(p.relative_to(Path.cwd()))
        except ValueError:
            return str(p)
    return str(p)


def _is_corpus(root: Path) -> bool:
    """Entries (directories with case.json), a campaign's working state, or nothing yet."""
    children = list(root.iterdir())
    return (
        not children
        or (root / ".campaign").is_dir()
        or any(c.is_dir() and (c / CASE).exists() for c in children)
    )


def load_findings(root: Path, warnings: list[str] | None = None) -> Findings:
    """Every entry of the corpus at `root` (or the one entry, when `root` is an entry
    directory), grouped and sorted. FindingsError when `root` is missing or no corpus; a
    damaged entry is a line in `warnings` (and in the result's) and is skipped."""
    root = Path(root)
    if not root.exists():
        raise FindingsError(f"no such corpus: {root}")
    if not root.is_dir():
        raise FindingsError(f"corpus {root} is not a directory")
    notes: list[str] = []
    try:
        if (root / CASE).is_file():  # an entry directory itself
            dirs = [root]
        elif _is_corpus(root):
            dirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        else:
            raise FindingsError(
                f"{root} is not a pyfy-fuzz corpus (no <entry>/{CASE} in it, no .campaign/)"
            )
    except OSError as e:
        raise FindingsError(f"cannot read corpus {root}: {e.strerror or e}") from None
    entries = []
    for d in dirs:
        shown = _shown(d)
        try:
            case = json.loads((d / CASE).read_text())
        except FileNotFoundError:
            notes.append(f"{shown}: no {CASE}: not a corpus entry; skipped")
            continue
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            notes.append(f"{shown}: {CASE} is unreadable ({e}); skipped")
            continue
        if not isinstance(case, dict):
            notes.append(f"{shown}: {CASE} is not an object; skipped")
            continue
        try:
            entry = entry_from_case(case, shown, repro_f(d), d.resolve())
        except ValueError as e:
            notes.append(f"{shown}: {e}; skipped")
            continue
        stored = case.get("severity")
        if stored is not None and stored != entry.severity:
            notes.append(
                f"{shown}: severity {stored!r} is not 1..5; shown as {entry.severity} "
                "(from kind and oracle)"
            )
        if not entry.f:
            notes.append(f"{shown}: no repro.py or program.py; shown without f")
        entries.append(entry)
    if warnings is not None:
        warnings.extend(notes)
    return Findings(_shown(root), group_entries(entries), notes)
