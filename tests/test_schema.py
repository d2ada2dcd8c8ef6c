"""The torch-free schema (issue 15's bottom layer): importable with nothing else of pyfy-fuzz
and no torch, its public surface exactly `__all__`, and the names that moved still importable
from where they were, saying where they went."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import pyfy_fuzz.schema
from pyfy_fuzz.schema import case, finding, messages, paths, spec

# Made unimportable in the child: torch, the generator under test, the other layers.
_BLOCKED = ("torch", "generators", "oracles", "pyfy_fuzz.pythonify", "hypothesis")


def test_the_schema_imports_without_torch_or_any_other_layer() -> None:
    code = (
        "import sys\n"
        f"for name in {_BLOCKED!r}:\n"
        "    sys.modules[name] = None\n"
        "import pyfy_fuzz.schema as s\n"
        "import pyfy_fuzz.schema.spec as spec\n"
        "import pyfy_fuzz.schema.finding as finding\n"
        "import pyfy_fuzz.schema.case as case\n"
        "import pyfy_fuzz.schema.messages as m\n"
        "import pyfy_fuzz.schema.config as config\n"
        "assert config.call_context(('debug_assert', 'no_grad')) == 'no_grad'\n"
        "import pickle\n"
        "done = m.Done(m.CaseOutcome('ok', 'dedupe', wrapper_paths=('a/b',)), '{}', job=3)\n"
        "assert pickle.loads(pickle.dumps(done)) == done\n"
        "import pyfy_fuzz.schema.difference as diff\n"
        "e = diff.ExcFacts('E', 'boom')\n"
        "d = diff.Difference('exceptions', 'torch.compile', diff.CallRef('plan', 0),"
        " 'exception', 'raised', exc=e)\n"
        "f = finding.Finding('crash', 'exceptions', 'torch.compile', (), 'x', exc_type='E',"
        " differences=(d,))\n"
        "assert finding.Finding.from_dict(f.to_dict()) == f\n"
        "assert s.ALL_PATHS and s.signature_paths(['dedupe/duplicate_args'])\n"
        "S = spec\n"
        "p = S.ProgramSpec('dedupe', (S.RootSpec((2,)),), (S.InputSpec('root'),), (), ())\n"
        "assert spec.ProgramSpec.from_json(p.to_json()) == p\n"
        "print(sorted(m for m, v in sys.modules.items() if v and m.startswith('pyfy_fuzz')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    loaded = [
        "pyfy_fuzz",
        "pyfy_fuzz.schema",
        "pyfy_fuzz.schema.case",
        "pyfy_fuzz.schema.config",
        "pyfy_fuzz.schema.difference",
        "pyfy_fuzz.schema.finding",
        "pyfy_fuzz.schema.messages",
        "pyfy_fuzz.schema.paths",
        "pyfy_fuzz.schema.spec",
    ]
    assert run.stdout.strip() == repr(loaded)


@pytest.mark.parametrize(
    "module", [pyfy_fuzz.schema, paths, spec, finding, case, messages], ids=lambda m: m.__name__
)
def test_all_is_the_public_surface_both_ways(module: types.ModuleType) -> None:
    """Every name in __all__ exists; every public name the module defines is in __all__."""
    assert len(set(module.__all__)) == len(module.__all__)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []
    defined = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_")
        and not isinstance(v, types.ModuleType)
        and n != "annotations"  # from __future__
        # a submodule's own names; the package re-exports its submodules'
        and (
            getattr(v, "__module__", module.__name__) == module.__name__
            or (module is pyfy_fuzz.schema and v.__module__.startswith("pyfy_fuzz.schema"))
        )
    }
    assert defined - set(module.__all__) == set()


ROOT = Path(__file__).resolve().parents[1]


def _checked_in_cases() -> list[Path]:
    return sorted((ROOT / "corpus").glob("*/case.json"))


def test_every_checked_in_case_round_trips_through_its_record() -> None:
    """CaseRecord reads every entry of the checked-in corpus and gives back the same dict."""
    paths_ = _checked_in_cases()
    assert len(paths_) >= 20
    for p in paths_:
        data = json.loads(p.read_text())
        record = case.CaseRecord.from_json(data)
        assert record.to_json() == data, p.parent.name
        assert record.signature == p.parent.name


def test_a_record_keeps_unknown_fields_and_absent_ones_absent() -> None:
    data = json.loads(_checked_in_cases()[0].read_text())
    data["triage"] = "a person's note"
    data.pop("title", None)
    record = case.CaseRecord.from_json(data)
    assert record.extra["triage"] == "a person's note"
    assert "title" not in record.to_json() and record.title is None
    assert record.to_json() == data


@pytest.mark.parametrize(
    "edit, error",
    [
        (lambda d: d.pop("kind"), "lacks kind"),
        (lambda d: d.update(format=3), "has the old format 3"),
        (lambda d: d.update(format=9), f"has format 9, this build reads {case.FORMAT}"),
        (lambda d: d.pop("coarse"), "lacks coarse"),
        (lambda d: d.update(kind="segfault"), "unknown finding kind 'segfault'"),
        (lambda d: d.update(subject="me"), "unknown subject 'me'"),
        (lambda d: d.update(expected="maybe"), "expected must be 'fail' or 'pass'"),
        (lambda d: d.update(spec={"family": 1}), "spec is invalid"),
    ],
)
def test_an_unreadable_case_says_why(edit: Any, error: str) -> None:
    data = json.loads(_checked_in_cases()[0].read_text())
    edit(data)
    with pytest.raises(case.CaseError, match=re.escape(error)):
        case.CaseRecord.from_json(data)
    if "old format" in error:
        with pytest.raises(case.OldFormat):
            case.CaseRecord.from_json(data)


def test_messages_are_frozen_and_check_what_they_carry() -> None:
    """A message is data that crosses a pipe: nothing may change it on the way, and a
    malformed one fails where it is made, not in the process that reads it."""
    out = messages.CaseOutcome("ok", "dedupe")
    with pytest.raises(AttributeError):
        out.status = "discarded"  # type: ignore[misc]
    with pytest.raises(ValueError, match="not a case status"):
        messages.CaseOutcome("fine", "dedupe")
    with pytest.raises(ValueError, match="harness-error finding"):
        messages.CaseOutcome("error", "dedupe")
    with pytest.raises(ValueError, match="cannot be complete"):
        messages.Shrunk({}, "{}", None, confirmed=True, cut_by_budget=True, complete=True)
    # the pool flushes what it holds for a worker exactly when one of these arrives
    assert set(messages.BETWEEN_CASES) == {messages.Ready, messages.Done, messages.Shrunk}
