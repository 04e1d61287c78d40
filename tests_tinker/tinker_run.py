"""Helpers that run tinker-cookbook's real training loop (`rl.train.main`) on a
FrontierRLDataset, with the remote service stood in for (fake_service)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chz
import numpy as np
import pytest
import tinker
from fake_service import FakeServiceClient, FakeTokenizer, Record, TaskGroup
from tinker_cookbook.rl import train
from tinker_cookbook.rl.types import RLDataset, RLDatasetBuilder

from frontier_rft import Feedback
from frontier_rft.integrations.tinker import FrontierRLDataset, TinkerFrontierConfig

BATCH = 8  # groups per batch


@chz.chz
class GivenDataset(RLDatasetBuilder):
    """The cookbook builds its dataset from a builder; this one hands over a ready one."""

    dataset: Any

    async def __call__(self) -> tuple[RLDataset, None]:
        return self.dataset, None


@dataclass
class Spy:
    """What the selector was asked and told, through its own select and update."""

    picks: list[list[int]] = field(default_factory=list)
    updates: list[tuple[int, int, tuple[float, ...]]] = field(default_factory=list)
    """(step, task, rewards) per Feedback, in arrival order."""


def spy_on(dataset: FrontierRLDataset) -> Spy:
    spy = Spy()
    selector = dataset.selector
    select, select_window, update = selector.select, selector.select_window, selector.update

    def spied_select(n: int) -> Any:
        ids = select(n)
        spy.picks.append([int(i) for i in ids])
        return ids

    def spied_select_window(n: int) -> Any:
        ids = select_window(n)
        spy.picks.append([int(i) for i in ids])
        return ids

    def spied_update(fb: Feedback, **kw: Any) -> None:
        ids = np.asarray(fb.task_ids)
        assert np.all(ids == ids[0]), "one Feedback per group"
        spy.updates.append((int(fb.step), int(ids[0]), tuple(np.asarray(fb.rewards).tolist())))
        update(fb, **kw)

    selector.select = spied_select  # type: ignore[method-assign]
    selector.select_window = spied_select_window  # type: ignore[method-assign]
    selector.update = spied_update  # type: ignore[method-assign]
    return spy


def make_dataset(
    log_path: Path,
    selector: str = "uniform",
    num_batches: int = 12,
    rollouts: str = "full",
    *,
    shadows: tuple[str, ...] = (),
    max_outstanding_batches: int = 64,
    **selector_config: Any,
) -> FrontierRLDataset:
    from fake_service import NUM_TASKS

    config = TinkerFrontierConfig(
        batch_size=BATCH,
        num_batches=num_batches,
        state_dir=str(log_path),
        shadows=shadows,
        max_outstanding_batches=max_outstanding_batches,
        rollouts=rollouts,
    )
    return FrontierRLDataset(
        [TaskGroup(t) for t in range(NUM_TASKS)],
        config,
        selector,
        selector_config=selector_config or None,
        seed=7,
    )


def cookbook_runner(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Record]:
    """run(dataset, log_path, max_steps, async_lag=None, ...) -> what the service saw."""
    monkeypatch.setattr(tinker, "ServiceClient", FakeServiceClient)
    monkeypatch.setattr(train, "get_tokenizer", lambda name: FakeTokenizer())
    monkeypatch.setattr(train, "fetch_model_pricing", lambda name: None)  # a web download
    logging.getLogger("tinker_cookbook").setLevel(logging.WARNING)

    def run(
        dataset: FrontierRLDataset,
        log_path: Path,
        max_steps: int,
        *,
        async_lag: int | None = None,
        stream: bool = False,
        remove_constant: bool = False,
        save_every: int = 3,
        train_delay: float = 0.0,
        sample_delay: float = 0.0,
    ) -> Record:
        FakeServiceClient.record = Record()
        FakeServiceClient.train_delay = train_delay
        FakeServiceClient.sample_delay = sample_delay
        config = train.Config(
            learning_rate=1e-5,
            dataset_builder=GivenDataset(dataset=dataset),
            model_name="fake/model",
            recipe_name="frontier_rft_test",
            max_tokens=4,
            log_path=str(log_path),
            eval_every=0,
            save_every=save_every,
            remove_constant_reward_groups=remove_constant,
            async_config=(
                None
                if async_lag is None
                else train.AsyncConfig(max_steps_off_policy=async_lag, groups_per_batch=BATCH)
            ),
            stream_minibatch_config=(
                train.StreamMinibatchConfig(groups_per_batch=BATCH, num_minibatches=2)
                if stream
                else None
            ),
            max_steps=max_steps,
            num_groups_to_log=0,
            rollout_json_export=False,
            rollout_error_tolerance=False,
        )
        asyncio.run(asyncio.wait_for(train.main(config), timeout=120))
        return FakeServiceClient.record

    return run
