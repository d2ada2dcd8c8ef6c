"""AOTDedupeWrapper's emitted code (wrappers/dedupe.py)."""

from __future__ import annotations

from pyfy_fuzz.pythonify.ir import AOTDedupeWrapperNode
from pyfy_fuzz.pythonify.wrappers import dedupe

from .helpers import INNER, exec_helper


def test_dedupe_helper_drops_duplicates():
    node = AOTDedupeWrapperNode(keep_arg_mask=[True, False, True], add_dupe_map=[0, 0, 1])
    ns = exec_helper(dedupe.emit(node, INNER), inner=lambda args: args)
    assert ns["_dedupe_wrapper"](["a", "a", "b"]) == ["a", "b"]
