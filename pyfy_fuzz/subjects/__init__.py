"""Subjects: eager (ground truth), torch.compile, and the pythonified file, one per module.

`compile_once` runs the single compile that feeds both torch.compile and pythonify.
"""

from .compile_once import CompileOnce, compile_once, plain_compile
from .eager import eager_target
from .impl import BundledPythonify, Produced, PythonifyImpl
from .pythonified import pythonified_target
from .torch_compile import torch_compile_target

__all__ = [
    "BundledPythonify",
    "CompileOnce",
    "Produced",
    "PythonifyImpl",
    "compile_once",
    "eager_target",
    "plain_compile",
    "pythonified_target",
    "torch_compile_target",
]
