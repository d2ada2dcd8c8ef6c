"""Example target: mutates a view of an input in place and returns an alias of that input.

Compiled, this exercises RuntimeWrapper: the in-place mutation of ``x`` is replayed onto the
real input after the graph runs, and ``x.t()`` is regenerated as a view of the caller's ``x``.

    pyfy-fuzz pythonify examples/mutate_view.py:f --inputs examples/mutate_view_inputs.pt \\
        -o /tmp/f_pythonified.py
"""

import torch


def f(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x[:2].mul_(2)
    return (x + y).sin(), x.t()
