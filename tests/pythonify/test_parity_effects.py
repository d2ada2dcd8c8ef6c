"""EffectTokensWrapper through a custom effectful op, the print HOP, and a custom Function's
backward (backward tokens)."""

from __future__ import annotations

import torch
import torch._higher_order_ops
from torch._higher_order_ops.effects import _EffectType, _register_effectful_op

from .parity import check_parity

_LOG: list[float] = []
_lib = torch.library.Library("pyfy_fuzz_test", "FRAGMENT")
_lib.define("log_value(Tensor x) -> ()")
_lib.impl("log_value", lambda x: _LOG.append(float(x.sum())), "CompositeExplicitAutograd")
_lib.impl("log_value", lambda x: None, "Meta")
_register_effectful_op(torch.ops.pyfy_fuzz_test.log_value.default, _EffectType.ORDERED)


def test_custom_effectful_op_runs_in_order(tmp_path):
    def f(x):
        torch.ops.pyfy_fuzz_test.log_value(x)
        y = x * 2
        torch.ops.pyfy_fuzz_test.log_value(y)
        return y

    _LOG.clear()
    check_parity(tmp_path, f, lambda: (torch.ones(3),), expect="EffectTokensWrapper", calls=1)
    # capture, eager, torch.compile, the file: each logs x then 2x, in that order.
    assert _LOG == [3.0, 6.0] * 4


def test_print_higher_order_op(tmp_path, capfd):
    def f(x):
        torch._higher_order_ops.print("hop sum {}", x.sum())
        return x + 1

    check_parity(tmp_path, f, lambda: (torch.ones(3),), expect="EffectTokensWrapper", calls=1)
    assert capfd.readouterr().out.count("hop sum") == 4


class _PrintInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        torch.ops.aten._print("custom backward ran")
        return g * 2


def test_backward_effect_tokens_in_custom_function(tmp_path, capfd):
    def f(x):
        return _PrintInBackward.apply(x).sin()

    res = check_parity(
        tmp_path,
        f,
        lambda: (torch.ones(3, requires_grad=True),),
        expect="AOTDispatchAutograd",
        calls=1,
    )
    assert res.ir.autograd_assembly[0].num_backward_tokens == 1
    # eager, torch.compile and the file each ran the backward once.
    assert capfd.readouterr().out.count("custom backward ran") == 3
