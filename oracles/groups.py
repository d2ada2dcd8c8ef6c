"""Which group a finding is counted in: a bug, torch's own refusal, or metadata.

Note [Finding groups]
~~~~~~~~~~~~~~~~~~~~~
A PyTorch engineer reads the list as bugs to fix, worst first. Two kinds of entry are real
and worth keeping, but are not that:

- **torch refusals.** AOTAutograd and functionalization refuse some programs with a message
  saying so ("aot_autograd() does not yet handle input mutations on views with different
  dtypes", "This is not supported today"). Eager runs them, so the exceptions oracle sees a
  crash where eager runs, but torch knows and says it: a limitation to list, not a crash to
  count. The refusals torch documents as such are excused outright (by_design.py,
  `refused_by_design`: never saved); the rest land here, counted apart.
- **metadata.** seq_nr mapping breaks (seeds/004): the forward-to-backward node map a profiler
  or a debugger reads, not a value any program computes. One entry per mapping kind.

Everything else is a **bug**: torch's, or the bundled generator's. The group is derived from
the finding's fields (its kind, its differences, torch's own message), stored in case.json
like the severity, and shown by the summary, the report and every count. By-design
differences never become findings at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from pyfy_fuzz.schema.difference import differences_of

__all__ = ["GROUPS", "TORCH_REFUSALS", "Group", "group_of", "is_refusal"]

Group = Literal["bug", "refusal", "metadata"]
# In the order the report shows them, with what each means.
GROUPS: dict[Group, str] = {
    "bug": "bugs (torch's, or of the bundled pythonify generator)",
    "refusal": "torch refusals (its own 'does not yet handle' / 'not supported' messages)",
    "metadata": "metadata (seq_nr mapping breaks)",
}
assert tuple(GROUPS) == get_args(Group)

# torch's words for "I know, and I refuse": each with where torch 2.13 raises it.
TORCH_REFUSALS = (
    # runtime_wrappers.py, merge_view_inputs (AOTSyntheticBaseWrapper)
    "does not yet handle",
    # runtime_wrappers.py (subclass synthetic bases), functional_utils.py (set_ beside other
    # mutations), graph_capture_wrappers.py (mutations in the backward)
    "not supported today",
    "This is not supported",
    "currently not supported",
    # functionalization (C++, FunctionalTensorWrapper): a mutation of a tensor with internal
    # overlap (unfold with step < size) "is banned as the behavior is not well defined". Its
    # check is by the view op, not by the memory: it also refuses windows that do not
    # overlap (U1, a torch bug) -- a refusal all the same, counted apart with its words.
    "is banned as the behavior is not well defined",
)

_CRASHES = ("crash", "guard-unsound")


def is_refusal(message: str) -> bool:
    """Whether an exception message is torch refusing in its own words."""
    return any(phrase in message for phrase in TORCH_REFUSALS)


def group_of(finding: Mapping[str, Any]) -> Group:
    """The group of a finding's (or case.json's) dict (Note [Finding groups])."""
    diffs = differences_of(finding)
    if finding.get("kind") in _CRASHES and diffs and diffs[0].exc is not None:
        if is_refusal(diffs[0].exc.message):
            return "refusal"
    if diffs and all(d.locus == "seq_nr" for d in diffs):
        return "metadata"
    return "bug"
