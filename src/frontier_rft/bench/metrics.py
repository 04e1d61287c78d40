"""Metrics of the selector benchmarks, simulated and real: TTB and BSF as the BOTS paper defines
them (appendix B.4), paired against the baseline (uniform) seed by seed, and their summaries
over seeds.

A learning curve is a list of (x, score) evaluation points, the first before training; x is
training steps (or rollouts, or wall-clock seconds). For the baseline of the same seed:
P_init = its first score, P_best = its best score in the window.

- TTB(tau) = tau_M / tau_baseline, tau_X the x (counted from the curve's first x) at which X
  first reaches P_tau = P_init + tau (P_best - P_init): the first evaluated x at or above the
  target (read at evaluation points, the default). The paper's "possibly interpolated" step is
  a labelled option (`interpolate`: x linear in the score between the last evaluation below
  the target and the first at or above it); interpolating between evaluations made uneven
  evaluation schedules look like differences in learning, so no report uses it.
  None when X never reaches P_tau within its window, or the baseline made no progress.
- BSF(beta) = best_M(t) / best_baseline(t), t = floor(beta T), best_X(t) the best score of
  X's evaluations at x <= t (T = the baseline's last x). With `interpolate` (curves whose
  evaluations fall at different x, as by rollouts when entries spend differently a step),
  best_X(t) also counts X's score at t itself, linear between the evaluations around it: a
  run evaluated just past t is not scored at its previous evaluation (our addition; the paper
  compares curves on one grid of steps).

Over seeds: `summarize` gives the simulated results' mean ± std and how many seeds reached
each target; `paired_summary` the real results' per-seed values, mean and percentile-
bootstrap 95% interval (the pairing kept: each resampled seed brings its method/uniform
ratio). A TTB seed that never reached its target makes the paired mean undefined (None)
rather than optimistic: the per-seed list says which seeds reached it.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "BSF_BETAS",
    "TTB_TAUS",
    "bootstrap_mean_ci",
    "bsf",
    "first_reach",
    "km_median",
    "mean_ci",
    "median_ratio",
    "paired_summary",
    "seed_stats",
    "spearman",
    "summarize",
    "time_summary",
    "ttb",
]

TTB_TAUS = (0.5, 0.75, 1.0)
BSF_BETAS = (0.25, 0.5, 1.0)
_EPS = 1e-12


def _curve(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    xs = np.asarray(x, dtype=np.float64).ravel()
    ys = np.asarray(y, dtype=np.float64).ravel()
    if xs.shape != ys.shape or xs.size == 0:
        raise ValueError(f"a curve needs as many x as scores (>= 1), got {xs.size} and {ys.size}")
    if np.any(np.diff(xs) <= 0):
        raise ValueError("curve x values must increase strictly")
    if not np.all(np.isfinite(ys)):
        raise ValueError("curve scores must be finite")
    return xs, ys


def first_reach(
    x: ArrayLike, y: ArrayLike, target: float, *, interpolate: bool = False
) -> float | None:
    """The x of the first evaluation at or above `target` (with `interpolate`, a labelled
    option: linear between the evaluations around it); None if never."""
    xs, ys = _curve(x, y)
    hit = np.flatnonzero(ys >= target - _EPS)
    if hit.size == 0:
        return None
    i = int(hit[0])
    if i == 0 or not interpolate:
        return float(xs[i])
    y0, y1 = ys[i - 1], ys[i]
    frac = (target - y0) / (y1 - y0) if y1 > y0 else 1.0
    return float(xs[i - 1] + min(max(frac, 0.0), 1.0) * (xs[i] - xs[i - 1]))


def ttb(
    x: ArrayLike,
    y: ArrayLike,
    base_x: ArrayLike,
    base_y: ArrayLike,
    tau: float,
    *,
    interpolate: bool = False,
) -> float | None:
    """TTB(tau) of curve (x, y) against the baseline curve (BOTS appendix B.4), read at
    evaluation points unless `interpolate` (a labelled option)."""
    bx, by = _curve(base_x, base_y)
    p_init, p_best = float(by[0]), float(by.max())
    if p_best - p_init <= _EPS:
        return None  # the baseline made no progress to measure against
    target = p_init + tau * (p_best - p_init)
    base = first_reach(bx, by, target, interpolate=interpolate)
    mine = first_reach(x, y, target, interpolate=interpolate)
    if mine is None or base is None or base <= bx[0]:
        return None
    return (mine - float(np.asarray(x, dtype=np.float64)[0])) / (base - float(bx[0]))


def bsf(
    x: ArrayLike,
    y: ArrayLike,
    base_x: ArrayLike,
    base_y: ArrayLike,
    beta: float,
    *,
    interpolate: bool = False,
) -> float:
    """BSF(beta): best score by t = floor(beta T) over the baseline's best by t."""
    xs, ys = _curve(x, y)
    bx, by = _curve(base_x, base_y)
    t = math.floor(beta * float(bx[-1]) + 1e-9)

    def best(xv: NDArray[np.float64], yv: NDArray[np.float64]) -> float:
        seen = yv[xv <= t + _EPS]
        if seen.size == 0:
            raise ValueError(f"no evaluation at or before t = {t}: the first point must be x = 0")
        at_t = float(np.interp(t, xv, yv)) if interpolate and t <= xv[-1] else -math.inf
        return max(float(seen.max()), at_t)

    return float(best(xs, ys) / max(best(bx, by), _EPS))


