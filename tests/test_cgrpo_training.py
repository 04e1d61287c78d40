"""ConformalStop (C-GRPO's stop rule, sampler 'cgrpo') in the reference trainer: every step
trains batch_size groups of a grid budget each, the calibration rollouts are billed in the step
that made them, and resume is exact across a recalibration (the thresholds in the checkpoint)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN, straight_and_resumed

pytestmark = pytest.mark.integration

BASE = dataclasses.replace(
    TEST_TRAIN,
    train_size=24,
    steps=5,
    eval_every=0,
    checkpoint_every=100,
    sampler="cgrpo",
    sampler_config={"calibration_prompts": 5, "recalibrate_every": 2},
)
"""Batch 3, group 4: budgets 2 and 4; 5 calibration prompts x 4 at steps 0, 2 and 4."""
P = "curriculum/cgrpo/"


def test_every_rollout_is_billed_calibration_included(sft_dir: Path, tmp_path: Path) -> None:
    trainer = Trainer(BASE, sft_dir, tmp_path / "cg", log=lambda _: None)
    steps = [trainer.step() for _ in range(5)]
    spent = 0.0
    for t, m in enumerate(steps):
        assert m["train/groups_trained"] == BASE.batch_size
        calibration = 5 * 4 if t % 2 == 0 else 0
        assert m[P + "calibration_rollouts"] == calibration
        trained = m[P + "mean_k"] * BASE.batch_size
        assert m[P + "mean_k"] in {2.0, 4.0} or 2.0 < m[P + "mean_k"] < 4.0
        assert m["train/rollouts"] == calibration + trained
        spent += m["train/rollouts"]
    last = steps[-1][P + "mean_k"] * BASE.batch_size
    assert len(trainer.last["advantages"]) == last  # every rollout of a stopped group trains
    assert steps[-1]["train/rollouts_total"] == spent
    assert steps[-1][P + "calibrations_total"] == 3


def test_resume_is_exact_across_a_recalibration(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(BASE, checkpoint_every=3)
    expected, got, straight, resumed = straight_and_resumed(config, sft_dir, tmp_path, 5, 3)
    assert got == expected
    assert straight.last["advantages"].tolist() == resumed.last["advantages"].tolist()
