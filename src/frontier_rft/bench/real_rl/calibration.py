"""Calibration of a real-RL testbed on uniform alone (`frontier bench-rl --calibrate`).

Before any selector runs, uniform trains on calibration seeds at one or more learning rates
and the testbed's preconditions are checked (docs/results/real_rl.md, "The testbed"):

- at least ZERO_VARIANCE_MIN of the start pool's prompts are zero-variance under the group
  size (all rollouts right, or all wrong): otherwise there is nothing for selection to skip;
- uniform's held-out pass@1 gains at least GAIN_MIN within the budget (final - start, mean
  over seeds): otherwise there is no learning for selection to speed up.

The learning rate with the largest mean gain is chosen; the comparison then runs at it on
other seeds (`--lr`), and the testbed is frozen. Also reported, for sizing the comparison on
one GPU: wall time per run, peak GPU memory per run and how many runs fit side by side.
Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import mean_ci
from frontier_rft.bench.real_rl.report import ResultFiles, write_json
from frontier_rft.bench.real_rl.testbed import Testbed, learner_line

__all__ = [
    "GAIN_MIN",
    "ZERO_VARIANCE_MIN",
    "calibration_markdown",
    "calibration_summary",
    "runs_that_fit",
    "write_calibration",
]

ZERO_VARIANCE_MIN = 0.40
"""Least share of zero-variance prompts in the start pool."""
GAIN_MIN = 0.05
"""Least mean held-out pass@1 gain of uniform within the budget."""
MEMORY_HEADROOM = 0.85
"""Share of the GPU's memory the side-by-side runs may plan to fill."""


