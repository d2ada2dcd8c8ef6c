"""Budgets, shards and seed streams: parsing, disjointness, and continuing after a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyfy_fuzz.campaign.budget import format_duration, parse_budget
from pyfy_fuzz.campaign.streams import Streams, parse_shard, stream_seed


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("90s", 90),
        ("10m", 600),
        ("1h", 3600),
        ("1h30m", 5400),
        ("2h5m10s", 7510),
        ("45", 45),
        (" 1M ", 60),
    ],
)
def test_budgets_people_write(text: str, seconds: int) -> None:
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "1m30h", "h", "1.5h", "-5m", "10 m", "1d", "ten"])
def test_bad_budgets_say_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match="budget"):
        parse_budget(text)


def test_format_duration_inverts_parse() -> None:
    for text in ("1h30m", "1m15s", "9s", "2h"):
        assert format_duration(parse_budget(text)) == text


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "/2"])
def test_bad_shards(text: str) -> None:
    with pytest.raises(ValueError, match="shard"):
        parse_shard(text)


def test_shards_take_disjoint_streams_and_restarts_continue(tmp_path: Path) -> None:
    taken: dict[int, list[int]] = {}
    for k in (1, 2, 3):
        s = Streams(tmp_path, seed=7, shard=(k, 3))
        taken[k] = [s.take()[0] for _ in range(5)]
    ids = [i for v in taken.values() for i in v]
    assert len(set(ids)) == len(ids) == 15
    assert sorted(ids) == list(range(15))  # together they cover the space, no gaps
    restarted = Streams(tmp_path, seed=7, shard=(2, 3))
    assert restarted.take()[0] not in taken[2]  # a restart does not repeat its streams
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"streams-seed7-shard{k}of3.json" for k in (1, 2, 3)]
    assert json.loads((tmp_path / files[1]).read_text()) == {"next": 6}


def test_stream_seeds_depend_on_campaign_seed_and_stream() -> None:
    seeds = {stream_seed(s, g) for s in range(3) for g in range(50)}
    assert len(seeds) == 150
    assert stream_seed(1, 2) == stream_seed(1, 2)
