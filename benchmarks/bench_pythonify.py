"""How much pythonify adds to the torch.compile it captures.

For each small program (mirroring the parity suite in tests/pythonify/) and each repeat, after
`torch._dynamo.reset()`:

  (a) plain   - `torch.compile(fn, backend=B, fullgraph=True)` + the first call, fresh inputs;
  (c) matched - the same, under the functorch config pythonify compiles with
                (force_non_lazy_backward_lowering=True: the backward is compiled during the
                forward compile; enable_autograd_cache=False; for inductor fx_graph_cache=False);
  (b) pythonify - `pythonify(fn, args, tmpfile, backend=B)`, total wall time (capture = one
                compile + one run on copies of the inputs, then IR, codegen, a syntax compile of
                the file and an fsync'd write);
  then `load()` of the written file and its first `call()` on fresh inputs.

b/a is what pythonify costs over the compile a user would run; b/c is pythonify's own work
(recording hooks, graph rendering, codegen) on top of a compile configured like its own.
(a) and (b) alternate order across repeats ((c) sits between them); one untimed round per
program runs first. For the aot-frontend program (a)/(c) use `aot_function` with a boxed no-op
compiler (what pythonify's aot_eager capture uses), so no Dynamo is involved there.

Inductor cache handling (`--inductor-cache`):
  cold (default) - every measurement (and every load) runs in its own fresh
                   TORCHINDUCTOR_CACHE_DIR with Inductor's in-memory caches cleared
                   (`torch._inductor.utils.fresh_cache`), so C++ kernels are built every time;
  warm           - one fresh TORCHINDUCTOR_CACHE_DIR for the whole run; after the warm-up the
                   kernel/code caches (and for (a) the FX graph cache) are warm.

    python benchmarks/bench_pythonify.py --backend aot_eager --repeats 5 --json out.json
    python benchmarks/bench_pythonify.py --backend inductor --repeats 3
    python benchmarks/bench_pythonify.py --backend aot_eager --profile training_saved_tensors
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import math
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402
from tabulate import tabulate  # noqa: E402
from torch.testing._internal.two_tensor import TwoTensor  # noqa: E402

from pyfy_fuzz.pythonify import load, pythonify  # noqa: E402

# ----------------------------------------------------------------------------------- programs


def r(*shape: int, rg: bool = False, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g).requires_grad_(rg)


@dataclass
class Program:
    name: str
    mirrors: str  # the parity test it mirrors
    make_fn: Callable[[], Any]  # a fresh function or nn.Module
    make_args: Callable[[], tuple[Any, ...]]
    frontend: str = "dynamo"
    dynamic: bool = False


def _inference_mutation_alias() -> Any:
    def f(x, y):
        x[:2].mul_(2)
        return (x + y).sin(), x.t()

    return f


def _training_saved() -> Any:
    def f(x, w):
        return (x @ w).relu().sin(), (x * 2).cos()

    return f


def _non_leaf_mutation() -> Any:
    def f(a, b):
        a.mul_(3)
        return a + b

    return f


def _alias_of_intermediate() -> Any:
    def f(x):
        y = x * 2
        return y.view(-1), y[1:], y

    return f


def _synthetic_base() -> Any:
    def f(a, b):
        a.mul_(2)
        return a + b

    return f


def _two_tensor() -> Any:
    def f(x, y):
        return x * 2 + y, (x + 1).sum()

    return f


def _effect_tokens() -> Any:
    def f(x):
        torch.ops.aten._print("hello from the graph")
        return x.sin()

    return f


def _module() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))


def _dynamic() -> Any:
    def f(x):
        return x.sin() * x.shape[0]

    return f


def _dedupe() -> Any:
    def f(a, b):
        a.add_(1)
        return a * b

    return f


def _views_of_one_base() -> tuple[Any, ...]:
    base = r(8)
    return (base[:5], base[3:])


def _same_tensor_twice() -> tuple[Any, ...]:
    x = r(4)
    return (x, x)


PROGRAMS = [
    Program(
        "inference_mutation_alias",
        "test_inference_input_mutation_and_alias_of_input",
        _inference_mutation_alias,
        lambda: (r(4, 3), r(4, 3, seed=1)),
    ),
    Program(
        "training_saved_tensors",
        "test_training_saved_tensors_and_grads",
        _training_saved,
        lambda: (r(3, 4, rg=True), r(4, 5, rg=True, seed=1)),
    ),
    Program(
        "non_leaf_mutation",
        "test_non_leaf_input_mutation_outside_graph",
        _non_leaf_mutation,
        lambda: (r(4, rg=True).clone(), r(4, seed=2)),
    ),
    Program(
        "alias_of_intermediate",
        "test_alias_of_intermediate_outputs",
        _alias_of_intermediate,
        lambda: (r(3, 4, rg=True),),
    ),
    Program(
        "synthetic_base",
        "test_synthetic_base_views_of_one_base_1d",
        _synthetic_base,
        _views_of_one_base,
    ),
    Program(
        "two_tensor_subclass",
        "test_subclass_inputs_and_outputs",
        _two_tensor,
        lambda: (TwoTensor(r(3, 4), r(3, 4, seed=1)), r(3, 4, seed=5)),
    ),
    Program(
        "effect_tokens_print", "test_effect_tokens_aten_print", _effect_tokens, lambda: (r(4),)
    ),
    Program(
        "module_linear_bn",
        "test_module_parameters_and_buffer_mutation",
        _module,
        lambda: (r(3, 4),),
    ),
    Program(
        "dynamic_shapes",
        "test_dynamic_shapes_second_call_other_size",
        _dynamic,
        lambda: (r(5, 3),),
        dynamic=True,
    ),
    Program(
        "aot_dedupe",
        "test_dedupe_duplicated_mutated_arg_aot_frontend",
        _dedupe,
        _same_tensor_twice,
        frontend="aot",
    ),
]
BY_NAME = {p.name: p for p in PROGRAMS}
# Inductor compiles take seconds each on CPU: a subset covering forward-only, training,
# synthetic base, module state and dynamic shapes.
INDUCTOR_DEFAULT = [
    "inference_mutation_alias",
    "training_saved_tensors",
    "synthetic_base",
    "module_linear_bn",
    "dynamic_shapes",
]

# ------------------------------------------------------------------------------- measurement


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Silence fd 1 (aten._print writes there from C++); progress goes to stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


class Bench:
    def __init__(self, backend: str, cache: str, workdir: Path) -> None:
        self.backend = backend
        self.cache = cache
        self.workdir = workdir
        self._n = 0

    def cache_ctx(self) -> contextlib.AbstractContextManager[None]:
        if self.backend == "inductor" and self.cache == "cold":
            from torch._inductor.utils import fresh_cache

            return fresh_cache(dir=str(self.workdir))
        return contextlib.nullcontext()

    def matched_config(self) -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        stack.enter_context(
            torch._functorch.config.patch(
                force_non_lazy_backward_lowering=True, enable_autograd_cache=False
            )
        )
        if self.backend == "inductor":
            import torch._inductor.config as iconfig

            stack.enter_context(iconfig.patch(fx_graph_cache=False, fx_graph_remote_cache=False))
        return stack

    def _prepare(self) -> None:
        torch._dynamo.reset()
        gc.collect()

    def plain(self, p: Program, matched: bool) -> float | None:
        fn, args = p.make_fn(), p.make_args()
        self._prepare()
        cfg = self.matched_config() if matched else contextlib.nullcontext()
        with self.cache_ctx(), cfg:
            t0 = time.perf_counter()
            if p.frontend == "aot":
                if self.backend != "aot_eager":
                    return None
                compiled = _aot_function(fn)
            else:
                compiled = torch.compile(
                    fn, backend=self.backend, fullgraph=True, dynamic=p.dynamic
                )
            compiled(*args)
            return time.perf_counter() - t0

    def pyfy(self, p: Program) -> dict[str, Any]:
        fn, args = p.make_fn(), p.make_args()
        self._prepare()
        self._n += 1
        path = self.workdir / f"{p.name}_{self._n}.py"
        with self.cache_ctx():
            t0 = time.perf_counter()
            res = pythonify(
                fn, args, path, backend=self.backend, frontend=p.frontend, dynamic=p.dynamic
            )
            total = time.perf_counter() - t0
        # load + first call, in a fresh cache of its own in cold mode (a new process would
        # find at best the on-disk cache the compile left behind).
        args2 = p.make_args()
        gc.collect()
        with self.cache_ctx():
            t0 = time.perf_counter()
            mod = load(path, bind=fn)
            t1 = time.perf_counter()
            mod.call(*args2)
            t2 = time.perf_counter()
        return dict(
            total=total,
            capture=res.timings["capture_s"],
            codegen=res.timings["codegen_s"],
            load=t1 - t0,
            first_call=t2 - t1,
            wrappers=res.active_wrappers,
            lines=path.read_text().count("\n"),
        )


def _aot_function(fn: Any) -> Callable[..., Any]:
    """What pythonify's aot_eager capture compiles for frontend='aot', minus its recording."""
    from functorch.compile import min_cut_rematerialization_partition
    from torch._dynamo.backends.debugging import boxed_nop
    from torch._functorch.aot_autograd import aot_function

    holder: dict[str, Any] = {}

    def compiled(*args: Any) -> Any:
        flat, spec = pytree.tree_flatten(args)
        if "f" not in holder:

            def flat_fn(*leaves: Any) -> Any:
                return fn(*pytree.tree_unflatten(list(leaves), spec))

            holder["f"] = aot_function(
                flat_fn,
                fw_compiler=boxed_nop,  # type: ignore[arg-type]
                bw_compiler=boxed_nop,  # type: ignore[arg-type]
                partition_fn=min_cut_rematerialization_partition,
                keep_inference_input_mutations=True,
            )
        return holder["f"](*flat)

    return compiled


