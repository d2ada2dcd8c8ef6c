"""Seed streams: how a campaign, its restarts and its shards split the space of programs.

Every worker incarnation explores one *stream*: a Hypothesis run seeded from
``sha256(campaign seed, global stream id)``. Shard K of N (1-based) owns the global ids
``K-1, K-1+N, K-1+2N, ...``, so N machines with the same --seed never explore the same stream,
and a restart with the same corpus continues with the next id instead of repeating the first
ones (the counter lives in corpus/.campaign/, one file per seed and shard, so shards never
write the same file).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pyfy_fuzz.schema.atomic import atomic_write

__all__ = [
    "Streams",
    "parse_shard",
    "stream_seed",
]


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' with 1 <= K <= N; ValueError with a message fit for a command line."""
    k, sep, n = text.partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit():
        raise ValueError(f"shard {text!r} is not K/N (e.g. 3/8)")
    kk, nn = int(k), int(n)
    if not 1 <= kk <= nn:
        raise ValueError(f"shard {text!r}: need 1 <= K <= N")
    return kk, nn


def stream_seed(campaign_seed: int, global_id: int) -> int:
    digest = hashlib.sha256(f"pyfy-fuzz/{campaign_seed}/{global_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass
class Streams:
    state_dir: Path
    seed: int
    shard: tuple[int, int] = (1, 1)

    @property
    def _path(self) -> Path:
        k, n = self.shard
        return self.state_dir / f"streams-seed{self.seed}-shard{k}of{n}.json"

    def _load(self) -> int:
        try:
            data = json.loads(self._path.read_text())
            return int(data["next"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    def take(self) -> tuple[int, int]:
        """(global stream id, its Hypothesis seed); the counter is saved before returning."""
        local = self._load()
        atomic_write(self._path, json.dumps({"next": local + 1}) + "\n")
        k, n = self.shard
        gid = local * n + (k - 1)
        return gid, stream_seed(self.seed, gid)
