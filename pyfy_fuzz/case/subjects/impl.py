"""The pythonify implementation under test, behind one small interface.

An implementation compiles a function once and returns both the compiled callable (the
torch.compile subject) and the generated file (the pythonify subject): one compile serves
both. The bundled generator is the default; a torch build with its own pythonify can be
plugged in by implementing `produce`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "BundledPythonify",
    "PluginUnavailable",
    "Produced",
    "PythonifyImpl",
    "TorchPythonify",
    "torch_has_pythonify",
]


@dataclass
class Produced:
    compiled: Any  # the torch.compile callable that ran the one compile
    path: Path  # the pythonified file
    wrapper_paths: list[str]
    # torch's node metadata per graph (seq_nr oracle); None when the implementation has none
    fx_meta: dict[str, tuple[Any, ...]] | None = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


class PythonifyImpl(Protocol):
    name: str
    # Exception types meaning "cannot model this program" (counted, not a finding).
    unsupported: tuple[type[BaseException], ...]

    def produce(
        self,
        fn: Any,
        args: tuple[Any, ...],
        path: Path,
        *,
        backend: str,
        frontend: str,
        dynamic: bool,
        mode: str | None,
    ) -> Produced: ...


class BundledPythonify:
    """pyfy_fuzz.pythonify: capture -> IR -> file."""

    name = "bundled"

    def __init__(self) -> None:
        from pyfy_fuzz.pythonify import PythonifyUnsupported

        self.unsupported: tuple[type[BaseException], ...] = (PythonifyUnsupported,)

    def produce(
        self,
        fn: Any,
        args: tuple[Any, ...],
        path: Path,
        *,
        backend: str,
        frontend: str,
        dynamic: bool,
        mode: str | None,
    ) -> Produced:
        from pyfy_fuzz.pythonify import pythonify
        from pyfy_fuzz.pythonify.paths import wrapper_paths

        r = pythonify(
            fn, args, path, backend=backend, frontend=frontend, dynamic=dynamic, mode=mode
        )
        # A function split at graph breaks: every region's paths (Note [Regions]).
        irs = r.regions or [r.ir]
        paths = {p for ir in irs for p in wrapper_paths(ir)} | (
            {"graph/break"} if r.regions else set()
        )
        return Produced(r.compiled, r.path, sorted(paths), r.fx_meta, dict(r.timings))


class PluginUnavailable(Exception):
    """The selected implementation cannot run on this install (e.g. torch has no pythonify)."""


def torch_has_pythonify() -> bool:
    import inspect

    import torch

    try:
        return "pythonify" in inspect.signature(torch.compile).parameters
    except (TypeError, ValueError):
        return False


class TorchPythonify:
    """A torch build whose ``torch.compile`` accepts ``pythonify=PATH`` (upstream's design).

    The file it writes must follow the bundled contract: ``call(*args)`` runs the compiled
    program, ``bind(fn)`` (optional) resolves parameters and globals, ``SEQ_NR`` (optional)
    maps nodes to sequence numbers. Only the torch.compile front-end exists upstream.
    """

    name = "torch"

    def __init__(self) -> None:
        import torch

        if not torch_has_pythonify():
            raise PluginUnavailable(
                f"the installed torch {torch.__version__} has no torch.compile(pythonify=...); "
                "use --pythonify bundled, or install a torch build with pythonify"
            )

        class TorchPythonifyUnsupported(Exception):
            pass

        import torch._dynamo.exc

        # a graph break under fullgraph=True: a program pythonify cannot take, as for bundled
        self.unsupported: tuple[type[BaseException], ...] = (
            TorchPythonifyUnsupported,
            torch._dynamo.exc.Unsupported,
        )
        self._unsupported_type = TorchPythonifyUnsupported

    def produce(
        self,
        fn: Any,
        args: tuple[Any, ...],
        path: Path,
        *,
        backend: str,
        frontend: str,
        dynamic: bool,
        mode: str | None,
    ) -> Produced:
        import time

        import torch

        if frontend != "dynamo":
            raise self._unsupported_type("torch's pythonify exists for torch.compile only")
        if path.exists():
            path.unlink()
        compile_: Any = torch.compile  # `pythonify=` is not in released torch's signature
        compiled = compile_(
            fn, backend=backend, fullgraph=True, dynamic=dynamic, mode=mode, pythonify=str(path)
        )
        saved = (
            {k: v.detach().clone() for k, v in fn.state_dict().items()}
            if isinstance(fn, torch.nn.Module)
            else None
        )
        t0 = time.perf_counter()
        compiled(*args)  # the first call compiles and writes the file
        elapsed = time.perf_counter() - t0
        if saved is not None:  # the compile run must not advance module state (BatchNorm)
            with torch.no_grad():
                for k, v in fn.state_dict().items():
                    v.copy_(saved[k])
        if not path.is_file():
            raise RuntimeError(f"torch.compile(pythonify={str(path)!r}) wrote no file")
        return Produced(compiled, path, [], None, {"compile_s": elapsed})
