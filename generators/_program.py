"""materialize(spec) -> Program: the rendered source imported as a real module.

The module is written to a file and imported under a name derived from the source's hash, and
registered in sys.modules, so classes it defines (custom autograd.Functions, the MirrorTensor
subclass) are importable by name, as Dynamo and the pythonified file need. The device is part
of the source (its `DEVICE` constant), so one spec on two devices is two modules.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._render import render
from ._spec import CallPlan, ProgramSpec


@dataclass
class Program:
    """A rendered, importable program: `make_fn()` and `make_inputs(seed, variant)`."""

    spec: ProgramSpec
    source: str
    module: types.ModuleType
    path: Path

    @property
    def plan(self) -> CallPlan:
        return self.spec.plan

    @property
    def name(self) -> str:
        return self.module.__name__

    @property
    def device(self) -> str:
        """Where every tensor the program creates lives (the module's own `DEVICE`)."""
        return str(self.module.DEVICE)

    def make_fn(self) -> Any:
        """The function, or a fresh nn.Module with the spec's deterministic initial state."""
        return self.module.make_fn()

    def make_inputs(self, seed: int = 0, variant: str | None = None) -> tuple[Any, ...]:
        return tuple(self.module.make_inputs(seed, variant))


def _cache_dir() -> Path:
    d = Path(
        os.environ.get("PYFY_FUZZ_PROGRAM_DIR")
        or Path(tempfile.gettempdir()) / "pyfy-fuzz-programs"
    )
    d.mkdir(parents=True, exist_ok=True)
    return d


def materialize(
    spec: ProgramSpec, directory: str | os.PathLike[str] | None = None, device: str = "cpu"
) -> Program:
    """Render `spec` for `device`, write it to `directory` (a per-user temp dir by default) and
    import it."""
    source = render(spec, device)
    name = "pyfy_program_" + hashlib.sha1(source.encode()).hexdigest()[:16]
    where = Path(directory) if directory is not None else _cache_dir()
    path = where / f"{name}.py"
    if name in sys.modules:
        return Program(spec, source, sys.modules[name], path)
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=where)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return Program(spec, source, module, path)
