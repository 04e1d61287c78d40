"""The simulated learner against the committed real-RL results: what the fit
(`bench.simulation.fit`) and the comparison and predictions (`bench.simulation.compare`) share; the
command line is benchmarks/sim_vs_real.py.

The real GPU testbed (`frontier bench-rl --scale gpu`: tiny Llama, GRPO on Countdown, 360
steps x 16 prompts x 8 rollouts, 5 paired seeds) on 512 prompts (11 epochs) and 1,280
prompts (4.5 epochs), results in benchmarks/results/real_rl_gpu*_full.json. Here: reading
them, a grid point as a scenario, the target selectors run on it, the fit's loss, and how a
simulated difference is classed against a real run's noise. What is fitted and how, and the
guards against overfitting: docs/simulation.md. Selectors always run at their defaults.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import date
from multiprocessing import get_context
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from frontier_rft.bench.simulation.benchmark import run_many
from frontier_rft.simulation.calibration import fit_start
from frontier_rft.simulation.runner import Entry, RunSpec, run_one, sampler_spec
from frontier_rft.simulation.scenario import SCENARIOS, ScenarioConfig

RESULTS = Path(__file__).resolve().parents[4] / "benchmarks" / "results"
"""The committed results of a source checkout: the real runs read here, the scripts' --out."""


REAL_FILES = {
    512: ("real_rl_gpu_full.json",),
    1280: (
        "real_rl_gpu_pool1280_full.json",
        "real_rl_gpu_pool1280_more_full.json",
        "real_rl_gpu_pool1280_rest_full.json",
    ),
}


class Testbed(TypedDict):
    """A run's budget: steps, prompts per step, rollouts per prompt."""

    steps: int
    batch: int
    rollouts: int


TESTBED: Testbed = {"steps": 360, "batch": 16, "rollouts": 8}
"""The real testbed's budget (bench.real_rl.testbed.testbed('gpu')), mirrored by every
simulated run."""


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
REPLICATES = 200
"""Draws of the real evaluation's noise a simulated difference is classed over."""


_log = logging.getLogger(__name__)


def entry(name: str) -> Entry:
    """The simulated entry of a real-RL label ('dapo': uniform in dynamic sampling, mode fixed)."""
    if name == "dapo":
        return Entry("dapo", "uniform", sampler=sampler_spec(dynamic_sampling="fixed"))
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
    offset, spread = fit_start(8, histogram=two.tolist())
    offset3, _ = fit_start(8, histogram=three.tolist(), spread=spread)
    return {"domain_offset": offset, "task_noise": spread, "level_step": offset3 - offset}


def base_scenario(pool: int) -> ScenarioConfig:
    """The testbed's pool as the simulator sees it (scenario small-pool: 2-number tasks, two
    thirds, and 3-number tasks building on them; start as `static_fit` found it)."""
    return SCENARIOS["small-pool"].replace(num_tasks=pool)


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


def point_key(point: dict[str, Any]) -> str:
    return json.dumps(point, sort_keys=True)


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


# ----------------------------------------------------------------------------- measurement
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


def ttb_steps(curve: Sequence[float], base: Sequence[float], tau: float) -> float | None:
    """TTB(tau) with the real benchmark's evaluation grid (every 30 steps, interpolated)."""
    from frontier_rft.bench.metrics import ttb

    steps = np.arange(0, len(curve), 30)
    # the simulated curve at the real run's evaluation steps, interpolated as the real
    # reports were when this calibration was made (a labelled option of ttb)
    return ttb(
        steps, np.asarray(curve)[steps], steps, np.asarray(base)[steps], tau, interpolate=True
    )


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
                k: (
                    float(np.mean([x for x in v if x is not None]))
                    if all(x is not None for x in v)
                    else None
                )
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


def parse_seeds(text: str) -> tuple[int, ...]:
    """'0-4' or '5,6,7': report seeds, never the fit's."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            seeds = tuple(range(lo, hi + 1))
        else:
            seeds = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(
            f"--seeds {text!r}: give a range such as 0-4 or a list such as 5,6,7"
        ) from None
    if len(seeds) < 2 or min(seeds) < 0:
        raise ValueError(f"--seeds {text!r}: give at least two non-negative seeds")
    if set(seeds) & set(FIT_SEEDS):
        raise ValueError(f"--seeds {text!r}: seeds {list(FIT_SEEDS)} are the fit's")
    return seeds


# ----------------------------------------------------------------------------- files
def provenance(command: str) -> dict[str, str]:
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
    _log.info("[fit] %d grid points to run (%d cached)", len(todo), len(cache))
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as ex:
        futures = [ex.submit(evaluate, t) for t in todo]
        for i, fut in enumerate(as_completed(futures), start=1):
            res = fut.result()
            cache[key(res)] = res
            if i % 5 == 0 or i == len(todo):
                cache_path.write_text(json.dumps(cache), encoding="utf-8")
                _log.info("[fit] %d/%d  %.0fs", i, len(todo), time.perf_counter() - start)
    cache_path.write_text(json.dumps(cache), encoding="utf-8")


def signed(x: float | None, digits: int = 3, sign: bool = True) -> str:
    """x with its sign and `digits` decimals (no sign when `sign` is False); '-' for None."""
    if x is None:
        return "-"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def point_text(point: dict[str, Any], lr: float | None) -> str:
    """A grid point (and its fitted learning rate) as a table cell."""
    shown = ", ".join(f"{k} {v}" for k, v in point.items() if k != "candidate")
    return (shown + "; " if shown else "") + (f"lr {lr:.4g}" if lr else "")
