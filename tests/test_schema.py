"""The torch-free schema (issue 15's bottom layer): importable with nothing else of pyfy-fuzz
and no torch, its public surface exactly `__all__`, and the names that moved still importable
from where they were, saying where they went."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types
import warnings

import pytest

import pyfy_fuzz.schema
from pyfy_fuzz.schema import paths, spec

# Made unimportable in the child: torch, the generator under test, the other layers.
_BLOCKED = ("torch", "generators", "oracles", "pyfy_fuzz.pythonify", "hypothesis")


def test_the_schema_imports_without_torch_or_any_other_layer() -> None:
    code = (
        "import sys\n"
        f"for name in {_BLOCKED!r}:\n"
        "    sys.modules[name] = None\n"
        "import pyfy_fuzz.schema as s\n"
        "import pyfy_fuzz.schema.spec as spec\n"
        "assert s.ALL_PATHS and s.reached(['dedupe/duplicate_args'], 'dedupe')\n"
        "S = spec\n"
        "p = S.ProgramSpec('dedupe', (S.RootSpec((2,)),), (S.InputSpec('root'),), (), ())\n"
        "assert spec.ProgramSpec.from_json(p.to_json()) == p\n"
        "print(sorted(m for m, v in sys.modules.items() if v and m.startswith('pyfy_fuzz')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    loaded = "['pyfy_fuzz', 'pyfy_fuzz.schema', 'pyfy_fuzz.schema.paths', 'pyfy_fuzz.schema.spec']"
    assert run.stdout.strip() == loaded


@pytest.mark.parametrize("module", [pyfy_fuzz.schema, paths, spec], ids=lambda m: m.__name__)
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
        and getattr(v, "__module__", module.__name__).startswith("pyfy_fuzz.schema")
    }
    assert defined - set(module.__all__) == set()


def test_moved_names_still_import_from_pythonify_paths_saying_where_they_went() -> None:
    old = importlib.import_module("pyfy_fuzz.pythonify.paths")
    for name in paths.__all__:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(old, name) is getattr(paths, name)
        (w,) = caught
        assert w.category is DeprecationWarning
        assert f"moved to pyfy_fuzz.schema.paths.{name}" in str(w.message)
    with pytest.raises(AttributeError):
        old.NOT_A_PATH_NAME  # noqa: B018
