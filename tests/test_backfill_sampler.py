"""Backfill as a sampler around a sampler (sampling/backfill.py), without a trainer: on planted
outcomes a kept step's freed slots are filled with the youngest held informative groups, each
as it was trained (rewards, completions, the log-probs the trainer handed back), within the
uses, age and capacity bounds; the step's loss scale counts them as fresh; the held groups
resume exactly through the sampler's state and file; a damaged state is refused without
change; a sampler whose steps free no slot is refused. (The simulator has no log-probs and
no entry asks for backfill: it runs in the reference trainer only, tests/test_backfill.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.sampling.backfill import Backfill
from frontier_rft.sampling.fewer_rollouts import FewerRollouts
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.sampler_file import SAMPLER_FILE, save_sampler, saved_sampler_state
from frontier_rft.sampling.step import Rolled, StepSamples
from helpers import assert_state_equal

TASKS, BATCH, GROUP = 12, 3, 4
"""Three of uniform's steps an epoch: the skip frees slots from the second epoch on."""


def planted(task: int, size: int) -> np.ndarray:
    """Task % 3: 0 always solved, 1 never, 2 half of each group (the only mixed ones)."""
    if task % 3 == 0:
        return np.ones(size)
    if task % 3 == 1:
        return np.zeros(size)
    return np.arange(size) % 2 * 1.0


def rollout(ids: Any, counts: Any = None) -> Rolled:
    """Planted rewards; completion i of task t is 1 + (t + i) % 3 tokens long."""
    sizes = np.full(len(ids), GROUP) if counts is None else np.asarray(counts)
    rewards = np.concatenate([planted(int(t), int(c)) for t, c in zip(ids, sizes, strict=True)])
    payloads = [
        [[int(t)] * (1 + (int(t) + i) % 3) for i in range(int(c))]
        for t, c in zip(ids, sizes, strict=True)
    ]
    return Rolled(rewards, payloads)


def backfill(seed: int = 0, capacity: int = 64, max_age: int = 4, uses: int = 1) -> Backfill:
    selector = make_selector("skip", TaskPool(num_tasks=TASKS), seed=seed, plugin="none")
    return Backfill(FewerRollouts(selector), capacity, max_age, uses)


def behaviour_of(step: int, completions: list[list[int]]) -> list[np.ndarray]:
    """What the trainer would hand back: one float32 log-prob a token, told apart by step."""
    return [-(step + np.arange(1, len(c) + 1, dtype=np.float32) / 7) for c in completions]


def fresh_rows(samples: StepSamples) -> list[list[int]]:
    train = samples.train
    fresh = train.num_groups - samples.replayed
    return [c for g in range(fresh) for part in train.payload_parts(g) for c in part]


def step_once(sampler: Backfill, step: int) -> tuple[StepSamples, dict[str, float]]:
    """One step as the trainer takes it: sample, then hand back the fresh rows' log-probs."""
    samples = sampler.sample(step, BATCH, GROUP, rollout)
    return samples, sampler.trained(behaviour_of(step, fresh_rows(samples)))


@pytest.mark.parametrize(("capacity", "max_age", "uses"), [(64, 4, 1), (3, 2, 2)])
def test_the_youngest_held_mixed_groups_fill_the_freed_slots(
    capacity: int, max_age: int, uses: int
) -> None:
    """Against the rule written out: hold each trained mixed group with its log-probs, drop
    those older than max_age, replay the youngest into the B - G freed slots, drop a group
    replayed `uses` times, hold at most `capacity`."""
    sampler = backfill(capacity=capacity, max_age=max_age, uses=uses)
    held: list[dict[str, Any]] = []  # oldest first
    replayed_any = twice = False
    for step in range(15):
        samples, after = step_once(sampler, step)
        train = samples.train
        fresh = train.num_groups - samples.replayed
        held = [h for h in held if step - h["step"] <= max_age]
        picked = held[::-1][: BATCH - fresh]
        assert samples.replayed == len(picked)
        assert train.task_ids[fresh:].tolist() == [h["task"] for h in picked]
        assert train.steps[fresh:].tolist() == [h["step"] for h in picked]
        assert [b.tolist() for b in samples.behaviour] == [
            lp.tolist() for h in picked for lp in h["behaviour"]
        ]
        for g, h in zip(range(fresh, train.num_groups), picked, strict=True):
            assert train.payload_parts(g) == (h["completions"],)
            assert train.rewards[train.offsets[g] : train.offsets[g + 1]].tolist() == h["rewards"]
        assert samples.loss_scale == train.num_groups / BATCH  # replayed count as fresh
        assert samples.rollouts == fresh * GROUP  # nothing rolled out for a replay
        m = samples.wrap_metrics
        assert m["backfill/replayed_groups"] == len(picked)
        assert m["backfill/replayed_rows"] == len(picked) * GROUP
        if picked:
            replayed_any = True
            staleness = np.mean([step - h["step"] for h in picked])
            assert m["backfill/staleness_mean"] == staleness
        for h in picked:
            h["uses"] += 1
            twice |= h["uses"] == 2
        held = [h for h in held if h["uses"] < uses]
        for g in range(fresh):
            rewards = train.rewards[train.offsets[g] : train.offsets[g + 1]]
            if np.ptp(rewards) > 0:
                (completions,) = train.payload_parts(g)
                held.append(
                    {
                        "task": int(train.task_ids[g]),
                        "step": step,
                        "completions": completions,
                        "rewards": rewards.tolist(),
                        "behaviour": behaviour_of(step, completions),
                        "uses": 0,
                    }
                )
        held = held[-capacity:]
        assert after == {"backfill/buffer_groups": len(held)}
        assert sampler.uses.tolist() == [h["uses"] for h in held]
        assert all(int(t) % 3 == 2 for t in sampler.store.task)  # only mixed groups held
    assert replayed_any
    assert twice == (uses == 2)


