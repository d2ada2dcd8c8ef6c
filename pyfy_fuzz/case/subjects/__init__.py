"""Subjects: eager (ground truth), torch.compile, and the pythonified file, one per module.

`compile_once` runs the implementation's compile (which writes the file) and builds the stock
torch.compile the case is judged on (`stock`: Note [The stock reference]); `warm` compiles it
again, served from AOTAutograd's cache (Note [The warm subject]).
"""

from pyfy_fuzz.case.subjects.compile_once import (
    CompileOnce,
    capture_target,
    compile_once,
    plain_compile,
)
from pyfy_fuzz.case.subjects.eager import eager_target
from pyfy_fuzz.case.subjects.impl import BundledPythonify, Produced, PythonifyImpl
from pyfy_fuzz.case.subjects.log_only import log_only_skipped
from pyfy_fuzz.case.subjects.pythonified import pythonified_target
from pyfy_fuzz.case.subjects.stock import (
    COMPARABILITY,
    STOCK_KNOBS,
    case_caches,
    drawn_config,
    non_stock,
    shared_code_limits,
)
from pyfy_fuzz.case.subjects.torch_compile import torch_compile_target
from pyfy_fuzz.case.subjects.warm import (
    SERVED,
    WARM,
    CacheCounts,
    Served,
    served,
    warm_applies,
    warm_target,
)
from pyfy_fuzz.schema.config import stock_compile

__all__ = [
    "COMPARABILITY",
    "SERVED",
    "STOCK_KNOBS",
    "WARM",
    "BundledPythonify",
    "CacheCounts",
    "CompileOnce",
    "Produced",
    "PythonifyImpl",
    "Served",
    "capture_target",
    "case_caches",
    "compile_once",
    "drawn_config",
    "eager_target",
    "log_only_skipped",
    "non_stock",
    "plain_compile",
    "pythonified_target",
    "served",
    "shared_code_limits",
    "stock_compile",
    "torch_compile_target",
    "warm_applies",
    "warm_target",
]
