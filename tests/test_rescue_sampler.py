"""Rescue as a sampler around a sampler (sampling/rescue.py), without a trainer: on planted
outcomes it rolls out N more for exactly the trained all-wrong groups of prompts never solved,
joins a rescued group's rewards and payloads into one trained group, leaves the wrapped
sampler's own samples as they were (`sampled`), resumes exactly through the sampler's state
and file, refuses a damaged state without change, refuses the samplers it cannot extend, and
runs in the simulator, spending its rollouts and joining there too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.sampling.dynamic_sampling import DynamicSampling
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.rescue import Rescue
from frontier_rft.sampling.sampler_file import SAMPLER_FILE, save_sampler, saved_sampler_state
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.sampling.step import Rolled
from frontier_rft.simulation.runner import Entry, RunSpec, run_one
from frontier_rft.simulation.scenario import SCENARIOS

N, GROUP, BATCH = 2, 4, 4
"""Rescue rollouts, group size, batch: a rescue call is told from a group by its size."""


def planted(task: int, size: int) -> np.ndarray:
    """Task % 4: 0 always solved, 1 never (a rescue included), 2 all wrong in a group of
    GROUP but a rescue's first rollout correct, 3 half of each group."""
    kind = task % 4
    if kind == 0:
        return np.ones(size)
    if kind == 3:
        return np.arange(size) % 2 * 1.0
    if kind == 2 and size == N:
        return np.eye(1, size).ravel()
    return np.zeros(size)


def rollout(ids: Any, counts: Any = None) -> Rolled:
    """Planted rewards; each group's payload its completions as token lists [task, i]."""
    sizes = np.full(len(ids), GROUP) if counts is None else np.asarray(counts)
    rewards = np.concatenate([planted(int(t), int(c)) for t, c in zip(ids, sizes, strict=True)])
    payloads = [[[int(t), i] for i in range(int(c))] for t, c in zip(ids, sizes, strict=True)]
    return Rolled(rewards, payloads)


def rescue(seed: int = 0, num_tasks: int = 16) -> Rescue:
    return Rescue(
        PassThrough(make_selector("uniform", TaskPool(num_tasks=num_tasks), seed=seed)), N
    )


def test_exactly_the_never_solved_all_wrong_groups_get_n_more_and_join() -> None:
    sampler = rescue()
    solved: set[int] = set()
    rescued_ever = []
    for step in range(8):
        samples = sampler.sample(step, BATCH, GROUP, rollout)
        own = samples.sampled
        assert own is samples.wrapped and len(own.rounds) == 1  # the wrapped sampler's round
        ids = own.train.task_ids.tolist()
        solved |= {t for t in ids if t % 4 in (0, 3)}  # this step's own groups first
        tried = [t for t in ids if t not in solved]
        rescued = [t for t in tried if t % 4 == 2]
        extra = samples.rounds[1:]
        assert [r.task_ids.tolist() for r in extra] == ([tried] if tried else [])
        assert samples.rollouts == GROUP * BATCH + N * len(tried)
        assert samples.wrap_metrics == {
            "rescue/rollouts": N * len(tried),
            "rescue/groups_tried": len(tried),
            "rescue/groups_rescued": len(rescued),
            "rescue/prompts_solved": len(solved | set(rescued)),
        }
        train = samples.train
        assert train.task_ids.tolist() == ids  # the same groups, in order
        for g, t in enumerate(ids):
            rows = train.rewards[train.offsets[g] : train.offsets[g + 1]]
            parts = train.payload_parts(g)
            if t in rescued:  # joined: its n, then its rescue's N (rewards and payloads)
                assert rows.tolist() == [0.0] * GROUP + [1.0, 0.0]
                assert parts == ([[t, i] for i in range(GROUP)], [[t, 0], [t, 1]])
            else:
                assert rows.tolist() == planted(t, GROUP).tolist() and len(parts) == 1
        solved |= set(rescued)
        rescued_ever += rescued
        assert set(np.flatnonzero(sampler.solved).tolist()) == solved
    assert rescued_ever and len(rescued_ever) == len(set(rescued_ever))


def _trace(sampler: Rescue, steps: range) -> list[Any]:
    out = []
    for step in steps:
        s = sampler.sample(step, BATCH, GROUP, rollout)
        out.append((s.train.task_ids.tolist(), s.train.rewards.tolist(), dict(s.wrap_metrics)))
    return out


