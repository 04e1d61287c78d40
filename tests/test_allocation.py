"""Rollout allocation: each equation against a hand-computed value, the greedy's optimality,
coverage (no kept prompt without rollouts), bad input refused by name with nothing changed,
state, and the simulator's variable group sizes."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import Allocation, AllocationConfig, GroupBatch, TaskPool, make_selector
from frontier_rft.core.informative import (
    agreement_moments,
    fit_beta_prior,
    informative_probability,
    pass_rate_moments,
)
from frontier_rft.sampling.allocation_rule import (
    HIGH,
    LOW,
    MIXED,
    expected_signal,
    knapsack_weight,
    marginal_gains,
    signal_gains,
    take_greedy,
)
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.step import Round, StepSamples, rollout_metrics
from frontier_rft.simulation.learner import SimulatedLearner
from frontier_rft.simulation.runner import Entry, RunSpec, run_one, sampler_spec
from frontier_rft.simulation.scenario import SCENARIOS, get_scenario
from helpers import assert_state_equal, world_pass_rates, world_pool


def arr(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


def world(pool: TaskPool, seed: int = 0) -> Any:
    """rollout(ids, counts) -> counts[i] Bernoulli rewards of ids[i], from the world pool."""
    rng, rates = np.random.default_rng(seed), world_pass_rates(pool)

    def rollout(ids: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
        sizes = np.full(ids.shape[0], 4) if counts is None else counts
        p = np.repeat(rates[ids], sizes)
        return (rng.random(p.shape[0]) < p).astype(np.float64)

    return rollout


def tried(alloc: Allocation, succ: dict[int, float], fail: dict[int, float]) -> None:
    """Give prompts their own evidence directly (S_k, F_k), as if rolled out now."""
    for k, v in succ.items():
        alloc.posteriors.succ[k] = v
    for k, v in fail.items():
        alloc.posteriors.fail[k] = v


# ----------------------------------------------------------------------------- equations


def test_informative_probability_hand_computed() -> None:
    # Beta(1, 1): E[p^2] = 1/3, so q(2) = 1 - 1/3 - 1/3 = 1/3; Beta(2, 1), n = 3: E[p^3] =
    # 2/5, E[(1-p)^3] = 1*2*3 / (3*4*5) = 1/10, q = 1/2.
    assert informative_probability(arr(1.0), arr(1.0), 2)[0] == pytest.approx(1 / 3)
    assert informative_probability(arr(2.0), arr(1.0), 3)[0] == pytest.approx(0.5)
    succ, fail = agreement_moments(arr(2.0), arr(1.0), 4)
    np.testing.assert_allclose(succ[0], [1.0, 2 / 3, 1 / 2, 2 / 5])
    np.testing.assert_allclose(fail[0], [1.0, 1 / 3, 1 / 6, 1 / 10])


def test_marginal_gain_is_the_next_rollout_breaking_the_tie() -> None:
    # D(n) = (E[p^n] b + E[(1-p)^n] a) / (a + b + n). Beta(1, 1): D(2) = (1/3 + 1/3) / 4 = 1/6
    # = q(3) - q(2) = 1/2 - 1/3; D(3) = (1/4 + 1/4) / 5 = 1/10 = q(4) - q(3) = 3/5 - 1/2.
    # Beta(2, 1): D(2) = (1/2 * 1 + 1/6 * 2) / 5 = 1/6 = q(3) - q(2) = 1/2 - 1/3.
    gains = marginal_gains(arr(1.0, 2.0), arr(1.0, 1.0), 2, 4)
    np.testing.assert_allclose(gains[0], [1 / 6, 1 / 10])
    assert gains[1, 0] == pytest.approx(1 / 6)
    for a, b in ((1.0, 1.0), (2.0, 1.0), (0.3, 4.0)):
        q = [informative_probability(arr(a), arr(b), n)[0] for n in range(2, 9)]
        np.testing.assert_allclose(marginal_gains(arr(a), arr(b), 2, 8)[0], np.diff(q))


def test_continuing_an_all_equal_group_only_the_other_reward_breaks_it() -> None:
    # All high so far, Beta(2, 1) (the pilot included): the first extra rollout fails with
    # E[1 - p] = 1/3; the second is the first failure with E[p (1 - p)] = 2 / (3 * 4) = 1/6.
    # All low: the first extra succeeds with E[p] = 2/3. Mixed: nothing to gain.
    state = np.array([HIGH, LOW, MIXED], dtype=np.int8)
    gains = marginal_gains(arr(2.0, 2.0, 2.0), arr(1.0, 1.0, 1.0), 0, 2, state=state)
    np.testing.assert_allclose(gains, [[1 / 3, 1 / 6], [2 / 3, (1 / 3) * 2 / 4], [0.0, 0.0]])


def test_knapsack_weight_is_p_one_minus_p_squared_at_the_posterior_mean() -> None:
    # Beta(1, 3): p = 1/4, (1/4)(3/4)^2 = 9/64.
    assert knapsack_weight(arr(1.0), arr(3.0))[0] == pytest.approx(9 / 64)
    gains = marginal_gains(arr(1.0), arr(3.0), 2, 3, weight=knapsack_weight(arr(1.0), arr(3.0)))
    plain = marginal_gains(arr(1.0), arr(3.0), 2, 3)
    assert gains[0, 0] == pytest.approx(9 / 64 * plain[0, 0])


def test_expected_signal_is_the_mean_abs_grpo_advantage_hand_computed() -> None:
    # Beta(1, 1): the Beta-binomial is uniform on 0..n. n = 2: s = 1 w.p. 1/3, mean |A| =
    # 2 sqrt(1/4) = 1, so S = 1/3. n = 3: s = 1, 2 w.p. 1/4 each, 2 sqrt(2/9): S = sqrt(2)/3.
    s = expected_signal(arr(1.0), arr(1.0), 4, arr(0.0), arr(0.0))
    np.testing.assert_allclose(s[0], [0.0, 0.0, 1 / 3, math.sqrt(2) / 3])
    # A head of one success and one failure: every continuation is mixed; with one more
    # rollout (Beta(1, 1)) r = 2/3 or 1/3 alike, 2 sqrt(2/9) again.
    head = expected_signal(arr(1.0), arr(1.0), 2, arr(1.0), arr(2.0))
    np.testing.assert_allclose(head[0], [1.0, math.sqrt(2) * 2 / 3])
    np.testing.assert_allclose(
        signal_gains(arr(1.0), arr(1.0), 2, 3, arr(0.0), arr(0.0))[0], [math.sqrt(2) / 3 - 1 / 3]
    )


def test_expected_signal_matches_brute_force_beta_binomial() -> None:
    a, b, n = 2.0, 5.0, 6

    def lbeta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    want = sum(
        math.comb(n, s)
        * math.exp(lbeta(a + s, b + n - s) - lbeta(a, b))
        * 2
        * math.sqrt(s / n * (1 - s / n))
        for s in range(n + 1)
    )
    assert expected_signal(arr(a), arr(b), n + 1, arr(0.0), arr(0.0))[0, n] == pytest.approx(want)


def test_prior_fit_by_moments_hand_computed() -> None:
    # 10 groups all wrong and 10 all right: m = 1/2, var(r) = 1/4 = m (1 - m): U-shaped, c = 0.1.
    sums, counts = np.repeat([0.0, 8.0], 10), np.full(20, 8.0)
    assert fit_beta_prior(pass_rate_moments(sums, counts), 8.0, (1.0, 1.0)) == (0.5, 0.1)
    # 20 groups of 4 at 1/4 and 3/4: var(r) = 1/16, all of it binomial noise (within r (1-r)
    # n/(n-1) = 1/4, / n = 1/16): var(p) = 0, c = 100 (the upper bound).
    sums, counts = np.tile([1.0, 3.0], 10), np.full(20, 4.0)
    moments = pass_rate_moments(sums, counts, per_rollout=True)
    np.testing.assert_allclose(moments, [20.0, 10.0, 6.25, 1.25])
    assert fit_beta_prior(moments, 1.0, (1.0, 1.0)) == (0.5, 100.0)
    # fewer than 16 groups: the base prior Beta(2, 6) -> (1/4, 8)
    assert fit_beta_prior(moments * 0.5, 1.0, (2.0, 6.0)) == (0.25, 8.0)


def test_greedy_takes_the_largest_marginal_values_and_spreads_ties_evenly() -> None:
    gains = np.array([[0.5, 0.2, 0.1], [0.4, 0.3, 0.05]])
    assert take_greedy(gains, 3).tolist() == [1, 2]  # 0.5, 0.4, 0.3
    assert take_greedy(np.full((2, 3), 0.1), 2).tolist() == [1, 1]
    assert take_greedy(gains, 2, capacity=np.array([3, 0])).tolist() == [2, 0]
    with pytest.raises(ValueError, match="cannot place 4 rollouts in 3 open slots"):
        take_greedy(gains, 4, capacity=np.array([3, 0]))


def test_greedy_is_optimal_by_exhaustive_search() -> None:
    """q is concave in n, so the greedy maximises sum_k q_k(n_k) exactly: checked against
    every allocation of a small budget."""
    a, b = arr(0.4, 1.0, 3.0, 0.2), arr(3.0, 1.0, 0.5, 0.2)
    n_min, n_max, extra = 2, 8, 9
    value = np.array(
        [
            [informative_probability(a[[k]], b[[k]], n)[0] for n in range(n_max + 1)]
            for k in range(4)
        ]
    )
    best = max(
        sum(value[k, n_min + e] for k, e in enumerate(split))
        for split in itertools.product(range(n_max - n_min + 1), repeat=4)
        if sum(split) == extra
    )
    got = take_greedy(marginal_gains(a, b, n_min, n_max), extra)
    assert sum(value[k, n_min + e] for k, e in enumerate(got)) == pytest.approx(best)


# ----------------------------------------------------------------------------- the sampler


def test_one_stage_allocation_hand_computed() -> None:
    """B = 3 prompts at n = 3 (R = 9), n_min 2, n_max 4: the untried prompt gets n = 3, the
    tried ones 2 each plus the 2 left. Prompt 0 is Beta(2, 2) (D(2) = 0.2, D(3) = 0.8/7),
    prompt 1 Beta(101, 1) (D(2) = 0.0096): both go to prompt 0."""
    pool = TaskPool(num_tasks=6)
    alloc = Allocation(
        make_selector("uniform", pool), AllocationConfig(min_rollouts=2, max_rollouts=4)
    )
    tried(alloc, {0: 1.0, 1: 100.0}, {0: 1.0})  # base prior Beta(1, 1): a = 1 + S, b = 1 + F
    a, b = alloc.posteriors.posterior(np.array([0, 1]))
    np.testing.assert_allclose(a, [2.0, 101.0])
    np.testing.assert_allclose(b, [2.0, 1.0])
    gains = marginal_gains(a, b, 2, 4)
    np.testing.assert_allclose(gains[0], [0.2, 0.8 / 7])
    assert gains[1, 0] == pytest.approx((101 / 103 + 2 / (102 * 103) * 101) / 104)
    counts = alloc.allocate(np.array([0, 1, 2]), 3, 9)
    assert counts.tolist() == [4, 2, 3]


def test_untried_prompts_get_the_default_n_and_a_first_epoch_is_plain_grpo() -> None:
    pool = world_pool()
    plain = PassThrough(make_selector("greso", pool, seed=3))
    alloc = Allocation(make_selector("greso", pool, seed=3))
    roll_a, roll_b = world(pool, 1), world(pool, 1)
    for step in range(5):  # 5 x 6 = 30 of 90 prompts: all untried
        a = plain.sample(step, 6, 4, roll_a)
        b = alloc.sample(step, 6, 4, roll_b)
        assert a.task_ids.tolist() == b.task_ids.tolist()
        np.testing.assert_array_equal(a.train.rewards, b.train.rewards)
        assert b.train.counts.tolist() == [4] * 6


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"value": "signal"},
        {"value": "knapsack"},
        {"pilot": 2},
        {"pilot": 3, "commit": "mixed"},
        {"budget": 1.5, "max_rollouts": 9},
        {"min_rollouts": 3, "max_rollouts": 5},
        {"budget": 0.6},
    ],
)
def test_every_kept_prompt_gets_at_least_n_min_and_the_budget_is_spent(config: dict) -> None:
    pool = world_pool()
    cfg = AllocationConfig(**config)
    alloc = Allocation(make_selector("greso", pool, seed=0), cfg)
    roll = world(pool, 2)
    for step in range(40):
        n = 4 + step % 2  # the default n may change between steps
        tried_now = alloc.posteriors.tried(np.arange(pool.num_tasks))
        out = alloc.sample(step, 6, n, roll)
        counts = out.train.counts
        assert counts.min() >= cfg.min_rollouts and counts.max() <= cfg.max_rollouts
        untried = ~tried_now[out.train.task_ids]
        assert (counts[untried] == n).all()  # untried: the default n
        budget = cfg.step_budget(6, n)
        floor = n * int(untried.sum()) + cfg.min_rollouts * int((~untried).sum())
        assert out.rollouts == counts.sum() <= max(budget, floor)  # the floor wins below 1
        if tried_now[out.train.task_ids].all() and cfg.budget == 1.0:
            assert out.rollouts == budget  # uniform's budget, to the rollout
        assert out.train.num_groups == 6 and out.train.deficit == 0


def test_inner_selector_receives_every_reward_once_pilot_and_commit_in_one_group() -> None:
    pool = world_pool()
    alloc = Allocation(make_selector("uniform", pool, seed=0), AllocationConfig(pilot=2))
    roll = world(pool, 0)
    spent = 0
    for step in range(40):
        out = alloc.sample(step, 6, 4, roll)
        spent += out.rollouts
        if len(out.rounds) == 2:  # a commit: its groups continue the pilot's
            for g, tail in enumerate(out.train.continued):
                for r, j in tail:
                    assert out.rounds[r].task_ids[j] == out.train.task_ids[g]
    metrics = alloc.inner.metrics()
    assert metrics["feedback/rollouts"] == spent
    assert metrics["feedback/groups"] == 40 * 6  # pilot and commit folded as one group
    assert alloc.metrics()["alloc/committed_prompts"] >= 0
    assert any(k.startswith("alloc/") for k in alloc.metrics())


def test_allocation_moves_rollouts_from_settled_prompts_to_uncertain_ones() -> None:
    """World: a third always solved, a third never, a third at p = 0.5 (conftest). Once tried,
    the settled prompts get n_min and the mixed third the rest."""
    pool = world_pool()
    rates = world_pass_rates(pool)
    alloc = Allocation(make_selector("uniform", pool, seed=0))
    roll = world(pool, 0)
    sizes: dict[float, list[int]] = {}
    for step in range(60):
        out = alloc.sample(step, 9, 8, roll)
        if step >= 20:  # every prompt tried (90 / 9 = 10 steps a pass)
            for t, c in zip(out.train.task_ids, out.train.counts, strict=True):
                sizes.setdefault(float(rates[t]), []).append(int(c))
    mixed_rate = next(r for r in sizes if 0.0 < r < 1.0)
    assert np.mean(sizes[mixed_rate]) > 8 > np.mean(sizes[0.0])
    assert np.mean(sizes[1.0]) < 8


def test_rewards_beyond_zero_one_and_wrong_shapes_are_refused_and_change_nothing() -> None:
    pool = world_pool()
    alloc = Allocation(make_selector("uniform", pool, seed=0))
    alloc.sample(0, 6, 4, world(pool, 0))
    before = alloc.state_dict(with_inner=False)
    with pytest.raises(ValueError, match=r"rewards as success rates in \[0, 1\]"):
        alloc.sample(1, 6, 4, lambda ids, counts: np.full(int(counts.sum()), 2.0))
    with pytest.raises(ValueError, match="expected counts"):
        alloc.sample(1, 6, 4, lambda ids, counts: np.zeros(3))
    assert_state_equal(alloc.state_dict(with_inner=False), before)


def test_bad_sizes_are_refused_by_name_before_anything_changes() -> None:
    pool = world_pool()
    alloc = Allocation(make_selector("uniform", pool, seed=0), AllocationConfig(pilot=3))
    before = alloc.state_dict()
    cases = [
        ((6, 1), "group_size 1 is the default n"),
        ((6, 200), r"must lie in \[min_rollouts, max_rollouts\] = \[2, 128\]"),
        ((6, 2), "pilot 3 exceeds group_size 2"),
        ((0, 4), "batch_size must be a positive int"),
        ((6, True), "group_size must be a positive int"),
    ]
    for (batch, n), message in cases:
        with pytest.raises(ValueError, match=message):
            alloc.sample(1, batch, n, world(pool))
    with pytest.raises(ValueError, match="step must be a non-negative int"):
        alloc.sample(-1, 6, 4, world(pool))
    assert_state_equal(alloc.state_dict(), before)  # the inner selector's RNG included
    wide = AllocationConfig(budget=10.0, max_rollouts=8)
    with pytest.raises(ValueError, match="budget of 240 rollouts cannot be spent on 6 prompts"):
        wide.step_budget(6, 4)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"budget": 0.0}, r"budget must be a multiple of B x n in \(0, 1000\]"),
        ({"budget": 1e4}, r"budget must be a multiple of B x n in \(0, 1000\]"),
        ({"min_rollouts": 1}, "need 2 <= min_rollouts <= max_rollouts"),
        ({"min_rollouts": 9, "max_rollouts": 8}, "need 2 <= min_rollouts <= max_rollouts"),
        ({"max_rollouts": 5000}, "<= 4096"),
        ({"pilot": 1}, r"pilot must be 0 \(one stage\) or in \[min_rollouts, max_rollouts\]"),
        ({"value": "best"}, "value"),
        ({"commit": "all"}, "commit"),
        ({"commit_low": 0.8, "commit_high": 0.5}, "need 0 <= commit_low <= commit_high <= 1"),
        ({"lam": 1.5}, r"lam must lie in \[0, 1\]"),
        ({"alpha0": 0.0}, "alpha0 must be a positive number"),
        ({"prior_forgetting": 0.0}, r"prior_forgetting must lie in \(0, 1\]"),
        ({"min_rollouts": 2.5}, "min_rollouts"),
    ],
)
def test_config_is_validated_by_name(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AllocationConfig(**fields)


def test_every_budget_n_min_and_group_size_combination_works_or_is_refused() -> None:
    """A grid of budgets, n_min, n_max, pilots and group sizes: each either refuses by name
    (config or step_budget) or runs a step in which every prompt gets >= n_min rollouts."""
    pool = world_pool(30)
    roll = world(pool, 0)
    runs = 0
    for budget, n_min, n_max, pilot, n in itertools.product(
        (0.3, 0.6, 1.0, 1.3, 4.0), (2, 3), (3, 8), (0, 3), (2, 3, 8)
    ):
        try:
            cfg = AllocationConfig(
                budget=budget, min_rollouts=n_min, max_rollouts=n_max, pilot=pilot
            )
            cfg.step_budget(5, n)
        except ValueError as exc:
            assert any(name in str(exc) for name in ("budget", "rollouts", "pilot", "group_size"))
            continue
        alloc = Allocation(make_selector("uniform", pool, seed=0), cfg)
        for step in range(8):
            counts = alloc.sample(step, 5, n, roll).train.counts
            assert counts.min() >= n_min and counts.max() <= n_max
        runs += 1
    assert runs > 10


def test_a_corrupt_or_foreign_state_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    pool = world_pool()
    alloc = Allocation(make_selector("uniform", pool, seed=0))
    alloc.sample(0, 6, 4, world(pool))
    before = alloc.state_dict()
    bad = alloc.state_dict()
    bad["posteriors"]["successes"] = -bad["posteriors"]["successes"] - 1.0
    with pytest.raises(ValueError, match="successes"):
        alloc.load_state_dict(bad)
    other = Allocation(make_selector("uniform", pool), AllocationConfig(pilot=2)).state_dict()
    with pytest.raises(ValueError, match="build the wrapper with that config first"):
        alloc.load_state_dict(other)
    assert_state_equal(alloc.state_dict(), before)
    with pytest.raises(ValueError, match="wraps a built selector"):
        Allocation("greso")  # type: ignore[arg-type]


def test_fractional_rewards_count_as_successes_and_failures() -> None:
    pool = TaskPool(num_tasks=4)
    alloc = Allocation(make_selector("uniform", pool, seed=0))
    alloc.sample(0, 4, 4, lambda ids, counts: np.full(int(counts.sum()), 0.25))
    np.testing.assert_allclose(alloc.posteriors.succ, 1.0)  # 4 x 0.25
    np.testing.assert_allclose(alloc.posteriors.fail, 3.0)


# ----------------------------------------------------------------------------- metrics, simulator


def test_rollout_metrics_hand_computed() -> None:
    ids = np.array([3, 4, 5, 6])
    sizes = np.array([2, 5, 8, 130])
    rewards = np.concatenate([[0.0, 1.0], np.zeros(5), [1.0] * 4 + [0.0] * 4, np.ones(130)])
    rnd = Round(ids, rewards, 0.0, sizes)
    samples = StepSamples(0, (rnd,), _batch(rnd))
    m = rollout_metrics(samples)
    assert m["rollouts"] == 145 and m["prompts"] == 4
    assert m["rollouts_per_prompt"] == pytest.approx(145 / 4)
    assert m["informative_groups"] == 2 and m["informative_per_rollout"] == pytest.approx(2 / 145)
    assert [m[k] for k in ("n_to_2", "n_to_4", "n_to_8", "n_to_16", "n_over_128")] == [
        1,
        0,
        2,
        0,
        1,
    ]


def _batch(rnd: Round) -> Any:
    from frontier_rft.sampling.step import fresh_batch

    return fresh_batch((rnd,), [(0, g) for g in range(rnd.task_ids.shape[0])], 0, 0)


def test_simulated_noise_of_a_group_falls_with_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """noise_group_size n0 = 8: a group of 32 carries sigma^2 A^2 (8 / 32) / B^2."""
    seen: list[float] = []
    original = SimulatedLearner._adam_scale

    def spy(self: SimulatedLearner, update: Any, own: Any, noise_sq: float) -> float:
        seen.append(noise_sq)
        return original(self, update, own, noise_sq)

    monkeypatch.setattr(SimulatedLearner, "_adam_scale", spy)
    cfg = SCENARIOS["small-pool"].replace(num_tasks=16, eval_tasks=8)
    assert cfg.noise_group_size == 8 and cfg.gradient_noise == 4.0
    for n in (8, 32):
        sim = SimulatedLearner(cfg, seed=0)
        rewards = np.tile([1.0, 0.0], n // 2)  # mean |A| = 1
        sim.train(GroupBatch.from_rollouts(0, np.zeros(n, np.int64), rewards, np.full(n, -1)))
    assert seen[0] == pytest.approx(16.0, rel=1e-5)  # 4^2 * 1^2 * (8 / 8) / 1^2
    assert seen[1] == pytest.approx(4.0, rel=1e-5)  # ... * (8 / 32)
    assert get_scenario("hard").noise_group_size == 0  # the original learner: any n alike


def test_simulator_runs_allocation_with_variable_groups_and_reports_sizes() -> None:
    cfg = SCENARIOS["small-pool"].replace(num_tasks=64, eval_tasks=50)
    entry = Entry("greso+alloc", "greso", sampler=sampler_spec(allocation={"pilot": 4}))
    rec = run_one(RunSpec(cfg, entry, 0, steps=12, batch=8, rollouts=8))
    assert rec["rollouts"] == [64] * 12  # uniform's budget, every step
    assert all(sum(h) == 8 for h in rec["size_hist"])
    assert rec["rollouts_per_prompt"] == [8.0] * 12
    assert any(k.startswith("alloc/") for k in rec["selector_metrics"])
    with pytest.raises(ValueError, match="do not combine"):
        sampler_spec(dynamic_sampling="fixed", allocation={})
    with pytest.raises(ValueError, match="pilot"):
        sampler_spec(allocation={"pilot": 1})


def test_a_lean_budget_spends_less_than_uniform_where_the_posterior_allows() -> None:
    """budget 0.5, n = 4, six prompts (R = 12): five tried, one untried. The untried one gets
    its 4, each tried one n_min = 2 (10), 14 in all, over R: the floor wins and nothing else
    is given. With all six tried: 12 = 6 x 2, exactly R."""
    pool = TaskPool(num_tasks=6)
    cfg = AllocationConfig(budget=0.5)
    assert cfg.step_budget(6, 4) == 12
    alloc = Allocation(make_selector("uniform", pool), cfg)
    tried(alloc, {k: 1.0 for k in range(5)}, {k: 1.0 for k in range(5)})
    counts = alloc.allocate(np.arange(6), 4, 12)
    assert counts.tolist() == [2, 2, 2, 2, 2, 4]
    tried(alloc, {5: 1.0}, {5: 1.0})
    assert alloc.allocate(np.arange(6), 4, 12).tolist() == [2] * 6
    # budget 0.7 -> R = 16: the four rollouts above n_min go one each to four equal prompts.
    assert alloc.allocate(np.arange(6), 4, 16).tolist() == [3, 3, 3, 3, 2, 2]
    with pytest.raises(ValueError, match=r"cannot give 6 prompts min_rollouts=2 each: raise"):
        AllocationConfig(budget=0.25).step_budget(6, 4)


def test_a_budget_the_tried_prompts_cannot_take_is_left_unspent_never_over_n_max() -> None:
    """budget 2, n = 4, n_max = 8, six prompts of which five tried: untried 4, tried at most
    8 each (44 of 48); the 4 left are reported unspent, not rolled out beyond n_max."""
    pool = TaskPool(num_tasks=6)
    alloc = Allocation(make_selector("uniform", pool), AllocationConfig(budget=2.0, max_rollouts=8))
    tried(alloc, {k: 1.0 for k in range(5)}, {k: 1.0 for k in range(5)})
    out = alloc.sample(0, 6, 4, lambda ids, counts: np.tile([0.0, 1.0], int(counts.sum()) // 2))
    by_task = dict(zip(out.train.task_ids.tolist(), out.train.counts.tolist(), strict=True))
    assert by_task[5] == 4 and all(by_task[k] == 8 for k in range(5))
    assert len(out.rounds) == 1 and out.rollouts == 44
    assert alloc.metrics()["alloc/unspent"] == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.array([0, 1, 200]), 4, 12), r"ids must be task ids in \[0, 89\]"),
        ((np.array([-1, 1]), 4, 12), r"ids must be task ids in \[0, 89\]"),
        ((np.array([0.0, 1.0]), 4, 12), "ids must be a 1-D array of task ids"),
        ((np.array([[0, 1]]), 4, 12), "ids must be a 1-D array of task ids"),
        ((np.array(["0"]), 4, 12), "ids must be a 1-D array of task ids"),
        ((np.arange(3), 1, 12), r"group_size must be an int in \[2, 128\], got 1"),
        ((np.arange(3), 4.0, 12), r"group_size must be an int in \[2, 128\]"),
        ((np.arange(3), 4, -1), "budget must be a non-negative int"),
        ((np.arange(3), 4, 12.5), "budget must be a non-negative int"),
        ((np.arange(3), 4, 2**63), "budget must be a non-negative int below 2"),
    ],
)
def test_allocate_refuses_bad_arguments_by_name(args: tuple[Any, ...], message: str) -> None:
    """Issue 47: allocate() validated nothing (an id past the pool indexed the posteriors,
    a float group size or budget went into the greedy)."""
    pool = world_pool()
    alloc = Allocation(make_selector("uniform", pool, seed=0))
    tried(alloc, {0: 1.0, 1: 3.0}, {0: 2.0})
    before = alloc.state_dict()
    with pytest.raises(ValueError, match=message):
        alloc.allocate(*args)
    assert_state_equal(before, alloc.state_dict())
    assert alloc.allocate(np.arange(3), 4, 12).sum() == 12


def test_the_oracle_seam_gives_what_the_benchmark_patch_gave(monkeypatch: Any) -> None:
    """benchmarks/allocation.py --oracle once patched BetaPosteriors.posterior for the entry
    marked by prior_forgetting 0.123456789; Entry.oracle (Allocation's `posterior`) gives
    the same runs, so its committed results stand."""
    from frontier_rft.simulation.learner import SimulatedLearner
    from frontier_rft.structures.beta_posterior import BetaPosteriors

    marked = {"prior_forgetting": 0.123456789}
    cfg = get_scenario("small-pool").replace(num_tasks=64, eval_tasks=50)

    def spec(entry: Entry) -> RunSpec:
        return RunSpec(cfg, entry, 1, steps=20, batch=16, rollouts=8)

    def timeless(rec: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in rec.items() if k not in ("overhead_ms", "label")}

    seam = timeless(
        run_one(spec(Entry("seam", "greso", sampler=sampler_spec(allocation=marked), oracle=True)))
    )
    estimated = timeless(
        run_one(spec(Entry("estimated", "greso", sampler=sampler_spec(allocation=marked))))
    )
    assert seam["score"] != estimated["score"]  # the oracle changes the runs
    latest: list[SimulatedLearner] = []
    init, posterior = SimulatedLearner.__init__, BetaPosteriors.posterior

    def track(self: SimulatedLearner, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        latest[:] = [self]

    def truth(self: BetaPosteriors, ids: Any, *args: Any) -> tuple[Any, Any]:
        if self.prior_forgetting != 0.123456789:
            return posterior(self, ids, *args)
        p = np.clip(latest[0].pass_rates()[ids], 1e-6, 1.0 - 1e-6)
        return 1e4 * p, 1e4 * (1.0 - p)

    monkeypatch.setattr(SimulatedLearner, "__init__", track)
    monkeypatch.setattr(BetaPosteriors, "posterior", truth)
    patched = timeless(
        run_one(spec(Entry("patched", "greso", sampler=sampler_spec(allocation=marked))))
    )
    assert seam == patched


def test_oracle_needs_allocation() -> None:
    with pytest.raises(ValueError, match="oracle is for allocation"):
        Entry("x", "greso", oracle=True)
    with pytest.raises(ValueError, match="posterior must be a function"):
        Allocation(make_selector("greso", TaskPool(num_tasks=8)), posterior=3)  # type: ignore[arg-type]
