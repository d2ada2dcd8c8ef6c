"""The campaign's configuration is one frozen object: checked whole when it is built, the CLI's
only, and what every worker receives as it is (campaign/config.py)."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from pyfy_fuzz.campaign.config import (
    BackendMix,
    CampaignConfig,
    WorkerConfig,
    default_mix,
    serve_only,
)
from pyfy_fuzz.cli import main


def test_a_configuration_is_frozen_and_checked_when_built(tmp_path: Path) -> None:
    c = CampaignConfig(budget_s=60, corpus=tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.workers = 2  # type: ignore[misc]
    bad: list[dict[str, object]] = [
        {"budget_s": 0},
        {"workers": 0},
        {"shard": (3, 2)},
        {"case_timeout": 0},
        {"shrink_seconds": -1.0},
        {"max_cases": 0},
        {"progress": "loud"},
        {"device": "tpu"},
        {"wrappers": ["input_mutation"]},  # a list could change under the workers' feet
        {"wrappers": ()},
        {"mix": "aot_eager"},
    ]
    for fields in bad:
        with pytest.raises(ValueError, match="expected"):
            CampaignConfig(**{"budget_s": 60, "corpus": tmp_path, **fields})  # type: ignore[arg-type]


def test_the_derived_values_are_the_old_ones(tmp_path: Path) -> None:
    """2% of the budget for each shrink, within [8, 20] s, unless given; aot_eager alone by
    default; the CLI's mix by device."""
    assert CampaignConfig(budget_s=60, corpus=tmp_path).shrink_s == 8.0
    assert CampaignConfig(budget_s=600, corpus=tmp_path).shrink_s == 12.0
    assert CampaignConfig(budget_s=3600, corpus=tmp_path).shrink_s == 20.0
    assert CampaignConfig(budget_s=60, corpus=tmp_path, shrink_seconds=2.0).shrink_s == 2.0
    assert CampaignConfig(budget_s=60, corpus=tmp_path).mix == BackendMix("aot_eager", None, 0)
    assert default_mix("cpu") == BackendMix("aot_eager", "inductor", 10)
    assert default_mix("cuda") == BackendMix("inductor", "aot_eager", 4)
    with pytest.raises(ValueError, match="expected a base"):
        BackendMix("eager")


def test_workers_receive_the_campaigns_configuration_as_it_is(tmp_path: Path) -> None:
    from pyfy_fuzz.campaign.campaign import Campaign

    config = CampaignConfig(
        budget_s=60, corpus=tmp_path / "c", progress="quiet", mix=default_mix("cpu")
    )
    campaign = Campaign(config)
    campaign.repros.close()
    mine = campaign._worker_config(1)
    assert mine.campaign is config and mine.slot == 1 and mine.replay_database
    again = pickle.loads(pickle.dumps(mine))  # what crosses to the worker's process
    assert again == mine and again.campaign == config


def test_a_serve_only_pool_has_no_budget_and_no_corpus() -> None:
    c = serve_only("cpu", "tests.campaign.impls:always_raises")
    assert c.impl == "tests.campaign.impls:always_raises" and c.budget_s == float("inf")
    assert WorkerConfig(c, slot=0).campaign is c
    with pytest.raises(ValueError, match="expected"):
        WorkerConfig(c, slot=0, threads=0)


def test_the_cli_turns_a_configuration_error_into_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyfy_fuzz.campaign.config as config_module

    def bad_mix(device: str) -> BackendMix:
        return BackendMix("aot_eager", "aot_eager", 4)

    monkeypatch.setattr(config_module, "default_mix", bad_mix)
    assert main(["run", "--budget", "5s", "--corpus", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pyfy-fuzz: error: ") and "mixes nothing" in err[0]
    assert not (tmp_path / "c").exists()  # nothing was started or created
