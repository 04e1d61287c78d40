"""Does fading transfer make the simulator's p = 0.5 selectors lose, as on real RL?

The hard scenario with `transfer_halflife` H (a task's skill transfer halves after H
trainings) for H in 2, 4, 8, on its 2,000-task pool and on a 512-task pool (about the
real-RL testbed's 11 epochs); every selector at its paper defaults, prompts only, 5 paired
seeds. Nothing is tuned: H is swept, the selectors are not. Writes `fading_transfer.{json,md}`.

    python benchmarks/fading_transfer.py --out benchmarks/results    # ~3 min, 2 cores
"""

from __future__ import annotations

import sys
from typing import Any

from frontier_rft.bench.scripts import out_and_jobs, ttb_cell, write_outputs
from frontier_rft.bench.simulation.benchmark import parse_entries, run_benchmark
from frontier_rft.simulation.scenario import SCENARIOS

SELECTORS = ("dots", "bots", "pcl", "prioritized", "frontier")
HALFLIVES = (0.0, 2.0, 4.0, 8.0)
POOLS = (2000, 512)


def main() -> int:
    args, command = out_and_jobs(__doc__ or "")
    rows: dict[str, Any] = {}
    for pool in POOLS:
        for halflife in HALFLIVES:
            cfg = SCENARIOS["hard"].replace(num_tasks=pool, transfer_halflife=halflife)
            res = run_benchmark(
                cfg, parse_entries(list(SELECTORS)), seeds=range(5), steps=200, batch=32,
                rollouts=16, jobs=args.jobs, given=("prompts",),
            )  # fmt: skip
            rows[f"{pool} tasks, H={halflife:g}"] = {
                k: res["summary"][k]["ttb100"] for k in SELECTORS
            }
            print(f"[fading] {pool} tasks, H={halflife:g} done", file=sys.stderr)
    lines = [
        "# Fading transfer in the simulator: does concentration stop paying?",
        "",
        f"Command: `{command}`  ",
        "Hard scenario, 200 steps of 32 prompts x 16 rollouts, prompts only, paper defaults, "
        "5 paired seeds; TTB(100%) vs uniform, mean ± std (k/5 when not every seed reached "
        "uniform's best; '-' none did). H = 0: no fading (the scenario as shipped).",
        "",
        "| pool, transfer_halflife | " + " | ".join(SELECTORS) + " |",
        "|---|" + "---:|" * len(SELECTORS),
    ]
    for name, cells in rows.items():
        lines.append(f"| {name} | " + " | ".join(ttb_cell(cells[k]) for k in SELECTORS) + " |")
    write_outputs(args.out, "fading_transfer", {"command": command, "rows": rows}, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
