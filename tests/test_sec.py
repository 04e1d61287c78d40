"""SEC: TD(0) arm values, softmax arm sampling, per-arm passes, 2-D arms, late feedback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.core.advantages import GRPO_STD_EPS
from frontier_rft.selectors.sec import SECConfig, SECSelector, draw_arm_counts, softmax
from helpers import drive, world_pass_rates, world_pool

# Two arms: tasks 0, 1 in arm "0"; tasks 2, 3 in arm "1".
TWO_ARMS = TaskPool(num_tasks=4, categories=[0, 0, 1, 1])


def sec(pool: TaskPool = TWO_ARMS, seed: int = 0, **overrides: object) -> SECSelector:
    sel = make_selector("sec", pool, seed=seed, **overrides)
    assert isinstance(sel, SECSelector)
    return sel


def observe(sel: SECSelector, task_ids: list[int], rewards: list[float], step: int) -> None:
    sel.update(Feedback(np.array(task_ids), np.array(rewards), step=step))
    sel.flush()


# One success in four: p = 1/4, |r - p| is 3/4 once and 1/4 three times.
SIGMA = np.sqrt(0.25 * 0.75)
ONE_IN_FOUR_REWARD = {
    "grpo": 2 * SIGMA * SIGMA / (SIGMA + GRPO_STD_EPS),  # paper eq. 6: 2 sqrt(p(1-p))
    "drgrpo": (0.75 + 3 * 0.25) / 4,  # mean |r - mean| = 0.375
    "rloo": 4 / 3 * (0.75 + 3 * 0.25) / 4,  # n/(n-1) * centred = 0.5
}


@pytest.mark.parametrize("estimator", sorted(ONE_IN_FOUR_REWARD))
def test_q_update_matches_hand_computed_td0(estimator: str) -> None:
    sel = sec(estimator=estimator, alpha=0.5)
    observe(sel, [0] * 4, [1.0, 0.0, 0.0, 0.0], step=0)
    r = ONE_IN_FOUR_REWARD[estimator]
    np.testing.assert_allclose(sel.q_values, [0.5 * r, 0.0], rtol=1e-12)
    # Second step, half successes: every rollout has |A| = 1 (grpo), 0.5 (drgrpo), 2/3 (rloo).
    observe(sel, [1] * 4, [1.0, 1.0, 0.0, 0.0], step=1)
    r2 = {"grpo": 0.5 / (0.5 + GRPO_STD_EPS), "drgrpo": 0.5, "rloo": 2 / 3}[estimator]
    np.testing.assert_allclose(sel.q_values, [0.5 * r2 + 0.5 * 0.5 * r, 0.0], rtol=1e-12)


def test_arm_reward_is_mean_over_rollouts_not_problems() -> None:
    sel = sec(estimator="drgrpo", alpha=1.0)
    # Task 0: 4 rollouts with |A| = 0.5 each; task 1: 2 identical rollouts, |A| = 0.
    observe(sel, [0, 0, 0, 0, 1, 1], [1.0, 0.0, 1.0, 0.0, 1.0, 1.0], step=0)
    assert sel.q_values[0] == pytest.approx(4 * 0.5 / 6)


def test_alpha_and_q_init() -> None:
    sel = sec(estimator="drgrpo", alpha=0.2, q_init=1.0)
    observe(sel, [2, 2], [1.0, 0.0], step=0)  # arm 1: |A| = 0.5
    np.testing.assert_allclose(sel.q_values, [1.0, 0.2 * 0.5 + 0.8 * 1.0])


def test_unsampled_arms_keep_q_by_default_and_decay_with_the_option() -> None:
    kept = sec(q_init=1.0)
    decayed = sec(q_init=1.0, decay_unsampled=True)
    for sel in (kept, decayed):
        observe(sel, [0, 0], [1.0, 0.0], step=0)  # only arm 0 has feedback
    assert kept.q_values[1] == 1.0
    assert decayed.q_values[1] == pytest.approx(0.5)  # alpha * 0 + (1 - alpha) * 1
    assert kept.q_values[0] == decayed.q_values[0]


def test_selection_probabilities_are_softmax_of_q_over_tau() -> None:
    sel = sec(TaskPool(num_tasks=6, categories=[0, 0, 1, 1, 2, 2]), tau=0.4, estimator="drgrpo")
    observe(sel, [0, 0, 2, 2, 2, 2], [1.0, 0.0, 1.0, 0.0, 0.0, 0.0], step=0)
    q = sel.q_values
    np.testing.assert_allclose(q, [0.25, 0.5 * 0.375, 0.0])
    expected = np.exp(q / 0.4) / np.exp(q / 0.4).sum()
    np.testing.assert_allclose(sel.probabilities(), expected)
    m = sel.metrics()
    for arm in range(3):
        assert m[f"sec/arm_prob/{arm}"] == pytest.approx(expected[arm])
        assert m[f"sec/q/{arm}"] == pytest.approx(q[arm])
    assert m["sec/entropy"] == pytest.approx(-(expected * np.log(expected)).sum())


def test_boltzmann_probabilities_by_hand() -> None:
    """Section 2.3: p(c) = exp(Q(c)/tau) / sum_c' exp(Q(c')/tau); Q0 = 0 -> uniform."""
    sel = sec(tau=0.5)
    np.testing.assert_allclose(sel.probabilities(), [0.5, 0.5])  # Q0 = 0 for both arms
    sel._q[:] = [0.0, 0.5 * np.log(3.0)]  # Q/tau = 0, ln 3: weights 1 and 3
    np.testing.assert_allclose(sel.probabilities(), [0.25, 0.75], rtol=1e-12)
    sel._q[:] = [1.0, 1.0 + 0.5 * np.log(3.0)]  # a common shift changes nothing
    np.testing.assert_allclose(sel.probabilities(), [0.25, 0.75], rtol=1e-12)


def test_config_defaults_are_the_papers() -> None:
    """Eq. 1 with Q0 = 0; Table S1 (Qwen2.5-3B puzzles): alpha = 0.5, tau = 1.0; GRPO
    advantages; unsampled arms untouched (section 2.3 text; decay is the released code)."""
    cfg = SECConfig()
    assert (cfg.alpha, cfg.tau, cfg.q_init) == (0.5, 1.0, 0.0)
    assert (cfg.estimator, cfg.decay_unsampled) == ("grpo", False)
    assert sec().config == cfg


def test_softmax_is_stable_for_large_values() -> None:
    p = softmax(np.array([1000.0, 999.0, -1000.0]))
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)


def test_arms_drawn_with_frequencies_of_the_softmax() -> None:
    pool = TaskPool(num_tasks=3000, categories=np.arange(3000) % 3)
    sel = sec(pool, seed=4, tau=0.5)
    sel._q[:] = [0.0, 0.5, 1.0]  # set values directly to test sampling in isolation
    picks = np.concatenate([sel.select(100) for _ in range(60)])
    share = np.bincount(np.asarray(pool.categories)[picks], minlength=3) / picks.size
    np.testing.assert_allclose(share, softmax(np.array([0.0, 1.0, 2.0])), atol=0.02)


def test_vectorised_arm_counts_match_sequential_draws_with_exhaustion() -> None:
    """Multinomial + redraw of overflow == sequential draws skipping exhausted arms."""
    logits = np.array([2.0, 1.0, 0.0, -1.0])
    capacity = np.array([1, 2, 3, 20])
    n, reps = 8, 6000
    rng = np.random.default_rng(0)
    fast = np.array([draw_arm_counts(rng, logits, capacity, n) for _ in range(reps)])

    def sequential() -> np.ndarray:
        counts = np.zeros(4, dtype=np.int64)
        while counts.sum() < n:
            room = np.flatnonzero(counts < capacity)
            counts[room[rng.choice(room.size, p=softmax(logits[room]))]] += 1
        return counts

    slow = np.array([sequential() for _ in range(reps)])
    assert np.all(fast <= capacity) and np.all(fast.sum(axis=1) == n)
    np.testing.assert_allclose(fast.mean(axis=0), slow.mean(axis=0), atol=0.05)
    top = (1, 2, 3, 2)  # the most likely outcome, probability ~0.876
    share = [np.mean(np.all(x == top, axis=1)) for x in (fast, slow)]
    assert abs(share[0] - share[1]) < 0.02


def test_no_repeats_and_one_pass_per_arm_even_with_tiny_arms() -> None:
    cats = np.array([0] + [1] * 2 + [2] * 3 + [3] * 10)
    pool = TaskPool(num_tasks=16, categories=cats)
    for seed, tau in [(0, 1.0), (1, 0.05), (2, 5.0)]:
        sel = sec(pool, seed=seed, tau=tau)
        sel._q[:] = [1.0, 0.8, 0.2, 0.0]  # favour the tiny arms so they run out mid-batch
        times = np.zeros(16, dtype=np.int64)
        for t in range(200):
            ids = sel.select(1 + (7 * t) % 16)
            assert np.unique(ids).size == ids.size
            times[ids] += 1
            for arm in range(4):  # within an arm, nobody is drawn twice before all once
                per = times[cats == arm]
                assert per.max() - per.min() <= 1, (seed, t, arm, per)


def test_full_batch_takes_every_task_once() -> None:
    sel = sec(TaskPool(num_tasks=16, categories=np.arange(16) % 5), tau=0.01)
    sel._q[:] = [5.0, 0, 0, 0, 0]
    for _ in range(5):
        assert sorted(sel.select(16).tolist()) == list(range(16))


def test_two_dimensional_categories_make_joint_arms() -> None:
    # (difficulty, type) rows; (1, 1) never occurs, so there are 3 arms.
    cats = np.array([[0, 0], [0, 0], [0, 1], [1, 0], [1, 0], [0, 1]])
    sel = sec(TaskPool(num_tasks=6, categories=cats), estimator="drgrpo", alpha=1.0)
    assert sel.num_arms == 3
    observe(sel, [2, 2, 5, 5], [1.0, 0.0, 0.0, 0.0], step=0)  # both in arm (0, 1)
    m = sel.metrics()
    assert {k for k in m if k.startswith("sec/q/")} == {"sec/q/0-0", "sec/q/0-1", "sec/q/1-0"}
    assert m["sec/q/0-1"] == pytest.approx(2 * 0.5 / 4)
    assert m["sec/q/0-0"] == 0.0 and m["sec/q/1-0"] == 0.0


def test_per_arm_metrics_are_capped() -> None:
    pool = TaskPool(num_tasks=100, categories=np.arange(100) % 40)
    m = sec(pool, max_arm_metrics=16).metrics()
    assert not any(k.startswith(("sec/q/", "sec/arm_prob/")) for k in m)
    assert m["sec/num_arms"] == 40
    assert m["sec/entropy"] == pytest.approx(np.log(40))


def test_late_feedback_updates_only_its_arms_and_never_decays_again() -> None:
    sel = sec(TaskPool(num_tasks=6, categories=[0, 0, 1, 1, 2, 2]), decay_unsampled=True)
    sel.select(2)
    observe(sel, [0, 0], [1.0, 0.0], step=5)  # arm 0 gains, arms 1 and 2 decay (from 0)
    before = sel.q_values
    observe(sel, [4, 4], [1.0, 0.0], step=3)  # late: an older step, arm 2 only
    after = sel.q_values
    assert after[0] == before[0] and after[1] == before[1]
    assert after[2] == pytest.approx(0.5, rel=1e-5)  # grpo |A| = 1 (up to eps) for 1-of-2
    assert sel.metrics()["sec/late_batches"] == 1


def test_sec_prefers_the_mixed_type_over_uniform() -> None:
    """world_pool: categories are the types (solved / unsolvable / mixed)."""

    def mixed_share(name: str, **overrides: object) -> float:
        pool = world_pool()
        mixed = world_pass_rates(pool) == 0.5
        sel = make_selector(name, pool, seed=5, **overrides)
        picked = drive(sel, steps=150, batch=6, n=8, seed=9)
        return float(mixed[np.concatenate(picked[10:])].mean())

    uniform = mixed_share("uniform")
    assert abs(uniform - 1 / 3) < 0.05
    # Q(mixed) -> ~1 (|A| = 1 on mixed groups), others 0: p = e / (e + 2) ~ 0.58.
    assert mixed_share("sec") > uniform + 0.12
    assert mixed_share("sec", tau=0.2) > 0.9  # p = e^5 / (e^5 + 2) ~ 0.99


def test_save_load_round_trip_keeps_permutations(tmp_path: Path) -> None:
    pool = TaskPool(num_tasks=30, categories=np.arange(30) % 4)
    sel = sec(pool, seed=2)
    drive(sel, steps=5, pass_rates=np.full(30, 0.5))
    save_selector(sel, tmp_path / "sec.npz")
    other = load_selector(tmp_path / "sec.npz")
    np.testing.assert_array_equal(sel.select(9), other.select(9))


def test_state_with_a_permutation_across_arms_is_rejected() -> None:
    sel = sec()
    state = sel.state_dict()
    state["algo"]["perm"] = np.array([0, 2, 1, 3])  # task 2 placed in arm 0's segment
    before = sel.state_dict()
    with pytest.raises(ValueError, match="grouped by arm"):
        sel.load_state_dict(state)
    np.testing.assert_array_equal(before["algo"]["perm"], sel.state_dict()["algo"]["perm"])


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("alpha", 0.0, "alpha"),
        ("alpha", 1.5, "alpha"),
        ("tau", 0.0, "tau"),
        ("tau", float("inf"), "tau"),
        ("estimator", "ppo", "estimator"),
        ("q_init", float("nan"), "q_init"),
        ("max_arm_metrics", -1, "max_arm_metrics"),
    ],
)
def test_bad_config_is_a_clear_error(field: str, value: object, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        sec(**{field: value})


def test_missing_categories_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"TaskPool\.categories"):
        sec(TaskPool(num_tasks=5))


def test_continuous_rewards_are_accepted() -> None:
    sel = sec(estimator="drgrpo", alpha=1.0)
    observe(sel, [0, 0], [3.0, -1.0], step=0)
    assert sel.q_values[0] == pytest.approx(2.0)
