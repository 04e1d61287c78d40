"""Prompts-only BOTS: do other fits of its regression plug-in, or other text features, help?

A negative result, kept so it need not be redone. `bots_prompts_gap.py` shows prompts-only
BOTS trails BOTS with reference models mainly because prompt text predicts poorly how the
policy does on prompts it has not tried yet. This asks whether a different *fit* of the
same text features does better. Each row changes one thing of the default plug-in
(ridge on smoothed logits, forgetting 0.95 per step, each task anchored at its last
observed offset):

- `no forgetting`: `regression_forgetting = 1` (a config option);
- `two timescales`: slopes fitted on all history, a capability offset c_t that follows
  each batch's mean residual with momentum 0.9 (as the paper's mu~; an IRT-like split of
  stable difficulty and moving ability);
- `pooled anchors`: a task's anchor is the count-weighted mean of all its offsets, not
  the last one;
- `binomial fit`: online logistic regression on the success counts (a Newton step per
  batch, Hessian forgotten by 0.95) instead of least squares on smoothed logits;
- `fading anchors`: anchors shrink by 1% per step towards the regression;
- `text features: ...`: the default plug-in on other features of the same prompt text
  (16 or 128 SVD dimensions instead of 64, or word bigrams added).

Tuning scenarios first (`easy`, `multidomain`), `hard` last and only reported: nothing
here was adopted. BOTS at paper defaults (lam = rho = 0.1, Thompson sampling), prompts
only, 200 steps of 32 prompts x 16 rollouts, 5 paired seeds. Writes
`bots_plugin_forms.{json,md}`.

    python benchmarks/bots_plugin_forms.py --out benchmarks/results    # ~40 s, 2 cores
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Any

from frontier_rft.bench.metrics import paired_summary, summarize
from frontier_rft.bench.scripts import out_and_jobs, ttb_cell, write_outputs
from frontier_rft.bench.simulation.bots_plugin_forms import ROWS, SCENARIO_NAMES, run
from frontier_rft.bench.simulation.bots_prompts_gap import SEEDS, ttb100


def _difference(summary: dict[str, Any] | None) -> str:
    """'+0.01 [-0.01, +0.03]'; '-' when a seed did not reach uniform's best."""
    if summary is None:
        return "(reference)"
    if summary["mean"] is None:
        return "-"
    lo, hi = summary["ci"]
    return f"{summary['mean']:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def main() -> int:
    args, command = out_and_jobs(__doc__ or "")
    jobs = [(s, f, k) for s in SCENARIO_NAMES for f in ("uniform", *ROWS) for k in SEEDS]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        curves = dict(zip(jobs, pool.map(run, jobs), strict=True))
    results: dict[str, Any] = {"command": command, "scenarios": {}}
    for s in SCENARIO_NAMES:
        rows: dict[str, Any] = {}
        results["scenarios"][s] = rows
        baselines = {k: curves[(s, "uniform", k)] for k in SEEDS}
        for f in ROWS:
            mine = {k: curves[(s, f, k)] for k in SEEDS}
            per_seed = [ttb100(mine[k], baselines[k]) for k in SEEDS]
            default = rows["default"]["per_seed"] if f != "default" else None
            rows[f] = {
                "ttb100": summarize(mine, baselines, {})["ttb100"],
                "per_seed": per_seed,
                "vs_default": None
                if default is None
                else paired_summary(
                    [
                        None if a is None or b is None else a - b
                        for a, b in zip(per_seed, default, strict=True)
                    ]
                ),
            }
    lines = [
        "# Prompts-only BOTS: other forms of the regression plug-in and other text features",
        "",
        f"Command: `{command}`  ",
        "Simulator, BOTS at paper defaults (lam = rho = 0.1, Thompson sampling) given prompt "
        "text only, 200 steps of 32 prompts x 16 rollouts, 5 paired seeds (0-4). TTB(100%) "
        "relative to uniform, mean ± std (lower is better), and the paired difference from "
        "the default form, mean [bootstrap 95% CI over seeds]. Each row changes one thing of the "
        "default plug-in (see the script's docstring). `easy` and `multidomain` are the tuning "
        "scenarios; `hard` is reported only. Nothing here was adopted: no form beats the "
        "default beyond noise on the tuning scenarios.",
        "",
        "| plug-in form | "
        + " | ".join(f"{s} TTB(100%) | {s} vs default" for s in SCENARIO_NAMES)
        + " |",
        "|---|" + "---:|---:|" * len(SCENARIO_NAMES),
    ]
    for f in ROWS:
        cells = []
        for s in SCENARIO_NAMES:
            row = results["scenarios"][s][f]
            cells += [ttb_cell(row["ttb100"]), _difference(row["vs_default"])]
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    write_outputs(args.out, "bots_plugin_forms", results, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
