"""The corpus as the report shows it: severity, title, difference, the repro's f, grouping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pyfy_fuzz.corpus.store import FORMAT
from pyfy_fuzz.reports.triage_render import (
    render_findings_html,
    render_findings_markdown,
    render_findings_text,
)
from pyfy_fuzz.reports.triage_view import (
    SEVERITIES,
    Findings,
    FindingsError,
    difference_of,
    entry_from_case,
    group_entries,
    load_findings,
    repro_f,
    severity_of,
    title_of,
)
from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts

REPO = Path(__file__).resolve().parent.parent


_P0 = CallRef("plan", 0)
_LOCI = {  # oracle -> the locus and property of its typical first difference
    "outputs": ("output", "values", {"index": 0}),
    "mutation": ("input", "values", {"name": "a0"}),
    "grads": ("grad", "presence", {"name": "a0"}),
    "cudagraph": ("later", "values", {"index": 0}),
    "aliasing": ("output", "base", {"index": 0}),
    "autograd": ("output", "requires_grad", {"index": 0}),
    "versions": ("version", "moved", {"name": "a0"}),
    "seq_nr": ("seq_nr", "unmapped", {}),
}


def _diff(oracle: str, kind: str) -> list[dict[str, Any]]:
    """The first difference an oracle's finding records."""
    if oracle in ("exceptions", "guards") and kind != "compile-divergence":
        exc = ExcFacts("RuntimeError", "boom", "call")
        return [Difference(oracle, "torch.compile", _P0, "exception", "raised", exc=exc).to_dict()]
    if oracle == "exceptions":
        exc = ExcFacts("RuntimeError", "boom", "call")
        d = Difference(oracle, "torch.compile", _P0, "exception", "returned", exc=exc)
        return [d.to_dict()]
    if oracle == "guards":
        call = CallRef("variant", relation="shape")
        return [Difference("outputs", "torch.compile", call, "output", "values", 0).to_dict()]
    if oracle not in _LOCI:
        return []
    locus, prop, kw = _LOCI[oracle]
    return [
        Difference(
            oracle, "torch.compile", _P0, locus, prop, expected="[1.]", actual="[0.]", **kw
        ).to_dict()
    ]


def _case(kind: str = "compile-divergence", oracle: str = "outputs", **kw: Any) -> dict[str, Any]:
    """A case.json as the report reads it (no spec), its differences as an oracle makes them."""
    case: dict[str, Any] = {
        "format": FORMAT,
        "signature": f"{kind}.{oracle}.{kw.pop('sig', '000000000000')}",
        "kind": kind,
        "oracle": oracle,
        "subject": "torch.compile",
        "wrappers": [],
        "exc_type": None,
        "explanation": "torch.compile differs from eager:\n  - call 0: output 0: values differ: "
        "expected [1.], got [0.]\n  - call 1: output 0: values differ",
        "differences": _diff(oracle, kind),
        "bug_in": "torch",
        "expected": "fail",
        "backend": "aot_eager",
        "device": "cpu",
        "count": 1,
    }
    case.update(kw)
    return case


@pytest.mark.parametrize(
    "kind, oracle, severity",
    [
        ("compile-divergence", "outputs", 1),
        ("compile-divergence", "mutation", 1),
        ("pythonify-divergence", "grads", 1),
        ("compile-divergence", "cudagraph", 1),
        ("compile-divergence", "guards", 1),
        ("guard-unsound", "guards", 1),
        ("guard-unsound", "whatever", 1),
        ("crash", "exceptions", 2),
        ("crash", "guards", 2),  # a crash is a crash, whichever oracle saw it
        ("interpreter-crash", "interpreter", 2),
        ("hang", "timeout", 2),
        ("compile-divergence", "aliasing", 3),
        ("pythonify-divergence", "autograd", 3),
        ("compile-divergence", "versions", 3),
        ("compile-divergence", "exceptions", 3),  # a missing error, not a crash
        ("compile-divergence", "seq_nr", 4),
        ("harness-error", "harness", 2),
        ("process-broken", "canary", 2),  # Note [A broken process]: every later case pays
        ("compile-divergence", "something-new", 5),  # no difference recorded
    ],
)
def test_severity_derived_from_kind_and_differences(kind: str, oracle: str, severity: int) -> None:
    assert severity_of(_case(kind, oracle)) == severity


