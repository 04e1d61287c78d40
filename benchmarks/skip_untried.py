"""skip's rule for untried prompts, measured in the simulator's one-epoch regime (issue 35).

Two rules for a prompt with no rollouts of its own: 'take' it always (uniform's first epoch,
GRESO's rule), or 'predict': skip it by a calibrated prediction of its first group's chance
of being informative from the features of prompts already tried, with a floor. Each rule runs
on the calibrated scenarios with a pool of at least steps x batch prompts (every prompt is
untried when first walked), beside uniform on the same seeds. Every step rolls out batch x
rollouts, so held-out score against rollouts is held-out score against steps; the table
gives the paired difference to uniform of the final and the mean held-out score and the
rollouts to reach uniform's final score (TTB100, a share of uniform's).

    python benchmarks/skip_untried.py --seed 20 --seeds 5 --stem skip_untried_tune
    python benchmarks/skip_untried.py --seed 0 --seeds 5 --floors 0.25
"""

from __future__ import annotations

import subprocess
import warnings
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import ttb
from frontier_rft.bench.scripts import command_line, script_parser, write_outputs
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.simulation.runner import Entry, RunSpec, run_one
from frontier_rft.simulation.scenario import SCENARIOS

BATCH, ROLLOUTS = 16, 8
REGIMES = (  # (label, scenario, pool size, steps): steps x batch <= pool size
    ("small-pool N=512, 32 steps", "small-pool", 512, 32),
    ("large-pool N=1280, 80 steps", "large-pool", 1280, 80),
    # the two scenarios differ only in their pool size: at 5,760 prompts they are one
    ("calibrated N=5760, 360 steps", "large-pool", 5760, 360),
)


def entries(floors: list[float]) -> list[tuple[Entry, tuple[str, ...]]]:
    """(entry, given) pairs: uniform, skip with each rule, 'predict' on both feature sources."""
    out: list[tuple[Entry, tuple[str, ...]]] = [
        (Entry("uniform", "uniform"), ("prompts",)),
        (Entry("skip take", "skip", {"untried": "take"}), ("prompts",)),
    ]
    for given in (("prompts",), ("features",)):
        for f in floors:
            label = f"skip predict floor={f} ({given[0]})"
            out.append((Entry(label, "skip", {"untried": "predict", "untried_floor": f}), given))
    return out


def one(args: tuple[str, str, int, int, Entry, tuple[str, ...], int]) -> dict[str, Any]:
    regime, scenario, pool, steps, entry, given, seed = args
    cfg = SCENARIOS[scenario].replace(num_tasks=pool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        r = run_one(RunSpec(cfg, entry, seed, steps, BATCH, ROLLOUTS, given=given))
    skipped = r["selector_metrics"].get("skip/skipped_total", [0.0])
    return {
        "regime": regime,
        "label": entry.label,
        "seed": seed,
        "score": r["score"],
        "rollouts": int(np.sum(r["rollouts"])),
        "etr": float(np.mean(r["etr"])),
        "skipped": float(skipped[-1] or 0.0),
    }


def _stats(x: list[float]) -> dict[str, float]:
    a = np.asarray(x, dtype=np.float64)
    sem = float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else float("nan")
    return {"mean": round(float(a.mean()), 4), "sem": round(sem, 4)}


def summarise(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per regime and label: paired differences to uniform, TTB100, ETR, prompts skipped."""
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["regime"], r["label"]), {})[r["seed"]] = r
    out: dict[str, dict[str, Any]] = {}
    for (regime, label), seeds in by.items():
        base = by[(regime, "uniform")]
        d_final, d_mean, ttbs = [], [], []
        for s, r in seeds.items():
            mine, ref = np.asarray(r["score"]), np.asarray(base[s]["score"])
            d_final.append(float(mine[-1] - ref[-1]))
            d_mean.append(float(mine.mean() - ref.mean()))
            steps = np.arange(mine.size, dtype=np.float64)
            t = ttb(steps, mine, steps, ref, 1.0, interpolate=True)  # None: never reached
            ttbs.append(float("nan") if t is None else float(t))
        out.setdefault(regime, {})[label] = {
            "final_score": _stats([float(r["score"][-1]) for r in seeds.values()]),
            "final_minus_uniform": _stats(d_final),
            "mean_score_minus_uniform": _stats(d_mean),
            "ttb100_rollouts": (
                _stats([t for t in ttbs if np.isfinite(t)]) if np.isfinite(ttbs).any() else None
            ),
            "ttb100_reached": int(np.isfinite(ttbs).sum()),
            "rollouts": int(np.mean([r["rollouts"] for r in seeds.values()])),
            "etr": _stats([r["etr"] for r in seeds.values()]),
            "skipped": _stats([r["skipped"] for r in seeds.values()]),
            "seeds": sorted(seeds),
        }
    return out


def markdown(doc: dict[str, Any]) -> list[str]:
    lines = [
        "# skip: untried prompts, one-epoch regime (issue 35)",
        "",
        f"Command: `{doc['command']}` (commit {doc['commit']}).",
        "",
        f"Batch {BATCH}, {ROLLOUTS} rollouts per prompt; seeds {doc['seeds']}. Differences "
        "are paired by seed against uniform (mean ± standard error). Every step rolls out "
        f"{BATCH * ROLLOUTS}, so rollouts to uniform's final score = steps (TTB100, a share "
        "of uniform's; lower is better).",
        "",
    ]
    for regime, table in doc["summary"].items():
        lines += [
            f"## {regime}",
            "",
            "| rule | final held-out | final − uniform | mean − uniform | TTB100 (rollouts) "
            "| ETR | prompts skipped |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for label, s in table.items():
            t = s["ttb100_rollouts"]
            ttb_txt = (
                "-" if t is None else f"{t['mean']:.2f} ({s['ttb100_reached']}/{len(s['seeds'])})"
            )
            lines.append(
                f"| {label} | {s['final_score']['mean']:.4f} | "
                f"{s['final_minus_uniform']['mean']:+.4f} ± {s['final_minus_uniform']['sem']:.4f}"
                f" | {s['mean_score_minus_uniform']['mean']:+.4f} ± "
                f"{s['mean_score_minus_uniform']['sem']:.4f} | {ttb_txt} | "
                f"{s['etr']['mean']:.3f} | {s['skipped']['mean']:.0f} |"
            )
        lines.append("")
    return lines[:-1]  # write_outputs ends the file with one newline


def main() -> None:
    ap = script_parser(__doc__ or "")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per entry")
    ap.add_argument("--floors", default="0.1,0.25,0.5", help="untried_floor values to run")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes")
    ap.add_argument("--stem", default="skip_untried", help="output file name, no extension")
    args = ap.parse_args()
    floors = [float(f) for f in args.floors.split(",")]
    seeds = list(range(args.seed, args.seed + args.seeds))
    jobs = [
        (regime, scenario, pool, steps, entry, given, seed)
        for regime, scenario, pool, steps in REGIMES
        for entry, given in entries(floors)
        for seed in seeds
    ]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as ex:
            runs = list(ex.map(one, jobs))
    else:
        runs = [one(j) for j in jobs]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    doc = {
        "command": command_line(),
        "commit": commit,
        "seeds": seeds,
        "batch": BATCH,
        "rollouts": ROLLOUTS,
        "summary": summarise(runs),
    }
    write_outputs(args.out, args.stem, doc, markdown(doc))


if __name__ == "__main__":
    main()
