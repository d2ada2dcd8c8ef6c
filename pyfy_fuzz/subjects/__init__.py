"""Subjects: eager (ground truth), torch.compile, and the pythonified file, one per module.

`compile_once` runs the implementation's compile (which writes the file) and builds the stock
torch.compile the case is judged on (`stock`: Note [The stock reference]).
"""

from .compile_once import CompileOnce, compile_once, plain_compile
from .eager import eager_target
from .impl import BundledPythonify, Produced, PythonifyImpl
from .pythonified import pythonified_target
from .stock import COMPARABILITY, STOCK_KNOBS, case_caches, non_stock
from .torch_compile import torch_compile_target

__all__ = [
    "COMPARABILITY",
    "STOCK_KNOBS",
    "BundledPythonify",
    "CompileOnce",
    "Produced",
    "PythonifyImpl",
    "case_caches",
    "compile_once",
    "eager_target",
    "non_stock",
    "plain_compile",
    "pythonified_target",
    "torch_compile_target",
]