def test_severity_is_the_worst_folded_difference() -> None:
    """An autograd cause whose folded gradients differ is a wrong-gradient bug."""
    case = _case("compile-divergence", "autograd")
    case["differences"] += _diff("grads", "compile-divergence")
    assert severity_of(case) == 1


def test_stored_values_win_and_bad_ones_are_derived() -> None:
    case = _case("compile-divergence", "seq_nr", severity=1, title="T", difference="D")
    assert (severity_of(case), title_of(case), difference_of(case)) == (1, "T", "D")
    for bad in (0, 6, "1", True, None, 2.0):
        assert severity_of(_case("compile-divergence", "seq_nr", severity=bad)) == 4
    multi = _case(title="two\n  lines ", difference="   ")
    assert title_of(multi) == "two lines"  # one line, always
    assert difference_of(multi) == "call 0: output 0: values differ: expected [1.], got [0.]"
    assert set(SEVERITIES) == {1, 2, 3, 4, 5}


def test_titles_from_the_worst_difference() -> None:
    assert title_of(_case()) == (
        "torch.compile (aot_eager): an output's values differ from eager (output N: values)"
    )
    py = _case("pythonify-divergence", "grads", subject="pythonify", backend="inductor")
    assert title_of(py) == (
        "pythonify (inductor): gradients differ from torch.compile (grad of <arg>)"
    )
    crash = _case("crash", "exceptions", exc_type="IndexError")
    assert title_of(crash) == "torch.compile (aot_eager): raises IndexError where eager runs"
    assert "crashes where torch.compile runs" in title_of(
        _case("crash", "exceptions", subject="pythonify")
    )
    assert "on a call that breaks its guards" in title_of(_case("crash", "guards", exc_type="E"))
    died = _case("interpreter-crash", "interpreter", subject="eager", exc_type="SIGSEGV")
    assert title_of(died) == "eager: the interpreter dies (SIGSEGV)"
    assert "hangs" in title_of(_case("hang", "timeout"))
    assert title_of(
        _case("harness-error", "harness", subject="pyfy-fuzz", exc_type="KeyError")
    ) == ("pyfy-fuzz itself raises KeyError")
    assert "guards accept" in title_of(_case("guard-unsound", "guards", subject="pythonify"))
    assert "new-oracle" in title_of(_case(oracle="new-oracle"))


def test_a_title_names_no_mode_the_backend_ignores() -> None:
    """aot_eager on CPU ignores mode="reduce-overhead"; on CUDA it runs torch's cudagraphs."""
    spec = {"plan": {"mode": "reduce-overhead"}}
    assert "reduce-overhead" not in title_of(_case(spec=spec))
    assert "reduce-overhead" in title_of(_case(spec=spec, device="cuda"))
    assert "reduce-overhead" in title_of(_case(spec=spec, backend="inductor"))


def test_a_title_names_the_worst_difference_not_the_first() -> None:
    case = _case("compile-divergence", "autograd")
    case["differences"] += _diff("mutation", "compile-divergence")
    assert "input mutation" in title_of(case)


def test_difference_is_the_first_difference_in_words() -> None:
    assert difference_of(_case()) == "call 0: output 0: values differ: expected [1.], got [0.]"
    assert difference_of(_case(differences=[], difference="worker died: SIGSEGV")) == (
        "worker died: SIGSEGV"
    )
    assert difference_of(_case(differences=None, explanation=None)) == ""
    # a campaign's own finding has no differences: its sentence
    died = _case(
        "interpreter-crash", "interpreter", differences=None, explanation="the worker died"
    )
    assert difference_of(died) == "the worker died"


