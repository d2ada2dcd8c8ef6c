"""The recorder: patches each wrapper's post_compile for one compile and collects the nodes and
graphs it sees.

Wrapper metadata is read by patching each wrapper class's `post_compile` for the duration of the
compile: the patch checks the fields the wrapper's model reads (`FIELDS`), has the model's
`record` copy them into its IR node, and then calls the original. Nothing torch builds at
runtime (wrapper closures, generated wrapper source) is kept.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx

from .. import _compat as C
from .. import wrappers as W
from ..errors import PythonifyUnsupported
from ..graph_render import FxNodeMeta, RenderContext, fx_node_meta, render_fx, seq_nr_table
from ..meta import CompiledGraph, FakeOutput, GradStore, IRNode, ScalarGuard
from ..wrappers import (
    autograd,
    synthetic_base,
)

__all__ = ["Recorder", "plain_backend", "render_graphs", "unread_placeholders"]


class Recorder:
    """Collects wrapper records and graphs during one compile."""

    def __init__(self) -> None:
        self.wrappers: dict[str, IRNode | None] = {}
        self.static_input_indices: list[int] = []
        self.gms: list[tuple[str, torch.fx.GraphModule, str | None]] = []
        self.render = RenderContext()
        self.calls = 0
        self.done = False
        # size symbol -> (lower, upper or None), read after the compile (Note [Size symbols])
        self.symbol_ranges: dict[str, tuple[int, int | None]] = {}
        # torch's own view of each graph's nodes (seq_nr etc.), kept apart from what we render.
        self.fx_meta: dict[str, tuple[FxNodeMeta, ...]] = {}
        # id(AOTSyntheticBaseWrapper) -> how each synthetic base was made, read in pre_compile.
        self.base_kinds: dict[int, list[str]] = {}
        # A module's forward frame's arguments, as Dynamo's frame got them (Note [The forward
        # frame of a module] in dynamo.py); None for a function.
        self.frame_args: tuple[Any, ...] | None = None
        # The module's own __call__ runs around the compiled forward (ditto).
        self.module_call = False
        # Compile as DDPOptimizer does (Note [The fakified first call] in dynamo.py), and the
        # fake outputs torch's first call returned: (shape, stride, dtype) each.
        self.fakify_first_call = False
        self.fake_first_outputs: list[FakeOutput] = []
        # roles Inductor compiled to no code (Note [Inductor graphs without ops]).
        self.fx_from_inductor: set[str] = set()
        # Dynamo's guards on the arguments' Python scalars (Note [Scalar arguments] in
        # scalars.py), read once the compile is done.
        self.scalar_guards: list[ScalarGuard] = []
        # `.grad` stores Dynamo made after the graph (Note [Gradients the graph stores]).
        self.grad_stores: list[GradStore] = []

    # -- a compile Dynamo restarts --------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The recorder's state, with every container copied: what `restore` puts back when
        Dynamo restarts the compile it was recording (Note [A compile Dynamo restarts] in
        dynamo.py)."""
        return {k: _copied(v) for k, v in vars(self).items()}

    def restore(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # -- graphs --------------------------------------------------------------------------
    def fx_compiler(self, role: str) -> Callable[..., Any]:
        from torch._dynamo.backends.debugging import boxed_nop

        def compile_(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
            self.gms.append((role, gm, None))
            self.fx_meta[role] = fx_node_meta(gm)
            return boxed_nop(gm, example_inputs)

        return compile_

    def inductor_inner(self, gm: torch.fx.GraphModule, example_inputs: Any, **kwargs: Any) -> Any:
        from torch._inductor.compile_fx import compile_fx_inner

        role = "backward" if kwargs.get("is_backward") else "forward"
        seq_gm = _copy_seq_meta(gm)
        self.fx_meta[role] = fx_node_meta(gm)
        calls = sum(1 for n in gm.graph.nodes if n.op.startswith("call"))
        out = compile_fx_inner(gm, example_inputs, **kwargs)
        src = getattr(out, "source_code", None)
        if not isinstance(src, str):
            if calls:
                raise PythonifyUnsupported(
                    "inductor output without source_code", type(out).__name__
                )
            # Note [Inductor graphs without ops]: torch runs the FX graph itself.
            self.gms.append((role, gm, None))
            self.fx_from_inductor.add(role)
            return out
        check = tuple(int(i) for i in getattr(out, "inputs_to_check", ()) or ())
        mutated = {int(i) for i in getattr(out, "mutated_input_idxs", ()) or ()}
        if getattr(out, "_defers_input_alignment", False):
            check = tuple(i for i in check if i in mutated)
        seq_gm._realign = (check, tuple(i for i in check if i in mutated))  # type: ignore[assignment]
        seq_gm._unread = unread_placeholders(gm)  # type: ignore[assignment]
        self.gms.append((role, seq_gm, src))
        return out

    # -- wrappers ------------------------------------------------------------------------
    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        classes = C.wrapper_classes(tuple(W.POST_COMPILE_FIELDS))
        saved: list[tuple[type, str, Any]] = []
        for name, cls in classes.items():
            saved.append((cls, "post_compile", cls.__dict__["post_compile"]))
            cls.post_compile = self._wrap_post_compile(name, cls.post_compile)  # type: ignore[attr-defined]
        sb = classes["AOTSyntheticBaseWrapper"]
        if "pre_compile" in sb.__dict__:  # else: base kinds unknown, no path variant
            saved.append((sb, "pre_compile", sb.__dict__["pre_compile"]))
            sb.pre_compile = self._wrap_synthetic_base_pre_compile(sb.pre_compile)  # type: ignore[attr-defined]
        ada = C.autograd_dispatch_class()
        saved.append((ada, "post_compile", ada.__dict__["post_compile"]))
        orig_ada = ada.post_compile  # type: ignore[attr-defined]

        def ada_post_compile(*args: Any, **kwargs: Any) -> Any:
            self._record_autograd(C.autograd_compile_spec(orig_ada, args, kwargs))
            return orig_ada(*args, **kwargs)

        ada.post_compile = staticmethod(ada_post_compile)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            for cls, attr, orig in saved:
                setattr(cls, attr, orig)

    def _wrap_post_compile(self, name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self

        @functools.wraps(orig)
        def post_compile(
            self: Any, compiled_fn: Any, aot_config: Any, *, runtime_metadata: Any
        ) -> Any:
            fields = W.POST_COMPILE_FIELDS[name]
            if getattr(self, "needs_post_compile", True) is False:
                fields = ("needs_post_compile",)  # inactive: its model reads nothing else
            C.check_fields(name, self, fields)
            C.check_fields("ViewAndMutationMeta", runtime_metadata, C.META_FIELDS)
            recorder._record(name, self, aot_config, runtime_metadata)
            return orig(self, compiled_fn, aot_config, runtime_metadata=runtime_metadata)

        return post_compile

    def _wrap_synthetic_base_pre_compile(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        """Read which kind of synthetic base torch made: only pre_compile sees the inputs
        (Note [How a synthetic base is made] in wrappers/synthetic_base.py)."""
        recorder = self

        @functools.wraps(orig)
        def pre_compile(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = orig(self, *args, **kwargs)
            recorder.base_kinds[id(self)] = synthetic_base.base_kinds(out)
            return out

        return pre_compile

    def _record(self, name: str, w: Any, aot_config: Any, meta: Any) -> None:
        """Each wrapper's own `record` (wrappers/) builds its node from torch's metadata."""
        if name in self.wrappers and name != "FakifiedOutWrapper":
            raise PythonifyUnsupported(
                "more than one compiled region", f"{name} ran twice in one compile"
            )
        node: IRNode | None
        if name == "AOTSyntheticBaseWrapper":
            node = synthetic_base.record(w, aot_config, meta, self.base_kinds.get(id(w), []))
        else:
            node = W.POST_COMPILE[name].record(w, aot_config, meta)
        if name == "RuntimeWrapper":
            self.static_input_indices = list(meta.static_input_indices or [])
        self.wrappers[name] = node

    def _record_autograd(self, spec: Any) -> None:
        C.check_fields("AOTDispatchAutogradCompileSpec", spec, autograd.FIELDS)
        self.wrappers[autograd.AOTAutogradWrapperNode.wrapper] = autograd.record(spec)


# Note [Inductor graphs without ops]
# A graph with no call nodes (a training program that returns its input: the forward returns
# the primal, the backward the tangent) is not lowered: compile_fx_inner returns the graph
# module's own `forward`, boxed, and so has no output code. The file renders that graph from
# FX, as for aot_eager, and its docstring says so; it runs exactly what torch runs. A graph
# with ops and no source is something else and stays refused.


def plain_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], backend: str) -> Any:
    if backend == "aot_eager":
        from torch._dynamo.backends.debugging import aot_eager

        return aot_eager(gm, example_inputs)
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)


def unread_placeholders(gm: torch.fx.GraphModule) -> tuple[int, ...]:
    """The placeholders no node reads, by position. Read after `compile_fx_inner`: Inductor's
    post-grad passes run on `gm` in place (the capture turns the FX graph cache off), so these
    are the placeholders its lowering saw without users, whose device it does not count."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return tuple(i for i, n in enumerate(placeholders) if not n.users)


def _copy_seq_meta(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Inductor mutates the graph it lowers; keep the seq_nr view of it as handed to us."""
    holder = torch.fx.GraphModule(gm, torch.fx.Graph())
    holder._seq = seq_nr_table(gm)  # type: ignore[assignment]
    return holder


def render_graphs(rec: Recorder) -> dict[str, CompiledGraph]:
    """The recorded graphs as source: FX rendered as Python, Inductor's module verbatim."""
    training = "AOTDispatchAutograd" in rec.wrappers
    out: dict[str, CompiledGraph] = {}
    for role, gm, src in rec.gms:
        name = role if training else "inference"
        if name in out:
            raise PythonifyUnsupported("more than one compiled graph per role", name)
        fn_name = f"compiled_{name}"
        if src is None:
            origin = "Inductor: no ops, so no kernel" if role in rec.fx_from_inductor else ""
            out[name] = render_fx(gm, name, fn_name, rec.render, origin or "aot_eager")
        else:
            seq, acc = gm._seq  # type: ignore[misc]
            realign, writeback = gm._realign  # type: ignore[misc]
            out[name] = CompiledGraph(
                name=name,
                kind="inductor",
                source=src,
                seq_nr=seq,
                grad_acc=acc,
                realign_inputs=realign,
                realign_writeback=writeback,
                unread_inputs=gm._unread,  # type: ignore[arg-type]
            )
    if training and "backward" not in out:
        raise PythonifyUnsupported("a training graph whose backward did not compile at capture")
    return out


def _copied(value: Any) -> Any:
    """`value` with its own containers: a snapshot must not see what a later compile adds."""
    if isinstance(value, dict | list | set):
        return type(value)(value)
    if isinstance(value, RenderContext):
        return RenderContext(dict(value.constants))
    return value
