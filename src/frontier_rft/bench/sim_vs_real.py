"""Calibrate the simulated learner on the committed real-RL results, and check its predictions.

The real GPU testbed (`frontier bench-rl --scale gpu`: tiny Llama, GRPO on Countdown, 360
steps x 16 prompts x 8 rollouts, 5 paired seeds) on 512 prompts (11 epochs) and 1,280
prompts (4.5 epochs), results in benchmarks/results/real_rl_gpu*_full.json. The parts:

    fit      grid search of the learner's mechanism parameters on the 512-prompt results,
             on fit seeds 100-102 (never reported); writes sim_calibration.{json,md}
             (~2 h on 2 shared cores; cached per point in sim_calibration_cache.json,
             which is committed: a rerun only summarises)
    fit-joint  the same on both pool sizes at once, one learning rate per point, with the
             cost of quick repeats; its best point is the calibrated scenarios; writes
             sim_calibration_joint.{json,md} (~25 min; cached likewise)
    compare  the calibrated scenarios (small-pool, large-pool) against the real results on
             report seeds 0-4, both pool sizes; writes sim_vs_real.{json,md} (~1 min)
    predict  the calibrated simulator's predictions for selectors with no real-RL result
             yet (greso, skip, coverage="epoch", DAPO around greso/skip); writes
             sim_predictions_coverage.{json,md} with the predictor's git commit (~1 min)
    check    the committed predictions against a real run's report, once it exists:
             --real benchmarks/results/real_rl_gpu_coverage_full.json (prints a table)

What is fitted and how, and the guards against overfitting: docs/simulation.md.
Selectors always run at their defaults; nothing here changes a selector.

    python benchmarks/sim_vs_real.py fit --jobs 2
    python benchmarks/sim_vs_real.py fit-joint --jobs 2
    python benchmarks/sim_vs_real.py compare --jobs 2
    python benchmarks/sim_vs_real.py compare --jobs 2 --seeds 5-9   # fresh seeds, a check
    python benchmarks/sim_vs_real.py predict --jobs 2
    python benchmarks/sim_vs_real.py check --real benchmarks/results/real_rl_gpu_coverage_full.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import date
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr  # type: ignore[import-untyped]

from frontier_rft.bench.scripts import command_line, write_outputs
from frontier_rft.bench.simulated import run_many
from frontier_rft.simulation.calibration import fit_learning_rate, fit_start
from frontier_rft.simulation.runner import Entry, RunSpec, run_one
from frontier_rft.simulation.scenario import SCENARIOS, ScenarioConfig

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
REAL_FILES = {
    512: ("real_rl_gpu_full.json",),
    1280: (
        "real_rl_gpu_pool1280_full.json",
        "real_rl_gpu_pool1280_more_full.json",
        "real_rl_gpu_pool1280_rest_full.json",
    ),
}
TESTBED = {"steps": 360, "batch": 16, "rollouts": 8}
"""The real testbed's budget (bench.testbed.testbed('gpu')), mirrored by every simulated run."""
TARGET_SELECTORS = ("uniform", "prioritized", "dots", "bots", "pcl", "sec", "frontier", "dapo")
"""The selectors with real-RL results at both pool sizes (metis: 512 only, and the simulator
runs it with a heuristic judge instead of the policy, so it is left out)."""
FIT_SEEDS = (100, 101, 102)
REPORT_SEEDS = (0, 1, 2, 3, 4)
EVAL_TASKS, EVAL_SAMPLES = 144, 8
"""The real held-out evaluation: 144 tasks x 8 samples (its binomial noise is added to the
simulated final scores before they are classed helps / hurts / within noise)."""
SE_FLOOR = 0.01
"""Smallest standard error a real difference is weighed with in the fit's loss."""


def entry(name: str) -> Entry:
    """The simulated entry of a real-RL label ('dapo' is uniform inside fixed 3x DAPO)."""
    if name == "dapo":
        return Entry("dapo", "uniform", dynamic_sampling="fixed")
    return Entry(name, name)


# ----------------------------------------------------------------------------- real data
def real_results(pool: int) -> dict[str, Any]:
    """Per label: final held-out difference to uniform per seed, its mean and CI, ETR,
    distinct prompts trained, training reward; plus uniform's gain and the start state."""
    labels: dict[str, Any] = {}
    start: dict[str, Any] = {}
    gain = None
    for name in REAL_FILES[pool]:
        doc = json.loads((RESULTS / name).read_text(encoding="utf-8"))
        start = doc["start_state"]
        gain = doc["summary"]["uniform_gain"]
        for label, row in doc["summary"]["labels"].items():
            diff = row["final_minus_uniform"]["eval/pass@1"]
            labels[label] = {
                "delta": diff["mean"],
                "delta_ci": diff["ci"],
                "delta_seeds": diff["values"],
                "etr": row["etr"]["mean"],
                "distinct": row["distinct_trained"]["mean"],
                "reward": row["selected_success_rate"]["mean"],
            }
    assert gain is not None
    return {"labels": labels, "uniform_gain": gain["mean"], "start_state": start}


