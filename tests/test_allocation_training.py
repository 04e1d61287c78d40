"""Rollout allocation in the reference trainer: groups of different sizes sampled, scored,
weighed one prompt each in the loss, every reward sent once, exact resume; its settings
refused by name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.training.config import train_config
from frontier_rft.training.grpo import Trainer
from frontier_rft.training.policy_loss import aggregate, row_weights
from test_training_model import TEST_TRAIN

pytestmark = pytest.mark.integration


ALLOC = dataclasses.replace(
    TEST_TRAIN,
    selector="greso",
    sampler="allocation",
    sampler_config={"pilot": 2, "max_rollouts": 10},
    train_size=6,
    steps=6,
    eval_every=0,
)
"""Six prompts of batch 3: from step 3 every prompt is tried, so groups differ in size."""


def test_row_weights_give_every_group_one_prompts_share_hand_computed() -> None:
    # Groups of 2 and 4 (R = 6, G = 2): 6 / (2 * 2) = 1.5 and 6 / (2 * 4) = 0.75; each group
    # weighs 3 in all, the weights average 1.
    w = row_weights([2, 4], "prompt")
    assert w is not None
    np.testing.assert_allclose(w, [1.5, 1.5, 0.75, 0.75, 0.75, 0.75])
    assert row_weights([2, 4], "rollout") is None  # each rollout alike
    assert row_weights([4, 4, 4], "prompt") is None  # equal groups: nothing to reweigh
    # sequence_mean of per-row values 1, 1 (group of 2) and 0 x 4: the mean over groups of
    # their mean, (1 + 0) / 2, not the mean over rows, 2 / 6.
    values = torch.tensor([[1.0], [1.0], [0.0], [0.0], [0.0], [0.0]])
    mask = torch.ones_like(values)
    weights = torch.tensor(w, dtype=torch.float32)
    assert float(aggregate(values, mask, "sequence_mean", 1, weights)) == pytest.approx(0.5)
    assert float(aggregate(values, mask, "sequence_mean", 1)) == pytest.approx(1 / 3)
    # token_mean with rows of 1 and 3 tokens: sum(w v m) / sum(m)
    values = torch.tensor([[2.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    two = torch.tensor([0.5, 1.5])
    assert float(aggregate(values, mask, "token_mean", 3, two)) == pytest.approx((1 + 4.5) / 4)
    assert float(aggregate(values, mask, "constant", 3, two)) == pytest.approx((1 + 4.5) / 6)


def test_allocated_steps_spend_the_budget_and_feed_every_reward(
    sft_dir: Path, tmp_path: Path
) -> None:
    trainer = Trainer(ALLOC, sft_dir, tmp_path / "run", log=lambda _: None)
    sizes, equal = [], []
    for _ in range(6):
        metrics = trainer.step()
        sizes.append(metrics["train/rollouts"])
        equal.append(metrics["train/n_to_4"] == 3)  # 3 groups, 12 rollouts: all of 4
        groups = trainer.last["rewards"]
        assert groups.shape == (ALLOC.batch_size * ALLOC.group_size,)  # uniform's budget
    assert sizes == [12.0] * 6
    assert not all(equal)  # once tried, prompts get groups of different sizes
    trainer.selector.flush()
    sel = trainer.selector.metrics()
    assert sel["feedback/rollouts"] == trainer.rollouts == 6 * 12
    assert sel["feedback/groups"] == 6 * 3  # a pilot and its commit are one group
    for key in (
        "train/rollouts_per_prompt",
        "train/informative_per_rollout",
        "train/n_to_2",
        "train/n_to_8",
        "curriculum/alloc/budget",
        "curriculum/alloc/tried_share",
    ):
        assert key in metrics, key
    hist = [metrics[k] for k in metrics if k.startswith("train/n_")]
    assert sum(hist) == 3


def test_resume_with_allocation_is_exact(sft_dir: Path, tmp_path: Path) -> None:
    straight = Trainer(ALLOC, sft_dir, tmp_path / "a", log=lambda _: None)
    rewards_a = []
    for _ in range(5):
        straight.step()
        rewards_a.append(straight.last["rewards"].tolist())
    first = Trainer(ALLOC, sft_dir, tmp_path / "b", log=lambda _: None)
    rewards_b = []
    for _ in range(3):
        first.step()
        rewards_b.append(first.last["rewards"].tolist())
    first.save()
    assert (tmp_path / "b" / "checkpoints" / "step_000003" / "step_sampler.npz").is_file()
    del first
    resumed = Trainer(ALLOC, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    for _ in range(2):
        resumed.step()
        rewards_b.append(resumed.last["rewards"].tolist())
    assert rewards_a == rewards_b
    assert straight.sampler.state_dict(with_inner=False).keys() == (  # type: ignore[attr-defined]
        resumed.sampler.state_dict(with_inner=False).keys()  # type: ignore[attr-defined]
    )
    other = dataclasses.replace(ALLOC, sampler_config={"max_rollouts": 10})
    with pytest.raises(ValueError, match=r"resume with the saved settings|different configuration"):
        Trainer(other, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"dynamic_sampling": True}, "dynamic_sampling and allocation are each"),
        ({"group_size": 200}, r"allocation: group_size 200 is the default n"),
        ({"rollout_budget": 0.0}, "rollout_budget must be"),
        ({"rollout_budget": 0.1}, "cannot give"),
        ({"pilot_rollouts": 1}, "pilot_rollouts must be"),
        ({"pilot_rollouts": 9, "group_size": 8}, "pilot 9 exceeds group_size 8"),
        ({"min_rollouts": 1}, "min_rollouts"),
        ({"allocation_value": "best"}, "allocation_value"),
        ({"commit": "all"}, "commit"),
        ({"group_weighting": "tokens"}, "group_weighting"),
        ({"rollout_budget": 100.0, "max_rollouts": 16}, "cannot be spent"),
        ({"sampler": "allocation", "sampler_config": {"budget": 0.0}}, "budget must be"),
        ({"sampler": "allocation", "sampler_config": {"budgets": 1.0}}, "did you mean 'budget'"),
    ],
)
def test_allocation_settings_are_refused_by_name(fields: dict, message: str) -> None:
    """As the flags (and older runs' flat fields) spell them, and as sampler_config does."""
    flag = {} if "sampler" in fields else {"allocation": True}
    with pytest.raises(ValueError, match=message):
        train_config({**flag, **fields})
