"""Adaptive-K: spend a fixed average sample budget unevenly, by predicted prompt difficulty.

The head's value at the prompt, V(x), is a per-prompt success estimate. Prompts are ranked by
it (percentile rank, so the compressed raw range of V does not matter; paper section 3.2):
difficulty d = 1 for the lowest V, 0 for the highest, ties share their mean rank. The ideal
allocation is linear in d, `k_min + (k_max - k_min) * d`, shifted by one constant (clipped to
[k_min, k_max]) until it sums to the budget round(K_bar * N); largest remainders then make it
integer with the exact sum. `evaluate_allocation` scores an allocation offline on a pool of
pre-generated samples: prompt i uses its first K_i samples.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "allocate_k",
    "difficulty_rank",
    "evaluate_allocation",
    "fixed_allocation",
]


def difficulty_rank(prompt_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Percentile difficulty in [0, 1]: 1 for the lowest value, 0 for the highest.

    Tied values share their average rank; a single prompt (or all tied) gets 0.5.
    """
    v = np.asarray(prompt_values, dtype=np.float64)
    n = len(v)
    if n == 0:
        return np.zeros(0)
    if not np.all(np.isfinite(v)):
        raise ValueError("prompt values must be finite")
    order = np.argsort(-v, kind="stable")  # highest value first: rank 0 = easiest
    ranks = np.empty(n)
    ranks[order] = np.arange(n, dtype=np.float64)
    for value in np.unique(v):  # average ranks within ties
        tied = v == value
        ranks[tied] = ranks[tied].mean()
    if n == 1:
        return np.full(1, 0.5)
    return ranks / (n - 1)


def _budget(n: int, k_bar: float, k_min: int, k_max: int) -> int:
    if not (isinstance(k_min, int) and isinstance(k_max, int) and 0 <= k_min <= k_max):
        raise ValueError(f"need ints 0 <= k_min <= k_max, got k_min={k_min!r}, k_max={k_max!r}")
    total = int(np.floor(k_bar * n + 0.5))  # half up (round() would go to even)
    if not k_min * n <= total <= k_max * n:
        raise ValueError(
            f"budget round(K_bar * N) = {total} cannot be split over {n} prompts within "
            f"[{k_min}, {k_max}] samples each: choose K_bar in [{k_min}, {k_max}]"
        )
    return total


def _integerize(ideal: np.ndarray, total: int, k_max: int, priority: np.ndarray) -> np.ndarray:
    """Floors plus one for the largest remainders (ties: higher priority, then lower index)."""
    floors = np.floor(ideal + 1e-9).astype(np.int64)
    floors = np.minimum(floors, k_max)
    left = total - int(floors.sum())
    rem = [round(float(r), 9) for r in ideal - floors]  # 1e-9: float noise is no remainder
    eligible = np.flatnonzero(floors < k_max).tolist()
    order = sorted(eligible, key=lambda i: (-rem[i], -float(priority[i]), i))
    if left < 0 or left > len(order):
        raise RuntimeError(f"cannot integerize: {left} samples left for {len(order)} prompts")
    floors[order[:left]] += 1
    return floors


def _shift_to_sum(x: np.ndarray, lo: float, hi: float, total: float) -> np.ndarray:
    """clip(x + s, lo, hi) with the shift s that makes it sum to total (piecewise linear)."""
    n = len(x)
    if total <= lo * n:
        return np.full(n, lo)
    if total >= hi * n:
        return np.full(n, hi)
    points = np.sort(np.concatenate([lo - x, hi - x]))

    def f(s: float) -> float:
        return float(np.clip(x + s, lo, hi).sum())

    # f increases in s; find the breakpoint segment holding total and solve it linearly.
    for a, b in itertools.pairwise(points):
        fa, fb = f(a), f(b)
        if fa <= total <= fb:
            shift = a if fb == fa else a + (total - fa) * (b - a) / (fb - fa)
            return np.asarray(np.clip(x + shift, lo, hi), dtype=np.float64)
    raise RuntimeError("shift not found")  # unreachable: f spans [lo*n, hi*n]


def allocate_k(
    prompt_values: Sequence[float] | np.ndarray, k_bar: float, k_min: int = 1, k_max: int = 8
) -> np.ndarray:
    """Integer samples per prompt, more for low V(x), in [k_min, k_max], summing to
    round(k_bar * N) exactly."""
    d = difficulty_rank(prompt_values)
    n = len(d)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    total = _budget(n, k_bar, k_min, k_max)
    ideal = _shift_to_sum(k_min + (k_max - k_min) * d, k_min, k_max, total)
    return _integerize(ideal, total, k_max, d)


def fixed_allocation(n: int, k_bar: float) -> np.ndarray:
    """The same budget round(k_bar * n) spread as evenly as possible (extra samples go to the
    first prompts): the fixed-K baseline at equal total cost."""
    total = int(np.floor(k_bar * n + 0.5))  # half up (round() would go to even)
    if n < 1 or total < 0:
        raise ValueError(f"need n >= 1 prompts and k_bar >= 0, got n={n}, k_bar={k_bar}")
    base, extra = divmod(total, n)
    out = np.full(n, base, dtype=np.int64)
    out[:extra] += 1
    return out


def evaluate_allocation(
    allocation: Sequence[int] | np.ndarray,
    correct: np.ndarray,
    value_end: np.ndarray,
    lengths: np.ndarray | None = None,
) -> dict[str, Any]:
    """Offline accuracy of an allocation on a pool: prompt i uses its first K_i samples.

    `correct` and `value_end` are (N, M) with M >= max K_i (sample j of prompt i); `lengths`
    (N, M) completion tokens. value accuracy selects the highest value_end (ties: the first)
    among the used samples; oracle is any of them correct; a prompt with K_i = 0 counts as
    wrong. Compute is forward passes as the live decoder counts them (1 shared prefill + the
    tokens after the first of every used sample); latency is the longest used sample.
    """
    k = np.asarray(allocation, dtype=np.int64)
    ok = np.asarray(correct, dtype=bool)
    ve = np.asarray(value_end, dtype=np.float64)
    if ok.shape != ve.shape or ok.ndim != 2 or len(k) != ok.shape[0]:
        raise ValueError(
            f"correct {ok.shape} and value_end {ve.shape} must be (N, M) with N = "
            f"len(allocation) = {len(k)}"
        )
    if np.any(k < 0) or np.any(k > ok.shape[1]):
        raise ValueError(f"allocations must lie in [0, {ok.shape[1]}] (the pool's samples)")
    value_hits = np.zeros(len(k))
    oracle_hits = np.zeros(len(k))
    compute = np.zeros(len(k))
    latency = np.zeros(len(k))
    for i, ki in enumerate(k.tolist()):
        if ki == 0:
            continue
        value_hits[i] = ok[i, int(np.argmax(ve[i, :ki]))]
        oracle_hits[i] = ok[i, :ki].any()
        if lengths is not None:
            used = np.asarray(lengths[i, :ki], dtype=np.int64)
            compute[i] = 1 + int(np.sum(used - 1))
            latency[i] = int(used.max())
    out: dict[str, Any] = {
        "value_accuracy": float(value_hits.mean()),
        "oracle_accuracy": float(oracle_hits.mean()),
        "mean_k": float(k.mean()),
    }
    if lengths is not None:
        out["compute"] = float(compute.mean())
        out["latency"] = float(latency.mean())
    return out
