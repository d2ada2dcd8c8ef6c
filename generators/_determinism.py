"""One seed, one set of programs, whatever else the process imported.

Note [Draws that depend on what the process imported]
------------------------------------------------------
Hypothesis (6.131 and later) draws a constant instead of a random choice for about one
integer, float or string in twenty, and takes those constants partly from the *local* modules
loaded in `sys.modules`: every module outside site-packages and the tests, scanned again
whenever the number of loaded modules changes. For pyfy-fuzz that is the project itself and
every generated program module (`/tmp/pyfy-fuzz-programs/*.py`, full of shapes and values),
so the same seed drew other programs after a case had run, or after another test imported a
module: measured, 181 of 300 seed-0 specs changed once one local module of 29 numbers was
imported, and tests that `find` a rare program passed alone and failed after others
(issue 36: two CI failures on torch 2.15 at f6211ae that no single-test run reproduced).
A campaign's `--seed` promised the same exploration, and did not keep it.

So the generators pin Hypothesis's local constants to none, on import: its global constants
(0, 1, -1, the boundaries, ...) stay, and they do not depend on the process. The hook is
private Hypothesis API; where a Hypothesis lacks it there is nothing to pin (older ones have
no local constants), and tests/generators/test_determinism.py fails if a future one moves it.
"""

from __future__ import annotations

__all__ = ["pin_hypothesis_constants"]


def pin_hypothesis_constants() -> bool:
    """Make Hypothesis's local-constant pool empty for this process; whether there was one."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without the module
        return False
    get = getattr(providers, "_get_local_constants", None)
    constants = getattr(providers, "Constants", None)
    if get is None or constants is None:
        return False
    empty = constants()
    providers._get_local_constants = lambda: empty
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if cache is not None:  # pools computed before the pin
        cache.cache.clear()
    return True