# -- the repro's f ------------------------------------------------------------------------------
def test_repro_f_top_level_function_class_forward_and_fallbacks(tmp_path: Path) -> None:
    d = tmp_path / "e"
    d.mkdir()
    (d / "repro.py").write_text(
        "import torch\n\n\ndef helper(x):\n    return x\n\n\n@torch.no_grad()\ndef f(a0):\n"
        "    return helper(a0).sin()\n\n\nif __name__ == '__main__':\n    f(torch.ones(1))\n"
    )
    assert repro_f(d) == "@torch.no_grad()\ndef f(a0):\n    return helper(a0).sin()"
    (d / "repro.py").write_text(
        "import torch\n\nclass Fn0(torch.autograd.Function):\n    @staticmethod\n"
        "    def forward(ctx, x):\n        return x\n\n"
        "class Program(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, a0):\n        return Fn0.apply(a0)\n"
    )
    assert repro_f(d) == "def forward(self, a0):\n    return Fn0.apply(a0)"  # Program's, dedented
    # format 1: the program is a string inside repro.py
    (d / "repro.py").write_text(
        '"""doc"""\nimport torch\nPROGRAM = \'\'\'\\\nimport torch\n\ndef f(a0, a1):\n'
        "    a1.fill_(2)\n    return a0\n'''\nFINDING = {}\n"
    )
    assert repro_f(d) == "def f(a0, a1):\n    a1.fill_(2)\n    return a0"
    # no f anywhere in repro.py: program.py, then repro.py's first lines
    (d / "repro.py").write_text("\n".join(f"line{i} = {i}" for i in range(20)) + "\n")
    (d / "program.py").write_text("def f(a0):\n    return a0\n")
    assert repro_f(d) == "def f(a0):\n    return a0"
    (d / "program.py").unlink()
    assert repro_f(d) == "\n".join(f"line{i} = {i}" for i in range(8))
    (d / "repro.py").write_text("def f(:\n  broken")  # not Python: its first lines
    assert repro_f(d) == "def f(:\n  broken"
    (d / "repro.py").unlink()
    assert repro_f(d) == ""


def test_a_long_f_is_cut(tmp_path: Path) -> None:
    (tmp_path / "repro.py").write_text(
        "def f(a0):\n" + "".join(f"    a0 = a0 + {i}\n" for i in range(100)) + "    return a0\n"
    )
    lines = repro_f(tmp_path).splitlines()
    assert len(lines) == 41 and lines[-1] == "# ... 62 more line(s) in the file"


def test_every_checked_in_entry_shows_its_function() -> None:
    warnings: list[str] = []
    findings = load_findings(REPO / "corpus", warnings)
    assert warnings == []
    entries = findings.entries
    assert len(entries) == sum(1 for p in (REPO / "corpus").iterdir() if (p / "case.json").exists())
    for e in entries:
        assert e.f.startswith(("def f(", "def forward(self")), (e.shown, e.f)
        assert e.title and e.difference and e.bug_in in ("torch", "pythonify", "pyfy-fuzz")
    keys = [(e.severity, -e.count) for e in entries]
    assert keys == sorted(keys)


# -- grouping and ordering ----------------------------------------------------------------------
def _entry(sig: str, kind: str, oracle: str, count: int, root: str | None = None):  # type: ignore[no-untyped-def]
    case = _case(kind, oracle, sig=sig, count=count)
    if root is not None:
        case["root_cause"] = root
    return entry_from_case(case, f"corpus/{case['signature']}", "def f(a0):\n    return a0")


def test_groups_sorted_by_severity_then_count_desc() -> None:
    entries = [
        _entry("a", "compile-divergence", "seq_nr", 50),
        _entry("b", "compile-divergence", "outputs", 1),
        _entry("c", "crash", "exceptions", 7),
        _entry("d", "compile-divergence", "grads", 4),
        _entry("e", "compile-divergence", "aliasing", 2),
        _entry("f", "harness-error", "harness", 9),
        _entry("g", "compile-divergence", "something-new", 3),
    ]
    groups = group_entries(entries)
    assert [(g.severity, g.count) for g in groups] == [
        (1, 4),
        (1, 1),
        (2, 9),
        (2, 7),
        (3, 2),
        (4, 50),
        (5, 3),
    ]
    assert all(len(g.entries) == 1 and g.root_cause is None for g in groups)


def test_entries_with_one_root_cause_are_one_group() -> None:
    entries = [
        _entry("a", "compile-divergence", "seq_nr", 5, root="T8"),
        _entry("b", "compile-divergence", "aliasing", 1, root="T8"),
        _entry("c", "compile-divergence", "aliasing", 4),
        _entry("d", "compile-divergence", "outputs", 1, root="T1"),
        _entry("e", "compile-divergence", "outputs", 1, root="T1"),
    ]
    groups = group_entries(entries)
    # T8's severity is its most severe entry's (3), its count the sum (6): before the lone 4.
    assert [(g.root_cause, g.severity, g.count) for g in groups] == [
        ("T1", 1, 2),
        ("T8", 3, 6),
        (None, 3, 4),
    ]
    t8 = groups[1]
    assert [e.severity for e in t8.entries] == [3, 4]  # inside: most severe first
    assert t8.lead.signature.startswith("compile-divergence.aliasing")


