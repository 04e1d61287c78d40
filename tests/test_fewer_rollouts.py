"""FewerRollouts: uniform's schedule with a smaller bill. On a pool with known solved,
unsolvable and mixed prompts: a fixed schedule under a skipping selector rolls out fewer
prompts than uniform (counted exactly), screening spends k rollouts on a prompt whose k
outcomes are equal, the loss scale, exact resume, and refusals that change nothing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.structures.epoch_walk import EpochWalk
from helpers import assert_state_equal

N_TASKS, B, N = 64, 8, 8
SOLVED, UNSOLVABLE = 0, 1  # id % 4: 0 always solved, 1 never, 2 and 3 mixed


def kind(ids: np.ndarray) -> np.ndarray:
    return ids % 4


def rollout(ids: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """Deterministic outcomes: solved prompts all 1, unsolvable all 0, mixed ones 1, 0, 1, 0,
    ... (any first k >= 2 of them mixed)."""
    sizes = np.full(ids.shape[0], N) if counts is None else np.asarray(counts)
    out = []
    for task, size in zip(ids.tolist(), sizes.tolist(), strict=True):
        if task % 4 == SOLVED:
            out.append(np.ones(size))
        elif task % 4 == UNSOLVABLE:
            out.append(np.zeros(size))
        else:
            out.append((np.arange(size) % 2 == 0).astype(float))
    return np.concatenate(out)


def run(sampler: FewerRollouts | PassThrough, steps: int) -> list[tuple[list[int], int]]:
    """(prompts rolled out, rollouts) per step."""
    out = []
    for t in range(steps):
        s = sampler.sample(t, B, N, rollout)
        out.append((s.task_ids.tolist(), s.rollouts))
    return out


def selector(name: str, seed: int = 0):  # type: ignore[no-untyped-def]
    overrides = {"plugin": "none"} if name in ("skip", "bots") else {}
    return make_selector(name, TaskPool(num_tasks=N_TASKS), seed=seed, **overrides)


@pytest.mark.parametrize("name", ["greso", "skip"])
def test_a_fixed_schedule_under_a_skip_rolls_out_fewer_than_uniform(name: str) -> None:
    steps = 6 * N_TASKS // B  # six of uniform's epochs
    uniform = run(PassThrough(selector("uniform")), steps)
    sel = selector(name)
    kept = run(FewerRollouts(sel), steps)
    assert sum(r for _, r in uniform) == steps * B * N  # uniform's bill, exactly
    walked = sum(len(ids) for ids, _ in kept) + int(sel.metrics()[f"{name}/skipped_total"])
    assert walked == steps * B  # the same walk: uniform's epochs and steps
    assert all(r == len(ids) * N for ids, r in kept)  # every kept prompt a full group
    first_epoch = N_TASKS // B
    assert sum(r for _, r in kept[:first_epoch]) == first_epoch * B * N  # nothing known yet
    total = sum(r for _, r in kept)
    assert total < 0.8 * steps * B * N  # half the pool is all-solved or unsolvable
    later = [i for ids, _ in kept[2 * first_epoch :] for i in ids]
    assert np.mean(kind(np.array(later)) >= 2) > 0.6  # mostly mixed (half the pool)
    assert sel.metrics()[f"{name}/epoch"] == 6  # the run's epoch is uniform's


def test_full_batches_keep_uniforms_bill() -> None:
    """The default selection, select(B), fills every step: the same rollouts as uniform."""
    steps = 4 * N_TASKS // B
    full = run(PassThrough(selector("greso")), steps)
    assert [r for _, r in full] == [B * N] * steps


def test_screening_spends_k_on_a_prompt_whose_k_outcomes_are_equal() -> None:
    """Uniform screened with k = 2: per epoch exactly 64 x 2 + 32 x (8 - 2) rollouts, and the
    trained groups are the 32 mixed prompts, each a group of 8 (its 2 and its 6 joined)."""
    k = 2
    sampler = FewerRollouts(selector("uniform"), FewerRolloutsConfig(skip=False, screen=k))
    total, trained = 0, []
    for t in range(N_TASKS // B):
        s = sampler.sample(t, B, N, rollout)
        total += s.rollouts
        ids = s.task_ids
        mixed_here = int(np.sum(kind(ids[:B]) >= 2))
        assert s.rollouts == B * k + mixed_here * (N - k)
        assert s.train.num_groups == mixed_here
        assert np.all(s.train.counts == N)
        assert s.loss_scale == mixed_here / B
        trained += s.train.task_ids.tolist()
        groups = s.groups()  # every prompt rolled out, trained or not
        assert groups.num_groups == B
        assert sorted(groups.counts.tolist()) == sorted(
            [N if kind(np.array([i]))[0] >= 2 else k for i in ids[:B].tolist()]
        )
    assert total == N_TASKS * k + (N_TASKS // 2) * (N - k)
    assert sorted(trained) == [i for i in range(N_TASKS) if i % 4 >= 2]


def test_the_skip_and_screening_combine() -> None:
    sel = selector("greso")
    both = FewerRollouts(sel, FewerRolloutsConfig(screen=2))
    spent = [both.sample(t, B, N, rollout) for t in range(4 * N_TASKS // B)]
    for s in spent:
        kept = s.rounds[0].task_ids
        assert s.rounds[0].rewards.shape == (kept.shape[0] * 2,)  # every kept prompt screened
        assert set(s.train.task_ids.tolist()) == {i for i in kept.tolist() if i % 4 >= 2}
    assert sum(s.rollouts for s in spent) < sum(s.rounds[0].task_ids.shape[0] * N for s in spent)


def test_loss_scale_batch_and_kept() -> None:
    batch = FewerRollouts(selector("uniform"), FewerRolloutsConfig(skip=False, screen=2))
    kept = FewerRollouts(
        selector("uniform"), FewerRolloutsConfig(skip=False, screen=2, loss_scale="kept")
    )
    a, b = batch.sample(0, B, N, rollout), kept.sample(0, B, N, rollout)
    assert a.train.num_groups == b.train.num_groups
    assert a.loss_scale == a.train.num_groups / B and b.loss_scale == 1.0
    assert PassThrough(selector("uniform")).sample(0, B, N, rollout).loss_scale == 1.0


@pytest.mark.parametrize("config", [FewerRolloutsConfig(), FewerRolloutsConfig(screen=2)])
def test_resume_is_exact(config: FewerRolloutsConfig) -> None:
    """The walk is the selector's: its state saved mid-epoch and loaded into a new selector
    continues exactly as the uninterrupted run."""
    straight = FewerRollouts(selector("greso", seed=3), config)
    expected = run(straight, 29)
    first = FewerRollouts(selector("greso", seed=3), config)
    got = run(first, 13)  # mid-epoch: 13 x 8 = 104 walked of 64-prompt epochs
    state = first.inner.state_dict()
    resumed = FewerRollouts(selector("greso", seed=99), config)
    resumed.inner.load_state_dict(state)
    got += [
        (s.task_ids.tolist(), s.rollouts)
        for s in (resumed.sample(t, B, N, rollout) for t in range(13, 29))
    ]
    assert got == expected
    own = resumed.state_dict(with_inner=False)  # nothing of its own to save: kind and config
    assert own == {"kind": "fewer_rollouts", "config": dataclasses.asdict(config), "inner": {}}


def test_bad_arguments_change_nothing() -> None:
    sampler = FewerRollouts(selector("greso"), FewerRolloutsConfig(screen=2))
    run(sampler, 3)
    before = sampler.inner.state_dict()
    for bad in (
        dict(step=2**53, batch_size=B, group_size=N),
        dict(step=2**63, batch_size=B, group_size=N),
        dict(step=-1, batch_size=B, group_size=N),
        dict(step=3, batch_size=N_TASKS + 1, group_size=N),
        dict(step=3, batch_size=B, group_size=2),  # screen 2 leaves nothing to continue
    ):
        with pytest.raises(ValueError):
            sampler.sample(rollout=rollout, **bad)  # type: ignore[arg-type]
    assert_state_equal(sampler.inner.state_dict(), before)  # RNG and walk included


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: FewerRolloutsConfig(skip=False), "with neither a step is uniform's"),
        (lambda: FewerRolloutsConfig(screen=-1), "screen must be 0"),
        (lambda: FewerRolloutsConfig(screen=1), "one reward is never mixed"),
        (lambda: FewerRolloutsConfig(loss_scale="mean"), "loss_scale"),  # type: ignore[arg-type]
        (lambda: FewerRollouts(selector("bots")), "does not walk the data"),
    ],
)
def test_settings_are_refused_by_name(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        make()


def test_a_window_that_crosses_the_epoch_never_repeats_an_id() -> None:
    walk = EpochWalk(10)
    rng = np.random.default_rng(0)
    seen = []
    for _ in range(30):
        ids, passed = walk.take_window(4, rng, lambda x: x % 2 == 0)
        assert ids.size + passed == 4
        assert np.unique(ids).size == ids.size
        seen += ids.tolist()
    assert set(seen) == {0, 2, 4, 6, 8}
    assert walk.progress == pytest.approx(12.0, abs=1.0)  # 120 positions of a 10-prompt pool


def test_select_window_is_refused_by_a_selector_that_does_not_walk() -> None:
    sel = selector("bots")
    with pytest.raises(ValueError, match="does not walk the data"):
        sel.select_window(4)
    uni = selector("uniform")
    with pytest.raises(ValueError, match="positions must be positive"):
        uni.select_window(0)
    assert uni.select_window(4).shape == (4,)