def start_histograms(start: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Histograms of successes out of 8 at the start, summed over seeds: 2-number tasks
    (levels 2x20 and 2x50) and 3-number tasks (3x30)."""
    two = sum(
        np.asarray(s["per_level"][lv]["successes_histogram"])
        for s in start.values()
        for lv in ("0", "1")
    )
    three = sum(np.asarray(s["per_level"]["2"]["successes_histogram"]) for s in start.values())
    return np.asarray(two, float), np.asarray(three, float)


def real_class(ci: Sequence[float]) -> str:
    """'helps' / 'hurts' when the 95% CI excludes 0, else 'noise' (within noise)."""
    if ci[0] > 0:
        return "helps"
    if ci[1] < 0:
        return "hurts"
    return "noise"


# ----------------------------------------------------------------------------- the world
def static_fit() -> dict[str, float]:
    """The pool's start, fitted to the 8-sample histograms of the 512-task runs: offset and
    spread of the 2-number tasks' logits, and the 3-number tasks' extra offset (same spread)."""
    two, three = start_histograms(real_results(512)["start_state"])
    offset, spread = fit_start(8, histogram=two)
    offset3, _ = fit_start(8, histogram=three, spread=spread)
    return {"domain_offset": offset, "task_noise": spread, "level_step": offset3 - offset}


def base_scenario(pool: int) -> ScenarioConfig:
    """The testbed's pool as the simulator sees it (scenario small-pool: 2-number tasks, two
    thirds, and 3-number tasks building on them; start as `static_fit` found it)."""
    return SCENARIOS["small-pool"].replace(num_tasks=pool)


GRID: dict[str, tuple[float, ...]] = {
    "specific_share": (2.0, 4.0, 8.0),
    "memorise": (10.0, 20.0, 40.0, 120.0, 360.0),
    "interfere": (0.0, 8.0, 12.0, 16.0, 20.0, 24.0),
    "specific_decay": (0.0,),
    "rollout_noise": (0.0, 0.75),
}
"""The mechanism's grid (optimizer 'adam'). memorise = specific_gain x specific_share and
interfere = interference x specific_share^2, so both act per unit of a visit's update
whatever the share; interfere 0 is the normalisation alone."""
DECAY_GRID: dict[str, tuple[float, ...]] = {
    "specific_share": (4.0,),
    "memorise": (10.0, 40.0, 120.0),
    "interfere": (16.0, 32.0, 64.0),
    "specific_decay": (0.01, 0.03),
    "rollout_noise": (0.75,),
}
"""Decay of the task-specific displacement (only repeats close in time interfere), with the
stronger interference it needs to matter."""
NOISE_GRID: dict[str, tuple[float, ...]] = {
    "specific_share": (2.0,),
    "memorise": (20.0, 40.0, 120.0),
    "interfere": (8.0, 16.0, 32.0),
    "specific_decay": (0.0,),
    "rollout_noise": (0.0,),
    "gradient_noise": (2.0, 4.0, 8.0, 12.0, 16.0),
    "task_drift": (0.0, 0.1, 0.2),
}
"""Interference plus the policy-gradient's noise (its share of each normalised step, which
gives a batch with more groups with reward spread a longer step) and each prompt's own
random drift (a pass rate measured on one visit predicts the next one less well)."""
JOINT_GRID: dict[str, tuple[float, ...]] = {
    "specific_share": (2.0,),
    "memorise": (20.0, 40.0),
    "interfere": (0.0, 4.0, 8.0, 16.0),
    "specific_decay": (0.0,),
    "rollout_noise": (0.0,),
    "gradient_noise": (4.0, 8.0),
    "task_drift": (0.1,),
    "repeat_cost": (0.0, 0.1, 0.2, 0.3, 0.5),
}
"""The joint fit (both pool sizes, one learning rate): the mechanism above plus the cost of
quick repeats (a prompt trained again the step after), which real RL's harm on the larger
pool called for (docs/simulation.md)."""
JOINT_GRID_AROUND: dict[str, tuple[float, ...]] = {
    **JOINT_GRID,
    "memorise": (40.0, 80.0),
    "interfere": (4.0, 8.0, 12.0),
    "gradient_noise": (2.0, 4.0),
    "repeat_cost": (0.5, 0.75, 1.0),
}
"""Around JOINT_GRID's best point, which sat on three of its edges (repeat_cost 0.5,
gradient_noise 4, memorise 40)."""
JOINT_GRID_EDGE: dict[str, tuple[float, ...]] = {
    **JOINT_GRID,
    "memorise": (80.0, 120.0, 160.0),
    "interfere": (2.0, 4.0),
    "gradient_noise": (4.0,),
    "repeat_cost": (0.75,),
}
"""Past JOINT_GRID_AROUND's best point on the edges it sat on (memorise 80, interfere 4)."""
JOINT_GRID_FAR: dict[str, tuple[float, ...]] = {
    **JOINT_GRID,
    "memorise": (240.0, 360.0, 480.0),
    "interfere": (2.0, 4.0, 8.0),
    "gradient_noise": (4.0,),
    "repeat_cost": (0.75,),
}
"""Past JOINT_GRID_EDGE's best point, which sat on its memorise edge (160)."""
JOINT_GRID_FAR_AROUND: dict[str, tuple[float, ...]] = {
    **JOINT_GRID,
    "memorise": (240.0, 360.0, 480.0),
    "interfere": (8.0, 12.0, 16.0),
    "gradient_noise": (4.0,),
    "repeat_cost": (0.5, 0.75, 1.0),
}
"""Around JOINT_GRID_FAR's best point (memorise 360), which sat on its interfere edge (8)."""
JOINT_GRID_RIDGE: dict[str, tuple[float, ...]] = {
    **JOINT_GRID,
    "memorise": (600.0, 720.0),
    "interfere": (12.0, 16.0, 20.0),
    "gradient_noise": (4.0,),
    "repeat_cost": (0.75,),
}
"""Further along the ridge (memorise rising with interfere) on whose memorise edge
JOINT_GRID_FAR_AROUND's best point sat (480)."""
ALTERNATIVES: tuple[dict[str, Any], ...] = (
    {"candidate": "transfer by construction"},
    *({"candidate": "fading transfer", "transfer_halflife": h} for h in (2.0, 4.0, 8.0)),
    *(
        {
            "candidate": "interference without normalisation",
            "optimizer": "sgd",
            "specific_share": 4.0,
            "memorise": m,
            "interfere": k,
        }
        for m in (40.0, 120.0, 360.0)
        for k in (8.0, 16.0, 24.0)
    ),
)
"""The other candidate mechanisms, each fitted the same way (docs/simulation.md)."""


def point_config(base: ScenarioConfig, point: dict[str, Any]) -> ScenarioConfig:
    """A grid point as scenario fields (learning rate fitted separately)."""
    fields: dict[str, Any] = {}
    if point.get("candidate") in ("transfer by construction", "fading transfer"):
        fields = {
            "optimizer": "sgd",
            "specific_share": 0.0,
            "specific_gain": 0.0,
            "interference": 0.0,
            "specific_decay": 0.0,
            "rollout_noise": 0.0,
            "memory_rate": 0.3,
            "transfer_halflife": point.get("transfer_halflife", 0.0),
        }
    else:
        eta = point["specific_share"]
        fields = {
            "optimizer": point.get("optimizer", "adam"),
            "specific_share": eta,
            "specific_gain": point["memorise"] / eta,
            "interference": point["interfere"] / eta**2,
            "specific_decay": point.get("specific_decay", 0.0),
            "rollout_noise": point.get("rollout_noise", 0.0),
            "gradient_noise": point.get("gradient_noise", 0.0),
            "task_drift": point.get("task_drift", 0.0),
            "repeat_cost": point.get("repeat_cost", 0.0),
        }
    return base.replace(**fields)


def grid_points() -> list[dict[str, Any]]:
    points = []
    for grid in (GRID, DECAY_GRID, NOISE_GRID):
        keys = list(grid)
        points += [
            {"candidate": "interference", **dict(zip(keys, values, strict=True))}
            for values in itertools.product(*(grid[k] for k in keys))
        ]
    return points + [dict(p) for p in ALTERNATIVES]


