"""A wrapper family's declaration: `@family(profile, targets=..., doc=...)` on its builder.

The declaration is everything the generators and the harness know about a family: its name and
profile (how it biases the builder: the statement groups' `weights`, a forced front-end or
mode, ...), the wrapper-path prefixes that mean its target was reached, and what it generates
(its `<name>_programs` docstring). The builders and their declarations are in _families.py;
`DECLARATIONS` holds them in the order declared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._build import Builder, Profile

__all__ = ["DECLARATIONS", "Build", "Family", "family", "weights"]

# A family's builder: draws the structure its wrapper needs into the builder.
Build = Callable[[Builder], None]


@dataclass(frozen=True)
class Family:
    """One wrapper family, as declared beside its builder."""

    profile: Profile  # its name (`profile.family`) and how it biases the builder
    build: Build  # draws the structure its wrapper needs, before the random tail
    # Wrapper-path prefixes any one of which means "target reached" (`reached`).
    targets: tuple[str, ...]
    doc: str  # what it generates, in torch's words: its `<name>_programs` docstring

    def __post_init__(self) -> None:
        if not self.targets or not all(t.endswith("/") for t in self.targets):
            raise ValueError(f"expected path prefixes ending in '/', got {self.targets!r}")

    @property
    def name(self) -> str:
        return self.profile.family


# Every declared family, by name, in the order declared (FAMILIES is its keys).
DECLARATIONS: dict[str, Family] = {}


def family(profile: Profile, *, targets: tuple[str, ...], doc: str) -> Callable[[Build], Build]:
    """Declare the family the decorated builder builds, after those declared before it."""

    def declare(build: Build) -> Build:
        if profile.family in DECLARATIONS:
            raise ValueError(f"family {profile.family!r} is declared twice")
        DECLARATIONS[profile.family] = Family(profile, build, targets, doc)
        return build

    return declare


# The statement-group weights every family starts from.
_BASE_WEIGHTS = {
    "unary": 6,
    "binary": 5,
    "view": 4,
    "inplace": 3,
    "reduce": 1,
    "matmul": 1,
    "cast": 1,
    "detach": 1,
    "autograd_grad": 1,  # Note [torch.autograd.grad inside the function]
    "backward": 1,  # Note [Tensor.backward() inside the function]
    "scalar": 6,  # Note [Scalar arguments]: only where the program has a number argument
    "probe": 6,  # Note [Reading a tensor's metadata]
    "func": 3,  # Note [torch.func transforms inside the function]
    # torch's own vocabulary (_stmts_aten.py); last, so a shrunk draw still lands on "unary".
    "aten": 16,
}


def weights(**extra: int) -> dict[str, int]:
    """The base statement-group weights, with a family's own on top."""
    return {**_BASE_WEIGHTS, **extra}
