"""The spec lives in the torch-free schema (`pyfy_fuzz.schema.spec`, issue 15); the
generators' own modules import it through this name."""

from __future__ import annotations

from pyfy_fuzz.schema import spec as _spec
from pyfy_fuzz.schema.spec import *  # noqa: F403  (the schema's __all__, re-exported)

__all__ = list(_spec.__all__)