def mechanism(point: dict[str, Any]) -> str:
    """The candidate mechanism a grid point stands for (its row in the evidence table)."""
    if point["candidate"] != "interference":
        return str(point["candidate"])
    if point.get("gradient_noise", 0.0) > 0:
        return "interference, gradient noise, drift"
    if point["interfere"] == 0:
        return "normalised steps, no interference"
    if point.get("specific_decay", 0.0) > 0:
        return "interference that decays"
    return "interference (normalised steps)"


def point_key(point: dict[str, Any]) -> str:
    return json.dumps(point, sort_keys=True)


# ----------------------------------------------------------------------------- simulate
def run_entries(
    cfg: ScenarioConfig, names: Sequence[str], seeds: Sequence[int]
) -> dict[str, list[dict[str, float]]]:
    """Each named entry on each seed: held-out gain, final score, ETR, distinct prompts
    trained, training reward (means over the run)."""
    out: dict[str, list[dict[str, float]]] = {}
    for name in names:
        for seed in seeds:
            rec = run_one(RunSpec(cfg, entry(name), seed, **TESTBED))
            out.setdefault(name, []).append(
                {
                    "gain": rec["score"][-1] - rec["score"][0],
                    "final": rec["score"][-1],
                    "etr": float(np.mean(rec["etr"])),
                    "distinct": float(rec["distinct_trained"][-1]),
                    "reward": float(np.mean(rec["reward_mean"])),
                }
            )
    return out


def evaluate_point(args: tuple[dict[str, Any], int, float, Sequence[int]]) -> dict[str, Any]:
    """Fit the learning rate to uniform's real gain, then run every target selector."""
    point, pool, target_gain, seeds = args
    cfg = point_config(base_scenario(pool), point)
    lr = fit_learning_rate(cfg, target_gain, seeds, **TESTBED)
    if lr is None:
        return {"point": point, "pool": pool, "learning_rate": None, "runs": None}
    runs = run_entries(cfg.replace(learning_rate=lr), TARGET_SELECTORS, seeds)
    return {"point": point, "pool": pool, "learning_rate": lr, "runs": runs}


def evaluate_joint(args: tuple[dict[str, Any], float]) -> dict[str, Any]:
    """Fit the learning rate to uniform's real gain on 512 prompts, then run every target
    selector on both pool sizes with it (scenario large-pool shares small-pool's rate)."""
    point, target_gain = args
    lr = fit_learning_rate(point_config(base_scenario(512), point), target_gain, FIT_SEEDS,
                           **TESTBED)  # fmt: skip
    if lr is None:
        return {"point": point, "learning_rate": None, "runs": None}
    runs = {
        str(pool): run_entries(
            point_config(base_scenario(pool), point).replace(learning_rate=lr),
            TARGET_SELECTORS,
            FIT_SEEDS,
        )
        for pool in (512, 1280)
    }
    return {"point": point, "learning_rate": lr, "runs": runs}


def cmd_fit_joint(args: argparse.Namespace, command: str) -> int:
    """Grid search of JOINT_GRID on both pool sizes at once (loss: the sum of both)."""
    cache_path = Path(args.out) / "sim_calibration_joint_cache.json"
    cache: dict[str, Any] = (
        json.loads(cache_path.read_text(encoding="utf-8")) if cache_path.exists() else {}
    )
    reals = {pool: real_results(pool) for pool in (512, 1280)}
    keys = list(JOINT_GRID)
    points = [
        {"candidate": "interference", **dict(zip(keys, values, strict=True))}
        for grid in (
            JOINT_GRID,
            JOINT_GRID_AROUND,
            JOINT_GRID_EDGE,
            JOINT_GRID_FAR,
            JOINT_GRID_FAR_AROUND,
            JOINT_GRID_RIDGE,
        )
        for values in itertools.product(*(grid[k] for k in keys))
    ]
    todo = [(p, reals[512]["uniform_gain"]) for p in points if point_key(p) not in cache]
    run_cached(
        evaluate_joint, todo, lambda res: point_key(res["point"]), cache, cache_path, args.jobs
    )
    names = [n for n in TARGET_SELECTORS if n != "uniform"]
    rows = []
    for res in cache.values():
        if res["runs"] is None:
            continue
        sim = {pool: {n: float(np.mean(v)) for n, v in deltas(runs).items()}
               for pool, runs in res["runs"].items()}  # fmt: skip
        losses = {pool: loss(sim[pool], reals[int(pool)]["labels"], names) for pool in sim}
        rows.append({"point": res["point"], "lr": res["learning_rate"], "sim": sim,
                     "loss": losses, "total": sum(losses.values())})  # fmt: skip
    rows.sort(key=lambda r: r["total"])
    for row in rows:
        row["spearman"] = {
            pool: spearman([row["sim"][pool][n] for n in TARGET_SELECTORS],
                           [reals[int(pool)]["labels"][n]["delta"] for n in TARGET_SELECTORS])
            for pool in row["sim"]
        }  # fmt: skip
    without = [r for r in rows if r["point"]["repeat_cost"] == 0]
    loso = {}
    for left in names:
        rest = [n for n in names if n != left]

        def rest_loss(row: dict[str, Any], rest: list[str] = rest) -> float:
            return sum(loss(row["sim"][p], reals[int(p)]["labels"], rest) for p in row["sim"])

        pick = min(rows, key=rest_loss)
        loso[left] = {pool: {"sim": pick["sim"][pool][left],
                             "real": reals[int(pool)]["labels"][left]["delta"]}
                      for pool in pick["sim"]}  # fmt: skip
    summary = {
        **_provenance(command),
        "fit_seeds": list(FIT_SEEDS),
        "grid": JOINT_GRID,
        "grid_around": JOINT_GRID_AROUND,
        "grid_edge": JOINT_GRID_EDGE,
        "grid_far": JOINT_GRID_FAR,
        "grid_far_around": JOINT_GRID_FAR_AROUND,
        "grid_ridge": JOINT_GRID_RIDGE,
        "points": len(rows),
        "infeasible": sum(1 for r in cache.values() if r["runs"] is None),
        "best": rows[0],
        "best_without_repeat_cost": without[0] if without else None,
        "top": rows[:10],
        "loso": loso,
    }
    write_outputs(args.out, "sim_calibration_joint", summary, joint_markdown(summary))
    return 0


