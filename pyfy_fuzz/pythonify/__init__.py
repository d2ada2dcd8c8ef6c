"""The bundled pythonify generator: torch.compile's wrapper stack as one standalone Python file.

    result = pythonify(fn, args, path, backend="aot_eager", frontend="dynamo", dynamic=False)
    mod = load(result.path, bind=fn)
    out = mod.call(*args)      # behaves like result.compiled(*args)

Pipeline: capture (one torch.compile, hooks record each wrapper's metadata) -> pipeline (IR
nodes, one per wrapper) -> gen_python (the file). See docs/ARCHITECTURE.md.
"""

from .api import PythonifyResult, load, pythonify
from .capture import capture_options
from .errors import PythonifyGuardError, PythonifyUnsupported

__all__ = [
    "PythonifyGuardError",
    "PythonifyResult",
    "PythonifyUnsupported",
    "capture_options",
    "load",
    "pythonify",
]
