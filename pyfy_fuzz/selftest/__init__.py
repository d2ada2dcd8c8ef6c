"""`pyfy-fuzz selftest`: mutation testing of the fuzzer itself.

Plant one bug at a time in the bundled generator's wrapper models (`mutants.MUTANTS`), run a
budgeted campaign against each, and report which ones the oracles caught and how fast. A
mutant that survives means a missing oracle or generator feature.
"""

from pyfy_fuzz.selftest.mutants import BY_NAME, MUTANTS, Edit, Mutant, MutantPythonify

__all__ = ["BY_NAME", "MUTANTS", "Edit", "Mutant", "MutantPythonify"]
