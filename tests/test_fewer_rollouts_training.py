"""FewerRollouts in the reference trainer: a fixed schedule under the skip in uniform's window
or screening generates fewer rollouts than uniform's, the loss is scaled by the groups
trained, resume is exact; settings refused by name before anything runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.training.config import TrainConfig, train_config
from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN, straight_and_resumed

pytestmark = pytest.mark.integration

BASE = dataclasses.replace(TEST_TRAIN, train_size=12, steps=12, eval_every=0, checkpoint_every=100)
"""Twelve prompts of batch 3: 12 steps are three of uniform's epochs."""
FEWER = "fewer_rollouts"
MODES = {
    "kept": {"selector": "greso", "sampler": FEWER},
    "screen": {
        "selector": "uniform",
        "sampler": FEWER,
        "sampler_config": {"skip": False, "screen": 2},
    },
    "both": {"selector": "greso", "sampler": FEWER, "sampler_config": {"screen": 2}},
}


def steps(config: TrainConfig, sft_dir: Path, out: Path, n: int) -> list[dict[str, float]]:
    trainer = Trainer(config, sft_dir, out, log=lambda _: None)
    return [trainer.step() for _ in range(n)]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_same_schedule_spends_fewer_rollouts(mode: str, sft_dir: Path, tmp_path: Path) -> None:
    uniform = steps(BASE, sft_dir, tmp_path / "u", 12)
    fewer = steps(dataclasses.replace(BASE, **MODES[mode]), sft_dir, tmp_path / "f", 12)
    full = BASE.batch_size * BASE.group_size
    assert [m["train/rollouts"] for m in uniform] == [full] * 12
    spent = sum(m["train/rollouts"] for m in fewer)
    assert spent < 12 * full, mode
    assert fewer[-1]["train/rollouts_total"] == spent
    for m in fewer:  # the loss is uniform's batch's: trained groups / batch_size
        assert m["train/loss_scale"] == m["train/groups_trained"] / BASE.batch_size
    if mode == "kept":  # nothing is known of a prompt before its first group
        assert [m["train/rollouts"] for m in fewer[:4]] == [full] * 4


@pytest.mark.parametrize("mode", ["kept", "both"])
def test_resume_is_exact(mode: str, sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(BASE, **MODES[mode], checkpoint_every=5)
    # saved mid-epoch: 5 x 3 of 12 prompts, then 4 more steps
    expected, got, _, _ = straight_and_resumed(config, sft_dir, tmp_path, 9, 5)
    assert got == expected


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rollouts": "some"}, "rollouts"),
        ({"rollouts": "kept", "selector": "bots"}, "does not walk the data"),
        ({"screen": 4, "group_size": 4}, "screen 4 must be below group_size 4"),
        ({"screen": -1}, "screen must be 0"),
        ({"screen": 1}, "one reward is never mixed"),
        ({"loss_scale": "mean"}, "loss_scale"),  # refused even while no step shrinks
        ({"rollouts": "kept", "selector": "greso", "loss_scale": "mean"}, "loss_scale"),
        ({"screen": 2, "dynamic_sampling": True}, "do not combine"),
        ({"screen": 2, "allocation": True}, "do not combine"),
        ({"sampler": FEWER, "sampler_config": {"skip": False}}, "with neither"),
        ({"sampler": FEWER, "selector": "bots"}, "does not walk the data"),
        ({"sampler": FEWER, "sampler_config": {"screen": 1}}, "one reward is never mixed"),
        ({"sampler": FEWER, "sampler_config": {"rollouts": "kept"}}, "unknown option"),
    ],
)
def test_settings_are_refused_by_name(fields: dict, message: str) -> None:
    """As the flags (and older runs' flat fields) spell them, and as sampler_config does."""
    with pytest.raises(ValueError, match=message):
        train_config(fields)
