"""Held-out pass@1 of bench-rl runs at given steps, finished or not (e.g. runs stopped early).

    python benchmarks/real_rl_partial.py runs/gpu --labels uniform,metis,metis-lam1 \
        --seeds 0-3 --steps 0,120,240 --name real_rl_gpu_metis_lam1_partial

Reads each run's metrics.jsonl (a torn last line is skipped), takes the evaluations at the
requested steps and writes `<name>.{json,md}` under --out: per seed, and the mean with its
bootstrap 95% CI over the seeds that have that evaluation (a run that stopped earlier has
none). For effects whose runs could not finish; the finished benchmark's report is
`frontier bench-rl --report-only`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from frontier_rft.bench.metrics import bootstrap_mean_ci
from frontier_rft.bench.scripts import (
    command_line,
    int_tuple,
    script_parser,
    seed_list,
    write_outputs,
)
from frontier_rft.metrics_log import read_metrics_jsonl


def evaluations(run_dir: Path) -> dict[int, float]:
    """Held-out pass@1 by step of one run directory (empty when it logged none)."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return {}
    rows = read_metrics_jsonl(path)
    return {int(r["step"]): float(r["eval/pass@1"]) for r in rows if "eval/pass@1" in r}


def main() -> int:
    p = script_parser(__doc__ or "")
    p.add_argument("runs", help="bench-rl --runs directory")
    p.add_argument("--labels", required=True, help="comma-separated entry labels")
    p.add_argument("--seeds", type=seed_list, default=seed_list("0-4"), help="e.g. 0-3")
    p.add_argument("--steps", type=int_tuple, required=True, help="eval steps, e.g. 0,120,240")
    p.add_argument("--name", required=True, help="file stem of the outputs")
    args = p.parse_args()
    labels = [x.strip() for x in args.labels.split(",") if x.strip()]
    seeds, steps = args.seeds, list(args.steps)
    result: dict[str, Any] = {
        "command": command_line(),
        "seeds": seeds,
        "steps": steps,
        "labels": {},
    }
    for label in labels:
        per_seed = {s: evaluations(Path(args.runs) / "runs" / label / f"seed{s}") for s in seeds}
        row: dict[str, Any] = {"last_logged_step": {}, "pass1": {}}
        for s, evals in per_seed.items():
            row["last_logged_step"][str(s)] = max(evals) if evals else None
        for step in steps:
            vals = [per_seed[s][step] for s in seeds if step in per_seed[s]]
            row["pass1"][str(step)] = {
                "values": {str(s): per_seed[s].get(step) for s in seeds},
                "mean": sum(vals) / len(vals) if vals else None,
                "ci": list(bootstrap_mean_ci(vals)) if len(vals) > 1 else None,
                "seeds_with_eval": len(vals),
            }
        result["labels"][label] = row
    lines = [
        f"# Held-out pass@1 at fixed steps ({args.name})",
        "",
        f"Command: `{result['command']}`  ",
        f"Seeds {', '.join(map(str, seeds))}; mean [bootstrap 95% CI] over the seeds with that "
        "evaluation (k/n when not all have it). Last evaluated step per seed in the JSON.",
        "",
        "| entry | " + " | ".join(f"step {s}" for s in steps) + " |",
        "|---|" + "---:|" * len(steps),
    ]
    for label, row in result["labels"].items():
        cells = []
        for step in steps:
            c = row["pass1"][str(step)]
            if c["mean"] is None:
                cells.append("-")
                continue
            ci = "" if c["ci"] is None else f" [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}]"
            k = c["seeds_with_eval"]
            count = "" if k == len(seeds) else f" ({k}/{len(seeds)})"
            cells.append(f"{c['mean']:.3f}{ci}{count}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    write_outputs(args.out, args.name, result, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