def _trace(sampler: Backfill, steps: range) -> list[Any]:
    out = []
    for step in steps:
        s, after = step_once(sampler, step)
        out.append(
            (
                s.train.task_ids.tolist(),
                s.train.steps.tolist(),
                s.train.rewards.tolist(),
                [s.train.payload_parts(g) for g in range(s.train.num_groups)],
                [b.tobytes() for b in s.behaviour],
                dict(s.wrap_metrics),
                after,
            )
        )
    return out


def test_resume_through_the_sampler_file_is_exact(tmp_path: Path) -> None:
    """The held groups, their uses and float32 log-probs cross the file a checkpoint writes
    (the selector restored from its own state, as the trainer's checkpoint does): the resumed
    run replays what the straight one did, bit for bit."""
    expected = _trace(backfill(uses=2), range(12))
    assert any(row[1] and min(row[1]) < i for i, row in enumerate(expected)), "no replay"
    first = backfill(uses=2)
    got = _trace(first, range(6))
    assert first.store.size
    save_sampler(first, tmp_path / SAMPLER_FILE, with_inner=False)
    selector_state = first.inner.state_dict()
    resumed = backfill(seed=9, uses=2)  # another seed: everything comes from the saved states
    state = saved_sampler_state(tmp_path, resumed, "start a new --out")
    assert state is not None
    resumed.load_state_dict(state)
    resumed.inner.load_state_dict(selector_state)
    assert_state_equal(resumed.state_dict(with_inner=False), first.state_dict(with_inner=False))
    got += _trace(resumed, range(6, 12))
    assert got == expected


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda s: s["backfill"].update(behaviour=s["backfill"]["behaviour"][:-1]), "log-probs"),
        (
            lambda s: s["backfill"].update(behaviour=s["backfill"]["behaviour"] * np.nan),
            "NaN or inf",
        ),
        (lambda s: s["backfill"].update(uses=s["backfill"]["uses"] + 2), "uses"),
        (lambda s: s["backfill"].update(max_uses=3), "saved with max_uses 3, not 2"),
        (lambda s: s["backfill"].update(capacity=1), "saved with capacity 1, not 64"),
        (lambda s: s.pop("backfill"), "holds no backfill record"),
    ],
)
def test_a_damaged_state_is_refused_without_change(damage: Any, message: str) -> None:
    sampler = backfill(uses=2)
    _trace(sampler, range(6))
    state = sampler.state_dict()
    before = sampler.state_dict()
    damage(state)
    with pytest.raises(ValueError, match=message):
        sampler.load_state_dict(state)
    assert_state_equal(sampler.state_dict(), before)


def test_log_probs_that_do_not_fit_the_step_are_refused() -> None:
    sampler = backfill()
    samples = sampler.sample(0, BATCH, GROUP, rollout)
    rows = fresh_rows(samples)
    with pytest.raises(ValueError, match="log-probs of 11 rows for the step's 12 fresh rows"):
        sampler.trained(behaviour_of(0, rows)[:-1])
    short = [lp[:-1] for lp in behaviour_of(0, rows)]
    with pytest.raises(ValueError, match="do not match the completions' lengths"):
        sampler.trained(short)
    assert sampler.store.size == 0


def test_it_refuses_a_sampler_whose_steps_free_no_slot() -> None:
    plain = PassThrough(make_selector("uniform", TaskPool(num_tasks=TASKS), seed=0))
    with pytest.raises(ValueError, match=r"'passthrough' never does: .*add --rollouts kept"):
        Backfill(plain, 64, 4, 1)
