"""The noise meter's estimator (core/noise_scale.py) on planted gradients: its expectation is
exactly |G|^2 and the two noise terms, computed by enumerating every draw of a finite model."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from frontier_rft.core.noise_scale import (
    NOISE_METRICS,
    NoiseEma,
    accumulated_estimate,
    halves,
    halves_estimate,
    moment_row,
    solve,
)

G = np.array([0.3, -0.2, 0.5])
ALPHA = np.array([0.7, 0.4, -0.9])
"""A prompt's effect is +ALPHA or -ALPHA (prob 1/2): tr Sigma_inter = |ALPHA|^2."""
EPS = np.array([-1.1, 0.6, 0.8])
"""A row's own noise is +EPS or -EPS (prob 1/2): tr Sigma_intra = |EPS|^2."""
TRUTH = np.array([G @ G, ALPHA @ ALPHA, EPS @ EPS])


def _draws(sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Every draw of the planted model for groups of `sizes` rows: (draws, N, 3) per-row
    gradients G + s_p ALPHA + t_r EPS over all sign patterns s, t, and each row's prompt."""
    prompt = np.repeat(np.arange(len(sizes)), sizes)
    rows = prompt.size
    out = []
    for s in itertools.product((1.0, -1.0), repeat=len(sizes)):
        for t in itertools.product((1.0, -1.0), repeat=rows):
            out.append(G + np.outer(np.array(s)[prompt], ALPHA) + np.outer(t, EPS))
    return np.array(out), prompt


def _mean(grads: np.ndarray, coef: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return coef[rows] @ grads[rows] / coef[rows].sum()


def _estimate(grads: np.ndarray, sizes: list[int], coef: np.ndarray) -> np.ndarray:
    split = halves(sizes)
    a, b = _mean(grads, coef, split.prompt_a), _mean(grads, coef, split.prompt_b)
    r1, r2 = _mean(grads, coef, split.rollout_1), _mean(grads, coef, split.rollout_2)
    est = halves_estimate(split, coef, a @ b, (a - b) @ (a - b), (r1 - r2) @ (r1 - r2))
    return np.array([est.grad_sq, est.inter, est.intra])


@pytest.mark.parametrize(
    "sizes, weighted",
    [([2, 2, 2], False), ([2, 3, 2], True), ([3, 4], True), ([3, 2, 2], False)],
    ids=["equal", "ragged-weighted", "two-prompts", "ragged"],
)
def test_the_halves_estimate_is_exact_in_expectation(sizes: list[int], weighted: bool) -> None:
    """Averaged over every draw (each equally likely), the estimate is the planted truth, for
    ragged groups, odd sizes and unequal loss coefficients (token counts, group weights)."""
    draws, _ = _draws(sizes)
    n = sum(sizes)
    coef = np.random.default_rng(3).uniform(0.2, 2.0, n) if weighted else np.ones(n)
    mean = np.mean([_estimate(g, sizes, coef) for g in draws], axis=0)
    np.testing.assert_allclose(mean, TRUTH, rtol=1e-10, atol=1e-12)


def test_the_moment_of_any_two_linear_forms_is_exact() -> None:
    """E[U . V] = moment_row(u, v) . theta for arbitrary forms, overlapping rows included:
    what makes any set of sub-batches (TRL's micro-batches) a system to solve."""
    sizes = [3, 2, 3]
    draws, prompt = _draws(sizes)
    rng = np.random.default_rng(0)
    for _ in range(4):
        u, v = rng.normal(size=prompt.size), rng.normal(size=prompt.size)
        observed = np.mean([(u @ g) @ (v @ g) for g in draws])
        assert math.isclose(observed, moment_row(u, v, prompt) @ TRUTH, rel_tol=1e-10)


def test_accumulated_micro_batches_of_shuffled_rows_are_exact_in_expectation() -> None:
    """TRL's design: the step's rows shuffled into three micro-batches (a prompt's rollouts
    spread over them), each with its own loss normaliser (bnpo: its tokens), read as a hook
    reads them, |m_i|^2 and m_i . (sum of the earlier): the expectation is the truth."""
    sizes = [3, 2, 3]
    draws, prompt = _draws(sizes)
    rng = np.random.default_rng(5)
    order = rng.permutation(prompt.size)
    batches = [order[:3], order[3:6], order[6:]]
    lengths = rng.integers(1, 9, prompt.size).astype(float)
    coefs = [lengths[b] / lengths[b].sum() / len(batches) for b in batches]
    estimates = []
    for g in draws:
        grads = [c @ g[b] for c, b in zip(coefs, batches, strict=True)]
        squares = [m @ m for m in grads]
        crosses = [m @ sum(grads[:i], np.zeros(3)) for i, m in enumerate(grads)]
        est = accumulated_estimate([prompt[b] for b in batches], coefs, squares, crosses)
        estimates.append([est.grad_sq, est.inter, est.intra])
    np.testing.assert_allclose(np.mean(estimates, axis=0), TRUTH, rtol=1e-10, atol=1e-12)
    assert est.rows == prompt.size


def test_equal_halves_are_mccandlishs_two_batch_formulas() -> None:
    """B prompts of K rollouts, equal weights: |G|^2 and tr Sigma_inter + tr Sigma_intra / K
    are McCandlish's App. A formulas at B_s = B/2, B_b = B; tr Sigma_intra is the same formula
    halving the rollouts of half the prompts, (B/2) K |G_R1 - G_R2|^2 / 4."""
    rng = np.random.default_rng(1)
    b, k = 4, 6
    sizes = [k] * b
    grads = rng.normal(size=(b * k, 5))
    est = halves(sizes)
    coef = np.ones(b * k)
    got = _estimate(grads, sizes, coef)
    small = [_mean(grads, coef, est.prompt_a), _mean(grads, coef, est.prompt_b)]
    big = grads.mean(0)
    small_sq = np.mean([s @ s for s in small])
    bs, bb = b / 2, b
    grad_sq = (bb * (big @ big) - bs * small_sq) / (bb - bs)
    total = (small_sq - big @ big) / (1 / bs - 1 / bb)
    r1, r2 = _mean(grads, coef, est.rollout_1), _mean(grads, coef, est.rollout_2)
    intra = (b / 2) * k * (r1 - r2) @ (r1 - r2) / 4
    np.testing.assert_allclose(got, [grad_sq, total - intra / k, intra], rtol=1e-10)


def test_a_group_of_one_rollout_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="group 1 has 1 rollout") as info:
        halves([4, 1, 4])
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="two groups") as info:
        halves([8])
    assert "\n" not in str(info.value)


