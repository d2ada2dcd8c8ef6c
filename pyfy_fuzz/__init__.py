"""pyfy-fuzz: differential testing and fuzzing for pythonify.

pythonify turns what ``torch.compile`` runs (the compiled graphs plus AOTAutograd's post-compile
wrappers and CUDA-graph capture/replay) into one standalone Python file. pyfy-fuzz generates
programs, runs them through eager, ``torch.compile`` and the pythonified file, and compares.
"""

__version__ = "0.1.0"