def joint_markdown(doc: dict[str, Any]) -> list[str]:
    names = [n for n in TARGET_SELECTORS if n != "uniform"]
    lines = [
        "# Calibrating the simulated learner on both pool sizes at once",
        "",
        f"Command: `{doc['command']}` ({doc['date']}, commit {doc['commit']}); fit seeds "
        f"{doc['fit_seeds']} (the reported comparison, sim_vs_real.md, uses seeds 0-4). "
        "One learning rate per grid point, fitted so uniform's simulated held-out gain on "
        "512 prompts equals the real one; every target selector then runs on 512 and 1,280 "
        "prompts. Loss: the sum over both pools of the single-pool loss (sim_calibration.md). "
        f"{doc['points']} feasible grid points, {doc['infeasible']} infeasible. Selectors run "
        "at their defaults; nothing about a selector is fitted.",
        "",
        "| point | loss 512 | loss 1280 | Spearman 512 / 1280 | " + " | ".join(names) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(names),
    ]
    shown = [*doc["top"][:5]]
    if doc["best_without_repeat_cost"] is not None:
        shown.append(doc["best_without_repeat_cost"])
    for row in shown:
        cells = " | ".join(f"{_f(row['sim']['512'][n])} / {_f(row['sim']['1280'][n])}"
                           for n in names)  # fmt: skip
        lines.append(
            f"| {_point_text(row['point'], row['lr'])} | {row['loss']['512']:.1f} | "
            f"{row['loss']['1280']:.1f} | {row['spearman']['512']:+.2f} / "
            f"{row['spearman']['1280']:+.2f} | {cells} |"
        )
    reals = {pool: real_results(pool)["labels"] for pool in (512, 1280)}
    lines.append(
        "| real (seeds 0-4) | | | | "
        + " | ".join(f"{_f(reals[512][n]['delta'])} / {_f(reals[1280][n]['delta'])}" for n in names)
        + " |"
    )
    lines += [
        "",
        "Cells: simulated Δ on 512 / 1,280 prompts (fit seeds). The last simulated row is the "
        "best point without the cost of quick repeats.",
        "",
        "Leave one selector out (the point that fits the other six best on both pools): "
        + ", ".join(
            f"{n} {_f(r['512']['sim'])} / {_f(r['1280']['sim'])} (real {_f(r['512']['real'])} / "
            f"{_f(r['1280']['real'])})"
            for n, r in doc["loso"].items()
        )
        + ".",
    ]
    return lines


def deltas(runs: dict[str, list[dict[str, float]]]) -> dict[str, list[float]]:
    """Paired final-score differences to uniform, per seed."""
    base = [r["final"] for r in runs["uniform"]]
    return {
        n: [r["final"] - b for r, b in zip(rows, base, strict=True)] for n, rows in runs.items()
    }


def loss(sim: dict[str, float], real: dict[str, Any], names: Sequence[str]) -> float:
    """Sum of squared standardised errors of the held-out differences to uniform."""
    total = 0.0
    for name in names:
        ci = real[name]["delta_ci"]
        se = max((ci[1] - ci[0]) / (2 * 1.96), SE_FLOOR)
        total += ((sim[name] - real[name]["delta"]) / se) ** 2
    return total


# ----------------------------------------------------------------------------- commands
def _provenance(command: str) -> dict[str, str]:
    """What every result file of this script starts with: its command, date and commit."""
    return {"command": command, "date": date.today().isoformat(), "commit": _git_commit()}


def _git_commit() -> str:
    """HEAD, flagged when the predictor's code (src/, benchmarks/) differs from it; result
    files (benchmarks/results/) do not count."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=RESULTS.parent,
        )
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "../src",
                ".",
                ":(exclude)results",
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=RESULTS.parent,
        ).stdout.strip()
        return out.stdout.strip() + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_cached(
    evaluate: Callable[[Any], dict[str, Any]],
    todo: Sequence[Any],
    key: Callable[[dict[str, Any]], str],
    cache: dict[str, Any],
    cache_path: Path,
    jobs: int,
) -> None:
    """Evaluate the grid points not cached yet in worker processes, saving the cache every
    5 results (a stopped fit resumes where it was)."""
    print(f"[fit] {len(todo)} grid points to run ({len(cache)} cached)", file=sys.stderr)
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as ex:
        futures = [ex.submit(evaluate, t) for t in todo]
        for i, fut in enumerate(as_completed(futures), start=1):
            res = fut.result()
            cache[key(res)] = res
            if i % 5 == 0 or i == len(todo):
                cache_path.write_text(json.dumps(cache), encoding="utf-8")
                print(f"[fit] {i}/{len(todo)}  {time.perf_counter() - start:.0f}s", file=sys.stderr)
    cache_path.write_text(json.dumps(cache), encoding="utf-8")


def cmd_fit(args: argparse.Namespace, command: str) -> int:
    cache_path = Path(args.out) / "sim_calibration_cache.json"
    cache: dict[str, Any] = (
        json.loads(cache_path.read_text(encoding="utf-8")) if cache_path.exists() else {}
    )
    pools = [int(p) for p in args.pools.split(",")]
    reals = {pool: real_results(pool) for pool in pools}
    todo = [
        (p, pool, reals[pool]["uniform_gain"], FIT_SEEDS)
        for pool in pools
        for p in grid_points()
        if f"{pool} {point_key(p)}" not in cache
    ]
    run_cached(
        evaluate_point,
        todo,
        lambda res: f"{res['pool']} {point_key(res['point'])}",
        cache,
        cache_path,
        args.jobs,
    )
    summary = {
        **_provenance(command),
        "fit_seeds": list(FIT_SEEDS),
        "static_fit": static_fit(),
        "grid": GRID,
        "decay_grid": DECAY_GRID,
        "noise_grid": NOISE_GRID,
        "pools": {},
    }
    for pool in pools:
        summary["pools"][str(pool)] = summarise_fit(cache, pool, reals[pool])
    write_outputs(args.out, "sim_calibration", summary, fit_markdown(summary))
    return 0


def summarise_fit(cache: dict[str, Any], pool: int, real: dict[str, Any]) -> dict[str, Any]:
    """Best point per candidate mechanism, and leave-one-selector-out predictions."""
    names = [n for n in TARGET_SELECTORS if n != "uniform"]
    rows = []
    for key, res in cache.items():
        if not key.startswith(f"{pool} ") or res["runs"] is None:
            continue
        sim = {n: float(np.mean(v)) for n, v in deltas(res["runs"]).items()}
        rows.append(
            {
                "point": res["point"],
                "lr": res["learning_rate"],
                "sim": sim,
                "loss": loss(sim, real["labels"], names),
            }
        )
    by_candidate: dict[str, Any] = {}
    for row in sorted(rows, key=lambda r: r["loss"]):
        by_candidate.setdefault(mechanism(row["point"]), row)
    best = min(rows, key=lambda r: r["loss"])
    loso = {}
    for left in names:
        rest = [n for n in names if n != left]
        pick = min(rows, key=lambda r: loss(r["sim"], real["labels"], rest))
        loso[left] = {
            "sim": pick["sim"][left],
            "real": real["labels"][left]["delta"],
            "point": pick["point"],
        }

    def rho(sim: dict[str, float]) -> float:
        return spearman(
            [sim[n] for n in TARGET_SELECTORS],
            [real["labels"][n]["delta"] for n in TARGET_SELECTORS],
        )

    for row in (best, *by_candidate.values()):
        row["spearman"] = rho(row["sim"])
    loso_rho = spearman(
        [0.0, *(loso[n]["sim"] for n in names)], [0.0, *(loso[n]["real"] for n in names)]
    )
    infeasible = sum(1 for k, r in cache.items() if k.startswith(f"{pool} ") and r["runs"] is None)
    return {
        "best": best,
        "by_candidate": by_candidate,
        "loso": loso,
        "loso_spearman": loso_rho,
        "points": len(rows),
        "infeasible": infeasible,
    }


# ----------------------------------------------------------------------------- measurement
REPLICATES = 200
"""Draws of the real evaluation's noise a simulated difference is classed over."""


