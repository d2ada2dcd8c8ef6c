"""The torch-free schema every stage of pyfy-fuzz imports (issue 15's bottom layer).

Only what the stages share as data lives here, with no import of torch, of the generator under
test, or of any other pyfy-fuzz package: the wrapper-path vocabulary (`paths`, re-exported
here), the program spec (`spec`), what differs as data (`difference`), a finding with its
kinds, subjects and differences (`finding`), a
corpus entry's case.json (`case`) and the messages between the campaign and its workers
(`messages`). A test imports them with torch made unimportable.
"""

from __future__ import annotations

from pyfy_fuzz.schema import paths as _paths
from pyfy_fuzz.schema.paths import *  # noqa: F403  (the vocabulary's __all__, re-exported)

__all__ = list(_paths.__all__)