# -- a corpus on disk ---------------------------------------------------------------------------
def _write_entry(
    root: Path, case: dict[str, Any] | str, f: str | None = "def f(a0):\n    return a0\n"
) -> Path:
    d = root / (case["signature"] if isinstance(case, dict) else "broken")
    d.mkdir(parents=True)
    (d / "case.json").write_text(case if isinstance(case, str) else json.dumps(case))
    if f is not None:
        (d / "repro.py").write_text("import torch\n\n" + f)
    return d


def test_load_a_corpus_skipping_damaged_entries(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    _write_entry(root, _case("compile-divergence", "seq_nr", sig="a", count=9))
    _write_entry(root, _case("crash", "exceptions", sig="b", count=2, exc_type="RuntimeError"))
    two = _case(
        "compile-divergence", "mutation", sig="c", format=FORMAT, severity=1,
        title="torch.compile (aot_eager): in-place write to a 0-d float64 argument is lost",
        difference="call 0: input a0 after the call: values differ: expected [1.], got [0.]",
        identity={"kind": "compile-divergence", "paths": []}, coarse="0123456789ab",
        root_cause="T1",
    )  # fmt: skip
    _write_entry(root, two)
    _write_entry(root, _case("compile-divergence", "outputs", sig="d", severity=9), f=None)
    (root / "broken").mkdir()
    (root / "broken" / "case.json").write_text("{")
    for name, case in [
        ("list", [1]),
        ("nokind", {k: v for k, v in _case(sig="e").items() if k != "kind"}),
        ("format9", _case(sig="f", format=9)),
        ("badcount", _case(sig="g", count="many")),
    ]:
        (root / name).mkdir()
        (root / name / "case.json").write_text(json.dumps(case))
    (root / "notes").mkdir()  # a directory that is no entry
    (root / ".campaign").mkdir()  # working state: not looked at
    (root / ".tmp-host-1-abc").mkdir()
    (root / "README.md").write_text("# corpus\n")

    warnings: list[str] = []
    findings = load_findings(root, warnings)
    assert warnings == findings.warnings
    got = [(e.signature.split(".")[-1], e.severity) for e in findings.entries]
    assert got == [("c", 1), ("d", 1), ("b", 2), ("a", 4)]
    by_name = {w.split(":")[0].rsplit("/", 1)[-1]: w for w in warnings}
    assert set(by_name) == {
        "broken", "list", "nokind", "format9", "badcount", "notes",
        "compile-divergence.outputs.d",
    }  # fmt: skip
    assert "unreadable" in by_name["broken"] and "skipped" in by_name["broken"]
    assert "lacks kind" in by_name["nokind"] and "format 9" in by_name["format9"]
    assert "no case.json" in by_name["notes"]
    d_warn = [w for w in warnings if w.startswith(str(root / "compile-divergence.outputs.d"))]
    assert len(d_warn) == 2 and "severity 9" in d_warn[0] and "without f" in d_warn[1]
    c = findings.entries[0]
    assert c.title.endswith("is lost") and c.difference.startswith("call 0: input a0")
    assert c.root_cause == "T1" and c.f == "def f(a0):\n    return a0"
    assert c.shown == str(root / c.signature)
    assert all(len(w.splitlines()) == 1 for w in warnings)


def test_an_entry_directory_is_a_corpus_of_one(tmp_path: Path) -> None:
    d = _write_entry(tmp_path, _case(sig="x"))
    assert [e.signature for e in load_findings(d).entries] == [d.name]


def test_empty_and_fresh_corpora_have_no_findings(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert load_findings(empty).groups == []
    fresh = tmp_path / "fresh"
    (fresh / ".campaign").mkdir(parents=True)
    (fresh / ".hypothesis").mkdir()
    assert load_findings(fresh).groups == []
    assert "No findings in" in render_findings_text(load_findings(fresh))


def test_missing_or_foreign_directories_are_errors(tmp_path: Path) -> None:
    with pytest.raises(FindingsError, match="no such corpus"):
        load_findings(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FindingsError, match="not a directory"):
        load_findings(tmp_path / "file")
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "setup.py").write_text("")
    with pytest.raises(FindingsError, match="not a pyfy-fuzz corpus"):
        load_findings(src)


def test_shown_paths_are_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_entry(tmp_path / "corpus", _case(sig="x"))
    monkeypatch.chdir(tmp_path)
    (e,) = load_findings(tmp_path / "corpus").entries
    assert e.shown == "corpus/compile-divergence.outputs.x"
    (e,) = load_findings(Path("corpus")).entries
    assert e.shown == "corpus/compile-divergence.outputs.x"
    assert e.path == tmp_path / "corpus" / "compile-divergence.outputs.x"


# -- rendering ----------------------------------------------------------------------------------
def _findings(tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tmp_path / "corpus"
    _write_entry(root, _case("compile-divergence", "seq_nr", sig="s", count=9))
    _write_entry(
        root,
        _case(
            "compile-divergence",
            "grads",
            sig="g",
            difference="call 0: grad of a0 <script>alert(1)</script> *x* | y",
            triage="T3: a `view` <b>",
            expected="pass",
        ),
        f="def f(a0):\n    return a0 < 1 and '<b>'\n",
    )
    _write_entry(root, _case("crash", "exceptions", sig="c", exc_type="E"))
    return load_findings(root)


def test_text_markdown_and_html_most_severe_first_and_escaped(tmp_path: Path) -> None:
    findings = _findings(tmp_path)
    text = render_findings_text(findings)
    assert text.startswith("Findings\n")
    i1, i2, i4 = (text.index(f"Severity {s}: ") for s in (1, 2, 4))
    assert i1 < i2 < i4
    assert text.index("compile-divergence.grads.g") < text.index("crash.exceptions.c")
    assert "    | def f(a0):" in text and "bug in torch, seen 1x, fixed" in text

    md = render_findings_markdown(findings)
    assert md.startswith("## Findings") and md.index("### Severity 1") < md.index("### Severity 4")
    assert "&lt;script&gt;" in md and "<script>" not in md and "\\*x\\*" in md and "\\|" in md
    assert "  ```python\n  def f(a0):\n      return a0 < 1 and '<b>'\n  ```" in md

    page = render_findings_html(findings)
    assert page.startswith('<section id="findings">')
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "return a0 &lt; 1 and &#x27;&lt;b&gt;&#x27;" in page  # f, escaped, in a <pre>
    rows = [r for r in page.split("<tr ") if r.startswith('class="finding')]
    assert [r.split('data-severity="')[1][0] for r in rows] == ["1", "2", "4"]
    assert 'class="finding fixed"' in rows[0]


def test_an_entry_says_when_its_repro_was_not_seen_to_fail_alone() -> None:
    """A reader pastes repro.py into an issue: the report says when nobody ran it, or when it
    ran and did not show the bug (a fixed entry is expected to pass, and says nothing)."""
    record = {"exit_code": 1, "verdict": "reproduces", "checked": "x", "tail": ""}
    passing = {**record, "exit_code": 0, "verdict": "passes"}
    shown = {
        "reproduces": entry_from_case(_case(repro=record), "a"),
        "unchecked": entry_from_case(_case(), "b"),
        "passes": entry_from_case(_case(repro=passing), "c"),
        "fixed": entry_from_case(
            _case(expected="pass", repro={**record, "verdict": "passes"}), "d"
        ),
    }
    assert shown["reproduces"].repro == "reproduces" and shown["unchecked"].repro is None
    text = render_findings_text(Findings("corpus", group_entries(list(shown.values()))))
    lines = {
        line.split()[0]: line for line in text.splitlines() if line.startswith("  ") and "(" in line
    }
    assert lines["a"].endswith("(bug in torch, seen 1x)")
    assert lines["b"].endswith(", repro not run yet)")
    assert lines["c"].endswith(", repro.py passes on its own (not yet a repro))")
    assert lines["d"].endswith("seen 1x, fixed)")
    page = render_findings_html(Findings("corpus", group_entries(list(shown.values()))))
    assert page.count('class="repro-status"') == 2
