"""Prioritized replay: update rules against hand-computed values and the paper's claims."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.selectors.prioritized import (
    PrioritizedReplayConfig,
    PrioritizedReplaySelector,
    priority,
)
from helpers import assert_state_equal, build, drive, world_pass_rates, world_pool

QUIET = {"exploration_fraction": 0.0, "retest_every": 0}
"""No exploration or retests: selection is the pure max-heap order."""


def _sel(n: int = 20, **overrides: object) -> PrioritizedReplaySelector:
    sel = make_selector("prioritized", TaskPool(num_tasks=n), seed=0, **overrides)
    assert isinstance(sel, PrioritizedReplaySelector)
    return sel


def _feed(
    sel: PrioritizedReplaySelector, correct: dict[int, int], n: int = 8, step: int = 0
) -> None:
    """Deliver, per task, a group of n rollouts of which `correct[task]` succeed."""
    ids = np.repeat(list(correct), n)
    rewards = np.concatenate([np.r_[np.ones(k), np.zeros(n - k)] for k in correct.values()])
    sel.update(Feedback(ids, rewards, step=step))
    sel.flush()


def _check_locations(sel: PrioritizedReplaySelector) -> None:
    loc = sel.locations()
    m = sel.metrics()
    assert sum(loc.values()) == sel.num_tasks
    assert loc["heap"] == m["prioritized/heap_size"]
    assert loc["in_flight"] == m["prioritized/in_flight"]
    assert loc["solved"] == m["prioritized/solved_pool"]
    assert loc["unsolved"] == m["prioritized/unsolved_pool"]


# ---------------------------------------------------------------------- equations
def test_priority_formula_and_success_bias() -> None:
    p = np.array([0.0, 0.25, 0.375, 0.5, 0.625, 0.75, 1.0, np.nan])
    w = priority(p, success_bias=1e-4, init_priority=0.2)
    expect = [0.0, 0.1875, 0.234375, 0.2501, 0.234475, 0.1876, 1e-4, 0.2]
    np.testing.assert_allclose(w, expect, rtol=0, atol=1e-12)
    # eps breaks the k vs N-k tie toward the better-solved side and changes no other rank.
    assert w[5] > w[1] and w[4] > w[2] and w[3] > w[4]


def test_ema_initialised_by_first_observation_then_smoothed() -> None:
    sel = _sel(**QUIET)
    ids = sel.select(2)
    _feed(sel, {int(ids[0]): 3, int(ids[1]): 8})
    assert sel.success_rates(ids).tolist() == [0.375, 1.0]  # first observation: p = p_group
    sel.select(20 - 2 - 1)  # the solved one is pooled; take everything else out
    _feed(sel, {int(ids[0]): 5}, step=1)
    # p <- a*p_group + (1-a)*p = 0.8*0.625 + 0.2*0.375 = 0.575
    assert sel.success_rates(ids[:1])[0] == pytest.approx(0.575, abs=1e-15)
    assert sel.priorities(ids[:1])[0] == pytest.approx(0.575 * 0.425 + 1e-4, abs=1e-15)


def test_alpha_one_means_no_smoothing() -> None:
    sel = _sel(ema_alpha=1.0, **QUIET)
    ids = sel.select(1)
    _feed(sel, {int(ids[0]): 3})
    sel.select(19)
    _feed(sel, {int(ids[0]): 7}, step=1)
    assert sel.success_rates(ids)[0] == 7 / 8


def test_paper_example_three_to_five_correct_beat_unseen() -> None:
    """Section 2: N = 8, init 0.2 -> 3, 4, 5 correct take precedence over unseen problems."""
    sel = _sel(n=30, **QUIET)
    first = sel.select(9)
    _feed(sel, {int(t): k for k, t in enumerate(first)})  # task first[k] got k of 8 right
    order = sel.select(30 - 2)  # everything except the two pooled (0/8 and 8/8)
    by_k = {int(t): k for k, t in enumerate(first)}
    ranks = [by_k.get(int(t), "unseen") for t in order]
    assert ranks[:3] == [4, 5, 3]  # w = 0.2501, 0.234475, 0.234375 > 0.2
    assert ranks[3 : 3 + 21] == ["unseen"] * 21
    assert ranks[24:] == [6, 2, 7, 1]  # 0.1876, 0.1875, 0.1094.., 0.1093..
    assert sel.locations()["solved"] == 1 and sel.locations()["unsolved"] == 1


def test_config_defaults_are_the_papers_section_5_values() -> None:
    """Section 5: EMA alpha 0.8, eps 1e-4 when p >= 0.5, init 0.2, pools at exact 0 / 1,
    retest every 10 steps 1 solved + 3 unsolved, 12.5% uniform exploration batches."""
    cfg = PrioritizedReplayConfig()
    assert (cfg.ema_alpha, cfg.success_bias, cfg.init_priority) == (0.8, 1e-4, 0.2)
    assert (cfg.sampling, cfg.use_pools, cfg.pool_tolerance) == ("top", True, 0.0)
    assert (cfg.retest_every, cfg.retest_solved, cfg.retest_unsolved) == (10, 1, 3)
    assert cfg.exploration_fraction == 0.125
    assert _sel().config == cfg


def test_ema_weights_the_newest_group_by_alpha_over_three_steps() -> None:
    """p <- 0.8 p_group + 0.2 p, first observation taken as is (authors' sampler)."""
    sel = _sel(n=3, **QUIET)
    for step, correct in enumerate((2, 8, 0)):
        sel.select(3)  # all three out of the heap, so the feedback below is not late
        _feed(sel, {0: correct}, step=step)
    # 2/8 = 0.25 -> 0.8*1 + 0.2*0.25 = 0.85 -> 0.8*0 + 0.2*0.85 = 0.17
    assert sel.success_rates(np.array([0]))[0] == pytest.approx(0.17, abs=1e-15)
    # p = 0.17 < 0.5: no eps; w = 0.17 * 0.83 = 0.1411
    assert sel.priorities(np.array([0]))[0] == pytest.approx(0.1411, abs=1e-15)


def test_infinite_init_visits_every_problem_once_first() -> None:
    sel = _sel(n=40, init_priority=float("inf"), **QUIET)
    pool = sel.pool
    drive(sel, steps=5, batch=8, pass_rates=np.full(pool.num_tasks, 0.5))
    assert sel.metrics()["prioritized/never_selected"] == 0.0
    assert sel.metrics()["tasks/distinct_selected"] == 40.0


# ---------------------------------------------------------------------- pools and retests
def test_all_correct_and_all_wrong_groups_enter_the_pools() -> None:
    sel = _sel(**QUIET)
    ids = sel.select(3)
    _feed(sel, {int(ids[0]): 8, int(ids[1]): 0, int(ids[2]): 4})
    assert sel.locations() == {"heap": 18, "in_flight": 0, "solved": 1, "unsolved": 1}
    m = sel.metrics()
    assert m["prioritized/moved_to_solved"] == 1 and m["prioritized/moved_to_unsolved"] == 1


def test_tolerance_band_and_ema_statistic() -> None:
    sel = _sel(pool_tolerance=0.15, pool_statistic="ema", **QUIET)
    ids = sel.select(2)
    _feed(sel, {int(ids[0]): 1, int(ids[1]): 2})  # p = 0.125 <= 0.15, p = 0.25 > 0.15
    assert sel.locations()["unsolved"] == 1 and sel.locations()["heap"] == 19


def test_retest_cadence_oldest_first_and_mixed_outcome_returns_to_heap() -> None:
    sel = _sel(n=40, exploration_fraction=0.0, retest_every=10)
    first = sel.select(8)
    # 2 solved (stamped step 0), 6 unsolved: ids first[2:8] stamped step 0.
    _feed(sel, {int(t): (8 if i < 2 else 0) for i, t in enumerate(first)})
    for call in range(2, 10):  # select calls #2..#9 (the first was #1): no retests yet
        ids = sel.select(4)
        assert not np.isin(ids, first).any(), call
        _feed(sel, dict.fromkeys(ids.tolist(), 4), step=call)
    assert sel.metrics()["prioritized/retests"] == 0
    batch = sel.select(6)  # select #10: retest 1 solved + 3 unsolved, oldest-tested (then by id)
    assert sel.metrics()["prioritized/retests"] == 4
    solved_ids, unsolved_ids = np.sort(first[:2]), np.sort(first[2:])
    assert batch[:4].tolist() == [solved_ids[0], *unsolved_ids[:3]]
    # One retested unsolved problem now gets 2/8 right -> back to the heap; the others stay.
    _feed(sel, {int(batch[1]): 2, int(batch[2]): 0, int(batch[3]): 0, int(batch[0]): 8}, step=10)
    assert sel.metrics()["prioritized/retest_returns_to_heap"] == 1
    assert sel.locations()["unsolved"] == 5 and sel.locations()["solved"] == 2
    # The re-pooled ones are now the newest: the next retest takes the untouched ones first.
    for call in range(11, 20):
        ids = sel.select(2)
        assert sel.metrics()["prioritized/retests"] == 4
        _feed(sel, dict.fromkeys(ids.tolist(), 4), step=call)
    batch = sel.select(4)  # select #20
    assert batch[:4].tolist() == [solved_ids[1], *unsolved_ids[3:6]]


# ---------------------------------------------------------------------- in flight
def test_in_flight_problems_are_not_reselected_before_feedback() -> None:
    """TRL lag: select(t+1) happens before step t's rewards arrive."""
    sel = _sel(n=30, **QUIET)
    a = sel.select(10)
    b = sel.select(10)
    assert not np.isin(a, b).any()
    assert sel.locations()["in_flight"] == 20
    _feed(sel, dict.fromkeys(a.tolist(), 4))
    assert sel.locations()["in_flight"] == 10
    _check_locations(sel)


def test_results_that_never_arrive_time_out_and_return() -> None:
    sel = _sel(n=30, inflight_timeout=3, **QUIET)
    lost = sel.select(10)
    for _ in range(2):
        sel.select(5)
    assert sel.locations()["in_flight"] == 20
    sel.select(1)  # call 3: the first batch has been in flight for 3 calls
    m = sel.metrics()
    assert m["prioritized/timed_out_returns"] == 10
    assert sel.locations()["in_flight"] == 11
    assert not np.isin(lost, sel._fl_ids).any()
    _check_locations(sel)
    # A late result for a returned problem is still folded in, as an extra observation.
    _feed(sel, {int(lost[0]): 4}, step=0)
    assert sel.success_rates(lost[:1])[0] == 0.5
    assert sel.metrics()["prioritized/late_observations"] == 1
    _check_locations(sel)


def test_fallback_when_the_heap_runs_dry() -> None:
    sel = _sel(n=10, **QUIET)
    ids = sel.select(10)
    _feed(sel, {int(t): (0 if i < 6 else 8) for i, t in enumerate(ids)})  # 6 unsolved, 4 solved
    batch = sel.select(8)  # heap is empty: 6 oldest unsolved, then 2 solved
    assert np.isin(batch[:6], ids[:6]).all() and np.isin(batch[6:], ids[6:]).all()
    again = sel.select(4)  # 2 solved left, then the longest in flight
    assert np.isin(again[:2], ids[6:]).all()
    assert sel.metrics()["prioritized/fallback_picks"] == 12
    _check_locations(sel)


# ---------------------------------------------------------------------- behaviour
def test_prefers_mixed_tasks_over_uniform() -> None:
    pool = world_pool()
    rates = world_pass_rates(pool)
    mixed = rates == 0.5
    shares = {}
    for name in ("prioritized", "uniform"):
        sel = build(name, pool, seed=0)
        picks = np.concatenate(drive(sel, steps=60, batch=9, n=8)[10:])
        shares[name] = mixed[picks].mean()
    assert shares["uniform"] < 0.45
    assert shares["prioritized"] > 0.75


def test_starvation_is_visible_in_metrics() -> None:
    """Paper section 5: with init 0.2, live problems above 0.2 keep unseen ones waiting."""
    rates = np.full(400, 0.5)
    starving = _sel(n=400, **QUIET)
    drive(starving, steps=30, batch=10, n=16, pass_rates=rates)
    forced = _sel(n=400, init_priority=float("inf"), **QUIET)
    drive(forced, steps=30, batch=10, n=16, pass_rates=rates)
    assert starving.metrics()["prioritized/never_selected"] > 300
    assert forced.metrics()["prioritized/never_selected"] == 100


def test_exploration_share_of_batches() -> None:
    sel = _sel(n=500, retest_every=0)
    drive(sel, steps=400, batch=4, pass_rates=np.full(500, 0.5))
    share = sel.metrics()["prioritized/exploration_batches"] / 400
    assert 0.09 < share < 0.16


@pytest.mark.parametrize("sampling", ["top", "proportional"])
def test_every_task_stays_accounted_for(sampling: str) -> None:
    sel = _sel(n=60, sampling=sampling, inflight_timeout=2, retest_every=3)
    rng = np.random.default_rng(0)
    rates = rng.choice([0.0, 1.0, 0.5], size=60)
    pending = []
    for t in range(40):
        ids = sel.select(7)
        pending.append((ids, t))
        if rng.random() < 0.7:  # deliver a random earlier batch, sometimes never
            ids_old, t_old = pending.pop(int(rng.integers(len(pending))))
            rep = np.repeat(ids_old, 4)
            sel.update(Feedback(rep, (rng.random(rep.size) < rates[rep]).astype(float), t_old))
        sel.flush()
        _check_locations(sel)


def test_heap_and_tournament_select_identically() -> None:
    pool = world_pool()
    a = build("prioritized", pool, seed=4, structure="heap")
    b = build("prioritized", pool, seed=4, structure="tournament")
    for x, y in zip(drive(a, steps=40), drive(b, steps=40), strict=True):
        np.testing.assert_array_equal(x, y)


def test_proportional_mode_samples_by_priority() -> None:
    pool = world_pool()
    sel = build("prioritized", pool, seed=0, sampling="proportional")
    picks = np.concatenate(drive(sel, steps=60, batch=9, n=8)[10:])
    assert (world_pass_rates(pool)[picks] == 0.5).mean() > 0.6


@pytest.mark.parametrize(
    "overrides",
    [{"structure": "heap"}, {"structure": "tournament"}, {"sampling": "proportional"}],
)
def test_save_load_continue_for_each_structure(tmp_path: Path, overrides: dict) -> None:  # type: ignore[type-arg]
    pool = world_pool()
    sel = build("prioritized", pool, seed=2, inflight_timeout=2, **overrides)
    drive(sel, steps=15)
    sel.select(5)  # leave a batch in flight
    save_selector(sel, tmp_path / "s.npz")
    again = load_selector(tmp_path / "s.npz")
    assert_state_equal(sel.state_dict(), again.state_dict())
    for x, y in zip(drive(sel, 10, start_step=15), drive(again, 10, start_step=15), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"ema_alpha": 0.0}, "ema_alpha"),
        ({"ema_alpha": 1.5}, "ema_alpha"),
        ({"success_bias": -1.0}, "success_bias"),
        ({"init_priority": -0.1}, "init_priority"),
        ({"sampling": "greedy"}, "sampling"),
        ({"sampling": "proportional", "init_priority": float("inf")}, "finite init_priority"),
        ({"pool_tolerance": 0.5}, "pool_tolerance"),
        ({"retest_every": -1}, "retest_every"),
        ({"exploration_fraction": 1.2}, "exploration_fraction"),
        ({"inflight_timeout": 0}, "inflight_timeout"),
        ({"structure": "btree"}, "structure"),
    ],
)
def test_config_validation(overrides: dict, needle: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=needle):
        _sel(**overrides)
