"""pyfy-fuzz: differential testing and fuzzing for pythonify.

pythonify turns what ``torch.compile`` runs (the compiled graphs plus AOTAutograd's post-compile
wrappers and CUDA-graph capture/replay) into one standalone Python file. pyfy-fuzz generates
programs, runs them through eager, ``torch.compile`` and the pythonified file, and compares.
"""

import warnings as _warnings

__all__: list[str] = []

__version__ = "0.1.0"

# torch's CPU wheel warns that numpy is missing when some submodules load; nothing here needs
# numpy. Filtered at package import because campaign workers' fork server imports torch before
# any of our code runs, with the user's terminal as stderr.
_warnings.filterwarnings("ignore", "Failed to initialize NumPy", UserWarning)
