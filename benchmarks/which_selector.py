"""Which selector, given what you have: TTB(100%) of every selector per metadata tier.

Runs the simulator benchmark (paper defaults, 5 paired seeds) on the calibrated learner's
two regimes (scenarios small-pool: 512 prompts, 11 epochs; large-pool: 1,280 prompts, 4.5
epochs; docs/simulation.md), at the real testbed's budget (360 steps of 16 prompts x 8
rollouts), for each tier of what a user can give a selector:

    prompts      prompt text only (the default of every path)
    +categories  plus a category column (e.g. a dataset's source or level)
    +difficulty  plus offline difficulty (e.g. pass rates measured before training)
    +references  plus weak/strong reference models' pass rates (BOTS interpolation)
    oracle       everything, including the simulator's near-oracle task features
                 (the learner's own skill weights plus noise: an upper bound, not a tier
                 users reach)

and writes `which_selector.json` and `which_selector.md` (one table per scenario,
selectors x tiers, TTB(100%) mean ± std with seeds reached, and the final held-out score
difference to uniform). It is a simulation: read it with the real-RL results
(docs/results/real_rl.md). No setting was tuned on it. The earlier results on the learner
that transfers by construction: `--scenarios hard,easy,multidomain,continuous --steps 200
--batch 32 --rollouts 16`.

    python benchmarks/which_selector.py --out benchmarks/results     # ~10 min on 2 cores
"""

from __future__ import annotations

import logging
import time
from typing import Any

from frontier_rft import SELECTORS as REGISTERED
from frontier_rft.bench.scripts import command_line, script_parser, ttb_cell, write_outputs
from frontier_rft.bench.simulation.benchmark import parse_entries, run_benchmark
from frontier_rft.simulation.scenario import SCENARIOS

TIERS: dict[str, tuple[str, ...]] = {
    "prompts": ("prompts",),
    "+categories": ("prompts", "categories"),
    "+difficulty": ("prompts", "difficulty"),
    "+references": ("prompts", "references"),
    "oracle": ("prompts", "categories", "difficulty", "references", "features"),
}
SELECTORS = tuple(REGISTERED)
"""What `frontier simulate` compares by default: every selector whose class says so."""


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Which selector, given what you have",
        "",
        f"Command: `{results['command']}`  ",
        f"Simulated learner (not real RL), {results['settings']}; TTB(100%) relative to "
        "uniform (lower is better; '-' never reached; (k/n) seeds that reached it), and the "
        "final held-out score minus uniform's given prompts only. Each selector runs with its "
        "paper's defaults on the metadata of its column; what it derives is listed under the "
        "table. metis uses the packaged non-LLM heuristic judge. Real-RL results: "
        "docs/results/real_rl.md; how far the simulator agrees with them: "
        "benchmarks/results/sim_vs_real.md.",
    ]
    for scenario, by_tier in results["scenarios"].items():
        lines += ["", f"## {scenario}: {SCENARIOS[scenario].description}", ""]
        lines.append("| selector | " + " | ".join(TIERS) + " | final − uniform (prompts) |")
        lines.append("|---|" + "---:|" * (len(TIERS) + 1))
        summary = by_tier["prompts"]["summary"]
        for name in summary:  # the selectors these results hold
            cells = [ttb_cell(by_tier[t]["summary"][name]["ttb100"]) for t in TIERS]
            final = summary[name].get("final_score", {}).get("mean")
            base = summary.get("uniform", {}).get("final_score", {}).get("mean")
            cells.append("-" if final is None or base is None else f"{final - base:+.3f}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        evidence = by_tier["prompts"]["evidence"]
        derived = ", ".join(
            f"{n}: {'; '.join(f'{k}={v}' for k, v in ev.items())}"
            for n, ev in evidence.items()
            if ev
        )
        lines += ["", f"Prompts-only evidence: {derived}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = script_parser(__doc__ or "")
    parser.add_argument("--seeds", type=int, default=5, help="paired seeds per cell")
    parser.add_argument("--steps", type=int, default=360, help="training steps per run")
    parser.add_argument("--batch", type=int, default=16, help="prompts per step")
    parser.add_argument("--rollouts", type=int, default=8, help="rollouts per prompt")
    parser.add_argument("--jobs", type=int, default=None, help="parallel processes")
    parser.add_argument(
        "--scenarios", default="small-pool,large-pool", help="comma-separated scenario names"
    )
    args = parser.parse_args()
    out: dict[str, Any] = {
        "command": command_line(),
        "settings": (
            f"{args.steps} steps, batch {args.batch}, {args.rollouts} rollouts, {args.seeds} seeds"
        ),
        "scenarios": {},
    }
    start = time.perf_counter()
    for scenario in args.scenarios.split(","):
        out["scenarios"][scenario] = {}
        for tier, given in TIERS.items():
            res = run_benchmark(
                scenario,
                parse_entries([s for s in SELECTORS if s != "uniform"]),
                seeds=range(args.seeds),
                steps=args.steps,
                batch=args.batch,
                rollouts=args.rollouts,
                jobs=args.jobs,
                given=given,
            )
            evidence = {r["selector"]: r["evidence"] for r in res["runs"] if r["seed"] == 0}
            out["scenarios"][scenario][tier] = {
                "given": list(given),
                "summary": {
                    k: {"ttb100": v["ttb100"], "final_score": v["final_score"]}
                    for k, v in res["summary"].items()
                },
                "evidence": evidence,
            }
            best = min(
                (v["ttb100"]["mean"], k)
                for k, v in res["summary"].items()
                if v["ttb100"]["mean"] is not None and v["ttb100"]["reached"] == args.seeds
            )
            elapsed = time.perf_counter() - start
            print(f"{scenario:12s} {tier:12s} best {best[1]} {best[0]:.2f}  [{elapsed:.0f}s]")
    write_outputs(args.out, "which_selector", out, markdown(out).splitlines())
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the library's progress lines
    raise SystemExit(main())
