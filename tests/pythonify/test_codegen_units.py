"""Unit tests of the generated source as a whole (one wrapper's code: tests/pythonify/wrappers/)."""

from __future__ import annotations

import torch

from pyfy_fuzz.pythonify import load, pythonify


def test_wrapper_order_matches_torch_application_order(tmp_path):
    def f(a, b):
        a.add_(1)
        return a * b

    x = torch.randn(4, requires_grad=True).clone()
    with torch._functorch.config.patch(debug_assert=True):
        res = pythonify(f, (x, x), tmp_path / "p.py", frontend="aot")
    # Outer-most first, as torch applies post_compile: dispatch, then assembly.
    assert res.active_wrappers == [
        "AOTDedupeWrapper",
        "DebugAssertWrapper",
        "RuntimeWrapper",
        "AOTDispatchAutograd",
    ]
    src = res.path.read_text()
    # Sections appear inner-most first, each helper naming the callable it wraps.
    order = [
        "def compiled_forward",
        "class CompiledFunction(",
        "def _runtime_wrapper",
        "def _debug_assert_wrapper",
        "def _dedupe_wrapper",
    ]
    assert [src.index(s) for s in order] == sorted(src.index(s) for s in order)
    assert "return _debug_assert_wrapper([args[0], args[2]])" not in src
    assert "return _debug_assert_wrapper([args[0]])" in src


def test_seq_nr_survives_into_the_file_and_maps_backward_to_forward(tmp_path):
    def f(x, w):
        y = x @ w
        return (y.sin() * y).sum() + (x * x).sum()

    res = pythonify(
        f,
        (torch.randn(3, 4, requires_grad=True), torch.randn(4, 2, requires_grad=True)),
        tmp_path / "p.py",
    )
    mod = load(res.path, bind=f)
    fw, bw = mod.SEQ_NR["forward"], mod.SEQ_NR["backward"]
    assert fw and bw
    assert fw == dict(res.ir.graphs["forward"].seq_nr)
    acc = set(mod.GRADIENT_ACC_NODES.get("backward", []))
    fw_nrs = set(fw.values())
    unmapped = [n for n, s in bw.items() if n not in acc and s not in fw_nrs]
    assert not unmapped, f"backward nodes without a forward seq_nr: {unmapped}"
    # Every annotated node line carries its seq_nr comment.
    src = res.path.read_text()
    for name, nr in fw.items():
        assert f"    {name} = " in src and f"# seq_nr={nr}" in src


def test_file_imports_torch_only(tmp_path):
    res = pythonify(lambda x: x.sin(), (torch.randn(3),), tmp_path / "p.py")
    imports = [
        line.split()[1]
        for line in res.path.read_text().splitlines()
        if line.startswith(("import ", "from "))
    ]
    assert set(imports) <= {
        "base64",
        "importlib",
        "io",
        "operator",
        "math",
        "torch",
        "pyfy_fuzz.pythonify.errors",
    }


def test_the_emitted_source_is_the_source_the_process_imported(tmp_path, monkeypatch):
    """Note [The emitted source is the imported source]: edited on disk after the snapshot (a
    campaign running while pyfy-fuzz is edited or upgraded), a helper is still emitted as the
    process imported it, not as the disk holds it now."""
    import importlib
    import inspect
    import sys

    from pyfy_fuzz.pythonify.wrappers.source import runtime_source
    from pyfy_fuzz.schema.sourcepin import pin

    path = tmp_path / "emitted_mod.py"
    path.write_text("def helper(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("emitted_mod")
    try:
        pin(module)
        path.write_text("def helper(x):\n    return _new_name(x)\n")
        assert runtime_source(module, ("helper",)) == "def helper(x):\n    return x + 1"
        # and any inspect.getsource of its functions (repro helpers, relationship functions)
        assert inspect.getsource(module.helper) == "def helper(x):\n    return x + 1\n"
    finally:
        sys.modules.pop("emitted_mod", None)
