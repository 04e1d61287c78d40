"""GRESO (selectors/greso.py): each equation against a hand-computed value, and the
behaviours a user relies on (no starving, no stuck epoch, exact resume)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.selectors.greso import GRESOConfig, GRESOSelector, zero_variance_kind


def _feed(sel, ids, rewards_per_task, step, n=8):  # type: ignore[no-untyped-def]
    """n rollouts of each id with the given reward for every rollout of that task."""
    rep = np.repeat(np.asarray(ids, np.int64), n)
    rewards = np.repeat(np.asarray(rewards_per_task, np.float64), n)
    sel.update(Feedback(task_ids=rep, rewards=rewards, step=step))


def _batch(groups: list[list[float]]) -> GroupBatch:
    ids = np.concatenate([np.full(len(g), k, np.int64) for k, g in enumerate(groups)])
    rewards = np.concatenate([np.asarray(g, np.float64) for g in groups])
    return GroupBatch.from_rollouts(0, ids, rewards, np.full(ids.shape[0], -1, np.int64))


def test_zero_variance_kinds_exact_and_fractional() -> None:
    kinds = zero_variance_kind(
        _batch([[1, 1, 1], [0, 0, 0], [0, 1, 1], [0.5, 0.5], [0.3, 0.7], [1.0], [0.0]])
    )
    # all-correct: easy; all-wrong: hard; spread: mixed; all 0.5: hard (zero variance
    # below the top); a group of one is zero-variance by definition
    assert kinds.tolist() == [1, -1, 0, -1, 0, 1, -1]


def test_greso_keep_probability_is_max_of_p_to_the_streak_and_the_floor() -> None:
    sel = GRESOSelector(TaskPool(num_tasks=4), GRESOConfig())
    sel._streak[:] = [3, -2, 10, 0]
    sel._p[:] = [0.5, 0.6]
    # 0.5^3 = 0.125; 0.6^2 = 0.36; 0.5^10 = 0.000977 < floor 0.01; no streak: 1
    assert np.allclose(sel.keep_probability(), [0.125, 0.36, 0.01, 1.0])


def test_greso_streaks_grow_reset_and_switch_kind() -> None:
    sel = GRESOSelector(TaskPool(num_tasks=2), GRESOConfig())
    for step, (r0, r1) in enumerate([(1, 0), (1, 0), (0.5, 1), (0, 1)]):
        sel.select(2)
        _feed(sel, [0, 1], [r0, r1], step, n=4)
    sel.flush()
    # task 0: easy, easy, hard (all 0.5), hard -> -2; task 1: hard, hard, easy, easy -> +2
    assert sel._streak.tolist() == [-2, 2]
    sel.select(2)
    rep = np.repeat([0, 1], 4)
    sel.update(Feedback(task_ids=rep, rewards=np.array([0, 1, 0, 1, 1, 1, 1, 0.0]), step=4))
    sel.flush()
    assert sel._streak.tolist() == [0, 0]  # a mixed group ends any streak


def test_greso_adapts_p_by_one_step_toward_the_targets_from_the_second_epoch() -> None:
    sel = GRESOSelector(TaskPool(num_tasks=8), GRESOConfig())
    # Epoch 1: 2 steps of 4; every group easy -> shares (1, 0): no adaptation yet.
    for step in range(2):
        ids = sel.select(4)
        _feed(sel, ids, np.ones(4), step)
    sel.flush()
    assert (sel.p_easy, sel.p_hard) == (0.5, 0.5)
    ids = sel.select(4)  # epoch 2 starts; skipping may walk into epoch 3
    assert sel.epoch >= 2
    _feed(sel, ids, np.ones(ids.size), 2)
    sel.flush()
    # easy share 1 >= 0.25/3: p_easy 0.5 -> 0.49; hard share 0 < 0.25*2/3: p_hard -> 0.51
    assert sel.p_easy == pytest.approx(0.49) and sel.p_hard == pytest.approx(0.51)


def test_greso_p_moves_once_per_step_on_the_shares_pooled_over_its_rounds() -> None:
    """GRESO's code counts every rollout round since the last optimizer step; so does p
    here, however the rounds are folded (DynamicSampling folds each before the next)."""
    sel = GRESOSelector(TaskPool(num_tasks=48), GRESOConfig())
    ids = sel.select(48)  # epoch 1: every prompt once, all mixed (no streaks)
    sel.update(Feedback(np.repeat(ids, 2), np.tile([0.0, 1.0], ids.size), step=0))
    sel.flush()
    assert (sel.p_easy, sel.p_hard) == (0.5, 0.5)
    # Step 1, round 1: 4 all-wrong groups (hard share 1 >= 1/6 alone: p_hard would fall).
    first = sel.select(4)
    assert sel.epoch == 2
    _feed(sel, first, np.zeros(4), step=1, n=2)
    sel.flush()
    # Round 2 of the same step: 36 mixed groups. Pooled: hard 4/40 = 0.1 < 1/6 -> p_hard
    # rises; easy 0 < 1/12 -> p_easy rises. Each once, from where they stood.
    second = sel.select(36)
    sel.update(Feedback(np.repeat(second, 2), np.tile([0.0, 1.0], second.size), step=1))
    sel.flush()
    assert sel.p_hard == pytest.approx(0.51) and sel.p_easy == pytest.approx(0.51)
    m = sel.metrics()
    assert m["greso/hard_share"] == pytest.approx(0.1) and m["greso/easy_share"] == 0.0
    # The pooled step survives a save/load: a third round continues the same pool.
    twin = GRESOSelector(TaskPool(num_tasks=48), GRESOConfig())
    twin.load_state_dict(sel.state_dict())
    for s in (sel, twin):
        _feed(s, [int(second[0])], np.zeros(1), step=1, n=2)
        s.flush()
    assert (twin.p_easy, twin.p_hard) == (sel.p_easy, sel.p_hard)
    assert twin.metrics()["greso/hard_share"] == pytest.approx(5 / 41)


def test_greso_p_is_clamped_to_its_bounds() -> None:
    sel = GRESOSelector(TaskPool(num_tasks=4), GRESOConfig(p_init=0.06, p_min=0.05))
    sel._walk.epoch = 2
    for _ in range(2):
        sel._p = sel._moved(sel._p, np.array([1.0, 1.0]))
    assert np.allclose(sel._p, [0.05, 0.05])  # 0.06 - 0.01, then held at the floor


def test_greso_never_skips_in_the_first_epoch() -> None:
    sel = GRESOSelector(TaskPool(num_tasks=24), GRESOConfig(), seed=3)
    picked = []
    for step in range(3):  # 3 x 8 = the whole first epoch
        ids = sel.select(8)
        picked.append(ids)
        _feed(sel, ids, np.ones(8), step)  # everything solved: every streak is easy
    assert sorted(np.concatenate(picked).tolist()) == list(range(24))
    assert sel.metrics()["greso/skipped_total"] == 0


@pytest.mark.parametrize("name", ["greso", "skip"])
def test_the_epoch_metric_is_the_runs_epoch_and_walk_passes_count_the_skipping(
    name: str,
) -> None:
    """On a pool half always solved, half never, the walk passes over most prompts: `epoch` stays
    uniform's count (prompts handed out / pool size, rounded up) while `walk_passes` runs
    ahead; a state saved before the count existed reads it back from the walk."""
    import warnings

    from frontier_rft import make_selector

    pool = TaskPool(num_tasks=40, prompts=[f"problem {i}" for i in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = make_selector(name, pool, seed=0)
    for step in range(30):  # 30 x 8 = 240 prompts handed out = 6 epochs' worth
        ids = sel.select(8)
        _feed(sel, ids, (ids < 20) * 1.0, step)
        sel.flush()
        m = sel.metrics()
        assert m[f"{name}/epoch"] == -(-8 * (step + 1) // 40)
    assert m[f"{name}/epoch"] == 6 and m[f"{name}/walk_passes"] > 6 + 2
    assert m[f"{name}/walk_passes"] == sel.epoch  # type: ignore[attr-defined]
    if name == "greso":  # its count came with this release; older states still load
        state = sel.state_dict()
        del state["algo"]["handed_out"]
        twin = GRESOSelector(pool, GRESOConfig(), seed=0)
        twin.load_state_dict(state)
        # An estimate from the walk (it counts a batch that straddles a pass twice): at
        # least the true epoch, below the passes; selection continues exactly.
        assert 6 <= twin.metrics()["greso/epoch"] < m["greso/walk_passes"]
        assert np.array_equal(twin.select(8), sel.select(8))


def test_greso_skips_solved_and_unsolved_prompts_once_their_streaks_grow() -> None:
    rates = np.r_[np.ones(20), np.zeros(20), np.full(20, 0.5)]
    pool = TaskPool(num_tasks=60)
    rng = np.random.default_rng(0)
    sel = GRESOSelector(pool, GRESOConfig(), seed=1)
    mixed_share = []
    for step in range(60):
        ids = sel.select(10)
        mixed_share.append(np.mean(ids >= 40))
        rep = np.repeat(ids, 8)
        sel.update(
            Feedback(task_ids=rep, rewards=(rng.random(rep.size) < rates[rep]) * 1.0, step=step)
        )
    assert np.mean(mixed_share[:6]) == pytest.approx(1 / 3, abs=0.1)  # epoch 1: uniform
    assert np.mean(mixed_share[30:]) > 0.55  # later the p = 0.5 prompts fill the batches


def test_config_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="min_keep"):
        GRESOConfig(min_keep=0.0)
    # issue 36: a floor, so one select on an all-solved pool cannot walk for CPU hours
    with pytest.raises(ValueError, match=r"min_keep must lie in \[0.0001, 1\]"):
        GRESOConfig(min_keep=1e-9)
    assert GRESOConfig(min_keep=GRESOConfig.min_keep_floor).min_keep == 1e-4
    with pytest.raises(ValueError, match="p_min <= p_init"):
        GRESOConfig(p_init=0.99)
    assert math.isclose(GRESOConfig().easy_share, 1 / 3)
