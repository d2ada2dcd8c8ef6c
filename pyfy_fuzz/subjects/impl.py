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


@dataclass
class Produced:
    compiled: Any  # the torch.compile callable that ran the one compile
    path: Path  # the pythonified file
    wrapper_paths: list[str]
    fx_meta: dict[str, tuple[Any, ...]] = field(default_factory=dict)
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
        return Produced(r.compiled, r.path, wrapper_paths(r.ir), r.fx_meta, dict(r.timings))
