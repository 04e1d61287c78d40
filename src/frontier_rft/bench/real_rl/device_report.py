"""What each entry costs in each device's currency, paired by seed against a baseline entry.

For every entry against uniform (and against its own same-rows baseline, `BenchEntry.rows_of`):
the cost to reach the baseline's final held-out pass@1 (steps, rollouts, measured CPU seconds,
projected seconds on each curve of `device_seconds.PROJECTED_DEVICES`), each as a ratio of
the baseline's own cost to reach that score along the same axis; and the scores at equal
projected seconds (at the smaller of the pair's totals: pass@1 there, the mean of pass@1 over
the last quarter of that span, pass@k there). The verdict rests on the ratio of costs and the
differences at equal seconds together, on the device that names its currency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import first_reach, mean_ci, paired_summary
from frontier_rft.bench.real_rl.device_seconds import PROJECTED_DEVICES, projected_axis

__all__ = ["AXES", "LAST_POINTS", "device_comparison", "device_table"]

AXES = (
    ("steps", "eval_steps"),
    ("rollouts", "eval_rollouts"),
    ("cpu_s", "eval_cpu_seconds"),
    *((f"{d}_projected_s", projected_axis(d)) for d in PROJECTED_DEVICES),
)
"""(name, run-curve key) of each axis a cost is read along; `cpu_s` is the CPU time the run's
own steps measured (its threads' time, less swayed by other work than wall-clock, though not
immune to it), the others projections."""
LAST_POINTS = (0.75, 5 / 6, 11 / 12, 1.0)
"""Where pass@1 is read for its last quarter at equal seconds: these shares of the span."""

Run = Mapping[str, Any]


def _to_score(mine: Run, base: Run, x: str) -> float | None:
    """Mine's cost along `x` to reach base's final pass@1, over base's own cost to reach it."""
    target = base["pass1"][-1]
    a = first_reach(mine[x], mine["pass1"], target)
    b = first_reach(base[x], base["pass1"], target)
    if a is None or b is None:
        return None
    a0, b0 = float(mine[x][0]), float(base[x][0])
    return (a - a0) / (b - b0) if b > b0 else None


def _at(run: Run, x: str, at: float, scores: Sequence[float]) -> float:
    return float(np.interp(at, run[x], scores))


def device_comparison(
    mine: Mapping[int, Run], base: Mapping[int, Run], seeds: Sequence[int]
) -> dict[str, Any]:
    """Costs to the base's final pass@1 and scores at equal projected seconds, paired by seed."""
    out: dict[str, Any] = {"seeds": list(seeds)}
    runs = [*(mine[s] for s in seeds), *(base[s] for s in seeds)]
    logged = {x for _, x in AXES if all(x in run for run in runs)}  # test runs may lack some
    for name, x in AXES:
        values = [_to_score(mine[s], base[s], x) if x in logged else None for s in seeds]
        out[f"to_final_{name}"] = paired_summary(values)
    for device in PROJECTED_DEVICES:
        x = projected_axis(device)
        if x not in logged:
            continue
        span = [min(mine[s][x][-1], base[s][x][-1]) for s in seeds]
        out[f"equal_{device}_pass1"] = mean_ci(
            [
                _at(mine[s], x, t, mine[s]["pass1"]) - _at(base[s], x, t, base[s]["pass1"])
                for s, t in zip(seeds, span, strict=True)
            ]
        )
        out[f"equal_{device}_last_quarter"] = mean_ci(
            [
                float(
                    np.mean([_at(mine[s], x, f * t, mine[s]["pass1"]) for f in LAST_POINTS])
                    - np.mean([_at(base[s], x, f * t, base[s]["pass1"]) for f in LAST_POINTS])
                )
                for s, t in zip(seeds, span, strict=True)
            ]
        )
        ks = sorted(set(mine[seeds[0]].get("passk", {})) & set(base[seeds[0]].get("passk", {})))
        for k in ks:
            out[f"equal_{device}_{k.removeprefix('eval/')}"] = mean_ci(
                [
                    _at(mine[s], x, t, mine[s]["passk"][k])
                    - _at(base[s], x, t, base[s]["passk"][k])
                    for s, t in zip(seeds, span, strict=True)
                ]
            )
    # Absolute steps, for the noise-scale fit: to uniform's final score, and to half its gain
    final = [base[s]["pass1"][-1] for s in seeds]
    half = [(base[s]["pass1"][0] + base[s]["pass1"][-1]) / 2 for s in seeds]
    for name, target in (("final", final), ("half", half)):
        for key, runs_of in ((f"steps_to_{name}", mine), (f"base_steps_to_{name}", base)):
            out[key] = paired_summary(
                [
                    first_reach(runs_of[s]["eval_steps"], runs_of[s]["pass1"], t)
                    for s, t in zip(seeds, target, strict=True)
                ]
            )
    out["informative_per_step"] = mean_ci(
        [_informative(mine[s]) - _informative(base[s]) for s in seeds]
    )
    out["rows_per_step"] = mean_ci([_rows_per_step(mine[s]) for s in seeds])
    return out


