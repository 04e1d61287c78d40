"""Steps to a target as rows a step grow, and the noise-scale law fitted to them where the
data can carry it (McCandlish et al. 2018: S = S_min (1 + N_noise / N), N the rows a step).

The steps come from a bench-rl report (`device_report`: each seed's steps to a named target,
read at evaluation points, a seed that never reached censored at its budget). Each row count's
steps are the Kaplan-Meier median over seeds (a censored seed is kept, never dropped), and
S(N) = a + b / N is fitted to them by least squares: S_min = a, N_noise = b / a. Seeds are
resampled with replacement, paired across row counts, for the CIs.

A fit is withdrawn, with its reasons, unless (DESIGN 8.6): at least `MIN_ROW_COUNTS` row
counts; every row count's median defined (more than half its seeds reached the target); and
the target crossed after several evaluations at every row count (a median of at least
`MIN_EVALS_BEFORE` evaluations before the crossing), so the steps measure learning and not
the evaluation interval. Every run of one report shares one learning rate (the law assumes it
re-tuned for each batch size) and a larger step walks more passes over the pool: the page says
both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import km_median

__all__ = [
    "MIN_EVALS_BEFORE",
    "MIN_ROW_COUNTS",
    "fit_law",
    "law_exponent",
    "noise_fit",
    "rows_of",
    "slope_fit",
    "steps_series",
]

MIN_ROW_COUNTS = 4
"""Fewest row counts a fit stands on (two parameters: four points leave two to check them)."""
MIN_EVALS_BEFORE = 2.0
"""Fewest evaluations (median over seeds) before the target is crossed, at every row count."""
SIZED = re.compile(r"^uniform(?:-b(?P<b>\d+))?(?:-k(?P<k>\d+))?$")


def rows_of(label: str, batch: int, group: int) -> tuple[str, int] | None:
    """('prompts' or 'rollouts', N) for a uniform entry of another step size, else None."""
    m = SIZED.match(label)
    if not m:
        return None
    b, k = int(m["b"] or batch), int(m["k"] or group)
    return ("rollouts" if m["k"] else "prompts"), b * k


def steps_series(
    labels: Mapping[str, Any], axis: str, batch: int, group: int, target: str
) -> dict[int, dict[str, list[Any]]]:
    """N -> {'times', 'budgets', 'evals_before'}: per seed, the steps to `target` (None: never
    within its budget), its budget and the evaluations before it, for uniform (B x K rows)
    and each uniform entry that grows the step along `axis`."""
    out: dict[int, dict[str, list[Any]]] = {}
    for label, row in labels.items():
        device = row.get("device")
        got = rows_of(label, batch, group)
        if device is None or got is None or got[0] != axis:
            continue
        if batch * group not in out:  # uniform's own, from the first entry paired with it
            out[batch * group] = _times(device, "base_", target)
        out[got[1]] = _times(device, "", target)
    return out


def _times(device: Mapping[str, Any], who: str, target: str) -> dict[str, list[Any]]:
    cell = device[f"{who}time_{target}_steps"]
    return {
        "times": list(cell["values"]),
        "budgets": list(cell["budgets"]),
        "evals_before": list(device[f"{who}evals_{target}_steps"]),
    }


def fit_law(ns: np.ndarray, steps: np.ndarray) -> tuple[float, float]:
    """(S_min, N_noise) of S = a + b / N by least squares; N_noise nan when a <= 0."""
    x = np.column_stack([np.ones_like(ns), 1.0 / ns])
    (a, b), *_ = np.linalg.lstsq(x, steps, rcond=None)
    return float(a), float(b / a) if a > 0 else math.nan


def _medians(
    data: Mapping[int, Mapping[str, list[Any]]], ns: Sequence[int], pick: Any
) -> np.ndarray:
    out = []
    for n in ns:
        times = [data[n]["times"][i] for i in pick]
        budgets = [data[n]["budgets"][i] for i in pick]
        m = km_median(
            [b if t is None else t for t, b in zip(times, budgets, strict=True)],
            [t is not None for t in times],
        )
        out.append(math.nan if m is None else m)
    return np.asarray(out, dtype=np.float64)


def _resampled_medians(
    data: Mapping[int, Mapping[str, list[Any]]], ns: Sequence[int], resamples: int, seed: int
) -> Iterator[np.ndarray]:
    """The row counts' medians over seeds resampled with replacement (paired across row
    counts), one array a resample, skipping those where a median is undefined."""
    n_seeds = len(data[ns[0]]["times"])
    rng = np.random.default_rng(seed)
    for _ in range(resamples):
        m = _medians(data, ns, rng.integers(0, n_seeds, n_seeds))
        if np.isfinite(m).all():
            yield m


def noise_fit(
    data: Mapping[int, Mapping[str, list[Any]]], *, resamples: int = 2_000, seed: int = 0
) -> dict[str, Any]:
    """The medians per row count, and the law's fit with bootstrap CIs, or the reasons it is
    withdrawn (`withdrawn`: a list of one-line reasons, empty when the fit stands)."""
    ns = sorted(data)
    n_seeds = len(data[ns[0]]["times"]) if ns else 0
    medians = _medians(data, ns, range(n_seeds)) if ns else np.zeros(0)
    evals = [float(np.median(data[n]["evals_before"])) if n_seeds else 0.0 for n in ns]
    out: dict[str, Any] = {
        "rows": list(ns),
        "median_steps": [None if math.isnan(m) else float(m) for m in medians],
        "reached": [sum(t is not None for t in data[n]["times"]) for n in ns],
        "evals_before": evals,
        "seeds": n_seeds,
        "withdrawn": [],
    }
    why = out["withdrawn"]
    if len(ns) < MIN_ROW_COUNTS:
        why.append(f"{len(ns)} row count(s): a fit of two parameters needs {MIN_ROW_COUNTS}")
    undefined = [n for n, m in zip(ns, medians, strict=True) if math.isnan(m)]
    if undefined:
        why.append(f"fewer than half the seeds reached the target at N = {undefined}")
    early = [n for n, e in zip(ns, evals, strict=True) if e < MIN_EVALS_BEFORE]
    if early:
        why.append(
            f"the target is crossed within {MIN_EVALS_BEFORE:.0f} evaluations at N = {early}: "
            "the steps would measure the evaluation interval"
        )
    if why:
        return out
    s_min, n_noise = fit_law(np.asarray(ns, dtype=np.float64), medians)
    boot = [
        fit_law(np.asarray(ns, dtype=np.float64), m)
        for m in _resampled_medians(data, ns, resamples, seed)
    ]
    arr = np.asarray(boot, dtype=np.float64).reshape(-1, 2)
    undefined_share = float(np.mean(~np.isfinite(arr[:, 1]))) if len(arr) else 1.0
    out.update(
        s_min=s_min,
        s_min_ci=_ci(arr[:, 0]),
        n_noise=None if math.isnan(n_noise) else n_noise,
        # an interval beside an undefined N_noise says nothing: none is given
        n_noise_ci=None if math.isnan(n_noise) else _ci(arr[:, 1]),
        n_noise_undefined_share=undefined_share,
        resamples_used=len(arr),
    )
    if math.isnan(n_noise):
        why.append("S_min <= 0: the law does not fit these medians")
    return out


def slope_fit(
    data: Mapping[int, Mapping[str, list[Any]]], *, resamples: int = 2_000, seed: int = 0
) -> dict[str, Any] | None:
    """How fast the steps fall as rows grow, free of any law: the slope of log S on log N
    through the row counts' Kaplan-Meier medians (S proportional to N^slope), with a bootstrap
    CI over seeds resampled as `noise_fit` does; None where a median is undefined. The slope
    is -1 where a step of twice the rows halves the steps and 0 where it saves none."""
    ns = np.asarray(sorted(data), dtype=np.float64)
    n_seeds = len(data[int(ns[0])]["times"]) if ns.size else 0
    if ns.size < 2 or not n_seeds:
        return None

    def slope(medians: np.ndarray) -> float:
        return float(np.polyfit(np.log(ns), np.log(medians), 1)[0])

    medians = _medians(data, [int(n) for n in ns], range(n_seeds))
    if not np.isfinite(medians).all():
        return None
    boot = [slope(m) for m in _resampled_medians(data, [int(n) for n in ns], resamples, seed)]
    return {"slope": slope(medians), "ci": _ci(np.asarray(boot, dtype=np.float64))}


def law_exponent(b_noise: float, rows: Sequence[int], power: float = 1.0) -> float:
    """The slope of log S on log N that S = S_min (1 + b_noise / N)^power gives through `rows`
    (the same least squares as `slope_fit`): power 1 is McCandlish's law, SGD at the best
    rate for each size; power 1/2 is Adam at one kept rate where the noise dominates (each
    coordinate's step is lr g / sqrt(v), whose signal grows as sqrt(N) at a fixed size)."""
    ns = np.asarray(sorted(rows), dtype=np.float64)
    steps = (1.0 + b_noise / ns) ** power
    return float(np.polyfit(np.log(ns), np.log(steps), 1)[0])


def _ci(values: np.ndarray) -> list[float] | None:
    vals = values[np.isfinite(values)]
    if vals.size == 0:
        return None
    return [float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))]
