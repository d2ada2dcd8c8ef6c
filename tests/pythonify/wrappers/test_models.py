"""The wrapper models' shape: one module per wrapper, each complete, its runtime real code.

These are the properties a reader relies on when opening `wrappers/<name>.py` beside torch's
runtime_wrappers.py: the node is defined there, `record`/`emit`/`paths` exist, the fields it
reads exist on the installed torch's class, and the runtime helpers copied into the generated
file use nothing the file does not define.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import pkgutil
import re
import types
from pathlib import Path

import pytest

from pyfy_fuzz.pythonify import _compat, file_runtime, wrappers
from pyfy_fuzz.pythonify.gen_python import header
from pyfy_fuzz.pythonify.meta import IRNode
from pyfy_fuzz.pythonify.wrappers import (
    _cudagraph_buffers,
    _cudagraph_emulation,
    _cudagraph_runner,
    cudagraph,
)
from pyfy_fuzz.pythonify.wrappers.source import runtime_source

# torch's post_compile order over the stack, inner-most first (the wrapper audit, seeds/000);
# cudagraph, which wraps compiled graphs, last.
ORDER = [
    "effect_tokens",
    "subclass",
    "rng",
    "fakified_out",
    "autograd",
    "runtime",
    "debug_assert",
    "synthetic_base",
    "dedupe",
    "cudagraph",
]


def _short(m: types.ModuleType) -> str:
    return m.__name__.rsplit(".", 1)[-1]


def test_one_module_per_wrapper_in_torchs_order() -> None:
    assert [_short(m) for m in wrappers.MODULES] == ORDER


def test_the_registry_is_every_public_module_but_the_emitting_utilities() -> None:
    """Note [The wrapper registry]: a public module of wrappers/ that forgot its REGISTRATION
    would silently not be a wrapper."""
    public = {i.name for i in pkgutil.iter_modules(wrappers.__path__) if not i.name.startswith("_")}
    assert public - {_short(m) for m in wrappers.MODULES} == {"source"}


def test_each_segment_is_in_torchs_post_compile_order() -> None:
    by_segment: dict[str, list[str]] = {}
    for m in wrappers.MODULES:
        by_segment.setdefault(m.REGISTRATION.segment, []).append(m.REGISTRATION.node.wrapper)
    assert by_segment == {
        "forward_inference": [
            "EffectTokensWrapper",
            "AOTDispatchSubclassWrapper",
            "FunctionalizedRngRuntimeWrapper",
            "FakifiedOutWrapper",
        ],
        "autograd_assembly": ["AOTDispatchAutograd", "RuntimeWrapper", "DebugAssertWrapper"],
        "dispatch": ["AOTSyntheticBaseWrapper", "AOTDedupeWrapper"],
        "cudagraph": ["cudagraphify"],
    }


def test_segments_orders_recorded_nodes_and_drops_inactive_ones() -> None:
    nodes = {m.REGISTRATION.node.wrapper: m.REGISTRATION.node() for m in wrappers.MODULES[:-1]}
    recorded = [
        nodes["AOTDedupeWrapper"],
        None,
        nodes["RuntimeWrapper"],
        nodes["AOTDispatchAutograd"],
    ]
    got = wrappers.segments(recorded)
    assert {k: [n.wrapper for n in v] for k, v in got.items()} == {
        "forward_inference": [],
        "autograd_assembly": ["AOTDispatchAutograd", "RuntimeWrapper"],
        "dispatch": ["AOTDedupeWrapper"],
        "cudagraph": [],
    }


def test_the_files_helper_sections_keep_their_order() -> None:
    """Generated files list the wrappers' runtime helpers in this order (REGISTRATION.helpers);
    changing it changes every file."""
    heads = re.findall(r"^# -- (\w+) \(wrappers/(\w+)\.py\)$", wrappers.runtime_helpers(), re.M)
    assert [name for _, name in heads] == [
        "synthetic_base",
        "runtime",
        "autograd",
        "subclass",
        "rng",
    ]


@pytest.mark.parametrize("module", wrappers.MODULES, ids=_short)
def test_each_module_holds_its_node_and_its_model(module: types.ModuleType) -> None:
    nodes = [
        v
        for v in vars(module).values()
        if isinstance(v, type)
        and issubclass(v, IRNode)
        and v is not IRNode
        and v.__module__ == module.__name__
    ]
    assert len(nodes) == 1, "exactly one IR node is defined per wrapper module"
    (node,) = nodes
    assert node.wrapper and module.REGISTRATION.node is node
    assert callable(module.paths)
    if module is not cudagraph:
        for name in ("record", "emit", "FUNCTION", "__all__"):
            assert hasattr(module, name), f"{module.__name__} lacks {name}"
    assert sorted(module.__all__) == sorted(
        n for n, v in vars(module).items() if not n.startswith("_") and n in module.__all__
    )
    for name in module.__all__:
        assert hasattr(module, name), f"{module.__name__}.__all__ names missing {name}"


def test_the_capture_patches_every_post_compile_wrapper_once() -> None:
    assert sorted(wrappers.POST_COMPILE) == [
        "AOTDedupeWrapper",
        "AOTDispatchSubclassWrapper",
        "AOTSyntheticBaseWrapper",
        "DebugAssertWrapper",
        "EffectTokensWrapper",
        "FakifiedOutWrapper",
        "FunctionalizedRngRuntimeWrapper",
        "RuntimeWrapper",
    ]


def test_fields_read_exist_on_the_installed_torch() -> None:
    classes = _compat.wrapper_classes(tuple(wrappers.POST_COMPILE_FIELDS))
    for name, fields in wrappers.POST_COMPILE_FIELDS.items():
        cls = classes[name]
        names = set(getattr(cls, "__dataclass_fields__", {})) | set(dir(cls))
        missing = [f for f in fields if f not in names]
        assert not missing, f"{name} no longer has {missing}"


def test_a_renamed_field_fails_with_the_wrapper_and_field_named() -> None:
    class Renamed:
        keep_arg_mask = [True]

    with pytest.raises(Exception, match=r"AOTDedupeWrapper has no field 'add_dupe_map'"):
        _compat.check_fields("AOTDedupeWrapper", Renamed(), wrappers.dedupe.FIELDS)


def _emitted_modules() -> list[tuple[types.ModuleType, tuple[str, ...]]]:
    out = [(file_runtime, file_runtime.RUNTIME)]
    out += [(m, m.RUNTIME) for m in wrappers.MODULES if getattr(m, "RUNTIME", ())]
    cudagraph_runtime = (_cudagraph_buffers, _cudagraph_emulation, _cudagraph_runner)
    return [*out, *((m, m.RUNTIME) for m in cudagraph_runtime)]


def _free_names(tree: ast.AST) -> set[str]:
    """Names read in `tree` that it does not bind itself (coarse: any binding anywhere)."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound


