"""Larger groups for prompts predicted hard (sampling/hard_groups.py), against the rule written
out: a prompt rolled out before and never solved gets N more rollouts in the step's one
generation call, joined to its group; the selector reads only its groups of n."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.bench.real_rl.device_seconds import step_shape
from frontier_rft.sampling.hard_groups import HardGroups
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.step import Rolled
from frontier_rft.training.config import TrainConfig

TASKS, BATCH, GROUP, EXTRA = 6, 6, 4, 3
"""Every prompt every step (B = the pool), so each step sees the whole pool once."""


class Planted:
    """Task % 3: 0 always solved, 1 never, 2 solved only beyond its first 4 rollouts (so only
    a larger group of it is ever correct). Records each call's ids and counts."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], list[int]]] = []

    def __call__(self, ids: Any, counts: Any = None) -> Rolled:
        ids = np.asarray(ids)
        sizes = np.full(ids.shape[0], GROUP) if counts is None else np.asarray(counts)
        self.calls.append((ids.tolist(), sizes.tolist()))
        seen: dict[int, int] = {}
        rewards, payloads = [], []
        for t, c in zip(ids.tolist(), sizes.tolist(), strict=True):
            before = seen.get(t, 0)  # the rollouts of t earlier in this call
            seen[t] = before + c
            position = before + np.arange(c)
            if t % 3 == 0:
                r = np.ones(c)
            elif t % 3 == 1:
                r = np.zeros(c)
            else:
                r = (position >= GROUP).astype(float)
            rewards.append(r)
            payloads.append([[t, int(i)] for i in position])
        return Rolled(np.concatenate(rewards), payloads)


def sampler() -> HardGroups:
    selector = make_selector("uniform", TaskPool(num_tasks=TASKS), seed=0)
    return HardGroups(PassThrough(selector), EXTRA)


def test_only_prompts_seen_and_never_solved_get_more_in_the_same_call() -> None:
    wrapped, rollout = sampler(), Planted()
    first = wrapped.sample(0, BATCH, GROUP, rollout)
    assert len(rollout.calls) == 1 and rollout.calls[0][1] == [GROUP] * TASKS  # nothing known
    assert first.rollouts == TASKS * GROUP and first.wrap_metrics["hard_groups/rollouts"] == 0
    # after step 0: types 1 and 2 (never correct in 4) are hard, type 0 solved
    assert wrapped.hard().tolist() == [t % 3 != 0 for t in range(TASKS)]
    second = wrapped.sample(1, BATCH, GROUP, rollout)
    ids, counts = rollout.calls[1]
    assert len(rollout.calls) == 2, "one call a step"
    order = ids[:TASKS]
    assert ids[TASKS:] == [t for t in order if t % 3 != 0]
    assert counts == [GROUP] * TASKS + [EXTRA] * 4
    assert second.rollouts == TASKS * GROUP + 4 * EXTRA
    train = second.train
    sizes = {int(t): int(c) for t, c in zip(train.task_ids, train.counts, strict=True)}
    assert sizes == {t: GROUP + (EXTRA if t % 3 else 0) for t in range(TASKS)}
    for g, t in enumerate(train.task_ids.tolist()):  # joined: its own rollouts, then the N
        rewards = train.rewards[train.offsets[g] : train.offsets[g + 1]].tolist()
        want = {0: [1.0] * GROUP, 1: [0.0] * (GROUP + EXTRA), 2: [0.0] * GROUP + [1.0] * EXTRA}
        assert rewards == want[t % 3]
    assert second.sampled.rollouts == TASKS * GROUP, "the selector reads its groups of n"
    metrics = second.wrap_metrics
    assert metrics["hard_groups/rollouts"] == 4 * EXTRA
    assert metrics["hard_groups/groups_joined"] == 4 and metrics["hard_groups/groups_solved"] == 2
    # the larger groups solved the type-2 prompts: only type 1 stays hard
    assert wrapped.hard().tolist() == [t % 3 == 1 for t in range(TASKS)]


def test_a_refused_call_changes_nothing() -> None:
    wrapped, rollout = sampler(), Planted()
    wrapped.sample(0, BATCH, GROUP, rollout)
    before = (wrapped.seen.copy(), wrapped.solved.copy(), wrapped.state_dict()["inner"])
    with pytest.raises(ValueError, match="rollout must be a function"):
        wrapped.sample(1, BATCH, GROUP, None)  # type: ignore[arg-type]
    assert (wrapped.seen == before[0]).all() and (wrapped.solved == before[1]).all()
    assert len(rollout.calls) == 1


def test_the_reference_trainer_and_its_plan_name_it() -> None:
    config = TrainConfig(hard_groups=EXTRA)
    assert (
        config.step_plan().words()
        == "sampler passthrough with hard_groups (extra 3), ended by steps"
    )
    with pytest.raises(ValueError, match="hard_groups must be an int >= 0"):
        TrainConfig(hard_groups=-1)
    with pytest.raises(ValueError, match="hard_groups joins more rollouts"):
        TrainConfig(hard_groups=2, sampler="dynamic_sampling")