def sim_class(
    finals: Sequence[float], base: Sequence[float], pool: int, label: str, run_sd: float
) -> str:
    """The class a real run would most often report if the simulator were right: the paired
    differences of final scores plus a real run's noise (its own training noise, `run_sd`
    per run, and the evaluation's binomial noise, 144 tasks x 8 samples), classed by the same
    bootstrap 95% CI as the real ones, the most frequent class over REPLICATES draws (seeded
    by label and pool, so reruns agree)."""
    rng = np.random.default_rng([pool, *label.encode()])
    n = EVAL_TASKS * EVAL_SAMPLES
    counts: dict[str, int] = {}
    for _ in range(REPLICATES):
        mine = np.clip(np.asarray(finals) + run_sd * rng.standard_normal(len(finals)), 0, 1)
        theirs = np.clip(np.asarray(base) + run_sd * rng.standard_normal(len(base)), 0, 1)
        diff = rng.binomial(n, mine) / n - rng.binomial(n, theirs) / n
        picks = rng.integers(0, diff.size, size=(2000, diff.size))
        lo, hi = np.quantile(diff[picks].mean(axis=1), [0.025, 0.975])
        cls = real_class([float(lo), float(hi)])
        counts[cls] = counts.get(cls, 0) + 1
    return max(counts, key=lambda c: counts[c])


def training_noise(scenario: ScenarioConfig) -> dict[str, float]:
    """A real run's own noise in its final score (what one more seed of the same selector
    would move it by), from uniform's runs on the fit pool (512 prompts): the variance of its
    final held-out score over seeds, less the evaluation's binomial variance and the
    variance the pool's draw explains (the simulated uniform runs' on the fit seeds). The
    simulated learner has almost none of it: a run is nearly deterministic given its pool."""
    doc = json.loads((RESULTS / REAL_FILES[512][0]).read_text(encoding="utf-8"))
    finals = np.asarray(doc["summary"]["labels"]["uniform"]["final"]["eval/pass@1"]["values"])
    p = float(finals.mean())
    binomial = p * (1 - p) / (EVAL_TASKS * EVAL_SAMPLES)
    cfg = scenario.replace(num_tasks=512)
    steps, batch, rollouts = TESTBED["steps"], TESTBED["batch"], TESTBED["rollouts"]
    sim = [
        run_one(RunSpec(cfg, entry("uniform"), s, steps, batch, rollouts))["score"][-1]
        for s in FIT_SEEDS
    ]
    real_var, sim_var = float(finals.var(ddof=1)), float(np.var(sim, ddof=1))
    return {
        "run_sd": float(np.sqrt(max(real_var - binomial - sim_var, 0.0))),
        "real_uniform_sd": float(np.sqrt(real_var)),
        "binomial_sd": float(np.sqrt(binomial)),
        "sim_uniform_sd": float(np.sqrt(sim_var)),
    }


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    return float(spearmanr(a, b).statistic)


def ttb_steps(curve: Sequence[float], base: Sequence[float], tau: float) -> float | None:
    """TTB(tau) with the real benchmark's evaluation grid (every 30 steps, interpolated)."""
    from frontier_rft.bench.metrics import ttb

    steps = np.arange(0, len(curve), 30)
    return ttb(steps, np.asarray(curve)[steps], steps, np.asarray(base)[steps], tau)


def simulate(
    cfg: ScenarioConfig, entries: Sequence[Entry], seeds: Sequence[int], jobs: int
) -> dict[str, list[dict[str, Any]]]:
    """Records of every entry on every seed (worker processes)."""
    specs = [RunSpec(cfg, e, s, **TESTBED) for e in entries for s in seeds]
    out: dict[str, list[dict[str, Any]]] = {}
    for rec in run_many(specs, jobs):
        out.setdefault(rec["label"], []).append(rec)
    return out


def summarise_runs(
    runs: dict[str, list[dict[str, Any]]], pool: int, run_sd: float
) -> dict[str, Any]:
    """Per label: difference to uniform (noise-free mean; measured per seed, its CI and
    class), TTB50/75, ETR, distinct prompts trained, training reward, rollouts per step."""
    base = runs["uniform"]
    base_finals = [r["score"][-1] for r in base]
    out: dict[str, Any] = {}
    for label, recs in runs.items():
        finals = [r["score"][-1] for r in recs]
        cls = (
            "baseline"
            if label == "uniform"
            else sim_class(finals, base_finals, pool, label, run_sd)
        )
        ttbs = {
            f"ttb{round(100 * tau)}": [
                ttb_steps(r["score"], b["score"], tau) for r, b in zip(recs, base, strict=True)
            ]
            for tau in (0.5, 0.75)
        }
        out[label] = {
            "sim": float(np.mean([f - b["score"][-1] for f, b in zip(finals, base, strict=True)])),
            "sim_class": cls,
            "gain": float(np.mean([r["score"][-1] - r["score"][0] for r in recs])),
            **{
                k: (float(np.mean(v)) if all(x is not None for x in v) else None)
                for k, v in ttbs.items()
            },
            **{f"{k}_reached": sum(x is not None for x in v) for k, v in ttbs.items()},
            "etr": float(np.mean([np.mean(r["etr"]) for r in recs])),
            "distinct": float(np.mean([r["distinct_trained"][-1] for r in recs])),
            "retrained_next_step": float(
                np.mean([_mean_present(r["retrained_next_step"]) for r in recs])
            ),
            "reward": float(np.mean([np.mean(r["reward_mean"]) for r in recs])),
            "rollouts_per_step": float(np.mean([np.mean(r["rollouts"]) for r in recs])),
        }
    return out


