"""Benchmark metrics: time-to-baseline and best-so-far against uniform.

Each method's curve is paired with the baseline's curve of the same seed (same learner,
same task pool); summaries are mean and std over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["BSF_BETAS", "TTB_TAUS", "bsf", "steps_to_reach", "summarize", "ttb"]

TTB_TAUS = (0.5, 0.75, 1.0)
BSF_BETAS = (0.25, 0.5, 1.0)
_EPS = 1e-12


def steps_to_reach(curve: ArrayLike, target: float) -> int | None:
    """Training steps until the curve first reaches `target` (curve[0] is before training)."""
    values = np.asarray(curve, dtype=np.float64)
    hit = np.flatnonzero(values >= target - _EPS)
    return int(hit[0]) if hit.size else None


def ttb(curve: ArrayLike, baseline: ArrayLike, tau: float) -> float | None:
    """TTB(tau): steps to reach P_init + tau (P_best - P_init) of the baseline, over the baseline's.

    P_init and P_best are the baseline's initial and best scores. None when the method
    never reaches the target (or the baseline made no progress to measure against).
    """
    base = np.asarray(baseline, dtype=np.float64)
    p_init, p_best = float(base[0]), float(base.max())
    if p_best - p_init <= _EPS:
        return None
    target = p_init + tau * (p_best - p_init)
    base_steps = steps_to_reach(base, target)
    steps = steps_to_reach(curve, target)
    if steps is None or not base_steps:
        return None
    return steps / base_steps


def bsf(curve: ArrayLike, baseline: ArrayLike, beta: float) -> float:
    """BSF(beta): best score within the first beta share of the budget, over the baseline's."""
    values = np.asarray(curve, dtype=np.float64)
    base = np.asarray(baseline, dtype=np.float64)
    k = max(1, round(beta * (values.shape[0] - 1)))
    return float(values[: k + 1].max() / max(float(base[: k + 1].max()), _EPS))


def _stats(values: Sequence[float | None]) -> dict[str, float | int | None]:
    got = [v for v in values if v is not None and math.isfinite(v)]
    return {
        "mean": float(np.mean(got)) if got else None,
        "std": float(np.std(got)) if got else None,
        "reached": len(got),
        "of": len(values),
    }


def summarize(
    curves: dict[int, ArrayLike],
    baselines: dict[int, ArrayLike],
    per_step: dict[str, dict[int, ArrayLike]],
    finals: dict[str, dict[int, float]] | None = None,
) -> dict[str, dict[str, float | int | None]]:
    """TTB, BSF, means of per-step series and final values for one label, keyed by seed."""
    seeds = sorted(curves)
    out: dict[str, dict[str, float | int | None]] = {}
    for tau in TTB_TAUS:
        out[f"ttb{round(100 * tau)}"] = _stats([ttb(curves[s], baselines[s], tau) for s in seeds])
    for beta in BSF_BETAS:
        out[f"bsf{round(100 * beta)}"] = _stats([bsf(curves[s], baselines[s], beta) for s in seeds])
    out["final_score"] = _stats([float(np.asarray(curves[s])[-1]) for s in seeds])
    out["best_score"] = _stats([float(np.max(curves[s])) for s in seeds])
    for key, series in per_step.items():
        out[key] = _stats([float(np.nanmean(np.asarray(series[s], float))) for s in seeds])
    for key, values in (finals or {}).items():
        out[key] = _stats([values[s] for s in seeds])
    return out
