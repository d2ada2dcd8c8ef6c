"""Graph breaks (Note [Regions] in pyfy_fuzz/pythonify/regions.py): a function Dynamo splits
is pythonified region by region; the file matches the regions' compile, stock torch.compile
(which splits it the same way) and eager."""

from __future__ import annotations

import pytest
import torch

from pyfy_fuzz.pythonify import PythonifyUnsupported, load, pythonify
from pyfy_fuzz.pythonify.paths import wrapper_paths

from .parity import check_parity, compare, r, run_subject


def _vs_stock(fn, args, res, calls: int = 2, backend: str = "aot_eager") -> None:
    """The file against a stock torch.compile of the whole function (no fullgraph)."""
    torch._dynamo.reset()
    stock = torch.compile(fn, backend=backend)
    mod = load(res.path, bind=fn)
    for k in range(calls):
        compare(
            run_subject(stock, fn, args(), k),
            run_subject(mod.call, fn, args(), k),
            "stock",
            backend == "aot_eager",
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
    assert "def _break_0():\n    torch._dynamo.graph_break()\n" in text
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
    m = n * 2
    print("no tensor work before this")
    return x.view(-1) * m


def test_a_region_without_tensor_work_is_python(tmp_path):
    res = check_parity(tmp_path, python_first, lambda: (r(2, 3), 2), calls=1)
    text = res.path.read_text()
    assert "# Region 0: no tensor work, so no graph: it runs as Python." in text
    assert len(res.regions) == 1


def transpose_input(x, w):
    y = x + w.sin()
    x.t_()
    return x + y.t(), y


def transpose_under_a_name(x, w):
    y = x + w * 2
    x.transpose_(0, 1)
    z = x.cos()
    return z, y


def unsqueeze_then_mutate(x, w):
    x.unsqueeze_(0)
    x.mul_(2)
    return x + w


def set_to_another(x, y, w):
    a = x + w.sin()
    x.set_(y)
    return a + x, a


def resize_input(x, w):
    a = (x + w.sin()).sum()
    x.resize_(6)
    return a + x


def synthetic_base_view_transposed(a, b, w):
    s = (a + w.cos()).sum()
    a.t_()
    b.add_(1)
    return a * s, b


def _base_views():
    base = r(4, 4)
    return base[:2], base[2:]


def nested_inplace_view(x):
    x.t_()
    return x


def calls_a_breaking_function(x, w):
    y = x + w.sin()
    nested_inplace_view(x)
    return x + y.t()


def break_in_a_branch(x, w):
    y = x * w
    if x.shape[0] > 1:
        y = y + 1
        torch._dynamo.graph_break()
        y = y * 2
    return y.sin()


# Each program breaks where Dynamo breaks, not at a call from a list (Note [Regions]): an
# in-place view op, set_ or resize_ on an input, a metadata mutation beside a data mutation,
# a synthetic base whose view is transposed, a break in a callee, a break in a branch.
BREAKS = [
    (transpose_input, lambda: (r(2, 3), r(2, 3, rg=True, seed=1))),
    (transpose_under_a_name, lambda: (r(3, 2), r(3, 2, rg=True, seed=1))),
    (unsqueeze_then_mutate, lambda: (r(3), r(1, 3, rg=True, seed=1))),
    (set_to_another, lambda: (r(3), r(3, seed=1), r(3, rg=True, seed=2))),
    (resize_input, lambda: (r(2, 3), r(2, 3, rg=True, seed=1))),
    (synthetic_base_view_transposed, lambda: (*_base_views(), r(2, 4, rg=True, seed=3))),
    (calls_a_breaking_function, lambda: (r(2, 3), r(2, 3, rg=True, seed=1))),
    (break_in_a_branch, lambda: (r(2, 3), r(2, 3, rg=True, seed=1))),
]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize(("fn", "args"), BREAKS, ids=[f.__name__ for f, _ in BREAKS])
def test_the_file_breaks_where_dynamo_breaks(tmp_path, fn, args, backend):
    """Each program pythonifies and matches its regions' compile and eager (check_parity),
    and the stock torch.compile of the whole function (Dynamo's own split)."""
    res = check_parity(tmp_path, fn, args, backend=backend)
    assert res.regions, "no region compiled"
    assert "# Graph break 0: Dynamo runs this in Python" in res.path.read_text()
    _vs_stock(fn, args, res, backend=backend)


def loop_break(x):
    y = x * 2
    for _ in range(2):
        y = y + 1
        torch._dynamo.graph_break()
    return y


def return_break(x):
    y = x * 2
    return y + x.t_()


@pytest.mark.parametrize(
    ("fn", "why"),
    [(loop_break, "inside a loop"), (return_break, "in the return statement")],
    ids=["loop", "return"],
)
def test_a_break_where_the_resume_structure_does_not_allow_is_refused(tmp_path, fn, why):
    with pytest.raises(PythonifyUnsupported, match=why):
        pythonify(fn, (r(3, 3),), tmp_path / "p.py")


def test_a_function_with_closure_cells_is_refused_by_name(tmp_path):
    scale = r(3)

    def f(x):
        y = x * scale
        torch._dynamo.graph_break()
        return y

    with pytest.raises(PythonifyUnsupported, match="closure cells"):
        pythonify(f, (r(3),), tmp_path / "p.py")