def _mean_present(values: Sequence[float | None]) -> float:
    """Mean of the steps that have a value (a step that trained nothing has None)."""
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else float("nan")


def check_scenario(out: Path) -> None:
    """Say so when the calibrated scenario is not the joint fit's best point."""
    path = out / "sim_calibration_joint.json"
    if not path.exists():
        return
    best = json.loads(path.read_text(encoding="utf-8"))["best"]
    lr = float(f"{best['lr']:.4g}")  # the scenario holds the fitted rate to 4 digits
    fitted = point_config(base_scenario(512), best["point"]).replace(learning_rate=lr)
    if fitted != SCENARIOS["small-pool"]:
        print(f"[compare] warning: scenario small-pool is not the joint fit's best point "
              f"{best['point']}", file=sys.stderr)  # fmt: skip


def parse_seeds(text: str) -> tuple[int, ...]:
    """'0-4' or '5,6,7': report seeds, never the fit's."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            seeds = tuple(range(lo, hi + 1))
        else:
            seeds = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(
            f"--seeds {text!r}: give a range such as 0-4 or a list such as 5,6,7"
        ) from None
    if len(seeds) < 2 or min(seeds) < 0:
        raise SystemExit(f"--seeds {text!r}: give at least two non-negative seeds")
    if set(seeds) & set(FIT_SEEDS):
        raise SystemExit(f"--seeds {text!r}: seeds {list(FIT_SEEDS)} are the fit's")
    return seeds


def cmd_compare(args: argparse.Namespace, command: str) -> int:
    check_scenario(Path(args.out))
    seeds = parse_seeds(args.seeds)
    doc: dict[str, Any] = {
        **_provenance(command),
        "seeds": list(seeds),
        "testbed": TESTBED,
        "pools": {},
        "agreement": {},
    }
    noise = training_noise(SCENARIOS["small-pool"])
    doc["training_noise"] = noise
    for pool, name in ((512, "small-pool"), (1280, "large-pool")):
        real = real_results(pool)
        runs = simulate(SCENARIOS[name], [entry(n) for n in TARGET_SELECTORS], seeds, args.jobs)
        sim = summarise_runs(runs, pool, noise["run_sd"])
        base = [r["score"][-1] for r in runs["uniform"]]
        rows: dict[str, Any] = {}
        for n in TARGET_SELECTORS:
            r = real["labels"][n]
            finals = [rec["score"][-1] for rec in runs[n]]
            rows[n] = {
                "sim": sim[n]["sim"],
                "real": r["delta"],
                "sim_class": sim[n]["sim_class"],
                "sim_class_evaluation_noise_only": (
                    "baseline" if n == "uniform" else sim_class(finals, base, pool, n, 0.0)
                ),
                "real_class": "baseline" if n == "uniform" else real_class(r["delta_ci"]),
                "real_ci": r["delta_ci"],
                "sim_etr": sim[n]["etr"],
                "real_etr": r["etr"],
                "sim_distinct": sim[n]["distinct"],
                "real_distinct": r["distinct"],
                "sim_retrained_next_step": sim[n]["retrained_next_step"],
                "sim_reward": sim[n]["reward"],
                "real_reward": r["reward"],
            }
        doc["pools"][str(pool)] = rows
        others = [n for n in TARGET_SELECTORS if n != "uniform"]
        agree = [rows[n]["sim_class"] == rows[n]["real_class"] for n in others]
        agree_eval = [
            rows[n]["sim_class_evaluation_noise_only"] == rows[n]["real_class"] for n in others
        ]
        rho = spearman(
            [rows[n]["sim"] for n in TARGET_SELECTORS], [rows[n]["real"] for n in TARGET_SELECTORS]
        )
        doc["agreement"][str(pool)] = {
            "spearman": rho,
            "spearman_without_uniform": spearman(
                [rows[n]["sim"] for n in others], [rows[n]["real"] for n in others]
            ),
            "sign_agreement": sum(agree) / len(agree),
            "sign_agreement_evaluation_noise_only": sum(agree_eval) / len(agree_eval),
            "targets_met": bool(rho >= 0.8 and sum(agree) / len(agree) >= 0.8),
            "uniform_gain": {"sim": sim["uniform"]["gain"], "real": real["uniform_gain"]},
        }
        print(
            f"[compare] {pool}: Spearman {rho:+.2f}, signs {sum(agree)}/{len(agree)}",
            file=sys.stderr,
        )
    fit_path = Path(args.out) / "sim_calibration_joint.json"
    if fit_path.exists():
        doc["fit_loso"] = json.loads(fit_path.read_text(encoding="utf-8"))["loso"]
    name = "sim_vs_real" if seeds == REPORT_SEEDS else f"sim_vs_real_seeds_{args.seeds}"
    write_outputs(args.out, name, doc, compare_markdown(doc))
    return 0


PREDICTED: tuple[Entry, ...] = (
    Entry("uniform", "uniform"),
    Entry("greso", "greso"),
    Entry("skip", "skip"),
    Entry("bots-epoch", "bots", {"coverage": "epoch"}),
    Entry("prioritized-epoch", "prioritized", {"coverage": "epoch"}),
    Entry("pcl-epoch", "pcl", {"coverage": "epoch"}),
    Entry("dapo", "uniform", dynamic_sampling="fixed"),
    Entry("dapo-adaptive", "uniform", dynamic_sampling="adaptive"),
    Entry("greso-dapo", "greso", dynamic_sampling="adaptive"),
    Entry("skip-dapo", "skip", dynamic_sampling="adaptive"),
    Entry("greso-dapo-fixed", "greso", dynamic_sampling="fixed"),
    Entry("skip-dapo-fixed", "skip", dynamic_sampling="fixed"),
)
"""Labels as `frontier bench-rl` names its entries (training/bench.py), so a later real run
pairs with its prediction by label; dapo has a real result and anchors the others."""


def cmd_predict(args: argparse.Namespace, command: str) -> int:
    doc: dict[str, Any] = {
        **_provenance(command),
        "seeds": list(REPORT_SEEDS),
        "testbed": TESTBED,
        "training_noise": training_noise(SCENARIOS["small-pool"]),
        "pools": {},
    }
    for pool, name in ((512, "small-pool"), (1280, "large-pool")):
        runs = simulate(SCENARIOS[name], PREDICTED, REPORT_SEEDS, args.jobs)
        doc["pools"][str(pool)] = summarise_runs(runs, pool, doc["training_noise"]["run_sd"])
        print(f"[predict] {pool} done", file=sys.stderr)
    write_outputs(args.out, "sim_predictions_coverage", doc, predict_markdown(doc))
    return 0


def cmd_check(args: argparse.Namespace, command: str) -> int:
    """Committed predictions against a real `frontier bench-rl` report (*_full.json)."""
    if not args.real:
        raise SystemExit("check needs --real PATH: a frontier bench-rl <name>_full.json")
    doc = json.loads((Path(args.out) / "sim_predictions_coverage.json").read_text("utf-8"))
    real_doc = json.loads(Path(args.real).read_text(encoding="utf-8"))
    pool = str(real_doc["testbed"]["train"]["train_size"])
    predicted = doc["pools"].get(pool)
    if predicted is None:
        raise SystemExit(f"no predictions for a pool of {pool} prompts")
    labels = real_doc["summary"]["labels"]
    rows = []
    for label, row in labels.items():
        if label == "uniform" or label not in predicted:
            continue
        diff = row["final_minus_uniform"]["eval/pass@1"]
        rows.append((label, predicted[label]["sim"], diff["mean"],
                     predicted[label]["sim_class"], real_class(diff["ci"])))  # fmt: skip
    if len(rows) < 2:
        raise SystemExit(f"{args.real}: fewer than two predicted labels to compare")
    lines = [
        f"# Predictions ({doc['date']}, commit {doc['commit']}) against {args.real}",
        "",
        f"Command: `{command}`",
        "",
        "| label | predicted Δ | real Δ | predicted class | real class |",
        "|---|---:|---:|---|---|",
        *(f"| {lab} | {_f(a)} | {_f(b)} | {c} | {d} |" for lab, a, b, c, d in rows),
        "",
        f"Spearman {spearman([0.0, *(r[1] for r in rows)], [0.0, *(r[2] for r in rows)]):+.2f} "
        f"(uniform included); classes agree for {sum(r[3] == r[4] for r in rows)} of "
        f"{len(rows)}.",
    ]
    print("\n".join(lines))
    return 0


def _f(x: float | None, digits: int = 3, sign: bool = True) -> str:
    if x is None:
        return "-"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _point_text(point: dict[str, Any], lr: float | None) -> str:
    shown = ", ".join(f"{k} {v}" for k, v in point.items() if k != "candidate")
    return (shown + "; " if shown else "") + (f"lr {lr:.4g}" if lr else "")


def fit_markdown(doc: dict[str, Any]) -> list[str]:
    st = doc["static_fit"]
    lines = [
        "# Calibrating the simulated learner on the real-RL results",
        "",
        f"Command: `{doc['command']}` ({doc['date']}, commit {doc['commit']}); fit seeds "
        f"{doc['fit_seeds']} (the reported comparison, sim_vs_real.md, uses seeds 0-4).",
        "",
        "Start of the pool (fitted to the real 8-sample start histograms of the 512-task runs): "
        f"2-number tasks' logit offset {st['domain_offset']:.3f}, spread {st['task_noise']:.3f}; "
        f"3-number tasks {st['level_step']:.3f} logits harder (scenario small-pool holds "
        f"{SCENARIOS['small-pool'].domain_offsets[0]}, {SCENARIOS['small-pool'].task_noise} and "
        f"{SCENARIOS['small-pool'].level_step}, the same fit on a coarser grid, which the grid "
        "below ran with). For every grid point the learning "
        "rate is fitted so uniform's simulated held-out gain equals the real one (+0.263); "
        "'infeasible' points cannot reach it. Loss: sum over the 7 non-uniform selectors of "
        "((simulated − real held-out Δ) / real standard error)^2, standard error from the real "
        f"95% CI (at least {SE_FLOOR}). Selectors run at their defaults; nothing else is fitted.",
    ]
    for pool, res in doc["pools"].items():
        names = [n for n in TARGET_SELECTORS if n != "uniform"]
        lines += [
            "",
            f"## Fitted on {pool} prompts ({res['points']} feasible grid points, "
            f"{res['infeasible']} infeasible)",
            "",
            "Best point of each candidate mechanism (simulated Δ on the fit seeds):",
            "",
            "| mechanism | loss | Spearman | " + " | ".join(names) + " | point |",
            "|---|---:|---:|" + "---:|" * len(names) + "---|",
        ]
        for cand, row in sorted(res["by_candidate"].items(), key=lambda kv: kv[1]["loss"]):
            cells = " | ".join(_f(row["sim"][n]) for n in names)
            lines.append(
                f"| {cand} | {row['loss']:.1f} | {row['spearman']:+.2f} | {cells} | "
                f"{_point_text(row['point'], row['lr'])} |"
            )
        real = real_results(int(pool))["labels"]
        lines.append(
            "| real (512, seeds 0-4) | | | "
            + " | ".join(_f(real[n]["delta"]) for n in names)
            + " | |"
        )
        lines += [
            "",
            f"Leave one selector out: each selector's Δ predicted by the grid point that fits "
            f"the other six best (Spearman with the real Δ, uniform included: "
            f"{res['loso_spearman']:+.2f}):",
            "",
            "| left out | real Δ | predicted Δ | point chosen without it |",
            "|---|---:|---:|---|",
        ]
        for n, row in res["loso"].items():
            point = _point_text(row["point"], None)
            lines.append(f"| {n} | {_f(row['real'])} | {_f(row['sim'])} | {point} |")
    return lines


def compare_markdown(doc: dict[str, Any]) -> list[str]:
    lines = [
        "# The calibrated simulator against real RL",
        "",
        f"Command: `{doc['command']}` ({doc['date']}, commit {doc['commit']}); simulated seeds "
        f"{doc['seeds']} (the fit used seeds {list(FIT_SEEDS)}), {doc['testbed']['steps']} "
        f"steps x {doc['testbed']['batch']} prompts x {doc['testbed']['rollouts']} rollouts as "
        "on the real testbed. Δ = final held-out pass@1 minus uniform's (real: "
        "benchmarks/results/real_rl_gpu*_full.json; simulated: the expected held-out pass rate, "
        "mean over paired seeds). Classes: helps / hurts when the 95% bootstrap CI over seeds "
        "excludes 0, else noise; a simulated class is the one a real run would most often "
        "report if the simulator were right: each simulated final score plus a real run's own "
        f"noise (training noise, SD {doc['training_noise']['run_sd']:.3f}, measured on uniform's "
        "real runs at 512 prompts: their seed-to-seed SD "
        f"{doc['training_noise']['real_uniform_sd']:.3f} less the evaluation's binomial SD "
        f"{doc['training_noise']['binomial_sd']:.3f} and the simulated pool draw's "
        f"{doc['training_noise']['sim_uniform_sd']:.3f}, in variance; and the real evaluation's "
        f"binomial noise, {EVAL_TASKS} tasks x {EVAL_SAMPLES} samples), {REPLICATES} draws. "
        "The class agreement with the evaluation's noise alone is given beside it. Retrained "
        "next step: the share of a step's trained (mixed) groups whose prompt was trained the "
        "step before too (simulated only: the real runs do not record which prompts they "
        "trained). The calibration (`fit-joint`, sim_calibration_joint.md) used both pools' "
        f"real results on fit seeds {list(FIT_SEEDS)}, so every row below is in sample (a fit "
        "on 512 prompts alone, `fit`, left 1,280 out: sim_calibration.md); out of sample are "
        "fresh seeds (`--seeds 5-9`) and the predictions for selectors without real results.",
    ]
    for pool, rows in doc["pools"].items():
        agr = doc["agreement"][pool]
        where = "fitted on this pool and the other"
        lines += [
            "",
            f"## {pool} prompts ({where})",
            "",
            f"Spearman(simulated Δ, real Δ) over {len(rows)} selectors: **{agr['spearman']:+.2f}** "
            f"(without uniform: {agr['spearman_without_uniform']:+.2f}); class agreement "
            f"**{agr['sign_agreement']:.0%}** of the {len(rows) - 1} non-uniform selectors "
            f"({agr['sign_agreement_evaluation_noise_only']:.0%} with the evaluation's noise "
            "alone); "
            f"targets (>= 0.8 and >= 80%) {'met' if agr['targets_met'] else '**not met**'}. "
            f"Uniform's held-out gain: simulated {agr['uniform_gain']['sim']:+.3f}, real "
            f"{agr['uniform_gain']['real']:+.3f}.",
            "",
            "| selector | sim Δ | real Δ [95% CI] | sim class | real class | ETR sim / real "
            "| distinct prompts sim / real | training reward sim / real | retrained next step "
            "(sim) |",
            "|---|---:|---:|---|---|---:|---:|---:|---:|",
        ]
        for n, r in rows.items():
            ci = r["real_ci"]
            mark = "" if r["sim_class"] == r["real_class"] or n == "uniform" else " ✗"
            lines.append(
                f"| {n} | {_f(r['sim'])} | {_f(r['real'])} [{_f(ci[0])}, {_f(ci[1])}] | "
                f"{r['sim_class']}{mark} | {r['real_class']} | {r['sim_etr']:.2f} / "
                f"{r['real_etr']:.2f} | {r['sim_distinct']:.0f} / {r['real_distinct']:.0f} | "
                f"{r['sim_reward']:.2f} / {r['real_reward']:.2f} | "
                f"{r['sim_retrained_next_step']:.2f} |"
            )
    loso = doc.get("fit_loso")
    if loso:
        cells = ", ".join(
            f"{n} {_f(r['512']['sim'])} / {_f(r['1280']['sim'])} (real {_f(r['512']['real'])} / "
            f"{_f(r['1280']['real'])})"
            for n, r in loso.items()
        )
        rhos = [
            spearman([0.0, *(r[pool]["sim"] for r in loso.values())],
                     [0.0, *(r[pool]["real"] for r in loso.values())])
            for pool in ("512", "1280")
        ]  # fmt: skip
        lines += [
            "",
            "## Leave one selector out (both pools, fit seeds)",
            "",
            "Each selector's Δ on 512 / 1,280 prompts predicted by the grid point that fits the "
            f"other six best: {cells}; Spearman with the real Δ (uniform included) "
            f"{rhos[0]:+.2f} / {rhos[1]:+.2f}. Candidate mechanisms and the grids: "
            "sim_calibration.md, sim_calibration_joint.md.",
        ]
    return lines


GRESO_PROTOTYPE = {"512": (0.020, -0.009, 0.042), "1280": (0.035, 0.014, 0.051)}
"""Real held-out Δ of a 90-line prototype of GRESO's rule on the same testbed and seeds
(docs/results/coverage.md): not the shipped `greso`, so a reference, not the check."""


def predict_markdown(doc: dict[str, Any]) -> list[str]:
    lines = [
        "# Predictions of the calibrated simulator, before the real runs",
        "",
        f"Command: `{doc['command']}` ({doc['date']}, predictor at commit {doc['commit']}); "
        f"seeds {doc['seeds']}, the real testbed's budget. Nothing here has a real-RL result "
        "yet except `dapo` (the anchor). When the real runs exist (`scripts/gpu_coverage.sh "
        "PART OUT`, docs/results/coverage.md), `python benchmarks/sim_vs_real.py check --real "
        "benchmarks/results/<name>_full.json` sets each label's real Δ and class beside the row "
        "below; labels are `frontier bench-rl`'s. Δ = final held-out score minus "
        "uniform's; class from the 95% CI with a real run's training and evaluation noise added "
        "(sim_vs_real.md); TTB on the "
        "real benchmark's 30-step evaluation grid (steps to 50/75% of uniform's gain, "
        "relative to uniform's).",
    ]
    for pool, rows in doc["pools"].items():
        proto = GRESO_PROTOTYPE[pool]
        lines += [
            "",
            f"## {pool} prompts",
            "",
            "| label | Δ | class | TTB50 | TTB75 | ETR | distinct prompts | rollouts / step |",
            "|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        for label, r in rows.items():
            lines.append(
                f"| {label} | {_f(r['sim'])} | {r['sim_class']} | {_f(r['ttb50'], 2, False)} | "
                f"{_f(r['ttb75'], 2, False)} | {r['etr']:.2f} | {r['distinct']:.0f} | "
                f"{r['rollouts_per_step']:.0f} |"
            )
        lines += [
            "",
            f"For reference, the real prototype of GRESO's rule on this pool: Δ "
            f"{_f(proto[0])} [{_f(proto[1])}, {_f(proto[2])}] (not the shipped `greso`).",
        ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("part", choices=("fit", "fit-joint", "compare", "predict", "check"))
    parser.add_argument(
        "--real", default=None, help="check: a frontier bench-rl <name>_full.json to compare"
    )
    parser.add_argument("--out", default=str(RESULTS), help="output directory")
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes")
    parser.add_argument("--pools", default="512", help="fit: pool sizes to fit on")
    parser.add_argument(
        "--seeds",
        default="0-4",
        help="compare: simulated seeds (other than 0-4: written to sim_vs_real_seeds_<seeds>)",
    )
    args = parser.parse_args()
    command = command_line()
    if args.part == "fit":
        return cmd_fit(args, command)
    if args.part == "fit-joint":
        return cmd_fit_joint(args, command)
    if args.part == "compare":
        return cmd_compare(args, command)
    if args.part == "check":
        return cmd_check(args, command)
    return cmd_predict(args, command)


if __name__ == "__main__":
    raise SystemExit(main())
