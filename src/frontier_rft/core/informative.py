"""When is a group of rollouts informative? Beta-Bernoulli facts shared by the Bayesian skip
(selectors/skip.py) and the rollout allocation (sampling/allocation.py).

A prompt's success rate p has a Beta(a, b) posterior. A group of n rollouts carries a
group-relative gradient only when its rewards are not all equal; for binary rewards

    q(a, b, n) = 1 - E[p^n] - E[(1-p)^n],      E[p^n] = prod_{i<n} (a + i) / (a + b + i)

is the chance of that. The empirical-Bayes prior Beta(c m, c (1 - m)) both use is fitted by
moments to the pass rates a pool has shown (`fit_beta_prior`).
"""

from __future__ import annotations

import numpy as np

from frontier_rft.core.arrays import F64

__all__ = [
    "MAX_GROUP",
    "PRIOR_MIN_GROUPS",
    "PRIOR_STRENGTH",
    "agreement_moments",
    "fit_beta_prior",
    "informative_probability",
    "pass_rate_moments",
]

MAX_GROUP = 4096
"""Group sizes beyond this are read as this (q has converged long before)."""
PRIOR_STRENGTH = (0.1, 100.0)
"""Bounds of the fitted prior strength c (pseudo-rollouts)."""
PRIOR_MIN_GROUPS = 16.0
"""(Decayed) groups seen before the prior is fitted instead of the base one."""


def informative_probability(a: F64, b: F64, n: int) -> F64:
    """1 - E[p^n] - E[(1-p)^n] for p ~ Beta(a, b): the chance that n Bernoulli(p) rollouts
    are neither all successes nor all failures (0 for n <= 1)."""
    if n <= 1:
        return np.zeros_like(a)
    all_s, all_f = np.ones_like(a), np.ones_like(a)
    total = a + b
    for i in range(min(n, MAX_GROUP)):
        all_s *= (a + i) / (total + i)
        all_f *= (b + i) / (total + i)
    q: F64 = np.clip(1.0 - all_s - all_f, 0.0, 1.0)
    return q


def agreement_moments(a: F64, b: F64, stop: int) -> tuple[F64, F64]:
    """(E[p^j], E[(1-p)^j]) for j = 0..stop-1, one row per prompt ((k, stop) each): the
    chance that j rollouts are all successes, or all failures."""
    j = np.arange(max(stop - 1, 0), dtype=np.float64)
    total = (a + b)[:, None] + j
    ones = np.ones((a.shape[0], 1))
    succ = np.concatenate([ones, np.cumprod((a[:, None] + j) / total, axis=1)], axis=1)
    fail = np.concatenate([ones, np.cumprod((b[:, None] + j) / total, axis=1)], axis=1)
    return succ[:, :stop], fail[:, :stop]


def pass_rate_moments(sums: F64, counts: F64, *, per_rollout: bool = False) -> F64:
    """One batch's moments for `fit_beta_prior`: (groups, sum of pass rates, sum of their
    squares, sum of the unbiased within-group variances r (1 - r) n / (n - 1)), over the
    groups of two or more rollouts (one says nothing about its spread). With `per_rollout`
    each variance is divided by its group's n: the binomial noise of groups of any size."""
    rates, big = sums / counts, counts > 1
    within = rates * (1.0 - rates) * counts / np.maximum(counts - 1.0, 1.0)
    if per_rollout:
        within = within / counts
    return np.array([big.sum(), rates[big].sum(), (rates[big] ** 2).sum(), within[big].sum()])


def fit_beta_prior(
    moments: F64, group_size: float, base: tuple[float, float]
) -> tuple[float, float]:
    """(m, c): mean and strength of the prior Beta(c m, c (1 - m)), fitted by moments.

    `moments` = (groups, sum r, sum r^2, sum within) as `pass_rate_moments` gives them
    (decayed sums). m is the mean pass rate; var(p) = var(r) - E[p (1 - p)] / n takes the
    binomial noise of groups of n = `group_size` rollouts out (1 when the within-group
    variances were divided by their n already); c = m (1 - m) / var(p) - 1, clipped to
    PRIOR_STRENGTH. Fewer than PRIOR_MIN_GROUPS groups: `base` = (alpha0, beta0).
    """
    w, s1, s2, within = moments
    if w < PRIOR_MIN_GROUPS:
        return base[0] / (base[0] + base[1]), base[0] + base[1]
    m = s1 / w
    spread = s2 / w - m * m - (within / w) / group_size  # var(p) = var(r) - E[p(1-p)]/n
    if m <= 0.0 or m >= 1.0 or spread >= m * (1.0 - m):
        return m, PRIOR_STRENGTH[0]  # every rate at 0 or 1: as U-shaped as it gets
    c = m * (1.0 - m) / spread - 1.0 if spread > 0.0 else PRIOR_STRENGTH[1]
    return m, float(np.clip(c, *PRIOR_STRENGTH))
