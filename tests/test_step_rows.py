"""A step's rows in its plan (`StepRows`, issue 89 item 4): prompts a call, rollouts a prompt,
calls a step and rows trained, checked when made; decided once by each door (the reference
trainer's TrainConfig, verl's and SkyRL's configs, tinker's) and read from the plan by the
trainer that holds it, never decided there a second time."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from frontier_rft.integrations.plan import adapter_plan
from frontier_rft.integrations.skyrl.config import skyrl_sampler_config, skyrl_step_plan
from frontier_rft.integrations.tinker_facts import tinker_step_plan
from frontier_rft.integrations.verl.auto import verl_step_plan
from frontier_rft.integrations.verl.config import VerlSamplerConfig
from frontier_rft.integrations.verl.sampler import FrontierSampler
from frontier_rft.sampling.step_plan import StepPlan, StepRows
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.training.config import TrainConfig


def test_a_steps_rows_are_read_as_a_trainers_shape() -> None:
    one = StepRows(64, 8)
    assert (one.batch, one.generated, one.trained, one.updates) == (64, 512, 512, 1)
    assert one.words() == "64 prompts x 8 rollouts a step (512 rows, 1 call, 1 update)"
    # TRL without a vLLM server: 8 processes each generate 16 prompts, trained over 4 updates
    trl = StepRows(16, 8, calls=8, trained=256)
    assert (trl.batch, trl.generated, trl.updates) == (128, 1024, 4)
    assert trl.words() == "128 prompts x 8 rollouts a step (1024 rows, 8 calls, 4 updates)"
    unseen = StepRows(32)  # tinker: the builders make the groups
    assert unseen.generated is None and unseen.updates is None
    assert unseen.words() == "32 prompts a step (1 call; rollouts per prompt the trainer's)"
    with pytest.raises(ValueError, match="rollouts per prompt are its trainer's"):
        unseen.group_size()


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"prompts": 0, "rollouts": 8}, r"^a step's prompts must be an int in \[1, "),
    ({"prompts": 4.0, "rollouts": 8}, r"^a step's prompts must be an int"),
    ({"prompts": True, "rollouts": 8}, r"^a step's prompts must be an int"),
    ({"prompts": 4, "rollouts": 0}, r"^a step's rollouts must be an int in \[1, 1048576\]"),
    ({"prompts": 4, "rollouts": 2**21}, r"^a step's rollouts must be an int"),
    ({"prompts": 4, "rollouts": 8, "calls": 0}, r"^a step's calls must be an int"),
    ({"prompts": 4, "rollouts": 8, "trained": 33}, r"^a step's trained rows must be .*32"),
    ({"prompts": 4, "rollouts": 8, "trained": -1}, r"^a step's trained rows must be"),
    ({"prompts": 4, "rollouts": 8, "trained": 12}, r"trained 12 must divide them$"),
    ({"prompts": 4, "trained": 8}, r"need its rollouts per prompt"),
]
"""Rows no trainer can take, each with the start of its refusal."""


def test_rows_a_trainer_cannot_take_are_refused_in_one_line() -> None:
    for fields, needle in REFUSED:
        with pytest.raises(ValueError, match=needle) as refused:
            StepRows(**fields)
        assert "\n" not in str(refused.value), fields


def test_a_plan_holds_rows_or_leaves_them_to_its_caller() -> None:
    assert StepPlan().rows is None  # the simulator sizes each run's steps itself
    with pytest.raises(ValueError, match="this plan holds no rows"):
        StepPlan().shape()
    with pytest.raises(ValueError, match="a plan's rows must be StepRows, got tuple"):
        StepPlan(rows=(4, 8))  # type: ignore[arg-type]
    plan = StepPlan().with_rows(StepRows(4, 8))
    assert plan.shape() == StepRows(4, 8) and plan.words() == StepPlan().words()


# ---------------------------------------------------------------------------- each door
def test_each_door_decides_its_rows_once_in_its_plan() -> None:
    """The reference trainer's batch and groups, verl's batch x n, SkyRL's train_batch_size x
    n_samples_per_prompt, tinker's groups a batch: one plan each, its rows the trainer's."""
    config = TrainConfig(batch_size=6, group_size=4, train_size=12)
    assert config.step_plan().shape() == StepRows(6, 4)
    verl, _ = verl_step_plan(
        VerlSamplerConfig(batch_size=16, rollouts="full"),
        {"actor_rollout_ref": {"rollout": {"n": 8}}},
        selector=SELECTORS["uniform"],
        legacy=False,
    )
    assert verl.shape() == StepRows(16, 8)
    skyrl, _ = skyrl_step_plan(
        skyrl_sampler_config({"rollouts": "full"}, 32),
        fully_async=False,
        dynamic_sampling=None,
        group_size=4,
    )
    assert skyrl.shape() == StepRows(32, 4)
    tinker = tinker_step_plan("kept", 8)
    assert tinker.shape() == StepRows(8) and tinker.rollouts == "kept"


def _rows(n: int = 12) -> list[dict[str, Any]]:
    return [{"prompt": f"question {i}", "index": 100 + i} for i in range(n)]


def test_verls_sampler_reads_its_step_from_the_plan() -> None:
    """The plan a buffer decided is what the sampler draws by (its rollouts and its batch),
    whatever the settings it was built from said of rollouts; a plan of another batch than
    the sampler's is refused."""
    config = VerlSamplerConfig(batch_size=4, selector="greso", rollouts="full")
    kept = adapter_plan("kept", rows=StepRows(4, 2))
    sampler = FrontierSampler(_rows(), config=config, plan=kept)
    assert sampler.plan is kept and sampler.batch_size == 4
    assert sampler.config.rollouts == "kept"  # the plan's, for the checks that read it
    with pytest.raises(ValueError, match="kept"):  # a kept step is the batch sampler's only
        iter(sampler)
    window = next(iter(sampler.batches()))
    assert 1 <= len(window) <= 4
    full = FrontierSampler(_rows(), config=dataclasses.replace(config, rollouts="kept"))
    assert full.plan.rollouts == "kept" and full.plan.shape() == StepRows(4)
    with pytest.raises(ValueError, match="the plan's 6 prompts a step are not the sampler's"):
        FrontierSampler(_rows(), config=config, plan=adapter_plan("full", rows=StepRows(6, 2)))


def test_the_reference_trainer_reads_its_step_from_the_plan(sft_dir: Any, tmp_path: Any) -> None:
    """The trainer's step takes its prompts and rollouts from the plan it holds, not from its
    config a second time: a plan of other rows (as a planner would set them) is what runs."""
    from frontier_rft.training.grpo import Trainer
    from test_kept_rows_training import CONFIG

    config = dataclasses.replace(
        CONFIG, selector="uniform", sampler="passthrough", sampler_config={}, steps=2
    )
    trainer = Trainer(config, sft_dir, tmp_path / "run", log=lambda _: None)
    assert trainer.plan == config.step_plan()
    asked: list[tuple[int, int]] = []
    sample = trainer.sampler.sample

    def spy(step: int, batch: int, n: int, rollout: Any) -> Any:
        asked.append((batch, n))
        return sample(step, batch, n, rollout)

    trainer.sampler.sample = spy  # type: ignore[method-assign]
    trainer.step()
    assert asked == [(config.batch_size, config.group_size)]
    trainer.plan = trainer.plan.with_rows(StepRows(3, 2))  # what a planner would change
    metrics = trainer.step()
    assert asked[-1] == (3, 2)
    assert metrics["train/rollouts"] == 3 * 2 and np.isfinite(metrics["train/rollouts"])
