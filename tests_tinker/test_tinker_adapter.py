"""frontier-rft's tinker-cookbook adapter, driven by the cookbook's real training loop.

`run_cookbook` (conftest) runs `tinker_cookbook.rl.train.main` with only the remote tinker
service (sampling and training) and the tokenizer stood in for (fake_service). The world:
32 prompts with known pass rates, each group 4 seeded Bernoulli(p) rollouts. These tests
prove selection, feedback and resume; nothing here learns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fake_service import GROUP_SIZE, PASS_RATES, Record, TaskGroup
from tinker_run import BATCH, make_dataset, spy_on

from frontier_rft.integrations.tinker import FrontierRLDataset, TinkerFrontierConfig

Run = Callable[..., Record]


def _sampled_groups(record: Record) -> Counter[tuple[int, int, tuple[float, ...]]]:
    """(weights version, task, rewards) per group the stand-in sampler answered."""
    by: dict[tuple[int, int], list[float]] = {}
    for version, task, reward in record.samples:
        by.setdefault((version, task), []).append(reward)
    out: Counter[tuple[int, int, tuple[float, ...]]] = Counter()
    for (version, task), rewards in by.items():
        for i in range(0, len(rewards), GROUP_SIZE):
            out[(version, task, tuple(rewards[i : i + GROUP_SIZE]))] += 1
    return out


def _first_seen_order(record: Record, version: int) -> list[int]:
    seen: list[int] = []
    for v, task, _ in record.samples:
        if v == version and task not in seen:
            seen.append(task)
    return seen


def _states_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_states_equal(a[k], b[k]) for k in a)
        )
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_states_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    return bool(a == b)


@pytest.mark.parametrize("stream", [False, True], ids=["sync", "sync-streaming-minibatches"])
def test_sync_loop_rolls_out_the_selectors_picks_and_reports_each_group_once(
    run_cookbook: Run, tmp_path: Path, stream: bool
) -> None:
    dataset = make_dataset(tmp_path, "uniform")
    spy = spy_on(dataset)
    record = run_cookbook(dataset, tmp_path, max_steps=6, stream=stream)

    assert len(spy.picks) == 6
    for step, picks in enumerate(spy.picks):
        # The prompts generated at step s are the selector's s-th pick, in its order, each
        # rolled out GROUP_SIZE times with the weights of step s.
        assert _first_seen_order(record, step) == picks
        assert Counter(t for v, t, _ in record.samples if v == step) == {
            t: GROUP_SIZE for t in picks
        }
    # Every group's rewards reached the selector once, with its task and its step.
    reported = Counter(spy.updates)
    assert reported == _sampled_groups(record)
    assert sum(reported.values()) == 6 * BATCH
    assert dataset.metrics()["tinker/max_feedback_lag"] == 0.0  # sync: never behind
    assert dataset.metrics()["tinker/outstanding_groups"] == 0.0


def test_dropped_constant_groups_are_reported_exactly_once(
    run_cookbook: Run, tmp_path: Path
) -> None:
    dataset = make_dataset(tmp_path, "uniform")
    spy = spy_on(dataset)
    record = run_cookbook(dataset, tmp_path, max_steps=6, remove_constant=True)

    constant = [u for u in spy.updates if len(set(u[2])) == 1]
    assert constant, "the world has never- and always-solved prompts"
    assert Counter(spy.updates) == _sampled_groups(record)  # dropped ones too, once each
    # The cookbook really dropped them: only the mixed groups' rollouts were trained.
    assert sum(record.trained) == GROUP_SIZE * (len(spy.updates) - len(constant))
    assert dataset.metrics()["tinker/constant_groups"] == len(constant)


def test_greso_stops_picking_prompts_once_seen_solved(run_cookbook: Run, tmp_path: Path) -> None:
    # p pinned at 0.05: a prompt with k all-correct groups in a row is kept with 0.05**k.
    dataset = make_dataset(tmp_path, "greso", num_batches=16, p_init=0.05, p_min=0.05, p_max=0.05)
    spy = spy_on(dataset)
    run_cookbook(dataset, tmp_path, max_steps=16)

    always = [t for t in range(len(PASS_RATES)) if PASS_RATES[t] == 1.0]
    for task in always:
        solved = [step for step, t, rewards in spy.updates if t == task and min(rewards) == 1.0]
        picked = [step for step, picks in enumerate(spy.picks) if task in picks]
        assert solved == picked  # an always-solved prompt: every group all correct
        # Seen solved once: kept with 0.05, so at most one more pick in 16 steps (uniform
        # picks every prompt 4 times); seen solved twice (0.0025): never again.
        assert 1 <= len(picked) <= 2, (task, picked)
    mixed = [t for t in range(len(PASS_RATES)) if 0.3 < PASS_RATES[t] < 0.7]
    assert sum(task in p for p in spy.picks for task in mixed) > 16 * BATCH / 4  # taken instead


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_resume_at_step_3_ends_in_the_uninterrupted_state(
    run_cookbook: Run, tmp_path: Path, mode: str
) -> None:
    lag = None if mode == "sync" else 0
    whole = make_dataset(tmp_path / "whole", "greso")
    run_cookbook(whole, tmp_path / "whole", max_steps=6, async_lag=lag)

    first = make_dataset(tmp_path / "split", "greso")
    run_cookbook(first, tmp_path / "split", max_steps=3, async_lag=lag)
    resumed = make_dataset(tmp_path / "split", "greso")  # a new process: a fresh selector
    spy = spy_on(resumed)
    run_cookbook(resumed, tmp_path / "split", max_steps=6, async_lag=lag)

    assert resumed.metrics()["tinker/resumes"] == 1.0
    assert len(spy.picks) >= 3
    if mode == "sync":
        assert _states_equal(resumed.selector.state_dict(), whole.selector.state_dict())
    else:
        # Async: the state batch 3 was first picked from; every later pick and report is
        # redone by the resumed run, so the selector sees each of those groups once.
        steps = Counter(step for step, _, _ in spy.updates)
        assert min(steps) == 3 and all(n == BATCH for n in steps.values())


@pytest.mark.parametrize("lag", [0, 2])
def test_async_loop_feedback_lag_is_bounded(run_cookbook: Run, tmp_path: Path, lag: int) -> None:
    dataset = make_dataset(tmp_path, "uniform", num_batches=10)
    spy = spy_on(dataset)
    # Training slower than sampling: the dataloader runs as far ahead as the cookbook lets it.
    record = run_cookbook(
        dataset, tmp_path, max_steps=8, async_lag=lag, train_delay=0.02, sample_delay=0.001
    )
    m = dataset.metrics()
    # In flight at most: groups_per_batch * (lag + 1) rollout slots, one batch in the
    # cookbook's queue and one batch being put into it, so a group is reported at most
    # lag + 2 picks after its own.
    assert 0 < m["tinker/max_feedback_lag"] <= lag + 2
    assert m["tinker/late_groups"] > 0
    # Each group once, with its own task and pick step, whatever the training loop did with
    # it (trained late, carried over to a later step, or cut off at the end of the run).
    assert all(n == 1 for n in Counter((s, t) for s, t, _ in spy.updates).values())
    picked = {(s, t) for s, picks in enumerate(spy.picks) for t in picks}
    assert {(s, t) for s, t, _ in spy.updates} <= picked
    assert Counter(u[2] for u in spy.updates) <= Counter(
        g[2] for g in _sampled_groups(record).elements()
    )
    assert m["tinker/groups_reported"] + m["tinker/outstanding_groups"] == len(picked)


def test_config_and_construction_errors_say_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        TinkerFrontierConfig(batch_size=0)
    with pytest.raises(ValueError, match="reward_range must be"):
        TinkerFrontierConfig(batch_size=2, reward_range=(1.0, 0.0))
    config = TinkerFrontierConfig(batch_size=4, state_dir=str(tmp_path))
    with pytest.raises(ValueError, match="one EnvGroupBuilder per task"):
        FrontierRLDataset([object()] * 3, config, "uniform", pool=_pool(5))
    dataset = make_dataset(tmp_path)
    with pytest.raises(ValueError, match="holds no saved selector state"):
        dataset.get_batch(5)
    assert dataset.metrics()["tinker/draws"] == 0.0  # the refused call changed nothing


def test_a_deeply_nested_saved_state_is_named_not_a_recursion_error(tmp_path: Path) -> None:
    from frontier_rft.integrations.tinker import DATASET_FILE, SELECTOR_FILE, STATE_DIR

    dataset = make_dataset(tmp_path)
    where = tmp_path / STATE_DIR / "batch_000005"
    where.mkdir(parents=True)
    (where / SELECTOR_FILE).write_bytes(b"")
    (where / DATASET_FILE).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=rf"{DATASET_FILE} is not readable as .*nesting depth"):
        dataset.get_batch(5)
    assert dataset.metrics()["tinker/draws"] == 0.0  # the refused call changed nothing


def test_the_dataset_holds_its_plan_and_reads_each_batch_from_it() -> None:
    """tinker's step decided once (`tinker_step_plan`: its rollouts and its groups a batch),
    held by the dataset, which draws each batch by it, deciding nothing again (issue 90 item
    5, issue 89 item 4)."""
    from frontier_rft.integrations.tinker_facts import tinker_step_plan
    from frontier_rft.sampling.step_plan import StepRows

    config = TinkerFrontierConfig(batch_size=4, rollouts="kept")
    dataset = FrontierRLDataset([TaskGroup(t) for t in range(8)], config, "greso")
    assert dataset.plan == tinker_step_plan("kept", 4) and dataset.plan.rollouts == "kept"
    assert dataset.plan.shape() == StepRows(4)
    full = FrontierRLDataset(
        [TaskGroup(t) for t in range(8)], TinkerFrontierConfig(batch_size=4), "uniform"
    )
    full.plan = full.plan.with_rows(StepRows(2))  # as a planner would size it
    assert len(full.get_batch(0)) == len(full.get_batch(1)) == 2


def _pool(n: int) -> Any:
    from frontier_rft import TaskPool

    return TaskPool(num_tasks=n)


def test_the_wrapper_returns_your_result_unchanged_and_refuses_bad_rewards(tmp_path: Path) -> None:
    import asyncio
    import pickle

    dataset = FrontierRLDataset(
        [Scored(t) for t in range(8)], TinkerFrontierConfig(batch_size=8), "uniform"
    )
    builders = dataset.get_batch(0)
    good = next(b for b in builders if b.task_id != 3)
    bad = next(b for b in builders if b.task_id == 3)
    assert good.answer == 42 and good.logging_tags() == ["fake"]
    trajectories = [_trajectory(0.5), _trajectory(0.0)]
    result = asyncio.run(good.compute_group_rewards(trajectories, [None, None]))
    assert result == [(0.5, {"m": 1.0}), (0.5, {"m": 1.0})]  # yours, unchanged
    assert dataset.selector.metrics()["feedback/pending_rollouts"] == 2.0  # 1.0 and 0.5
    before = dataset.selector.state_dict()
    with pytest.raises(ValueError, match=r"task 3 got reward nan.*fix the reward function"):
        asyncio.run(bad.compute_group_rewards(trajectories, [None, None]))
    assert _states_equal(dataset.selector.state_dict(), before)  # refused: nothing changed
    asyncio.run(good.compute_group_rewards(trajectories, [None, None]))  # scored twice
    assert dataset.metrics()["tinker/duplicate_reports"] == 1.0
    copy = pickle.loads(pickle.dumps(good))  # what a process rollout executor gets
    with pytest.raises(RuntimeError, match="rollout_executor=None"):
        asyncio.run(copy.compute_group_rewards(trajectories, [None, None]))


class Scored(TaskGroup):  # a builder with its own group rewards (task 3's are NaN)
    answer = 42  # a field a recipe might read from its builder

    async def compute_group_rewards(self, trajectory_group: Any, env_group: Any) -> Any:
        return [(float("nan") if self.task == 3 else 0.5, {"m": 1.0}) for _ in env_group]


def _trajectory(reward: float) -> Any:
    from tinker_cookbook.rl.types import Trajectory, Transition

    t = Transition(ob=None, ac=None, reward=reward, episode_done=True)
    return Trajectory(transitions=[t], final_ob=None)


def test_saved_states_are_kept_only_where_a_checkpoint_can_resume(
    run_cookbook: Run, tmp_path: Path
) -> None:
    dataset = make_dataset(tmp_path, "uniform", num_batches=10)
    run_cookbook(dataset, tmp_path, max_steps=8, save_every=3)
    kept = sorted(p.name for p in (tmp_path / "frontier_tinker").iterdir())
    # Checkpoints 3, 6 and the final one (8); 7 was newer than every checkpoint when saved.
    assert kept == ["batch_000003", "batch_000006", "batch_000007", "batch_000008"]
    assert all((tmp_path / "frontier_tinker" / k / "frontier_dataset.json").is_file() for k in kept)
