"""One seed draws one set of programs whatever else the process imported (Note [Draws that
depend on what the process imported] in generators/_determinism.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from generators import programs
from generators._determinism import pin_hypothesis_constants
from pyfy_fuzz.bench.measure import draw


def test_this_hypothesis_has_the_pool_the_generators_pin() -> None:
    """If a Hypothesis moves its local constants, this fails instead of the draws drifting."""
    assert pin_hypothesis_constants()


def test_importing_a_module_full_of_numbers_changes_no_draw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the pin, 181 of 300 seed-0 specs changed after such an import (a script that had
    imported only the generators)."""
    before = draw(programs(), 200, seed=0)
    (tmp_path / "pyfy_numbers_module.py").write_text(
        "VALUES = [5, 6, 7, 9, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, -7, -3, 1.25]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("pyfy_numbers_module")
    try:
        assert draw(programs(), 200, seed=0) == before
        # The pool Hypothesis draws constants from holds nothing of any local module (in a
        # process that had imported other local modules, these numbers were already in it and
        # the draws above could not tell).
        from hypothesis.internal.conjecture import providers

        assert len(providers._get_local_constants()) == 0
    finally:
        sys.modules.pop("pyfy_numbers_module", None)
