"""render(spec) -> the source of a standalone module that needs only torch.

The module defines `make_fn()` (the function, or a fresh nn.Module), `make_inputs(seed,
variant)` (arguments with the spec's aliasing structure, deterministic per seed), `PLAN`, `SPEC`
and `DEVICE`. Running it as a script calls the program eagerly as the plan says and prints the
results, so a saved case is readable and runnable without pyfy-fuzz.

Every tensor the module creates lives on `DEVICE`. Random values are drawn from a CPU generator
and then moved, so a program's inputs, parameters and tangents hold the same values on every
device and a case found on one device replays on another.
"""

from __future__ import annotations

import re
from dataclasses import asdict

from pyfy_fuzz.schema.config import call_context, graph_hooks_form

from ._effect_op import effect_op_source
from ._hooks import hooks_source
from ._mirror import mirror_source
from ._prelude import no_retain, prelude_source
from ._relations import relations_source
from ._render_body import out_expr, stmt_lines
from ._render_function import function_source
from ._render_inputs import make_inputs_source
from ._saved_hooks import graph_hooks_source, saved_hooks_source
from ._spec import ModuleSpec, ProgramSpec

__all__ = ["HOOKS", "MIRROR", "module_init", "render", "uses_effect_op"]

# The helpers' text (generators/_emit.py), read once: each of their modules pins its source.
_PRELUDE = prelude_source()
_RELATIONS = relations_source()
_SAVED_HOOKS = saved_hooks_source()
HOOKS = hooks_source()  # a repro.py copies the hooks its program registers out of it
_EFFECT_OP = effect_op_source()

_TWO_TENSOR = "from torch.testing._internal.two_tensor import TwoTensor\n"
MIRROR = "\n\n" + mirror_source()  # the subclass family's class (generators/_mirror.py)


def module_init(m: ModuleSpec) -> list[str]:
    lines = [
        "    def __init__(self):",
        "        super().__init__()",
        "        g = torch.Generator().manual_seed(1234)",
    ]
    for i, shape in enumerate(m.params):
        lines.append(
            f"        self.p{i} = torch.nn.Parameter("
            f"torch.randn({tuple(shape)!r}, generator=g).to(DEVICE))"
        )
    if m.tied:
        lines.append(f"        self.p{len(m.params)} = self.p0  # tied")
    for i, shape in enumerate(m.buffers):
        lines.append(
            f'        self.register_buffer("b{i}", '
            f"torch.randn({tuple(shape)!r}, generator=g).to(DEVICE))"
        )
    if m.batchnorm is not None:
        lines.append(f"        self.bn = torch.nn.BatchNorm1d({m.batchnorm}, device=DEVICE)")
    return lines


def _fn_source(spec: ProgramSpec) -> str:
    params = ", ".join(f"a{i}" for i in range(len(spec.inputs)))
    body: list[str] = []
    for stmt in spec.body:
        body += stmt_lines(stmt)
    outs = [out_expr(o) for o in spec.outputs]
    ret = outs[0] if len(outs) == 1 else f"({', '.join(outs)})"
    if spec.module is None:
        lines = [
            f"def f({params}):",
            *(f"    {b}" for b in body),
            f"    return {ret}",
            "",
            "",
            "def make_fn():",
            "    return f",
        ]
        return "\n".join(lines)
    sep = ", " if params else ""
    lines = [
        "class Program(torch.nn.Module):",
        *module_init(spec.module),
        "",
        f"    def forward(self{sep}{params}):",
        *(f"        {b}" for b in body),
        f"        return {ret}",
        "",
        "",
        "def make_fn():",
        "    m = Program()",
    ]
    if spec.module.full_backward_hook:
        lines.append("    m.register_full_backward_pre_hook(_module_pre_hook)")
        lines.append("    m.register_full_backward_hook(_module_hook)")
    lines.append("    return m")
    return "\n".join(lines)


def _uses(spec: ProgramSpec, *ops: str) -> bool:
    return any(s.op in ops for s in spec.body)


def uses_effect_op(spec: ProgramSpec) -> bool:
    """The program calls pyfy_gen::record: in its body, or in a custom Function's backward."""
    return _uses(spec, "effect_op") or any(f.backward_record for f in spec.functions)


# A torch device string ("cpu", "cuda", "cuda:1", "meta"); torch checks the type at import.
_DEVICE_RE = re.compile(r"[a-z][a-z0-9_]*(:[0-9]+)?")


def render(spec: ProgramSpec, device: str = "cpu") -> str:
    """The standalone source of `spec` (see the module docstring), its tensors on `device`."""
    if not isinstance(device, str) or not _DEVICE_RE.fullmatch(device):
        raise ValueError(f"device must be a torch device string like 'cuda', got {device!r}")
    parts = [
        f'"""pyfy-fuzz program (family {spec.family}). Needs only torch: python this_file.py"""',
        "",
        "import contextlib",
        "",
        "import torch",
    ]
    subclasses = {r.subclass for r in spec.roots}
    if subclasses & {"two_tensor", "nested_two_tensor"}:
        parts.append(_TWO_TENSOR.strip())
    if "mirror" in subclasses:
        parts.append("from torch.utils._python_dispatch import return_and_correct_aliasing")
    if any(f.once_differentiable for f in spec.functions):
        parts.append("from torch.autograd.function import once_differentiable")
    parts += ["", f"DEVICE = {device!r}"]
    parts.append(_PRELUDE)
    parts += ["", _RELATIONS, "", _SAVED_HOOKS, ""]
    if "mirror" in subclasses:
        parts.append(MIRROR)
    if uses_effect_op(spec):
        parts.append(_EFFECT_OP)
    parts.append(HOOKS)
    for k, fn in enumerate(spec.functions):
        parts += ["", function_source(k, fn), ""]
    parts += ["", _fn_source(spec), "", "", make_inputs_source(spec), ""]
    parts.append(f"PLAN = {asdict(spec.plan)!r}")
    parts.append(f"CALL_CONTEXT = {call_context(spec.plan.config)!r}")
    parts.append(graph_hooks_source(graph_hooks_form(spec.plan.config)))
    parts.append(f"NO_RETAIN = {no_retain(spec)!r}  # Note [Arguments whose grad is not retained]")
    parts.append(f"SPEC = {spec.to_json()!r}")
    parts.append(_MAIN)
    return "\n".join(parts)


_MAIN = """

if __name__ == "__main__":
    fn = make_fn()
    for seed in range(PLAN["calls"]):
        result = drive(fn, make_inputs(seed), seed)
        print(f"call {seed}: out={result['out']!r}")
        print(f"call {seed}: grads={result['grads']!r}")
"""