def bootstrap_mean_ci(
    values: Sequence[float], *, resamples: int = 10_000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (seeds resampled with
    replacement). One value gives a degenerate interval."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError("bootstrap_mean_ci needs finite values")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(resamples, v.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def paired_summary(values: Sequence[float | None], seed: int = 0) -> dict[str, object]:
    """Per-seed values, their mean and bootstrap 95% CI (None when any seed is None)."""
    vals = [None if v is None or not math.isfinite(v) else float(v) for v in values]
    got = [v for v in vals if v is not None]
    complete = len(got) == len(vals) and len(vals) > 0
    out: dict[str, object] = {
        "values": vals,
        "reached": len(got),
        "mean": float(np.mean(got)) if complete else None,
        "ci": list(bootstrap_mean_ci(got, seed=seed)) if complete else None,
        "mean_reached": float(np.mean(got)) if got else None,
    }
    return out


def km_median(times: Sequence[float], reached: Sequence[bool]) -> float | None:
    """The Kaplan-Meier median of times to an event: the first time at which the estimated
    share not yet reached falls to 1/2 or below; a seed that never reached counts as still
    out at its own time (censored) and leaves the risk set after it (after the events of the
    same time). None when the share never falls that far (the median lies beyond every
    seed's budget)."""
    got = _km_medians(np.asarray([times], dtype=np.float64), np.asarray([reached], dtype=np.bool_))[
        0
    ]
    return float(got) if math.isfinite(got) else None


def _km_medians(times: NDArray[np.float64], reached: NDArray[np.bool_]) -> NDArray[np.float64]:
    """`km_median` of each row of (R, n) arrays at once (inf where undefined)."""
    r, n = times.shape
    if n == 0:
        return np.full(r, math.inf)
    order = np.lexsort((~reached, times), axis=1)  # by time, events before censorings
    t = np.take_along_axis(times, order, axis=1)
    e = np.take_along_axis(reached, order, axis=1)
    at_risk = n - np.arange(n, dtype=np.float64)
    surviving = np.cumprod(np.where(e, 1.0 - 1.0 / at_risk, 1.0), axis=1)
    hit = e & (surviving <= 0.5 + _EPS)
    first = np.argmax(hit, axis=1)
    return np.where(hit.any(axis=1), t[np.arange(r), first], math.inf)


def time_summary(
    values: Sequence[float | None],
    budgets: Sequence[float],
    *,
    resamples: int = 2_000,
    seed: int = 0,
) -> dict[str, Any]:
    """A time to a score over seeds, read at evaluation points, censoring shown: `values[i]`
    the time seed i reached it, None where it never did within its budget `budgets[i]`. The
    mean and its CI only when every seed reached (never over those that did); the
    survival-style (Kaplan-Meier) median with a percentile-bootstrap CI over seeds always
    (None where the median lies beyond the budgets; an interval end beyond them is None)."""
    if len(values) != len(budgets):
        raise ValueError("time_summary needs a budget per value")
    got = [v if v is not None and math.isfinite(v) else None for v in values]
    reached = [v is not None for v in got]
    times = [float(b) if v is None else float(v) for v, b in zip(got, budgets, strict=True)]
    out: dict[str, Any] = {
        "values": [None if v is None else float(v) for v in got],
        "budgets": [float(b) for b in budgets],
        "reached": sum(reached),
        "mean": float(np.mean(times)) if times and all(reached) else None,
        "ci": list(bootstrap_mean_ci(times, seed=seed)) if times and all(reached) else None,
        "median": km_median(times, reached) if times else None,
        "median_ci": None,
    }
    if times and resamples:
        pick = np.random.default_rng(seed).integers(0, len(times), size=(resamples, len(times)))
        t, e = np.asarray(times)[pick], np.asarray(reached)[pick]
        out["median_ci"] = _order_ci(_km_medians(t, e))
    return out


def _order_ci(draws: NDArray[np.float64]) -> list[float | None]:
    """The 2.5% and 97.5% order statistics of bootstrap draws, inf (undefined) read as beyond
    every finite one (an end that falls there is None)."""
    x = np.where(np.isnan(draws), math.inf, draws)
    lo, hi = np.quantile(x, [0.025, 0.975], method="inverted_cdf")
    return [float(v) if math.isfinite(v) else None for v in (lo, hi)]


def ratio_of_median_ratios(
    high: tuple[Mapping[str, Any], Mapping[str, Any]],
    low: tuple[Mapping[str, Any], Mapping[str, Any]],
    *,
    resamples: int = 2_000,
    seed: int = 0,
) -> dict[str, Any]:
    """(a / b in `high`) over (a / b in `low`), each pair (a, b) two `time_summary` cells of
    the same seeds and each ratio one of Kaplan-Meier medians, the seeds resampled together
    across all four for the percentile-bootstrap CI; None where a median lies beyond the
    budgets (an interval end likewise)."""
    cells = (*high, *low)
    times = [
        np.asarray(
            [b if v is None else v for v, b in zip(c["values"], c["budgets"], strict=True)],
            dtype=np.float64,
        )
        for c in cells
    ]
    reached = [np.asarray([v is not None for v in c["values"]], dtype=np.bool_) for c in cells]
    n = len(times[0])

    def ratios(pick: NDArray[np.int64]) -> NDArray[np.float64]:
        ha, hb, la, lb = (
            _km_medians(t[pick], r[pick]) for t, r in zip(times, reached, strict=True)
        )
        ok = np.isfinite(ha) & np.isfinite(hb) & np.isfinite(la) & np.isfinite(lb)
        ok &= (hb > 0) & (la > 0) & (lb > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(ok, (ha / hb) / (la / lb), math.inf)

    point = float(ratios(np.arange(n)[None, :])[0]) if n else math.inf
    out: dict[str, Any] = {"ratio": point if math.isfinite(point) else None, "ci": None}
    if n and resamples:
        pick = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
        out["ci"] = _order_ci(ratios(pick))
    return out


def median_ratio(
    mine: Sequence[float | None],
    mine_budgets: Sequence[float],
    base: Sequence[float | None],
    base_budgets: Sequence[float],
    *,
    resamples: int = 2_000,
    seed: int = 0,
) -> dict[str, Any]:
    """The ratio of two arms' Kaplan-Meier median times to a score (mine over base), paired
    seeds resampled together for its percentile-bootstrap CI; None where a median lies beyond
    the budgets (an interval end likewise)."""
    a, b = (
        time_summary(mine, mine_budgets, resamples=0),
        time_summary(base, base_budgets, resamples=0),
    )
    ta = [v if v is not None else t for v, t in zip(a["values"], a["budgets"], strict=True)]
    tb = [v if v is not None else t for v, t in zip(b["values"], b["budgets"], strict=True)]
    ra, rb = [v is not None for v in a["values"]], [v is not None for v in b["values"]]

    def ratio(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None or y <= 0 else x / y

    out: dict[str, Any] = {
        "reached": a["reached"],
        "base_reached": b["reached"],
        "n": len(ta),
        "ratio": ratio(a["median"], b["median"]),
        "ci": None,
    }
    if ta and resamples:
        pick = np.random.default_rng(seed).integers(0, len(ta), size=(resamples, len(ta)))
        ma = _km_medians(np.asarray(ta)[pick], np.asarray(ra)[pick])
        mb = _km_medians(np.asarray(tb)[pick], np.asarray(rb)[pick])
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = np.where(np.isfinite(ma) & np.isfinite(mb) & (mb > 0), ma / mb, math.inf)
        out["ci"] = _order_ci(draws)
    return out


def mean_ci(values: Sequence[float | None]) -> dict[str, Any]:
    """The finite values, their mean and bootstrap 95% CI; the values as given and no mean
    when none is finite."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return {"values": list(values), "mean": None, "ci": None}
    return {"values": vals, "mean": float(np.mean(vals)), "ci": list(bootstrap_mean_ci(vals))}


def seed_stats(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Mean and std over the seeds with a finite value, how many those are, of how many."""
    got = [v for v in values if v is not None and math.isfinite(v)]
    return {
        "mean": float(np.mean(got)) if got else None,
        "std": float(np.std(got)) if got else None,
        "reached": len(got),
        "of": len(values),
    }


def summarize(
    curves: Mapping[int, ArrayLike],
    baselines: Mapping[int, ArrayLike],
    per_step: Mapping[str, Mapping[int, ArrayLike]],
    finals: dict[str, dict[int, float]] | None = None,
) -> dict[str, dict[str, float | int | None]]:
    """TTB, BSF, means of per-step series and final values of one label, over seeds: each
    curve a score per training step (step 0 before training), paired with the baseline's
    curve of the same seed (same learner, same task pool)."""
    seeds = sorted(curves)

    def steps(curve: ArrayLike) -> NDArray[np.float64]:
        return np.arange(np.asarray(curve).size, dtype=np.float64)

    pairs = [(steps(curves[s]), curves[s], steps(baselines[s]), baselines[s]) for s in seeds]
    out: dict[str, dict[str, float | int | None]] = {}
    for tau in TTB_TAUS:
        out[f"ttb{round(100 * tau)}"] = seed_stats(
            [ttb(*pair, tau, interpolate=False) for pair in pairs]
        )
    for beta in BSF_BETAS:
        out[f"bsf{round(100 * beta)}"] = seed_stats([bsf(*pair, beta) for pair in pairs])
    out["final_score"] = seed_stats([float(np.asarray(curves[s])[-1]) for s in seeds])
    out["best_score"] = seed_stats([float(np.max(curves[s])) for s in seeds])
    for key, series in per_step.items():
        out[key] = seed_stats([float(np.nanmean(np.asarray(series[s], float))) for s in seeds])
    for key, values in (finals or {}).items():
        out[key] = seed_stats([values[s] for s in seeds])
    return out


def spearman(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman rank correlation (average ranks for ties); nan where it is undefined (a
    constant side, fewer than 2 pairs). scipy loads on the first call, not on import."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    spearmanr: Any = importlib.import_module("scipy.stats").spearmanr  # scikit-learn's dep
    return float(spearmanr(x, y).statistic)
