"""Errors raised by the bundled pythonify generator.

`PythonifyUnsupported` is raised at pythonify time, never later: a program the generator
cannot model faithfully must not yield a file that silently differs from torch.compile.
`PythonifyGuardError` is raised by a generated file when it is called with inputs that break
the assumptions it was compiled under (the file's analogue of a Dynamo guard failure).
"""

from __future__ import annotations

__all__ = [
    "PythonifyGuardError",
    "PythonifyUnsupported",
]


class PythonifyUnsupported(Exception):
    """The program uses a construct the generator does not model; the message names it."""

    def __init__(
        self, construct: str, detail: str = "", frames: tuple[tuple[str, int], ...] = ()
    ) -> None:
        self.construct = construct
        # For a graph break: Dynamo's user frames, (filename, line), outermost first (Note
        # [Regions] in regions.py places the break by them).
        self.frames = frames
        msg = f"pythonify does not support {construct}"
        super().__init__(f"{msg}: {detail}" if detail else msg)


class PythonifyGuardError(AssertionError):
    """A generated file was called with inputs that violate its compile-time assumptions."""