def _file_names(tmp_path: Path) -> set[str]:
    """Names a generated file defines at its top level outside the runtime helpers (header,
    guard and entry sections), read off a real file: a table the guard section gains is known
    here without a list to keep."""
    import torch

    from pyfy_fuzz.pythonify import pythonify

    res = pythonify(lambda x: x.sin(), (torch.randn(2, requires_grad=True),), tmp_path / "p.py")
    tree = ast.parse(res.path.read_text())
    return {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign | ast.AnnAssign)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Name)
    }


def test_runtime_helpers_use_only_what_the_generated_file_defines(tmp_path: Path) -> None:
    """Note [Runtime helpers are real code]: torch, the header's imports, other helpers, the
    file's own tables; no annotations (the file does not import typing)."""
    head = ast.parse(header_stub())
    header_names = {
        (a.asname or a.name).split(".")[0] for n in ast.walk(head) for a in getattr(n, "names", [])
    }
    header_names |= {n.name for n in ast.walk(head) if isinstance(n, ast.ClassDef)}
    emitted = [(m, n) for m, names in _emitted_modules() for n in names]
    helper_names = {n for _, n in emitted}
    allowed = set(dir(builtins)) | header_names | helper_names | _file_names(tmp_path)
    for module, name in emitted:
        tree = ast.parse(runtime_source(module, (name,)))
        unknown = _free_names(tree) - allowed
        assert not unknown, f"{module.__name__}.{name} uses {sorted(unknown)}"
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                annotated = [a.arg for a in node.args.args if a.annotation is not None]
                assert not annotated and node.returns is None, f"{name} is annotated"


def header_stub() -> str:
    """The generated file's header for an empty IR (imports and PythonifyGuardError)."""
    ir = types.SimpleNamespace(header={}, graphs={}, active_wrappers=lambda: [])
    return header(ir)  # type: ignore[arg-type]


def test_emitted_helpers_are_the_modules_own_code() -> None:
    """What the file gets is the function's source, not a copy kept elsewhere."""
    for module, names in _emitted_modules():
        for name in names:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                assert inspect.getsource(obj).strip() in runtime_source(module, (name,))