def measure(bench: Bench, p: Program, repeats: int, warmup: int) -> dict[str, Any]:
    a: list[float] = []
    c: list[float] = []
    b: list[dict[str, Any]] = []
    with quiet_stdout():
        for _ in range(warmup):
            bench.plain(p, matched=False)
            bench.plain(p, matched=True)
            bench.pyfy(p)
        for i in range(repeats):
            # (a) and (b) alternate which goes first; (c) sits between them.
            order = ("a", "c", "b") if i % 2 == 0 else ("b", "c", "a")
            for k in order:
                if k == "a":
                    t = bench.plain(p, matched=False)
                    if t is not None:
                        a.append(t)
                elif k == "c":
                    t = bench.plain(p, matched=True)
                    if t is not None:
                        c.append(t)
                else:
                    b.append(bench.pyfy(p))
    med = statistics.median
    row: dict[str, Any] = dict(
        program=p.name,
        mirrors=p.mirrors,
        frontend=p.frontend,
        dynamic=p.dynamic,
        wrappers=b[0]["wrappers"],
        file_lines=b[0]["lines"],
        plain_s=med(a) if a else None,
        matched_s=med(c) if c else None,
        pythonify_s=med(x["total"] for x in b),
        capture_s=med(x["capture"] for x in b),
        codegen_s=med(x["codegen"] for x in b),
        load_s=med(x["load"] for x in b),
        first_call_s=med(x["first_call"] for x in b),
        samples=dict(plain=a, matched=c, pythonify=[x["total"] for x in b]),
    )
    row["ratio_b_a"] = row["pythonify_s"] / row["plain_s"] if a else None
    row["ratio_b_c"] = row["pythonify_s"] / row["matched_s"] if c else None
    return row


def geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


# ------------------------------------------------------------------------------------ output


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                break
    rev = "?"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        root = Path(__file__).resolve().parent.parent
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "pyfy_fuzz"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if dirty:
            rev += " (pyfy_fuzz/ has uncommitted changes)"
    return dict(
        git=rev,
        cpu=cpu,
        nproc=os.cpu_count(),
        affinity=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        mem=mem,
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=torch.cuda.is_available(),
    )


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def report(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    table = [
        [
            r["program"],
            fmt(r["plain_s"]),
            fmt(r["matched_s"]),
            fmt(r["pythonify_s"]),
            fmt(r["capture_s"]),
            fmt(r["codegen_s"], 4),
            fmt(r["ratio_b_a"], 2),
            fmt(r["ratio_b_c"], 2),
            fmt(r["load_s"], 4),
            fmt(r["first_call_s"], 4),
        ]
        for r in rows
    ]
    table.append(
        [
            "geomean",
            "",
            "",
            "",
            "",
            "",
            fmt(meta["geomean_b_a"], 2),
            fmt(meta["geomean_b_c"], 2),
            "",
            "",
        ]
    )
    headers = [
        "program",
        "(a) plain s",
        "(c) matched s",
        "(b) pythonify s",
        "capture s",
        "codegen s",
        "b/a",
        "b/c",
        "load s",
        "1st call s",
    ]
    lines = [
        f"backend={meta['backend']} repeats={meta['repeats']} warmup={meta['warmup']} "
        f"torch={meta['machine']['torch']} cpu={meta['machine']['cpu']} "
        f"nproc={meta['machine']['nproc']} git={meta['machine']['git']}",
        f"caches: {meta['cache_note']}",
        "medians over repeats; b/a and b/c are ratios of medians",
        tabulate(table, headers=headers, tablefmt="github", disable_numparse=True),
    ]
    if meta.get("geomean_b_a_dynamo_only") is not None:
        lines.append(
            "geomean b/a over the dynamo-frontend programs only: "
            f"{meta['geomean_b_a_dynamo_only']:.2f}"
        )
    return "\n".join(lines)


def profile_one(bench: Bench, p: Program, top: int) -> str:
    with quiet_stdout():
        bench.pyfy(p)  # warm-up
        fn, args = p.make_fn(), p.make_args()
        bench._prepare()
        prof = cProfile.Profile()
        with bench.cache_ctx():
            prof.enable()
            pythonify(
                fn,
                args,
                bench.workdir / "profiled.py",
                backend=bench.backend,
                frontend=p.frontend,
                dynamic=p.dynamic,
            )
            prof.disable()
    s = io.StringIO()
    stats = pstats.Stats(prof, stream=s).sort_stats("cumulative")
    s.write(f"== cProfile of one pythonify() of {p.name}, backend={bench.backend}: top {top}\n")
    stats.print_stats(top)
    s.write("== the same profile, pyfy_fuzz frames only\n")
    stats.print_stats(r"pyfy_fuzz[/\\]", top)
    return s.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("aot_eager", "inductor"), default="aot_eager")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds per program")
    ap.add_argument(
        "--programs",
        nargs="+",
        choices=sorted(BY_NAME),
        help="default: all for aot_eager, a 5-program subset for inductor",
    )
    ap.add_argument("--inductor-cache", choices=("cold", "warm"), default="cold")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument(
        "--profile",
        choices=sorted(BY_NAME),
        help="instead of timing, cProfile one pythonify() of this program",
    )
    ap.add_argument("--profile-top", type=int, default=25)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (generated files)")
    ns = ap.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="bench_pythonify_"))
    cache_note = "n/a (aot_eager does not use the Inductor caches)"
    if ns.backend == "inductor":
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(root / "inductor_cache")
        if ns.inductor_cache == "cold":
            cache_note = (
                "cold: each compile, pythonify and load ran in its own fresh "
                "TORCHINDUCTOR_CACHE_DIR with in-memory Inductor caches cleared"
            )
        else:
            cache_note = (
                f"warm: one fresh TORCHINDUCTOR_CACHE_DIR ({root / 'inductor_cache'}) for the "
                "whole run, warm after the warm-up round; pythonify always compiles with "
                "fx_graph_cache off, (a) may hit it"
            )
    bench = Bench(ns.backend, ns.inductor_cache, root)
    try:
        return run(ns, bench, cache_note)
    finally:
        if ns.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