def test_resume_through_the_sampler_file_is_exact(tmp_path: Path) -> None:
    """The solved record crosses the file a checkpoint writes (the selector restored from its
    own state, as the trainer's checkpoint does): the resumed run is the straight one."""
    expected = _trace(rescue(), range(8))
    first = rescue()
    got = _trace(first, range(4))
    assert first.solved.any()
    save_sampler(first, tmp_path / SAMPLER_FILE, with_inner=False)
    selector_state = first.inner.state_dict()
    resumed = rescue(seed=9)  # another seed: everything must come from the saved states
    state = saved_sampler_state(tmp_path, resumed, "start a new --out")
    assert state is not None and state["rescue"]["extra"] == N
    resumed.load_state_dict(state)
    resumed.inner.load_state_dict(selector_state)
    assert np.array_equal(resumed.solved, first.solved)
    got += _trace(resumed, range(4, 8))
    assert got == expected


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda s: s["rescue"].update(solved=np.zeros(3, dtype=np.bool_)), "solved"),
        (lambda s: s["rescue"].update(extra=N + 1), "saved with rescue 3, not 2"),
        (lambda s: s.pop("rescue"), "holds no rescue record"),
    ],
)
def test_a_damaged_state_is_refused_without_change(damage: Any, message: str) -> None:
    sampler = rescue()
    _trace(sampler, range(4))
    state = sampler.state_dict()
    before = (sampler.solved.copy(), sampler.inner.state_dict())
    damage(state)
    with pytest.raises(ValueError, match=message):
        sampler.load_state_dict(state)
    assert np.array_equal(sampler.solved, before[0])
    assert str(sampler.inner.state_dict()) == str(before[1])


def test_a_checkpoint_without_rescue_is_refused_with_the_fix(tmp_path: Path) -> None:
    """A run saved without rescue, resumed with it: refused in one line ending in the fix."""
    plain = PassThrough(make_selector("uniform", TaskPool(num_tasks=16), seed=0))
    save_sampler(plain, tmp_path / SAMPLER_FILE, with_inner=False)
    with pytest.raises(
        ValueError,
        match=r"passthrough sampler, but this run uses passthrough with rescue; start a new --out",
    ) as err:
        saved_sampler_state(tmp_path, rescue(), "start a new --out")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda s: DynamicSampling(s), "sampler 'dynamic_sampling' drops or splits"),
        (lambda s: FewerRollouts(s, FewerRolloutsConfig(screen=2)), "with screening"),
    ],
)
def test_it_refuses_a_sampler_whose_groups_it_cannot_extend(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Rescue(make(make_selector("uniform", TaskPool(num_tasks=16), seed=0)), N)


def test_the_simulator_spends_the_rescue_rollouts_and_joins() -> None:
    """A simulated run with rescue: each step spends B x n plus N per group it tried (its
    rescue/ series), a rescued group trains joined (a group of n + N in the size histogram),
    and the run without rescue spends B x n."""
    cfg = SCENARIOS["small-pool"].replace(num_tasks=32, eval_tasks=16)
    batch, n, extra = 8, 4, 4
    with_rescue = Entry("uniform-rescue", "uniform", rescue=extra)
    rec = run_one(RunSpec(cfg, with_rescue, 0, steps=6, batch=batch, rollouts=n))
    tried = rec["selector_metrics"]["rescue/groups_tried"]
    rescued = rec["selector_metrics"]["rescue/groups_rescued"]
    assert rec["rescue"] == extra and sum(tried) > 0 and sum(rescued) > 0
    assert rec["rollouts"] == [batch * n + extra * t for t in tried]
    assert rec["selector_metrics"]["rescue/rollouts"] == [extra * t for t in tried]
    joined = [hist[2] for hist in rec["size_hist"]]  # groups of size in (4, 8]: n + N
    assert joined == [int(r) for r in rescued]
    plain = run_one(RunSpec(cfg, Entry("uniform", "uniform"), 0, steps=6, batch=batch, rollouts=n))
    assert plain["rollouts"] == [batch * n] * 6 and "rescue" not in plain


def test_an_entry_refuses_rescue_around_a_sampler_it_cannot_extend() -> None:
    with pytest.raises(ValueError, match=r"entry .x.: rescue extends.*set rescue 0"):
        Entry("x", "uniform", sampler=SamplerSpec("dynamic_sampling"), rescue=4)
