"""The Bayesian skip (selectors/skip.py): each equation against a hand-computed value,
and the behaviours a user relies on (no starving, no stuck epoch, exact resume)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import SKIP_WORLDS, picks_in_skip_world
from frontier_rft import Feedback, TaskPool
from frontier_rft.selectors.skip import SkipConfig, SkipSelector, informative_probability


def _feed(sel, ids, rewards_per_task, step, n=8):  # type: ignore[no-untyped-def]
    """n rollouts of each id with the given reward for every rollout of that task."""
    rep = np.repeat(np.asarray(ids, np.int64), n)
    rewards = np.repeat(np.asarray(rewards_per_task, np.float64), n)
    sel.update(Feedback(task_ids=rep, rewards=rewards, step=step))


def test_informative_probability_matches_beta_moments() -> None:
    one = np.array([1.0])
    # Beta(1, 1), n = 2: E[p^2] = E[(1-p)^2] = 1/3, so q = 1/3
    assert informative_probability(one, one, 2)[0] == pytest.approx(1 / 3)
    # Beta(9, 1), n = 8: E[p^8] = prod_{i<8} (9+i)/(10+i) = 9/17;
    # E[(1-p)^8] = 8! * 9! / 17! = 1/24310
    q = informative_probability(np.array([9.0]), one, 8)[0]
    assert q == pytest.approx(1 - 9 / 17 - 1 / 24310)
    # Beta(5, 5), n = 8: E[p^8] = (12!/4!) / (17!/9!) = 19958400 / 980179200
    q = informative_probability(np.array([5.0]), np.array([5.0]), 8)[0]
    assert q == pytest.approx(1 - 2 * 19958400 / 980179200)
    assert informative_probability(one, one, 1)[0] == 0.0  # one rollout: never informative


def test_skip_keep_probability_is_q_over_the_base_priors_q() -> None:
    sel = SkipSelector(TaskPool(num_tasks=3), SkipConfig(plugin="none"))
    ids = sel.select(3)
    _feed(sel, ids, [1.0, 0.0, 0.5], 0, n=8)  # all correct, all wrong, 4 of 8
    sel.flush()
    keep = sel.keep_probability(ids)
    q0 = 1 - 2 / 9  # Beta(1, 1), n = 8: 1 - 2 E[p^8] = 1 - 2/9
    easy = (1 - 9 / 17 - 1 / 24310) / q0  # Beta(9, 1) as above
    mixed = 1.0  # Beta(5, 5): q = 0.959 > q0, clipped to 1
    assert keep == pytest.approx([easy, easy, mixed])  # all wrong is Beta(1, 9): symmetric


def test_skip_forgets_a_share_lam_of_its_evidence_per_pool_handed_out() -> None:
    sel = SkipSelector(TaskPool(num_tasks=4), SkipConfig(plugin="none", lam=0.1))
    ids = sel.select(4)
    _feed(sel, ids, np.ones(4), 0, n=8)
    sel.flush()
    a, b = sel.posterior(np.arange(4))
    assert a == pytest.approx(1 + 8) and b == pytest.approx(1.0)
    assert sel.clock == 1.0  # 4 prompts handed out of 4: the fold happened at clock 1
    sel.select(2)  # 6 handed out: clock 1.5
    a, _ = sel.posterior(np.arange(4))
    assert a == pytest.approx(1 + 8 * 0.9**0.5)  # half a pool later: 0.9^0.5 of the evidence


def test_skip_uses_implicit_evidence_for_prompts_never_tried() -> None:
    # Two kinds of prompt, told apart by their features; only half of each kind is tried.
    n = 40
    kind = np.arange(n) % 2  # 0: always solved, 1: mixed
    features = np.eye(2)[kind]
    pool = TaskPool(num_tasks=n, features=features)
    sel = SkipSelector(pool, SkipConfig(), seed=0)
    rng = np.random.default_rng(0)
    tried = np.arange(20)
    for step in range(5):
        sel.select(4)
        rep = np.repeat(tried, 8)
        p = np.where(kind[rep] == 0, 1.0, 0.5)
        sel.update(Feedback(task_ids=rep, rewards=(rng.random(rep.size) < p) * 1.0, step=step))
    sel.flush()
    untried = np.arange(20, 40)
    keep = sel.keep_probability(untried)
    assert keep[kind[untried] == 0].max() < 0.5  # predicted all-correct: skipped often
    assert keep[kind[untried] == 1].min() > 0.9  # predicted mixed: taken
    assert sel.metrics()["evidence/plugin/regression"] == 1.0


def test_skip_groups_of_one_rollout_are_never_skipped_for_it() -> None:
    sel = SkipSelector(TaskPool(num_tasks=5), SkipConfig(plugin="none"))
    ids = sel.select(5)
    _feed(sel, ids, np.ones(5), 0, n=1)
    sel.flush()
    assert np.all(sel.keep_probability(np.arange(5)) == 1.0)


@pytest.mark.parametrize("world", SKIP_WORLDS)
def test_never_starves_or_sticks(world: str) -> None:
    counts = picks_in_skip_world("skip", world)
    assert counts.min() >= 1  # nobody starves: 1,200 picks over 30 prompts


def test_config_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="lam"):
        SkipConfig(lam=1.5)
    with pytest.raises(ValueError, match="plugin"):
        SkipConfig(plugin="kernel")  # type: ignore[arg-type]