def _informative(run: Run) -> float:
    vals = [r.get("train/informative_groups") for r in run["train"]]
    got = [float(v) for v in vals if v is not None]
    return float(np.mean(got)) if got else float("nan")


def _rows_per_step(run: Run) -> float:
    return float(run["eval_rollouts"][-1]) / max(1, len(run["train"]))


def _cell(
    cell: Mapping[str, Any] | None,
    digits: int = 2,
    signed: bool = False,
    unit: str = "x",
    with_ci: bool = True,
) -> str:
    if not cell:
        return "-"
    mean, ci = cell.get("mean"), cell.get("ci")
    fmt = f"{{:+.{digits}f}}" if signed else f"{{:.{digits}f}}"
    if mean is None:  # some seed never reached: the mean of those that did, starred
        reached, n = cell.get("reached"), len(cell.get("values", []))
        some = cell.get("mean_reached")
        if some is None:
            return f"- ({reached}/{n} reached)" if reached is not None else "-"
        return fmt.format(some) + ("" if signed else unit) + f"* ({reached}/{n})"
    text = fmt.format(mean) + ("" if signed else unit)
    if ci and with_ci:
        text += " [" + ", ".join(fmt.format(v) for v in ci) + "]"
    return text


def device_table(comparisons: Mapping[str, Mapping[str, Any]], baseline: str) -> list[str]:
    """Markdown: one row per entry of its costs to the baseline's final pass@1 and its scores
    at equal projected H200 seconds."""
    lines = [
        f"| entry (against {baseline}) | rows a step | steps | rollouts | CPU time (measured) "
        "| H200 s (projected) | CPU s (projected) | pass@1 at equal H200 s | last quarter "
        "| pass@k at equal H200 s | informative groups a step |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, c in comparisons.items():
        passk = next((k for k in sorted(c) if k.startswith("equal_h200_pass@")), None)
        passk = passk if passk != "equal_h200_pass1" else None
        rows = _cell(c["rows_per_step"], 0, unit="", with_ci=False)
        lines.append(
            f"| {label} ({len(c['seeds'])} seeds) | {rows} "
            f"| {_cell(c['to_final_steps'])} | {_cell(c['to_final_rollouts'])} "
            f"| {_cell(c['to_final_cpu_s'])} | {_cell(c['to_final_h200_projected_s'])} "
            f"| {_cell(c['to_final_cpu_projected_s'])} "
            f"| {_cell(c.get('equal_h200_pass1'), 3, True)} "
            f"| {_cell(c.get('equal_h200_last_quarter'), 3, True)} "
            f"| {_cell(c[passk], 3, True) if passk else '-'} "
            f"| {_cell(c['informative_per_step'], 1, True)} |"
        )
    return lines
