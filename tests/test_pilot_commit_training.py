"""PilotCommit in the reference trainer: every step trains batch_size groups of group_size,
a pilot buffered at one step is trained (its completions kept) at the step that commits it,
every rollout generated is billed, resume is exact with pilots waiting in the buffer, and
settings are refused by name before anything runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.training.config import train_config
from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN, straight_and_resumed

pytestmark = pytest.mark.integration

BASE = dataclasses.replace(
    TEST_TRAIN,
    train_size=24,
    steps=6,
    eval_every=0,
    checkpoint_every=100,
    sampler="pilot_commit",
    sampler_config={"commit_low": 0.0},  # the tiny model rarely solves: buffer the hard pilots
)
"""Batch 3, group 4: pilots of 4 // 4 -> 2 rollouts, commits of 2, 9 candidates a round."""
P = "curriculum/pilot_commit/"


def test_buffered_pilots_are_trained_later_and_billed(sft_dir: Path, tmp_path: Path) -> None:
    trainer = Trainer(BASE, sft_dir, tmp_path / "pc", log=lambda _: None)
    steps = [trainer.step() for _ in range(6)]
    spent = 0.0
    for m in steps:
        assert m["train/groups_trained"] == BASE.batch_size
        assert m["train/loss_scale"] == 1.0
        bill = m[P + "pilot_rollouts"] + m[P + "commit_rollouts"]
        assert m["train/rollouts"] == bill  # pilots included, each in the step it was made
        spent += bill
    assert steps[-1]["train/rollouts_total"] == spent
    assert steps[0][P + "rounds"] == 2  # the first round has nothing buffered to commit
    later = sum(m[P + "committed_earlier"] for m in steps[1:])
    assert later > 0  # pilots of an earlier step, trained with their kept completions
    assert spent > 6 * BASE.batch_size * BASE.group_size  # 9 pilots a round: more than uniform
    # the sampler's store holds each buffered pilot's completions (k of them, token lists)
    store = trainer.sampler.buffer  # type: ignore[attr-defined]
    sizes = [len(p) for p in store.payloads]
    assert store.size and sizes == store.counts.tolist()
    assert len(trainer.last["advantages"]) == BASE.batch_size * BASE.group_size


def test_resume_is_exact_with_pilots_in_the_buffer(sft_dir: Path, tmp_path: Path) -> None:
    def pilots_cross_the_save(first: Trainer) -> None:
        assert first.sampler.buffer.size  # type: ignore[attr-defined]

    config = dataclasses.replace(BASE, checkpoint_every=3)
    expected, got, straight, resumed = straight_and_resumed(
        config, sft_dir, tmp_path, 6, 3, before_save=pilots_cross_the_save
    )
    assert got == expected
    assert straight.last["advantages"].tolist() == resumed.last["advantages"].tolist()


def test_a_checkpoint_that_kept_pilot_completions_in_trainer_json_is_refused(
    sft_dir: Path, tmp_path: Path
) -> None:
    """An earlier trainer kept the buffered pilots' completions in trainer.json; the sampler's
    store keeps them now, so such a checkpoint is refused in one line, saying what to do."""
    config = dataclasses.replace(BASE, checkpoint_every=2)
    first = Trainer(config, sft_dir, tmp_path / "old", log=lambda _: None)
    first.step()
    ckpt = first.save()
    trainer_json = ckpt / "trainer.json"
    state = json.loads(trainer_json.read_text())
    state["pilot_completions"] = [{"key": [0, 0, 0], "task": 0, "completions": [], "rewards": []}]
    trainer_json.write_text(json.dumps(state))
    with pytest.raises(ValueError, match=r"trainer\.json.*start a new --out"):
        Trainer(config, sft_dir, tmp_path / "old", resume=True, log=lambda _: None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pilot_commit": True, "pc_pilot": 4, "group_size": 4}, "pilot_commit: pilot 4 must be"),
        ({"pc_pilot": 1}, "pc_pilot must be 0"),  # refused even while unused
        ({"pc_commit_low": 0.9}, "pc_commit_low"),
        ({"pc_buffer_pick": "best"}, "pc_buffer_pick"),
        ({"pc_evict_at": 0.0}, "pc_evict_at"),
        ({"pilot_commit": True, "pc_pilot": 2, "pc_commit_low": 0.6}, "nothing would ever"),
        ({"pilot_commit": True, "screen": 2}, "do not combine"),
        ({"pilot_commit": True, "dynamic_sampling": True}, "do not combine"),
        ({"pilot_commit": True, "allocation": True}, "do not combine"),
        ({"sampler": "pilot_commit", "sampler_config": {"pilot": 1}}, "pilot must be 0"),
        ({"sampler": "pilot_commit", "sampler_config": {"pc_pilot": 2}}, "unknown option"),
    ],
)
def test_settings_are_refused_by_name(fields: dict, message: str) -> None:
    """As the flags (and older runs' flat fields) spell them, and as sampler_config does."""
    with pytest.raises(ValueError, match=message):
        train_config(fields)
