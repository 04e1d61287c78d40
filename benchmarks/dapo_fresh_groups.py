"""Rollouts DynamicSampling(greso, adaptive) needs to reach DynamicSampling(uniform, fixed 3x)'s
best held-out score, on the calibrated simulator (issue 35), with every round of every step run.

Per pool size (the calibrated scenarios small-pool, 512 prompts, and large-pool, 1,280) and
seed, the cumulative rollouts at which each entry first reaches the best held-out score of
DAPO(uniform, fixed 3x) on the same seed, divided by the rollouts DAPO(uniform) itself took
(TTB100 by rollouts, no interpolation; the 75% target likewise). Entries: DAPO(uniform) fixed
3x (the baseline), greso inside adaptive sizing, greso inside GRESO's own rounds
(DynamicSamplingConfig.greso()), and DAPO(uniform) fixed 3x keeping its surplus one step
(the measurement behind discarding it by default). 360 steps x 16 prompts x 8 rollouts.

    python benchmarks/dapo_fresh_groups.py --jobs 1      # ~10 min on one core
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontier_rft.bench.metrics import ttb
from frontier_rft.bench.scripts import out_and_jobs, write_outputs
from frontier_rft.bench.simulation.benchmark import cached_runs
from frontier_rft.simulation.runner import Entry, sampler_spec

BASE = "uniform+dapo"
ENTRIES = (
    Entry(BASE, "uniform", sampler=sampler_spec(dynamic_sampling="fixed")),
    Entry("greso+dapo-adaptive", "greso", sampler=sampler_spec(dynamic_sampling="adaptive")),
    Entry("greso+dapo-greso", "greso", sampler=sampler_spec(dynamic_sampling="greso")),
    Entry(
        "uniform+dapo-fixed-keep", "uniform", sampler=sampler_spec(dynamic_sampling="fixed-keep")
    ),
)
SCENARIOS = {"512": "small-pool", "1280": "large-pool"}
SEEDS = (0, 1, 2, 3, 4)
STEPS, BATCH, ROLLOUTS = 360, 16, 8


def curve(run: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(cumulative rollouts, held-out score) of a run. A step that rolled out nothing (kept
    surplus covered it) adds no x: its score joins the previous point's, the better one."""
    x = np.concatenate([[0], np.cumsum(run["rollouts"])])
    y = np.asarray(run["score"], dtype=np.float64)
    keep = np.append(x[1:] != x[:-1], True)  # the last point of each x
    best = np.maximum.reduceat(y, np.flatnonzero(np.concatenate([[True], x[1:] != x[:-1]])))
    return x[keep], best


def _r(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 3)


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per entry: TTB by rollouts against BASE, seed by seed, and what was spent."""
    by = {(r["label"], r["seed"]): r for r in runs}
    out: dict[str, Any] = {}
    for entry in ENTRIES:
        row: dict[str, Any] = {}
        for tau in (0.75, 1.0):
            per_seed = []
            for s in SEEDS:
                r, b = by[(entry.label, s)], by[(BASE, s)]
                x = ttb(*curve(r), *curve(b), tau, interpolate=False)
                per_seed.append(_r(x))
            reached = [x for x in per_seed if x is not None]
            key = f"ttb{int(tau * 100)}_by_rollouts"
            row[key] = _r(float(np.mean(reached))) if reached else None
            row[f"{key}_reached"] = len(reached)
            row[f"{key}_per_seed"] = per_seed
        runs_e = [by[(entry.label, s)] for s in SEEDS]
        row["best_score"] = _r(float(np.mean([max(r["score"]) for r in runs_e])))
        row["final_score"] = _r(float(np.mean([r["score"][-1] for r in runs_e])))
        row["rollouts_vs_base"] = _r(
            float(
                np.mean(
                    [sum(r["rollouts"]) / sum(by[(BASE, r["seed"])]["rollouts"]) for r in runs_e]
                )
            )
        )
        stale = [
            np.nanmean(np.array(r["selector_metrics"]["dapo/stale_share"], float)) for r in runs_e
        ]
        rounds = [np.nanmean(np.array(r["selector_metrics"]["dapo/rounds"], float)) for r in runs_e]
        row["stale_share"] = _r(float(np.mean(stale)))
        row["rounds_per_step"] = _r(float(np.mean(rounds)))
        out[entry.label] = row
    return out


def _cell(row: dict[str, Any], key: str) -> str:
    value, k = row[key], row[f"{key}_reached"]
    return "never (0/5)" if value is None else f"{value:.2f} ({k}/{len(SEEDS)})"


def main() -> None:
    args, command = out_and_jobs(__doc__ or "", jobs=1)
    payload: dict[str, Any] = {"command": command, "steps": STEPS, "batch": BATCH}
    lines = [
        "# DAPO with fresh groups first: rollouts to DAPO(uniform)'s best (simulator)",
        "",
        f"`{command}`; calibrated scenarios, {STEPS} steps x {BATCH} prompts x {ROLLOUTS} "
        f"rollouts, seeds {SEEDS[0]}-{SEEDS[-1]}. TTB by rollouts: cumulative rollouts to reach "
        f"75% / 100% of {BASE}'s gain on the same seed, over {BASE}'s own (lower is better).",
    ]
    for pool, scenario in SCENARIOS.items():
        table = summarise(
            cached_runs(
                "dapo_fresh_groups",
                scenario,
                ENTRIES,
                SEEDS,
                STEPS,
                BATCH,
                ROLLOUTS,
                args.jobs,
                BASE,
            )
        )
        payload[pool] = {"scenario": scenario, "entries": table}
        lines += [
            "",
            f"## {pool} prompts ({scenario})",
            "",
            "| entry | TTB100 by rollouts | TTB75 by rollouts | best score | final score "
            "| rollouts vs base | stale share | rounds/step |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for label, row in table.items():
            lines.append(
                f"| {label} | {_cell(row, 'ttb100_by_rollouts')} | "
                f"{_cell(row, 'ttb75_by_rollouts')} | {row['best_score']:.3f} | "
                f"{row['final_score']:.3f} | {row['rollouts_vs_base']:.2f} | "
                f"{row['stale_share']:.2f} | {row['rounds_per_step']:.2f} |"
            )
    write_outputs(args.out, "dapo_fresh_groups", payload, lines)


if __name__ == "__main__":
    main()
