"""Fit the simulated learner to measurements of a real run (numpy only).

Two fits, each of few parameters (docs/simulation.md, "Calibration"):

- The pool's start state: tasks whose logit at the start is N(-offset, spread^2) give, under
  n rollouts each, the histogram of successes `start_histogram`; `fit_start` finds (offset,
  spread) from a measured histogram, or from the mean pass rate and the zero-variance share.
- The learner's speed: `fit_learning_rate` finds the learning rate at which uniform sampling
  gains what a real run gained, by bisection on the simulator itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from frontier_rft.core.arrays import F64
from frontier_rft.simulation.runner import Entry, RunSpec, run_one
from frontier_rft.simulation.scenario import ScenarioConfig

__all__ = [
    "fit_learning_rate",
    "fit_start",
    "start_histogram",
    "uniform_gain",
    "zero_variance_share",
]

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(32)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()  # expectation over a standard normal
OFFSETS = np.round(np.arange(-6.0, 8.0 + 1e-9, 0.2), 6)
"""Coarse grid of start offsets fit_start searches (logits), refined to 0.005 around the best."""
SPREADS = np.round(np.arange(0.0, 4.0 + 1e-9, 0.1), 6)
"""Coarse grid of start spreads fit_start searches (logits), refined likewise."""
FINE = 0.005
"""Step of the refined grid (logits)."""


def start_histogram(
    offset: float | F64, spread: float | F64, samples: int, slope: float = 1.0
) -> F64:
    """P(k successes of `samples`), k = 0..samples, for a task drawn with logit
    N(-offset, spread^2) (times `slope`); broadcasts over arrays of offsets and spreads
    (the histogram is the last axis)."""
    off = np.asarray(offset, dtype=np.float64)[..., None]
    spr = np.asarray(spread, dtype=np.float64)[..., None]
    p = 0.5 * (1.0 + np.tanh(0.5 * slope * (spr * _NODES - off)))  # (..., nodes)
    k = np.arange(samples + 1)
    comb = np.array([math.comb(samples, int(j)) for j in k], dtype=np.float64)
    pmf = comb * p[..., None] ** k * (1.0 - p[..., None]) ** (samples - k)  # (..., nodes, k)
    out: F64 = np.einsum("...nk,n->...k", pmf, _WEIGHTS)
    return out


def zero_variance_share(histogram: F64) -> F64:
    """Share of tasks whose n rollouts all fail or all succeed (no GRPO signal)."""
    out: F64 = histogram[..., 0] + histogram[..., -1]
    return out


def fit_start(
    samples: int,
    *,
    histogram: Sequence[float] | None = None,
    mean: float | None = None,
    zero_share: float | None = None,
    spread: float | None = None,
    slope: float = 1.0,
) -> tuple[float, float]:
    """(offset, spread) whose start histogram is nearest the measurement: a histogram of
    successes out of `samples` (least squares), or its mean pass rate and zero-variance
    share (both required then). Searched on the OFFSETS x SPREADS grid, or over OFFSETS
    alone when `spread` is given."""
    if histogram is not None:
        target = np.asarray(histogram, dtype=np.float64)
        if target.shape != (samples + 1,) or not np.all(np.isfinite(target)) or target.sum() <= 0:
            raise ValueError(f"histogram needs {samples + 1} finite counts with a positive sum")
        target = target / target.sum()
    elif mean is None or zero_share is None:
        raise ValueError("fit_start needs a histogram, or both mean and zero_share")
    elif not (0.0 <= mean <= 1.0 and 0.0 <= zero_share <= 1.0):
        raise ValueError(f"mean and zero_share must lie in [0, 1], got {mean}, {zero_share}")
    mean_target, zero_target = mean or 0.0, zero_share or 0.0

    def best(offsets: F64, spreads: F64) -> tuple[float, float]:
        hist = start_histogram(offsets[:, None], spreads[None, :], samples, slope)
        if histogram is not None:
            loss = ((hist - target) ** 2).sum(axis=-1)
        else:
            mean_of = hist @ (np.arange(samples + 1) / samples)
            loss = (mean_of - mean_target) ** 2 + (zero_variance_share(hist) - zero_target) ** 2
        i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
        return float(offsets[i]), float(spreads[j])

    fixed = None if spread is None else np.array([float(spread)])
    off, spr = best(OFFSETS, SPREADS if fixed is None else fixed)
    steps = np.arange(-40, 41) * FINE
    fine_spreads = np.round(np.clip(spr + steps, 0.0, None), 6) if fixed is None else fixed
    return best(np.round(off + steps, 6), fine_spreads)


def uniform_gain(
    cfg: ScenarioConfig, seeds: Sequence[int], *, steps: int, batch: int, rollouts: int
) -> float:
    """Mean held-out gain (final minus start score) of uniform sampling over `seeds`."""
    gains = []
    for seed in seeds:
        score = run_one(RunSpec(cfg, Entry("uniform", "uniform"), seed, steps, batch, rollouts))
        gains.append(score["score"][-1] - score["score"][0])
    return float(np.mean(gains))


def fit_learning_rate(
    cfg: ScenarioConfig,
    target_gain: float,
    seeds: Sequence[int],
    *,
    steps: int,
    batch: int,
    rollouts: int,
    start: float | None = None,
    tolerance: float = 0.003,
    bisections: int = 6,
) -> float | None:
    """The learning rate at which uniform's mean held-out gain over `seeds` is `target_gain`
    (within `tolerance`): from `start` (default: the scenario's rate), steps of 1.6x up or
    down until the target is bracketed, then bisection in log. None when the gain peaks
    below the target (with interference, more speed past a point only adds harm) or no
    rate in [1e-4, 1e4] x `start` brackets it."""

    def gain(lr: float) -> float:
        return uniform_gain(
            cfg.replace(learning_rate=lr), seeds, steps=steps, batch=batch, rollouts=rollouts
        )

    lr = cfg.learning_rate if start is None else start
    first, now = lr, gain(lr)
    tried = [(lr, now)]
    direction = 1.6 if now < target_gain else 1 / 1.6
    while (now < target_gain) == (direction > 1):
        if not 1e-4 * first <= lr * direction <= 1e4 * first:
            return None
        lr *= direction
        previous, now = now, gain(lr)
        tried.append((lr, now))
        if direction > 1 and now < previous - 0.01:  # past the peak, still short
            return None
    lo, hi = sorted((lr, lr / direction))
    for _ in range(bisections):
        if abs(now - target_gain) <= tolerance:
            break
        lr = math.sqrt(lo * hi)
        now = gain(lr)
        tried.append((lr, now))
        lo, hi = (lr, hi) if now < target_gain else (lo, lr)
    return min(tried, key=lambda t: abs(t[1] - target_gain))[0]
