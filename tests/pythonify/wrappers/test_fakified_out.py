"""FakifiedOutWrapper's emitted code (wrappers/fakified_out.py)."""

from __future__ import annotations

import torch

from pyfy_fuzz.pythonify.ir import FakeOutMeta, FakifiedOutWrapperNode
from pyfy_fuzz.pythonify.wrappers import fakified_out

from .helpers import INNER, exec_helper


def test_fakified_out_helper_first_call_returns_fake_strided_outputs():
    node = FakifiedOutWrapperNode(
        out_metas=[FakeOutMeta((2, 3), (1, 2), "torch.float32", "cpu"), None]
    )
    calls = []
    ns = exec_helper(
        fakified_out.emit(node, INNER),
        inner=lambda args: calls.append(args) or ["real"],
        _dtype=lambda name: getattr(torch, name.split(".")[-1]),
    )
    wrapper = ns["_fakified_out_wrapper"]
    assert wrapper([1]) == ["real"]  # consumed at capture: runs the graph
    ns["_fakified_state"]["pending"] = True
    fake = wrapper([1])
    assert fake[0].device.type == "meta" and fake[0].stride() == (1, 2) and fake[1] is None
    assert wrapper([1]) == ["real"] and len(calls) == 2
