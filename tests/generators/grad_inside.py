"""What every drawn program that takes a gradient inside its function must hold: shared by the
statement groups that take one (`torch.autograd.grad`, `Tensor.backward()`)."""

from __future__ import annotations

from generators import ProgramSpec, materialize


def check_drawn_grad_inside(specs: list[ProgramSpec]) -> None:
    """Each plan can take the gradient at every call (a backward, Dynamo, grad on at the call
    site, no reentrant checkpoint), half traced by Dynamo; eager runs at least 80% of them (the
    model forbade what it refuses)."""
    assert len(specs) >= 5, len(specs)
    traced = sum("trace_autograd_ops" in s.plan.config for s in specs)
    assert 0 < traced < len(specs)  # Dynamo breaking the graph there, and tracing it
    for s in specs:
        assert s.plan.backward and s.plan.frontend == "dynamo", s.plan
        assert s.plan.through != "checkpoint_reentrant", s.plan  # its forward has no grad
        assert not {"no_grad", "inference_mode"} & set(s.plan.config), s.plan
    ran = 0
    for s in specs:
        program = materialize(s)
        try:
            for seed in range(s.plan.calls):
                program.module.drive(program.make_fn(), program.make_inputs(seed), seed)
            ran += 1
        except Exception:
            pass
    assert ran >= 0.8 * len(specs), (ran, len(specs))
