"""The planned step against the fixed grid of step sizes, in each currency (issue 89, item 6).

From a bench-rl report's summary (`report.summarize_runs`: each entry's per-seed time to a
named target along each axis, censored where never reached, and its pass@1 at equal cost,
paired against uniform), for a planned entry (`batch_plan: auto`) and the fixed-size uniform
entries beside it (`uniform`, `uniform-b<B>`, `uniform-k<K>`: `noise_fit.rows_of`):

- **The best fixed entry, per currency, chosen in hindsight**: the one whose Kaplan-Meier
  median time to the target is least on that axis (a median beyond the budgets counts as
  never). Hindsight favours the grid: a user does not know which size wins before the runs.
- **The planned entry's time over the best's**, paired by seed (`metrics.median_ratio`, a
  bootstrap CI over seeds), and whether it is within `WITHIN` of it.
- **Its pass@1 at equal cost against uniform**, and whether its CI's low end is at least
  `FLOOR`.

And the meter's run-average noise scale (`meter_average`), read from the planned runs' own
records, to set beside the steps-to-target fit (`noise_fit`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import median_ratio
from frontier_rft.bench.real_rl.noise_fit import rows_of

__all__ = ["FLOOR", "WITHIN", "fixed_times", "grid_comparison", "meter_average"]

WITHIN = 1.1
"""The planned entry's time to the target may be at most this times the best fixed entry's."""
FLOOR = -0.01
"""The low end of the CI of its pass@1 at equal cost, against uniform, may be no lower."""
BASELINE = "uniform"


def _cell(seeds: Sequence[int], summary: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "seeds": list(seeds),
        "values": list(summary["values"]),
        "budgets": list(summary["budgets"]),
        "median": summary["median"],
        "reached": summary["reached"],
    }


def fixed_times(
    labels: Mapping[str, Mapping[str, Any]], axis: str, target: str = "plateau"
) -> dict[str, dict[str, Any]]:
    """Each fixed-size uniform entry's per-seed times to `target` along `axis` (uniform's from
    the first entry paired with it), with its Kaplan-Meier median."""
    out: dict[str, dict[str, Any]] = {}
    for label, row in labels.items():
        device = row.get("device")
        if label == BASELINE or device is None or rows_of(label, 1, 1) is None:
            continue
        if BASELINE not in out:
            out[BASELINE] = _cell(device["seeds"], device[f"base_time_{target}_{axis}"])
        out[label] = _cell(device["seeds"], device[f"time_{target}_{axis}"])
    return out


def _paired(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[list[Any], ...]:
    """Both arms' values and budgets over the seeds they share, in one order."""
    seeds = [s for s in a["seeds"] if s in b["seeds"]]
    ia = [a["seeds"].index(s) for s in seeds]
    ib = [b["seeds"].index(s) for s in seeds]
    return (
        [a["values"][i] for i in ia],
        [a["budgets"][i] for i in ia],
        [b["values"][i] for i in ib],
        [b["budgets"][i] for i in ib],
    )


def grid_comparison(
    labels: Mapping[str, Mapping[str, Any]],
    planned: str,
    axes: Sequence[str],
    target: str = "plateau",
    others: Sequence[str] = (),
) -> dict[str, Any]:
    """Per axis: the best fixed entry in hindsight, the planned entry's time over it (and over
    every fixed entry, and over each of `others`: entries it is set beside but that are no
    candidates for the best, another planned one), its pass@1 at equal cost against uniform,
    and both verdicts."""
    missing = [o for o in others if "device" not in labels.get(o, {})]
    if missing:
        raise ValueError(f"the report has no paired runs of {', '.join(missing)}")
    if planned not in labels or "device" not in labels[planned]:
        raise ValueError(f"the report has no paired runs of {planned!r}")
    device = labels[planned]["device"]
    out: dict[str, Any] = {"planned": planned, "target": target, "axes": {}}
    for axis in axes:
        grid = fixed_times(labels, axis, target)
        if not grid:
            raise ValueError("the report holds no fixed-size uniform entry beside uniform")
        key = f"time_{target}_{axis}"
        mine = _cell(device["seeds"], device[key])

        def order(label: str, grid: Mapping[str, Any] = grid) -> float:
            median = grid[label]["median"]
            return math.inf if median is None else float(median)

        best = min(grid, key=order)
        against = {label: median_ratio(*_paired(mine, cell)) for label, cell in grid.items()}
        beside = {
            o: median_ratio(
                *_paired(mine, _cell(labels[o]["device"]["seeds"], labels[o]["device"][key]))
            )
            for o in others
        }
        ratio = against[best]
        equal = device.get(f"equal_{axis}_pass1") or {"mean": None, "ci": None}
        out["axes"][axis] = {
            "best": best,
            "medians": {label: cell["median"] for label, cell in grid.items()},
            "reached": {label: cell["reached"] for label, cell in grid.items()},
            "planned_median": mine["median"],
            "planned_reached": mine["reached"],
            "seeds": len(mine["seeds"]),
            "over_best": ratio,
            "over_each": against,
            "over_others": beside,
            "equal_pass1": equal,
            "within": ratio["ratio"] is not None and ratio["ratio"] <= WITHIN,
            "holds_score": bool(equal["ci"]) and equal["ci"][0] >= FLOOR,
        }
    return out


def meter_average(
    records: Mapping[int, Mapping[str, Sequence[float | None]]],
    *,
    resamples: int = 2_000,
    seed: int = 0,
    prefix: str = "noise/",
) -> dict[str, Any]:
    """The meter's run-average noise scale over seeds, in rows: B_simple = mean tr(Sigma) /
    mean |G|^2 over every metered step of every run (the ratio of the means, as McCandlish
    et al. 2018 smooth numerator and denominator apart), with a percentile-bootstrap CI over
    seeds; each seed's own, and the intra-prompt share of the trace. `records` maps a seed to
    its logged columns (`noise/trace`, `noise/grad_sq`, `noise/intra`; under `prefix`
    `noise/adam/` those of Adam's geometry)."""
    per_seed: dict[int, tuple[float, float, float, int]] = {}
    for s, cols in sorted(records.items()):
        rows = [
            (float(t), float(g), float(i))
            for t, g, i in zip(
                cols[prefix + "trace"],
                cols[prefix + "grad_sq"],
                cols[prefix + "intra"],
                strict=True,
            )
            if t is not None and g is not None and i is not None
        ]
        if rows:
            t, g, i = (float(np.mean(v)) for v in zip(*rows, strict=True))
            per_seed[s] = (t, g, i, len(rows))
    if not per_seed:
        raise ValueError("no metered step in these records: run with the noise meter on")
    seeds = sorted(per_seed)
    arr = np.asarray([per_seed[s][:3] for s in seeds], dtype=np.float64)

    def scale(rows: np.ndarray) -> float:
        grad = float(rows[:, 1].mean())
        return float(rows[:, 0].mean()) / grad if grad > 0 else math.inf

    rng = np.random.default_rng(seed)
    draws = np.asarray(
        [scale(arr[rng.integers(0, len(seeds), len(seeds))]) for _ in range(resamples)]
    )
    finite = draws[np.isfinite(draws)]
    return {
        "seeds": seeds,
        "metered_steps": [per_seed[s][3] for s in seeds],
        "b_simple": scale(arr),
        "ci": [float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))]
        if finite.size
        else None,
        "per_seed": [
            per_seed[s][0] / per_seed[s][1] if per_seed[s][1] > 0 else None for s in seeds
        ],
        "intra_share": float(arr[:, 2].sum() / arr[:, 0].sum()) if arr[:, 0].sum() > 0 else None,
    }