def runs_that_fit(total_gb: float | None, peak_gb: float | None, cap: int = 16) -> int | None:
    """Runs that fit side by side on one GPU of `total_gb`, each holding `peak_gb` at most
    (MEMORY_HEADROOM of the memory planned), between 1 and `cap`; None when unknown."""
    if not total_gb or not peak_gb or peak_gb <= 0:
        return None
    return max(1, min(cap, int(MEMORY_HEADROOM * total_gb // peak_gb)))


def _peak(run: Mapping[str, Any]) -> float | None:
    vals = [r["perf/gpu_peak_gb"] for r in run["train"] if r.get("perf/gpu_peak_gb") is not None]
    return float(max(vals)) if vals else None


def calibration_summary(
    runs: Mapping[float, Mapping[int, Mapping[str, Any]]],
    start_states: Mapping[str, Any],
    *,
    wall_seconds: float | None = None,
    jobs: int = 1,
    gpu_total_gb: float | None = None,
) -> dict[str, Any]:
    """Preconditions and the chosen learning rate from uniform runs {lr: {seed: load_run()}}
    (real_rl.load_run) and the start states of their seeds (real_rl.measure_start_states)."""
    if not runs:
        raise ValueError("calibration needs uniform runs at one learning rate at least")
    zero = mean_ci([float(v["zero_variance"]) for v in start_states.values()])
    levels = sorted({lv for v in start_states.values() for lv in v.get("per_level", {})}, key=int)
    per_level = {
        lv: {
            "start_pass_rate": mean_ci(
                [v["per_level"][lv]["mean_score"] for v in start_states.values()]
            ),
            "zero_variance": mean_ci(
                [
                    v["per_level"][lv]["always_solved"] + v["per_level"][lv]["never_solved"]
                    for v in start_states.values()
                ]
            ),
        }
        for lv in levels
    }
    rows: dict[str, Any] = {}
    for lr, by_seed in sorted(runs.items()):
        seeds = sorted(by_seed)
        peaks = [p for p in (_peak(by_seed[s]) for s in seeds) if p is not None]
        rows[f"{lr:g}"] = {
            "lr": lr,
            "seeds": seeds,
            "gain": mean_ci([by_seed[s]["pass1"][-1] - by_seed[s]["pass1"][0] for s in seeds]),
            "best_gain": mean_ci(
                [max(by_seed[s]["pass1"]) - by_seed[s]["pass1"][0] for s in seeds]
            ),
            "start_pass1": mean_ci([by_seed[s]["pass1"][0] for s in seeds]),
            "final_pass1": mean_ci([by_seed[s]["pass1"][-1] for s in seeds]),
            "train_seconds": mean_ci([by_seed[s]["eval_seconds"][-1] for s in seeds]),
            "step_s": mean_ci(
                [float(np.mean([r["perf/step_s"] for r in by_seed[s]["train"]])) for s in seeds]
            ),
            "gpu_peak_gb": max(peaks) if peaks else None,
            "final_level_success": {
                k.removeprefix("eval/success_rate_"): mean_ci(
                    [by_seed[s]["final"].get(k) for s in seeds]
                )
                for k in sorted(by_seed[seeds[0]]["final"])
                if k.startswith("eval/success_rate_level")
            },
        }
    ranked = [r for r in rows.values() if r["gain"]["mean"] is not None]
    chosen = max(ranked, key=lambda r: r["gain"]["mean"]) if ranked else None
    zero_ok = zero["mean"] is not None and zero["mean"] >= ZERO_VARIANCE_MIN
    gain_ok = chosen is not None and chosen["gain"]["mean"] >= GAIN_MIN
    peak = max((r["gpu_peak_gb"] for r in rows.values() if r["gpu_peak_gb"]), default=None)
    return {
        "preconditions": {
            "zero_variance_min": ZERO_VARIANCE_MIN,
            "gain_min": GAIN_MIN,
            "zero_variance_met": bool(zero_ok),
            "gain_met": bool(gain_ok),
            "met": bool(zero_ok and gain_ok),
        },
        "start_zero_variance_share": zero,
        "start_per_level": per_level,
        "learning_rates": rows,
        "chosen_lr": None if chosen is None else chosen["lr"],
        "runs": sum(len(r["seeds"]) for r in rows.values()),
        "jobs": jobs,
        "wall_seconds": wall_seconds,
        "gpu_total_gb": gpu_total_gb,
        "gpu_peak_gb": peak,
        "runs_that_fit": runs_that_fit(gpu_total_gb, peak),
    }


def _fmt(cell: Mapping[str, Any] | None, digits: int = 3, sign: bool = False) -> str:
    if not cell or cell.get("mean") is None:
        return "-"
    f = f"+.{digits}f" if sign else f".{digits}f"
    lo, hi = cell["ci"]
    return f"{cell['mean']:{f}} [{lo:{f}}, {hi:{f}}]"


def calibration_markdown(summary: Mapping[str, Any], header: str) -> str:
    """The calibration page: preconditions, per-level start state, uniform per learning rate."""
    pre = summary["preconditions"]
    zero = summary["start_zero_variance_share"]
    verdict = "**met**" if pre["met"] else "**not met**"
    lines = [
        header,
        "",
        f"Preconditions {verdict}: start zero-variance share {_fmt(zero)} "
        f"(needs >= {pre['zero_variance_min']:.2f}: "
        f"{'yes' if pre['zero_variance_met'] else 'no'}); uniform's held-out pass@1 gain at the "
        f"chosen learning rate needs >= {pre['gain_min']:+.2f} "
        f"({'yes' if pre['gain_met'] else 'no'}).",
        "",
        "### Start state per level (the pool of each calibration seed)",
        "",
        "| level | start pass rate | zero-variance share |",
        "|---|---:|---:|",
    ]
    for lv, row in summary["start_per_level"].items():
        lines.append(f"| {lv} | {_fmt(row['start_pass_rate'])} | {_fmt(row['zero_variance'])} |")
    lines += [
        "",
        "### Uniform per learning rate",
        "",
        "| lr | seeds | held-out pass@1 start | final | gain (final − start) | best − start "
        "| s/step | train s/run | peak GPU GB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, r in summary["learning_rates"].items():
        mark = " (chosen)" if r["lr"] == summary["chosen_lr"] else ""
        peak = "-" if r["gpu_peak_gb"] is None else f"{r['gpu_peak_gb']:.1f}"
        lines.append(
            f"| {key}{mark} | {','.join(map(str, r['seeds']))} | {_fmt(r['start_pass1'])} | "
            f"{_fmt(r['final_pass1'])} | {_fmt(r['gain'], sign=True)} | "
            f"{_fmt(r['best_gain'], sign=True)} | {_fmt(r['step_s'], 2)} | "
            f"{_fmt(r['train_seconds'], 0)} | {peak} |"
        )
    wall = summary["wall_seconds"]
    fit = summary["runs_that_fit"]
    lines += [
        "",
        f"Wall time: {'-' if wall is None else f'{wall:.0f} s'} for {summary['runs']} runs at "
        f"{summary['jobs']} parallel jobs. Runs that fit side by side on this GPU "
        f"({MEMORY_HEADROOM:.0%} of its memory, by the largest peak): "
        f"{'-' if fit is None else fit}.",
    ]
    return "\n".join(lines) + "\n"


def write_calibration(
    summary: Mapping[str, Any], tb: Testbed, files: ResultFiles, seeds: int
) -> Path:
    """<name>_calibration.json and .md as `files` says; returns the markdown's path."""
    write_json(
        files.out / f"{files.name}_calibration.json",
        {"command": files.command, "machine": files.machine, "testbed": tb.to_json(), **summary},
    )
    header = "\n".join(
        [
            f"# Testbed calibration: uniform alone ({seeds} seeds)",
            "",
            f"Command: `{files.command}`  ",
            f"Machine: {files.machine}  ",
            learner_line(tb),
        ]
    )
    path = files.out / f"{files.name}_calibration.md"
    path.write_text(calibration_markdown(summary, header))
    return path