# ---------------------------------------------------------------- the reference trainer
def _trainer_config() -> TrainConfig:
    from test_kept_rows_training import CONFIG as KEPT

    return dataclasses.replace(
        KEPT, selector="uniform", sampler="passthrough", sampler_config={}, steps=8,
        hard_groups=EXTRA,
    )  # fmt: skip


def _planted_trainer(trainer: Any) -> list[list[tuple[list[int], list[int]]]]:
    """Plant task % 3 outcomes as `Planted` does; per step, each call's (ids, counts)."""
    calls: list[list[tuple[list[int], list[int]]]] = []
    original, step_of = trainer._rollout, [-1]

    def rollout(ids: np.ndarray, counts: np.ndarray) -> Any:
        completions, _, seconds, padded = original(ids, counts)
        if step_of[0] != trainer.step_count:
            step_of[0] = trainer.step_count
            calls.append([])
        calls[-1].append((ids.tolist(), np.asarray(counts).tolist()))
        rewards = Planted()(ids, counts).rewards
        return completions, rewards, seconds, padded

    trainer._rollout = rollout
    return calls


@pytest.mark.integration
def test_the_trainer_sends_one_call_a_step_and_counts_every_rollout(
    sft_dir: Any, tmp_path: Any
) -> None:
    from frontier_rft.training.grpo import Trainer

    config = _trainer_config()
    trainer = Trainer(config, sft_dir, tmp_path / "run", log=lambda _: None)
    calls = _planted_trainer(trainer)
    n, seen, solved = config.group_size, set(), set()
    for _ in range(config.steps):
        metrics = trainer.step()
        (ids, counts), *rest = calls[-1]
        assert not rest, "one generation call a step"
        own = ids[: config.batch_size]
        hard = [t for t in own if t in seen and t not in solved]
        assert ids[config.batch_size :] == hard
        assert counts == [n] * len(own) + [EXTRA] * len(hard)
        assert metrics["train/rollouts"] == n * len(own) + EXTRA * len(hard)
        assert metrics["train/trained_rows"] == n * len(own) + EXTRA * len(hard)
        assert metrics["train/sampling_rounds"] == 1
        # the device bill: one call of every row, the extras among them
        assert step_shape(metrics, 24).calls == (n * len(own) + EXTRA * len(hard),)
        assert metrics["hard_groups/groups_joined"] == len(hard)
        seen |= set(own)
        solved |= {t for t in own if t % 3 == 0} | {t for t in hard if t % 3 == 2}
    assert any(calls_of[0][0][config.batch_size :] for calls_of in calls), "none got more"


@pytest.mark.integration
def test_the_trainer_resumes_exactly(sft_dir: Any, tmp_path: Any) -> None:
    from frontier_rft.training.grpo import Trainer

    config = _trainer_config()

    def trace(trainer: Any, steps: int) -> list[Any]:
        out = []
        for _ in range(steps):
            m = trainer.step()
            own = {k: v for k, v in m.items() if k.startswith("hard_groups/")}
            out.append((trainer.last["ids"].tolist(), m["train/rollouts"], own))
        return out

    straight = Trainer(config, sft_dir, tmp_path / "a", log=lambda _: None)
    _planted_trainer(straight)
    expected = trace(straight, 8)
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    _planted_trainer(first)
    got = trace(first, 4)
    first.save()
    del first
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    _planted_trainer(resumed)
    got += trace(resumed, 4)
    assert got == expected


@pytest.mark.integration
def test_with_rescue_each_wrap_reports_its_own_and_the_bill_counts_every_call(
    sft_dir: Any, tmp_path: Any
) -> None:
    from frontier_rft.training.grpo import Trainer

    config = dataclasses.replace(_trainer_config(), rescue=2)
    trainer = Trainer(config, sft_dir, tmp_path / "run", log=lambda _: None)
    original, steps = trainer._rollout, []

    def rollout(ids: np.ndarray, counts: np.ndarray) -> Any:
        completions, _, seconds, padded = original(ids, counts)
        steps[-1].append((int(np.sum(counts)), [len(c) for c in completions]))
        return completions, Planted()(ids, counts).rewards, seconds, padded

    trainer._rollout = rollout
    rescued = joined = 0
    for _ in range(config.steps):
        steps.append([])
        m = trainer.step()
        calls = steps[-1]
        # hard_groups' extras ride in the first call, rescue's make a call of their own
        assert step_shape(m, 24).calls == tuple(rows for rows, _ in calls)
        assert m["hard_groups/rollouts"] == EXTRA * m["hard_groups/groups_joined"]
        own = config.batch_size * config.group_size
        first = calls[0][1]
        assert m["hard_groups/generated_tokens"] == sum(first[own:])
        later = [n for _, tokens in calls[1:] for n in tokens]
        assert m["rescue/generated_tokens"] == sum(later)
        assert m["rescue/rollouts"] == len(later)
        assert m["train/generated_tokens"] == sum(first) + sum(later)
        rescued += len(calls) > 1
        joined += int(m["hard_groups/groups_joined"])
    assert rescued and joined, "no step called rescue, or none joined larger groups"
