"""BOTS's prompts-only settings, swept on the simulator's tuning scenarios only.

The regression plug-in's ridge penalty and forgetting, and BOTS's own lam and rho, one at a
time around the defaults, on `multidomain` and `easy` (never on `hard`, the headline), 5
paired seeds, prompts only. Writes `bots_regression_sweep.{json,md}`.

    python benchmarks/bots_regression_sweep.py --out benchmarks/results    # ~10 min, 1 core
"""

from __future__ import annotations

import itertools
from typing import Any

from frontier_rft.bench.scripts import out_and_jobs, ttb_cell, write_outputs
from frontier_rft.bench.simulation.benchmark import run_benchmark
from frontier_rft.simulation.runner import Entry

TUNING_SCENARIOS = ("multidomain", "easy")


def grid() -> list[dict[str, float]]:
    """Ridge x forgetting of the plug-in, then BOTS's lam and rho one at a time."""
    out: list[dict[str, float]] = [
        {"regression_forgetting": f, "regression_ridge": r}
        for f, r in itertools.product((0.9, 0.95, 0.99), (0.1, 1.0, 10.0))
    ]
    out += [{"lam": v} for v in (0.05, 0.2)] + [{"rho": v} for v in (0.05, 0.2)]
    return out


def label(overrides: dict[str, float]) -> str:
    return "bots[" + ", ".join(f"{k}={v}" for k, v in overrides.items()) + "]"


def main() -> int:
    args, command = out_and_jobs(__doc__ or "", jobs=1)
    entries = [Entry(label=label(g), selector="bots", overrides=g) for g in grid()]
    result: dict[str, Any] = {
        "command": command,
        "settings": "200 steps, batch 32, 16 rollouts, seeds 0-4, given prompts only",
        "scenarios": {},
    }
    for scenario in TUNING_SCENARIOS:
        res = run_benchmark(
            scenario, entries, seeds=range(5), steps=200, batch=32, rollouts=16,
            jobs=args.jobs, given=("prompts",),
        )  # fmt: skip
        result["scenarios"][scenario] = {k: v["ttb100"] for k, v in res["summary"].items()}
    lines = [
        "# BOTS prompts-only settings on the tuning scenarios",
        "",
        f"Command: `{result['command']}`  ",
        f"Simulator, {result['settings']}. TTB(100%) mean ± std over 5 seeds (all reached). "
        "Defaults: regression_forgetting 0.95, regression_ridge 1.0, lam 0.1, rho 0.1.",
        "",
        "| setting | " + " | ".join(TUNING_SCENARIOS) + " |",
        "|---|" + "---:|" * len(TUNING_SCENARIOS),
    ]
    for name in result["scenarios"][TUNING_SCENARIOS[0]]:
        cells = []
        for scenario in TUNING_SCENARIOS:
            cells.append(ttb_cell(result["scenarios"][scenario][name]))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    write_outputs(args.out, "bots_regression_sweep", result, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
