"""Graph breaks (Note [Regions] in pyfy_fuzz/pythonify/regions.py): a function Dynamo splits
is pythonified region by region; the file matches the regions' compile, stock torch.compile
(which splits it the same way) and eager."""

from __future__ import annotations

import pytest
import torch

from pyfy_fuzz.pythonify import PythonifyUnsupported, load, pythonify
from pyfy_fuzz.pythonify.paths import wrapper_paths

from .parity import check_parity, compare, r, run_subject


def _vs_stock(fn, args, res, calls: int = 2) -> None:
    """The file against a stock torch.compile of the whole function (no fullgraph)."""
    torch._dynamo.reset()
    stock = torch.compile(fn, backend="aot_eager")
    mod = load(res.path, bind=fn)
    for k in range(calls):
        compare(
            run_subject(stock, fn, args(), k), run_subject(mod.call, fn, args(), k), "stock", True
        )


def mutate_then_break(x, y, z):
    a = x.sin() * y
    z.add_(1)
    torch._dynamo.graph_break()
    b = a.cos() + z
    return b, a


def test_a_graph_break_between_training_regions_with_a_mutation(tmp_path):
    def args():
        return (r(4, rg=True), r(4, rg=True, seed=1), r(4, seed=2))

    res = check_parity(tmp_path, mutate_then_break, args)
    assert len(res.regions) == 2
    assert all("autograd/training" in wrapper_paths(ir) for ir in res.regions)
    text = res.path.read_text()
    assert "    torch._dynamo.graph_break()  # the graph break" in text
    _vs_stock(mutate_then_break, args, res)


def print_between(x):
    y = x * 2
    print("between the regions")
    return y.sin(), y


def test_print_runs_between_the_regions_as_under_torch_compile(tmp_path, capfd):
    res = check_parity(tmp_path, print_between, lambda: (r(3, 2),), calls=1)
    capfd.readouterr()
    load(res.path, bind=print_between).call(r(3, 2))
    assert capfd.readouterr().out == "between the regions\n"


def python_first(x, n):
    print("no tensor work before this")
    return x.view(-1) * n


def test_a_region_without_tensor_work_is_python(tmp_path):
    res = check_parity(tmp_path, python_first, lambda: (r(2, 3), 2), calls=1)
    text = res.path.read_text()
    assert "# Region 0: no tensor work, so no graph: it runs as Python." in text
    assert len(res.regions) == 1


def nested_break(x):
    with torch.no_grad():
        torch._dynamo.graph_break()
    return x * 2


def test_a_break_inside_a_statement_stays_refused(tmp_path):
    with pytest.raises(PythonifyUnsupported, match="a graph break"):
        pythonify(nested_break, (r(3),), tmp_path / "p.py")


def test_a_function_with_closure_cells_is_refused_by_name(tmp_path):
    scale = r(3)

    def f(x):
        y = x * scale
        torch._dynamo.graph_break()
        return y

    with pytest.raises(PythonifyUnsupported, match="closure cells"):
        pythonify(f, (r(3),), tmp_path / "p.py")