def run(ns: argparse.Namespace, bench: Bench, cache_note: str) -> int:
    if ns.profile:
        print(profile_one(bench, BY_NAME[ns.profile], ns.profile_top))
        return 0

    names = ns.programs or (INDUCTOR_DEFAULT if ns.backend == "inductor" else list(BY_NAME))
    rows = []
    t_start = time.perf_counter()
    for name in names:
        t0 = time.perf_counter()
        rows.append(measure(bench, BY_NAME[name], ns.repeats, ns.warmup))
        print(f"[{name}] {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    ba = [r["ratio_b_a"] for r in rows if r["ratio_b_a"] is not None]
    bc = [r["ratio_b_c"] for r in rows if r["ratio_b_c"] is not None]
    dyn = [r["ratio_b_a"] for r in rows if r["ratio_b_a"] is not None and r["frontend"] == "dynamo"]
    meta = dict(
        backend=ns.backend,
        repeats=ns.repeats,
        warmup=ns.warmup,
        inductor_cache=ns.inductor_cache if ns.backend == "inductor" else None,
        cache_note=cache_note,
        machine=machine(),
        geomean_b_a=geomean(ba),
        geomean_b_c=geomean(bc),
        geomean_b_a_dynamo_only=geomean(dyn) if len(dyn) != len(ba) else None,
        wall_s=time.perf_counter() - t_start,
        argv=sys.argv,
    )
    print(report(rows, meta))
    print(f"total wall time {meta['wall_s']:.0f} s")
    if ns.json:
        ns.json.write_text(json.dumps(dict(meta=meta, rows=rows), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