def test_a_design_that_cannot_separate_the_terms_is_refused() -> None:
    prompt = np.array([0, 1])
    u = np.array([1.0, 0.0])
    rows = [moment_row(u, u, prompt), moment_row(u, u, prompt), moment_row(u, u, prompt)]
    with pytest.raises(ValueError, match="cannot separate"):
        solve([1.0, 1.0, 1.0], rows)


def test_the_ema_smooths_numerator_and_denominator_apart_and_resumes_exactly() -> None:
    sizes = [4, 4, 4, 4]
    split = halves(sizes)
    coef = np.ones(16)
    first = halves_estimate(split, coef, 0.5, 2.0, 4.0)
    second = halves_estimate(split, coef, -0.1, 3.0, 5.0)
    ema = NoiseEma(0.9)
    m1 = ema.update(first)
    # bias-corrected: the first value is its own mean
    assert m1["noise/grad_sq_ema"] == pytest.approx(first.grad_sq)
    assert m1["noise/b_simple_ema"] == pytest.approx(first.trace() / first.grad_sq)
    assert set(m1) <= set(NOISE_METRICS)
    saved = ema.state_dict()
    m2 = ema.update(second)
    assert "noise/b_simple" not in m2  # this step's |G|^2 estimate <= 0: no ratio
    g = (0.9 * 0.1 * first.grad_sq + 0.1 * second.grad_sq) / (1 - 0.9**2)
    assert m2["noise/grad_sq_ema"] == pytest.approx(g)
    trace = second.trace(m2["noise/inter_ema"], m2["noise/intra_ema"])
    assert m2["noise/b_simple_ema"] == pytest.approx(trace / g)  # ratio of the smoothed
    again = NoiseEma(0.9)
    again.load_state_dict(saved)
    assert again.update(second) == m2
    with pytest.raises(ValueError, match="noise_ema"):
        NoiseEma(1.0)
