"""The allocation rule: how many rollouts each prompt of a step gets, as pure functions.

Prompt k's success rate has a Beta(a_k, b_k) posterior. The value of giving it a group of n
rollouts is w_k q_k(n), q_k(n) = 1 - E[p^n] - E[(1-p)^n] the chance that the group is
informative (docs/selectors/allocation.md derives the rule):

    maximise sum_k w_k q_k(n_k)   subject to   sum_k n_k = R,   n_min <= n_k <= n_max

The marginal value of rollout n + 1 has a closed form (E[p^n (1-p)] = E[p^n] b / (a + b + n)):

    D_k(n) = w_k (E[p^n] b + E[(1-p)^n] a) / (a + b + n)

the chance that n rollouts agree and the next one breaks the tie. D_k(n) falls with n (q_k is
concave), so taking the R - sum n_min largest marginal values over all prompts (`take_greedy`)
is an optimal allocation, as water-filling is for any separable concave objective.

A second stage (the pilot's commit) continues groups whose pilot came out all high (all
equal to 1 for binary rewards) or all low: only a low (high) reward breaks the tie, so
D(m) = w E'[p^m] b' / (a' + b' + m) (or E'[(1-p)^m] a' / (a' + b' + m)) for the m-th extra
rollout, under the posterior Beta(a', b') that includes the pilot; a mixed pilot is
informative already (D = 0).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.informative import agreement_moments

__all__ = [
    "FRESH",
    "HIGH",
    "LOW",
    "MIXED",
    "expected_signal",
    "knapsack_weight",
    "marginal_gains",
    "signal_gains",
    "take_greedy",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
FRESH, HIGH, LOW, MIXED = 0, 1, -1, 2
"""A group's state before its next rollout: none yet this step, all rewards high so far,
all low so far, or mixed already."""


def knapsack_weight(a: F64, b: F64) -> F64:
    """Knapsack RL's per-prompt value p (1 - p)^2, at the posterior mean p = a / (a + b)."""
    p = a / (a + b)
    out: F64 = p * (1.0 - p) ** 2
    return out


def marginal_gains(
    a: F64,
    b: F64,
    start: int,
    stop: int,
    weight: F64 | None = None,
    state: NDArray[np.int8] | None = None,
) -> F64:
    """(k, stop - start) table: entry [k, j] is D_k(start + j), the value of prompt k's rollout
    number start + j + 1 (counted from its state's start: a fresh group's first rollout, or
    a pilot's first extra one); `weight` w_k (None: 1); `state` per prompt (None: FRESH)."""
    succ, fail = agreement_moments(a, b, stop)
    n = np.arange(start, stop, dtype=np.float64)
    denom = (a + b)[:, None] + n
    high = succ[:, start:stop] * b[:, None] / denom  # all successes, then a failure
    low = fail[:, start:stop] * a[:, None] / denom  # all failures, then a success
    if state is None:
        gains = high + low
    else:
        s = state[:, None]
        gains = np.where(s == FRESH, high + low, np.where(s == HIGH, high, 0.0))
        gains = np.where(s == LOW, low, gains)
    if weight is not None:
        gains = gains * weight[:, None]
    out: F64 = gains
    return out


def expected_signal(a: F64, b: F64, stop: int, head_s: F64, head_n: F64) -> F64:
    """(k, stop) table: entry [k, m] is S_k(m) = E[2 sqrt(r (1 - r))], the expected mean
    |GRPO advantage| of prompt k's group once m more rollouts join the head_n it has (head_s
    of them successes), r the group's pass rate, under the Beta-binomial law of the m new
    successes; 0 for a group of one rollout. Log-space sums: no underflow at large m."""
    k = a.shape[0]
    i = np.arange(max(stop - 1, 0), dtype=np.float64)
    zero = np.zeros((k, 1))
    log_a = np.concatenate([zero, np.cumsum(np.log(a[:, None] + i), axis=1)], axis=1)
    log_b = np.concatenate([zero, np.cumsum(np.log(b[:, None] + i), axis=1)], axis=1)
    log_ab = np.concatenate([zero, np.cumsum(np.log((a + b)[:, None] + i), axis=1)], axis=1)
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, max(stop, 1))))])
    out = np.zeros((k, stop))
    for m in range(stop):
        x = np.arange(m + 1)
        log_pmf = (
            log_fact[m] - log_fact[x] - log_fact[m - x] + log_a[:, x] + log_b[:, m - x]
        ) - log_ab[:, m : m + 1]
        total = head_n[:, None] + m
        rate = (head_s[:, None] + x) / np.maximum(total, 1.0)
        value = np.where(total > 1, 2.0 * np.sqrt(np.clip(rate * (1.0 - rate), 0.0, None)), 0.0)
        out[:, m] = (np.exp(log_pmf) * value).sum(axis=1)
    return out


def signal_gains(a: F64, b: F64, start: int, stop: int, head_s: F64, head_n: F64) -> F64:
    """(k, stop - start) table of S_k(m + 1) - S_k(m) for m in [start, stop): the expected
    mean |advantage| a group gains from one more rollout (see `expected_signal`)."""
    s = expected_signal(a, b, stop + 1, head_s, head_n)
    out: F64 = np.diff(s, axis=1)[:, start:stop]
    return out


def take_greedy(gains: F64, extra: int, capacity: I64 | None = None) -> I64:
    """Rollouts per row: the `extra` largest entries of the table, where row k offers its
    first capacity[k] columns (None: all). Ties go to the smaller column, then the earlier
    row, so equal values spread evenly and each row takes a prefix of its columns (its
    values fall along the row)."""
    k, width = gains.shape
    cols = np.tile(np.arange(width), k)
    rows = np.repeat(np.arange(k), width)
    key = -gains.ravel()
    if capacity is not None:
        key = np.where(cols < np.repeat(capacity, width), key, np.inf)
    offered = int(np.isfinite(key).sum())
    if extra > offered:
        raise ValueError(f"cannot place {extra} rollouts in {offered} open slots")
    order = np.lexsort((rows, cols, key))[:extra]
    out: I64 = np.bincount(rows[order], minlength=k).astype(np.int64)
    return out
