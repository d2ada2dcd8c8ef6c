"""The golden files of a seeded program set: what a refactoring must leave byte-identical.

    .venv/bin/python benchmarks/golden.py write DIR [--examples 60] [--inductor-every 4]
    .venv/bin/python benchmarks/golden.py compare BEFORE AFTER

`write` draws `--examples` specs from `programs()` with Hypothesis derandomized (the same
specs for the same generator code), and writes for each: the spec as JSON, the rendered
program, the bundled generator's pythonified file (the campaign's own compile path,
`compile_once`; aot_eager, and Inductor for every `--inductor-every`-th spec) or the reason it
refused, and the repro.py of every checked-in corpus entry's finding rendered on that spec.
It also re-renders each checked-in entry's own repro.py, program.py and README.md.
`compare` lists every file that
differs or exists on one side only, and exits 1 if any does.

Run `write` at the commit before a refactoring (a `git worktree` of it, with its own copy of
this script) and after it, each in a fresh process: the files name only what the program
and torch determine, so the two trees are identical where behaviour is.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _specs(n: int) -> list[Any]:
    from hypothesis import HealthCheck, given, settings

    from generators import programs

    specs: list[Any] = []

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs())
    def collect(spec: Any) -> None:
        specs.append(spec)

    collect()
    return specs


def _findings() -> list[tuple[str, dict[str, Any]]]:
    """Every checked-in entry's case.json: (entry name, its record)."""
    out = []
    for case in sorted((ROOT / "corpus").glob("*/case.json")):
        out.append((case.parent.name, json.loads(case.read_text(encoding="utf-8"))))
    return out


def write(out: Path, examples: int, inductor_every: int) -> None:
    import torch

    from generators import materialize, render

    entry = importlib.import_module("pyfy_fuzz.corpus.entry")
    once = importlib.import_module("pyfy_fuzz.case.subjects.compile_once")
    impl = importlib.import_module("pyfy_fuzz.case.subjects.impl")
    warnings.filterwarnings("ignore")
    out.mkdir(parents=True, exist_ok=False)
    findings = _findings()
    for name, case in findings:
        d = out / "corpus" / name
        d.mkdir(parents=True)
        pythonified = (ROOT / "corpus" / name / "pythonified.py").exists()
        try:
            files = entry.entry_files(case, has_pythonified=pythonified)
        except ValueError as exc:  # an entry kept as it was: nothing to render from
            files = {"raised": f"ValueError: {exc}\n"}
        for file, text in files.items():
            (d / file).write_text(text, encoding="utf-8")
    programs_dir = Path(tempfile.mkdtemp(prefix="pyfy-golden-"))
    try:
        for i, spec in enumerate(_specs(examples)):
            d = out / f"spec{i:03d}"
            d.mkdir()
            (d / "spec.json").write_text(spec.to_json())
            (d / "program.py").write_text(render(spec), encoding="utf-8")
            for name, case in findings:
                try:
                    on_spec = {**case, "spec": json.loads(spec.to_json()), "device": "cpu"}
                    text = entry.entry_files(on_spec, has_pythonified=False)["repro.py"]
                except ValueError as exc:
                    text = f"ValueError: {exc}\n"
                (d / f"repro.{name}.py").write_text(text, encoding="utf-8")
            backend = "inductor" if inductor_every and i % inductor_every == 0 else "aot_eager"
            torch._dynamo.reset()
            program = materialize(spec, programs_dir)
            path = d / f"pythonified.{backend}.py"
            try:
                result = once.compile_once(program, impl.BundledPythonify(), backend, path)
            except Exception as exc:  # the golden file records it as it is
                path.with_suffix(".raised").write_text(f"{type(exc).__name__}\n")
                continue
            finally:
                torch._dynamo.reset()
                torch.set_grad_enabled(True)
            if result.unsupported is not None:
                path.with_suffix(".unsupported").write_text(result.unsupported + "\n")
            elif result.produce_error is not None:
                err = result.produce_error
                path.with_suffix(".error").write_text(f"{err.type_name}: {err.message}\n")
    finally:
        shutil.rmtree(programs_dir, ignore_errors=True)
    print(f"wrote {sum(1 for _ in out.rglob('*') if _.is_file())} files under {out}")


def compare(before: Path, after: Path) -> int:
    a = {p.relative_to(before): p for p in before.rglob("*") if p.is_file()}
    b = {p.relative_to(after): p for p in after.rglob("*") if p.is_file()}
    differ = sorted(k for k in a.keys() & b.keys() if a[k].read_bytes() != b[k].read_bytes())
    only = sorted(a.keys() ^ b.keys())
    for k in differ:
        print(f"differs: {k}")
    for k in only:
        print(f"only in {'before' if k in a else 'after'}: {k}")
    print(f"{len(a)} files before, {len(b)} after: {len(differ)} differ, {len(only)} on one side")
    return 1 if differ or only else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("dir", type=Path)
    w.add_argument("--examples", type=int, default=60)
    w.add_argument("--inductor-every", type=int, default=4)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.cmd == "write":
        write(args.dir, args.examples, args.inductor_every)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
