"""A new per-step idea that holds a group across steps is one sampling module (issue 73): the
trivial kind below keeps each step's first group in the store (`sampling/store.py`) and
trains it at the next step. Added as a new kind is (a row of the spec, a row of the plan),
it runs in the reference trainer (whole groups with their completions, resumed exactly) and
in the simulator, and TRL's step driver refuses it from the fact on its class."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from frontier_rft.core.selector import Selector
from frontier_rft.integrations import plan
from frontier_rft.integrations.trl.driver_kinds import driver_kind, why_undriven
from frontier_rft.sampling.base import WrapsSelector
from frontier_rft.sampling.spec import KINDS, KindRow, SamplerSpec
from frontier_rft.sampling.step import RolloutFn, StepSamples, fresh_batch, run_round
from frontier_rft.sampling.store import GroupStore
from frontier_rft.simulation.runner import Entry, RunSpec, run_one
from frontier_rft.simulation.scenario import SCENARIOS
from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN


class HoldOne(WrapsSelector):
    """One round of batch_size prompts a step: the first group is held for the next step,
    which trains it before its own (the rest of them)."""

    kind: ClassVar[str] = "hold_one"
    holds_groups: ClassVar[bool] = True

    def __init__(self, selector: Selector, config: None = None):
        self.inner, self.config = selector, None
        self.store = GroupStore.empty()

    def held(self) -> list[tuple[int, int, int]]:
        return self.store.keys()

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        one = run_round(self.inner, step, batch_size, group_size, rollout)
        self.inner.flush()
        fresh = fresh_batch((one,), [(0, g) for g in range(1, batch_size)], step, 1)
        train = self.store.trained_first(np.arange(self.store.size), fresh)
        self.store = GroupStore.empty().add(one, np.array([0]), step, 0)
        return StepSamples(step, (one,), train)

    def metrics(self) -> dict[str, float]:
        return self.inner.metrics()

    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        return self._state({"store": self.store.state()}, with_inner)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = self._checked_state(state, ("kind", "config", "store", "inner"))
        store = GroupStore.read(state["store"], self.kind, self.inner.num_tasks)
        self._load_inner(state)
        self.store = store


@pytest.fixture
def hold_one(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The kind added as a new kind is: a row of the spec, a row of the plan."""
    monkeypatch.setitem(KINDS, HoldOne.kind, KindRow(HoldOne))
    monkeypatch.setitem(plan.SAMPLER_TRAINERS, HoldOne.kind, ())
    yield HoldOne.kind


@pytest.mark.integration
def test_the_reference_trainer_trains_a_held_group_whole_and_resumes_exactly(
    hold_one: str, sft_dir: Path, tmp_path: Path
) -> None:
    config = dataclasses.replace(TEST_TRAIN, steps=4, eval_every=0, sampler=hold_one)
    straight = Trainer(config, sft_dir, tmp_path / "a", log=lambda _: None)
    trained: list[list[int]] = []
    real_whole = straight._whole

    def whole(batch: Any) -> Any:
        if batch is not None and batch.num_groups:
            trained.append(batch.steps.tolist())
        return real_whole(batch)

    straight._whole = whole  # type: ignore[method-assign]
    expected = []
    for _ in range(4):
        m = straight.step()
        expected.append(straight.last["advantages"].tolist())
        assert m["train/groups_trained"] == config.batch_size - (1 if not expected[1:] else 0)
    # every step after the first trains the group held from the step before, first
    held_steps = [steps[0] for steps in trained[2::2]]  # the trained batches, not groups()
    assert held_steps == [0, 1, 2]
    store = straight.sampler.store  # type: ignore[attr-defined]
    assert [len(p) for p in store.payloads] == [config.group_size]  # its completions kept
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    got = []
    for _ in range(2):
        first.step()
        got.append(first.last["advantages"].tolist())
    first.save()
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    for _ in range(2):
        resumed.step()
        got.append(resumed.last["advantages"].tolist())
    assert got == expected


def test_the_simulator_runs_it(hold_one: str) -> None:
    cfg = SCENARIOS["small-pool"].replace(num_tasks=32, eval_tasks=16)
    entry = Entry("hold-one", "uniform", sampler=SamplerSpec(hold_one))
    rec = run_one(RunSpec(cfg, entry, 0, steps=3, batch=8, rollouts=4))
    assert rec["sampler"] == [hold_one, {}]
    assert rec["rollouts"] == [32] * 3


def test_trl_refuses_it_from_the_fact_on_its_class(hold_one: str) -> None:
    assert driver_kind(hold_one) is None
    assert "keeps no completions across steps" in why_undriven(hold_one)
