"""BOTS and its presets: each update rule against hand-computed values and the paper's
Propositions 1-2, the plug-ins, gaussian rewards, late feedback, and selection behaviour."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.selectors.bots import (
    BOTSConfig,
    BOTSSelector,
    DOTSConfig,
    MoPPSConfig,
)
from frontier_rft.selectors.bots.plugins import kernel_average, smallest_k
from helpers import assert_state_equal, drive, world_pass_rates, world_pool


def posterior(sel: BOTSSelector) -> tuple[np.ndarray, np.ndarray]:
    algo = sel.state_dict()["algo"]
    return algo["alpha"], algo["beta"]


def feed(sel: BOTSSelector, groups: dict[int, list[float]], step: int) -> None:
    """Deliver one group of rollouts per task and fold it in (no selection)."""
    ids = np.concatenate([[t] * len(r) for t, r in groups.items()]).astype(np.int64)
    rewards = np.concatenate([r for r in groups.values()]).astype(np.float64)
    sel.update(Feedback(ids, rewards, step=step))
    sel.flush()


def four_task_pool() -> TaskPool:
    refs = [[0.2, 0.6], [0.4, 0.8], [0.0, 1.0], [0.5, 0.5]]
    return TaskPool(num_tasks=4, reference_pass_rates=refs)


# ---------------------------------------------------------------- update rules by hand
def test_interpolation_update_matches_hand_computation() -> None:
    sel = make_selector("bots", four_task_pool())
    feed(sel, {0: [1, 1, 0, 0], 1: [1, 1, 1, 0]}, step=0)
    # cur = (0.5 + 0.75)/2 = 0.625, weak 0.3, strong 0.7: mu = 0.8125 = mu~ (first estimate)
    # p~2 = 0.8125, p~3 = 0.5; unselected get rho*n*p~ = 0.4 p~ on top of the prior.
    a, b = posterior(sel)
    np.testing.assert_allclose(a, [3.0, 4.0, 1.325, 1.2])
    np.testing.assert_allclose(b, [3.0, 2.0, 1.075, 1.2])
    feed(sel, {2: [0, 0, 0, 1]}, step=1)
    # mu = 0.25; mu~ = 0.9*0.8125 + 0.1*0.25 = 0.75625
    # p~0 = 0.5025, p~1 = 0.7025, p~3 = 0.5; alpha <- 0.9 alpha + 0.1 + 0.4 p~ (+ s for task 2)
    a, b = posterior(sel)
    np.testing.assert_allclose(a, [3.001, 3.981, 2.2925, 1.38])
    np.testing.assert_allclose(b, [2.999, 2.019, 4.0675, 1.38])
    m = sel.metrics()
    assert m["bots/mu_tilde"] == pytest.approx(0.75625)
    assert m["bots/mu"] == pytest.approx(0.25)
    # plug-in error on the selected task: |p~2 - 0.25| with p~2 = mu~ = 0.75625
    assert m["bots/implicit_error"] == pytest.approx(0.50625)


def test_interpolation_is_clipped_to_the_unit_interval() -> None:
    """Eq. 5: p~ = clip(mu~ s_k + (1 - mu~) w_k, 0, 1); mu~ may extrapolate (appendix E.3)."""
    refs = [[0.2, 0.4], [0.0, 1.0], [0.6, 0.5]]
    above = make_selector("bots", TaskPool(num_tasks=3, reference_pass_rates=refs))
    feed(above, {0: [1, 1]}, step=0)
    # mu = (1 - 0.2) / (0.4 - 0.2) = 4: p~1 = 4*1 - 3*0 = 4 -> 1; p~2 = 4*0.5 - 3*0.6 = 0.2.
    # Unselected tasks get rho * n * p~ = 0.1 * 2 * p~ on top of Beta(1, 1).
    a, b = posterior(above)
    np.testing.assert_allclose(a, [3.0, 1.2, 1.04])
    np.testing.assert_allclose(b, [1.0, 1.0, 1.16])
    below = make_selector("bots", TaskPool(num_tasks=3, reference_pass_rates=refs))
    feed(below, {0: [0, 0]}, step=0)
    # mu = (0 - 0.2) / 0.2 = -1: p~1 = -1*1 + 2*0 = -1 -> 0; p~2 = -0.5 + 1.2 = 0.7.
    a, b = posterior(below)
    np.testing.assert_allclose(a, [1.0, 1.0, 1.14])
    np.testing.assert_allclose(b, [3.0, 1.2, 1.06])


def test_equal_reference_means_skip_mu_until_a_batch_defines_it() -> None:
    """Documented deviation: a batch with strong mean == weak mean gives no mu_t (the paper
    adds an epsilon to the denominator); until a first mu_t, no implicit evidence."""
    refs = [[0.5, 0.5], [0.2, 0.6], [0.0, 1.0]]
    sel = make_selector("bots", TaskPool(num_tasks=3, reference_pass_rates=refs))
    feed(sel, {0: [1, 0]}, step=0)  # weak mean 0.5 = strong mean 0.5: mu undefined
    a, b = posterior(sel)
    np.testing.assert_allclose([a, b], [[2.0, 1.0, 1.0], [2.0, 1.0, 1.0]])
    assert math.isnan(sel.metrics()["bots/mu"]) and math.isnan(sel.metrics()["bots/mu_tilde"])
    feed(sel, {1: [1, 1, 0, 0]}, step=1)
    # mu = (0.5 - 0.2) / (0.6 - 0.2) = 0.75 = mu~ (first defined). Forget: 0.9 x + 0.1 * 1.
    # Task 0: 0.9 * 2 + 0.1 = 1.9, p~0 = 0.5 -> + 0.4 * 0.5 = 2.1 (alpha and beta alike).
    # Task 2: p~2 = 0.75 -> alpha 1 + 0.4 * 0.75 = 1.3, beta 1 + 0.4 * 0.25 = 1.1.
    a, b = posterior(sel)
    np.testing.assert_allclose(a, [2.1, 3.0, 1.3])
    np.testing.assert_allclose(b, [2.1, 3.0, 1.1])
    assert sel.metrics()["bots/mu_tilde"] == pytest.approx(0.75)


def test_thompson_selection_takes_the_smallest_distance_to_the_target() -> None:
    """Section 3.4 and Figure 1: the B tasks with the smallest |p^ - p*| (the text's
    "highest utilities |p^ - p*|" is the documented typo)."""
    rates = [0.1, 0.45, 0.7, 0.95]
    n = 10_000  # posteriors Beta(1 + 10^4 p, 1 + 10^4 (1 - p)): sd <= 0.005
    groups = {t: [1.0] * round(p * n) + [0.0] * round((1 - p) * n) for t, p in enumerate(rates)}
    for target, want in ((0.5, [1, 2]), (0.9, [2, 3]), (0.2, [0, 1])):
        sel = make_selector("mopps", TaskPool(num_tasks=4), seed=1, target=target)
        assert isinstance(sel, BOTSSelector) and sel.config.sample
        feed(sel, groups, step=0)
        # |p - 0.5| = 0.4, 0.05, 0.2, 0.45; |p - 0.9| = 0.8, 0.45, 0.2, 0.05;
        # |p - 0.2| = 0.1, 0.25, 0.5, 0.75: the two smallest are >= 0.05 (10 sd) apart
        # from the third, so every Thompson draw ranks them the same way.
        for _ in range(5):
            assert sorted(sel.select(2).tolist()) == want, target


def test_gaussian_forgetting_follows_eq_10_11_by_hand() -> None:
    """chi/nu (here S = mu nu, nu) forget towards the prior like alpha/beta (appendix E.4.1)."""
    sel = make_selector(
        "bots", TaskPool(num_tasks=3), reward_model="gaussian", plugin="none", lam=0.5
    )
    assert isinstance(sel, BOTSSelector)
    # Prior mu0 = 0.5, nu0 = 2: S0 = 1. Step 0 (first step, nothing to forget yet):
    # task 0 gets S = 1 + 1 + 3 = 5, nu = 2 + 2 = 4.
    feed(sel, {0: [1.0, 3.0]}, step=0)
    np.testing.assert_allclose(sel.posterior_mean(), [1.25, 0.5, 0.5])
    feed(sel, {1: [-1.0]}, step=1)
    # Step 1: S <- 0.5 S + 0.5 * 1, nu <- 0.5 nu + 0.5 * 2, then task 1 adds (-1, 1):
    # task 0: S = 3, nu = 3 (mean 1); task 1: S = 1 - 1 = 0, nu = 3 (mean 0); task 2: prior.
    np.testing.assert_allclose(sel.posterior_mean(), [1.0, 0.0, 0.5], atol=1e-15)
    np.testing.assert_allclose(sel.effective_sample_size(), [3.0, 3.0, 2.0])


def test_mopps_is_plain_beta_bernoulli_counting() -> None:
    sel = make_selector("mopps", TaskPool(num_tasks=3))
    feed(sel, {0: [1, 1, 0], 1: [0, 0, 0]}, step=0)
    feed(sel, {0: [1, 0, 0]}, step=1)
    feed(sel, {0: [1, 1, 1], 2: [1, 0, 1]}, step=5)
    a, b = posterior(sel)
    np.testing.assert_array_equal(a, [1 + 6, 1, 1 + 2])
    np.testing.assert_array_equal(b, [1 + 3, 1 + 3, 1 + 1])


def test_dots_posterior_is_prior_plus_this_steps_evidence() -> None:
    sel = make_selector("dots", four_task_pool())
    feed(sel, {0: [1, 1, 0, 0], 1: [1, 1, 1, 0]}, step=0)
    feed(sel, {2: [0, 0, 0, 1]}, step=1)
    a, b = posterior(sel)
    # lam = rho = 1: unselected tasks are Beta(1 + n p~, 1 + n (1 - p~)) with this step's p~.
    np.testing.assert_allclose(a, [1 + 4 * 0.5025, 1 + 4 * 0.7025, 1 + 1, 1 + 2])
    np.testing.assert_allclose(b, [1 + 4 * 0.4975, 1 + 4 * 0.2975, 1 + 3, 1 + 2])
    # Greedy on the posterior mean: task 3 sits exactly at p* = 0.5, task 0 at 0.5017.
    np.testing.assert_array_equal(sel.select(2), [3, 0])


def test_fractional_rewards_count_as_sums() -> None:
    sel = make_selector("mopps", TaskPool(num_tasks=2))
    feed(sel, {1: [0.25, 0.75, 0.5, 1.0]}, step=0)
    a, b = posterior(sel)
    np.testing.assert_allclose([a[1], b[1]], [1 + 2.5, 1 + 1.5])


def test_kernel_plugin_matches_hand_computation() -> None:
    feats = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]
    pool = TaskPool(num_tasks=4, features=feats)
    sel = make_selector("bots", pool, plugin="kernel")
    feed(sel, {0: [1, 1], 1: [0, 0]}, step=0)
    e = math.e
    p2 = e / (e + 1)  # K(0,2) = e, K(1,2) = 1: weights of rates 1 and 0
    p3 = 0.5  # equal similarity to both
    a, b = posterior(sel)
    np.testing.assert_allclose(a, [3, 1, 1 + 0.2 * p2, 1 + 0.2 * p3])
    np.testing.assert_allclose(b, [1, 3, 1 + 0.2 * (1 - p2), 1 + 0.2 * (1 - p3)])


def test_kernel_chunking_does_not_change_the_estimate() -> None:
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((1000, 5))
    ids = np.array([3, 70, 400, 999])
    rates = np.array([0.1, 0.9, 0.5, 0.0])
    whole = kernel_average(feats, ids, rates, tau=0.5, chunk_rows=4096)
    chunked = kernel_average(feats, ids, rates, tau=0.5, chunk_rows=7)
    np.testing.assert_allclose(whole, chunked, rtol=1e-12)
    assert whole.min() >= 0.0 and whole.max() <= 0.9  # convex: inside the batch's range


# ---------------------------------------------------------------- the paper's propositions
def _log_beta_pdf(p: np.ndarray, a: float, b: float) -> np.ndarray:
    return (
        (a - 1) * np.log(p)
        + (b - 1) * np.log1p(-p)
        - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    )


def test_proposition_1_update_is_the_generalized_bayes_posterior() -> None:
    pool = four_task_pool()
    sel = make_selector("bots", pool, lam=0.3, rho=0.4)
    feed(sel, {0: [1, 1, 0, 0], 1: [1, 1, 1, 0]}, step=0)
    a_t, b_t = posterior(sel)
    feed(sel, {2: [0, 0, 1, 1], 3: [1, 0, 0, 0]}, step=1)
    a_next, b_next = posterior(sel)
    mu = sel.metrics()["bots/mu_tilde"]
    refs = np.asarray(pool.reference_pass_rates)
    grid = np.linspace(1e-4, 1 - 1e-4, 20001)
    counts = {2: (2.0, 2.0), 3: (1.0, 3.0)}  # explicit (s, f) of step 1
    for k in range(4):
        s, f = counts.get(k, (0.0, 0.0))
        if k in counts:
            s_t, f_t = s, f
        else:
            p_t = min(max(mu * refs[k, 1] + (1 - mu) * refs[k, 0], 0.0), 1.0)
            s_t, f_t = 4 * p_t, 4 * (1 - p_t)
        # pi_{t+1} ∝ pi_t^(1-lam) pi_0^lam [p^s (1-p)^f]^(1-rho) [p^s~ (1-p)^f~]^rho (Eq. 4)
        log_u = (
            0.7 * _log_beta_pdf(grid, a_t[k], b_t[k])
            + 0.3 * _log_beta_pdf(grid, 1.0, 1.0)
            + 0.6 * (s * np.log(grid) + f * np.log1p(-grid))
            + 0.4 * (s_t * np.log(grid) + f_t * np.log1p(-grid))
        )
        dens = np.exp(log_u - log_u.max())
        dens /= np.trapezoid(dens, grid)
        np.testing.assert_allclose(
            dens, np.exp(_log_beta_pdf(grid, a_next[k], b_next[k])), rtol=1e-3, atol=1e-6
        )


@pytest.mark.parametrize(("lam", "rho"), [(0.1, 0.1), (0.3, 0.5), (0.05, 0.0)])
def test_proposition_2_effective_sample_size_bounds(lam: float, rho: float) -> None:
    """n0 + rho n/lam (1 - (1-lam)^t) <= alpha + beta <= n0 + n/lam (1 - (1-lam)^t).

    Tight (D.2): tasks rolled out every step sit on the upper bound, never rolled out on the
    lower one; the bounds tend to the paper's liminf / limsup n0 + rho n/lam, n0 + n/lam.
    Assumes every step has implicit evidence and n rollouts per task (the proof's setting).
    """
    pool = world_pool(num_tasks=30)
    sel = make_selector("bots", pool, lam=lam, rho=rho)
    rng = np.random.default_rng(1)
    rates, n, n0 = world_pass_rates(pool), 16, 2.0
    always = np.array([0, 1, 2])
    for t in range(1, 151):
        others = rng.choice(np.arange(3, 24), size=5, replace=False)
        ids = np.concatenate([always, others])
        task_ids = np.repeat(ids, n)
        rewards = (rng.random(task_ids.size) < rates[task_ids]).astype(np.float64)
        sel.update(Feedback(task_ids, rewards, step=t - 1))
        sel.flush()
        a, b = posterior(sel)
        ess = a + b
        low = n0 + rho * n / lam * (1 - (1 - lam) ** t)
        high = n0 + n / lam * (1 - (1 - lam) ** t)
        assert np.all(ess >= low - 1e-9) and np.all(ess <= high + 1e-9), t
        np.testing.assert_allclose(ess[always], high, rtol=1e-12)
        np.testing.assert_allclose(ess[24:], low, rtol=1e-12)  # never rolled out
    assert high == pytest.approx(n0 + n / lam, rel=1e-3)
    assert low == pytest.approx(n0 + rho * n / lam, rel=1e-3)


# ---------------------------------------------------------------- gaussian mode (E.4)
def test_gaussian_mode_accepts_any_reward_and_is_conjugate() -> None:
    sigma, mu0, nu0 = 2.0, 1.0, 0.5
    sel = make_selector(
        "mopps",
        TaskPool(num_tasks=3),
        reward_model="gaussian",
        gaussian_sigma=sigma,
        gaussian_prior_mean=mu0,
        gaussian_prior_count=nu0,
        target=3.0,
    )
    assert sel.reward_bounds is None
    r = [-2.5, 7.0, 4.25]
    feed(sel, {1: r}, step=0)
    # Normal-Normal conjugacy with sigma0^2 = sigma^2 / nu0.
    prec = 1 / (sigma**2 / nu0) + len(r) / sigma**2
    mean = (mu0 / (sigma**2 / nu0) + sum(r) / sigma**2) / prec
    assert isinstance(sel, BOTSSelector)
    assert sel.posterior_mean()[1] == pytest.approx(mean)
    assert sel.effective_sample_size()[1] == pytest.approx(sigma**2 * prec)  # = nu0 + n


def test_gaussian_interpolation_is_not_clipped() -> None:
    pool = TaskPool(num_tasks=3, reference_pass_rates=[[0.2, 0.4], [0.0, 1.0], [0.5, 0.9]])
    sel = make_selector("bots", pool, reward_model="gaussian", gaussian_prior_count=1.0)
    feed(sel, {0: [1.0, 1.2]}, step=0)  # cur 1.1: mu = (1.1 - 0.2) / 0.2 = 4.5 (extrapolation)
    a, b = posterior(sel)
    m1 = 4.5 * 1.0 + (1 - 4.5) * 0.0  # 4.5, outside [0, 1]: kept
    np.testing.assert_allclose([a[1], b[1]], [0.5 + 0.1 * 2 * m1, 1.0 + 0.1 * 2])


def test_gaussian_selection_targets_the_mean() -> None:
    rng = np.random.default_rng(0)
    means = np.tile([-3.0, 0.5, 4.0], 40)
    pool = TaskPool(num_tasks=means.size)
    sel = make_selector(
        "bots", pool, seed=2, reward_model="gaussian", gaussian_sigma=1.0, plugin="regression"
    )
    hits = 0
    for t in range(30):
        ids = sel.select(12)
        if t >= 5:
            hits += int((means[ids] == 0.5).sum())
        task_ids = np.repeat(ids, 8)
        sel.update(Feedback(task_ids, means[task_ids] + rng.standard_normal(task_ids.size), t))
    assert hits / (25 * 12) > 0.8


# ---------------------------------------------------------------- late feedback
def test_late_piece_of_an_observed_step_equals_one_delivery_without_plugin() -> None:
    pool = world_pool(num_tasks=12)
    one = make_selector("bots", pool, plugin="none", lam=0.2)
    two = make_selector("bots", pool, plugin="none", lam=0.2)
    for sel in (one, two):
        feed(sel, {0: [1, 0], 4: [1, 1]}, step=0)
    feed(one, {1: [1, 0, 0], 2: [0, 0], 3: [1, 1]}, step=1)
    feed(two, {1: [1, 0, 0], 3: [1, 1]}, step=1)
    feed(two, {5: [1]}, step=2)  # the clock moves on before the late piece of step 1
    feed(two, {2: [0, 0]}, step=1)
    feed(one, {5: [1]}, step=2)
    np.testing.assert_allclose(posterior(one), posterior(two), rtol=1e-14)
    assert two.metrics()["bots/late_pieces"] == 1.0


def test_late_piece_replaces_the_implicit_evidence_it_received() -> None:
    pool = four_task_pool()
    sel = make_selector("bots", pool)
    feed(sel, {0: [1, 1, 0, 0], 1: [1, 1, 1, 0]}, step=0)  # tasks 2, 3 get 0.4 pseudo counts
    feed(sel, {2: [1, 0, 0, 0]}, step=0)  # task 2 was rolled out too, reported late
    a, b = posterior(sel)
    # as if rolled out at step 0: prior + explicit counts only, no pseudo counts
    np.testing.assert_allclose([a[2], b[2]], [2.0, 4.0])
    np.testing.assert_allclose([a[3], b[3]], [1.2, 1.2])  # untouched
    feed(sel, {2: [1, 1, 1, 1]}, step=0)  # more rollouts of a task already explicit: add
    a, b = posterior(sel)
    np.testing.assert_allclose([a[2], b[2]], [6.0, 4.0])


@pytest.mark.parametrize("plugin", ["none", "kernel"])
def test_steps_delivered_out_of_order_weigh_as_on_time(plugin: str) -> None:
    """Linearity: evidence of step t is worth (1 - lam)^(T - t) at clock T, whenever it comes."""
    pool = world_pool(num_tasks=12)
    steps = {0: {0: [1, 0], 1: [1, 1]}, 1: {2: [0, 1, 1]}, 2: {1: [0, 0], 5: [1, 0]}}
    in_order = make_selector("bots", pool, plugin=plugin, lam=0.3, rho=0.2)
    shuffled = make_selector("bots", pool, plugin=plugin, lam=0.3, rho=0.2)
    for t in (0, 1, 2):
        feed(in_order, steps[t], step=t)
    for t in (2, 0, 1):
        feed(shuffled, steps[t], step=t)
    np.testing.assert_allclose(posterior(in_order), posterior(shuffled), rtol=1e-12)


def test_forgetting_is_applied_once_per_trainer_step() -> None:
    sel = make_selector("bots", TaskPool(num_tasks=3), lam=0.5, plugin="none")
    feed(sel, {0: [1, 1, 1]}, step=0)
    feed(sel, {1: [0]}, step=0)  # a second piece of step 0: no extra forgetting
    a, _ = posterior(sel)
    assert a[0] == 4.0
    feed(sel, {2: [1]}, step=3)  # three trainer steps later
    a, b = posterior(sel)
    np.testing.assert_allclose([a[0], b[0]], [0.125 * 4 + 0.875, 0.125 * 1 + 0.875])
    feed(sel, {0: [1, 1]}, step=2)  # a late step, one step behind the clock: weight 0.5
    a, _ = posterior(sel)
    assert a[0] == pytest.approx(0.125 * 4 + 0.875 + 0.5 * 2)


def test_steps_older_than_the_window_add_discounted_explicit_evidence_only() -> None:
    sel = make_selector("bots", four_task_pool(), late_window=2)
    for t in range(4):
        feed(sel, {0: [1, 0]}, step=t)
    before = posterior(sel)
    feed(sel, {3: [1, 1]}, step=0)  # three steps behind, window 2: explicit only
    a, b = posterior(sel)
    np.testing.assert_allclose(a - before[0], [0, 0, 0, 2 * 0.9**3])
    np.testing.assert_allclose(b, before[1])


def test_late_steps_carry_no_weight_when_lam_is_one() -> None:
    sel = make_selector("dots", four_task_pool())
    feed(sel, {0: [1, 0]}, step=0)
    feed(sel, {1: [1, 1]}, step=1)
    before = posterior(sel)
    feed(sel, {2: [0, 0]}, step=0)
    assert_state_equal(before, posterior(sel))


# ---------------------------------------------------------------- adaptive rho
@pytest.mark.parametrize(("threshold", "expected"), [(0.25, [0.05, 0.025]), (0.6, [0.1, 0.1])])
def test_adaptive_rho_halves_when_the_plugin_is_wrong(
    threshold: float, expected: list[float]
) -> None:
    pool = TaskPool(num_tasks=4, reference_pass_rates=[[0.0, 1.0]] * 4)
    sel = make_selector("bots", pool, adaptive_rho=True, adaptive_rho_threshold=threshold)
    for t, want in enumerate(expected):
        # cur 0.5 -> mu 0.5 -> p~ = 0.5 everywhere; true rates 1 and 0: error 0.5
        feed(sel, {0: [1, 1], 1: [0, 0]}, step=t)
        m = sel.metrics()
        assert m["bots/implicit_error"] == pytest.approx(0.5)
        assert m["bots/rho"] == pytest.approx(want)


# ---------------------------------------------------------------- configs and presets
def test_preset_configs_have_the_papers_values() -> None:
    bots, mopps, dots = BOTSConfig(), MoPPSConfig(), DOTSConfig()
    assert (bots.lam, bots.rho, bots.sample) == (0.1, 0.1, True)
    assert (mopps.lam, mopps.rho, mopps.sample) == (0.0, 0.0, True)
    assert (dots.lam, dots.rho, dots.sample) == (1.0, 1.0, False)
    for c in (bots, mopps, dots):
        assert (c.alpha0, c.beta0, c.target, c.momentum) == (1.0, 1.0, 0.5, 0.9)
    assert make_selector("mopps", TaskPool(num_tasks=10)).config == mopps
    assert make_selector("dots", world_pool()).config == dots


def test_plugin_resolution_and_missing_metadata() -> None:
    bare = TaskPool(num_tasks=10)
    with pytest.raises(ValueError, match=r"or set plugin='regression' .* or plugin='none'"):
        make_selector("bots", bare)  # no source of implicit evidence: refused, not degraded
    bots = make_selector("bots", bare, plugin="regression")  # asked for: the tasks' anchors
    assert isinstance(bots, BOTSSelector) and bots.plugin == "regression"
    drive(bots, steps=2, pass_rates=np.full(10, 0.5))
    assert bots.metrics()["bots/rho"] == 0.1
    assert bots.metrics()["evidence/plugin/regression"] == 1.0
    assert bots.evidence == {"plugin": "regression"}  # anchors only: no features
    none = make_selector("bots", bare, plugin="none")
    drive(none, steps=2, pass_rates=np.full(10, 0.5))
    assert none.metrics()["bots/rho"] == 0.0  # no plug-in: rho is effectively 0 (MoPPS-like)
    full = make_selector("bots", world_pool())
    assert isinstance(full, BOTSSelector) and full.plugin == "interpolation"
    with pytest.raises(ValueError, match=r"TaskPool\.reference_pass_rates"):
        make_selector("bots", bare, plugin="interpolation")
    with pytest.raises(ValueError, match=r"TaskPool\.features"):
        make_selector("bots", bare, plugin="kernel")
    with pytest.raises(ValueError, match=r"selector 'dots' needs"):
        make_selector("dots", bare)
    dots = make_selector("dots", bare, plugin="regression")  # implicit evidence: the anchors
    drive(dots, steps=2, pass_rates=np.full(10, 0.5))
    feats_only = TaskPool(num_tasks=10, features=np.eye(10))
    dots = make_selector("dots", feats_only, plugin="kernel")
    drive(dots, steps=2, pass_rates=np.full(10, 0.5))


@pytest.mark.parametrize(
    "bad",
    [
        {"lam": 1.5},
        {"rho": -0.1},
        {"plugin": "magic"},
        {"reward_model": "poisson"},
        {"target": 1.0},
        {"momentum": 1.0},
        {"implicit_rollouts": 0},
        {"alpha0": 0.0},
        {"sample": "yes"},
        {"kernel_chunk_rows": 0},
    ],
)
def test_invalid_config_is_a_clear_error(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        BOTSConfig(**bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- selection and state
def test_smallest_k_matches_a_full_sort_and_breaks_ties_at_random() -> None:
    rng = np.random.default_rng(3)
    score = rng.random(40_000)
    ids = smallest_k(score, 100, rng)  # large pool: sampled-threshold path
    np.testing.assert_array_equal(ids, np.argsort(score)[:100])
    flat = np.zeros(40_000)
    a = smallest_k(flat, 100, np.random.default_rng(0))
    b = smallest_k(flat, 100, np.random.default_rng(1))
    assert np.unique(a).size == 100 and not np.array_equal(a, b)
    mixed = np.ones(50)
    mixed[[4, 9]] = 0.0
    got = smallest_k(mixed, 3, rng)
    assert set(got[:2]) == {4, 9} and got[2] not in (4, 9)


@pytest.mark.parametrize(
    "overrides",
    [
        {"plugin": "kernel", "kernel_tau": 0.3},
        {"reward_model": "gaussian", "adaptive_rho": True},
        {"sample": False, "lam": 0.5},
    ],
)
def test_state_round_trip_with_logs_and_options(overrides: dict[str, object]) -> None:
    pool = world_pool()
    sel = make_selector("bots", pool, seed=4, **overrides)
    drive(sel, steps=5)
    sel.update(Feedback(np.repeat([7, 8], 2), np.array([1.0, 0.0, 1.0, 1.0]), step=2))  # late
    sel.flush()
    other = make_selector("bots", pool, seed=4, **overrides)
    other.load_state_dict(sel.state_dict())
    assert_state_equal(sel.state_dict(), other.state_dict())
    a, b = drive(sel, steps=4, start_step=5), drive(other, steps=4, start_step=5)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_metrics_report_the_posterior_and_the_plugin() -> None:
    sel = make_selector("bots", world_pool())
    drive(sel, steps=5, n=8)
    sel.flush()
    m = sel.metrics()
    for key in (
        "posterior_mean",
        "effective_sample_size",
        "mu_tilde",
        "rho",
        "implicit_error",
        "posterior_error",
        "near_target_share",
    ):
        assert math.isfinite(m[f"bots/{key}"]), key
    assert 0.0 <= m["bots/near_target_share"] <= 1.0
    assert m["bots/rho"] == 0.1


@pytest.mark.parametrize("name", ["bots", "mopps", "dots"])
def test_picks_mixed_tasks_far_more_often_than_uniform(name: str) -> None:
    pool = world_pool(num_tasks=300)
    mixed = world_pass_rates(pool) == 0.5
    share = {}
    for method in ("uniform", name):
        picked = drive(make_selector(method, pool, seed=5), steps=30, batch=20, n=8)
        share[method] = mixed[np.concatenate(picked[5:])].mean()
    assert share["uniform"] < 0.45
    assert share[name] > 0.6, share


# ---------------------------------------------------------------- regression plug-in
def _feature_pool() -> TaskPool:
    return TaskPool(num_tasks=3, features=[[1.0], [2.0], [0.0]])


def test_regression_plugin_matches_hand_computation() -> None:
    sel = make_selector("bots", _feature_pool(), plugin="regression", regression_forgetting=1.0)
    feed(sel, {0: [1, 1, 1, 0]}, step=0)
    # g0 = logit((3 + 1/2) / (4 + 1)) = logit(0.7) = ln(7/3). Ridge on [x, 1] with penalty 1:
    # (X^T X + I) w = X^T g -> [[2, 1], [1, 2]] w = [g, g] -> w = [g/3, g/3].
    g = math.log(7 / 3)
    reg = sel.state_dict()["algo"]["regression"]
    np.testing.assert_allclose(reg["model"]["weights"], [g / 3, g / 3])
    # Anchor r0 = g - (1 + 1) g/3 = g/3; p~0 = sigmoid(g) = 0.7, p~1 = sigmoid(3 g/3) = 0.7,
    # p~2 = sigmoid(g/3) (never rolled out: no anchor).
    np.testing.assert_allclose(reg["anchors"], [g / 3, 0.0, 0.0])
    p2 = 1.0 / (1.0 + math.exp(-g / 3))
    # First step: no forgetting yet; unselected tasks get rho * n * p~ = 0.4 p~ (Eq. 1).
    a, b = posterior(sel)
    np.testing.assert_allclose(a, [1 + 3, 1 + 0.4 * 0.7, 1 + 0.4 * p2])
    np.testing.assert_allclose(b, [1 + 1, 1 + 0.4 * 0.3, 1 + 0.4 * (1 - p2)])


def test_regression_late_piece_retracts_the_estimate_of_its_own_step() -> None:
    sel = make_selector("bots", _feature_pool(), plugin="regression")
    feed(sel, {0: [1, 1, 0, 0]}, step=0)
    weights0 = sel.state_dict()["algo"]["log"][0]["weights"].copy()
    feed(sel, {2: [1, 1, 1, 1]}, step=1)  # task 2's anchor changes at step 1
    a1, b1 = posterior(sel)
    feed(sel, {2: [0, 0, 1, 0]}, step=0)  # a late piece of step 0 for task 2
    a, b = posterior(sel)
    # Step 0 gave task 2 implicit evidence from p~ as of step 0: weights0 and no anchor.
    p_old = 1.0 / (1.0 + math.exp(-(0.0 * weights0[0] + weights0[1])))
    k = 0.1 * 4 * 0.9  # rho * n, discounted one step like the explicit counts
    assert a[2] == pytest.approx(a1[2] + 0.9 * 1 - k * p_old)
    assert b[2] == pytest.approx(b1[2] + 0.9 * 3 - k * (1 - p_old))
    np.testing.assert_allclose(a[:2], a1[:2])


def test_regression_plugin_gaussian_and_resume() -> None:
    pool = TaskPool(num_tasks=6, features=np.arange(12.0).reshape(6, 2), prompts=list("abcdef"))
    sel = make_selector("bots", pool, reward_model="gaussian", plugin="regression", seed=3)
    for t in range(4):
        ids = sel.select(3)
        sel.update(Feedback(np.repeat(ids, 2), np.linspace(-2.0, 5.0, 6), step=t))
    copy = make_selector("bots", pool, reward_model="gaussian", plugin="regression", seed=3)
    copy.load_state_dict(sel.state_dict())
    np.testing.assert_array_equal(sel.select(3), copy.select(3))
    assert_state_equal(sel.state_dict(), copy.state_dict())


def test_candidate_mode_refuses_the_regression_plugin_and_auto_falls_back() -> None:
    pool = TaskPool(num_tasks=50, prompts=[f"task {i} with {i % 7} parts" for i in range(50)])
    with pytest.raises(ValueError, match="cannot use the regression plug-in"):
        make_selector("bots", pool, candidates=16, plugin="regression")
    with pytest.warns(EvidenceWarning, match="explicit evidence only"):
        sel = make_selector("bots", pool, candidates=16)
    assert sel.plugin == "none" and sel.evidence == {"plugin": "none"}
