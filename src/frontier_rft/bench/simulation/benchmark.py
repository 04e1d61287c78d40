"""The simulated selector benchmark: every entry on every seed of a simulated learner, paired
against the baseline (uniform) seed by seed, summarised with TTB, BSF and the per-step means.

The output is the results dict documented in docs/report.md, written by `write_results` as
results.json and records.csv (the HTML report is frontier_rft.reporting.write_report's);
one run is frontier_rft.simulation.runner.run_one, the metrics frontier_rft.bench.metrics.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import summarize
from frontier_rft.bench.real_rl.verdicts import real_rl_context
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.sampling.fewer_rollouts import FewerRollouts
from frontier_rft.selectors import SELECTORS, make_selector
from frontier_rft.simulation.learner import SimulatedLearner
from frontier_rft.simulation.runner import (
    SUCCESS_BINS,
    Entry,
    RunSpec,
    collaborators,
    given_pool,
    parse_given,
    run_one,
)
from frontier_rft.simulation.scenario import SCENARIOS, ScenarioConfig, get_scenario

__all__ = [
    "RESULTS_FORMAT",
    "cached_runs",
    "parse_entries",
    "run_benchmark",
    "run_many",
    "sweep_entries",
    "write_results",
]

RESULTS_FORMAT = "frontier-rft-benchmark/1"


def parse_entries(names: Sequence[str], overrides: dict[str, Any] | None = None) -> list[Entry]:
    """Entries for plain selector names, all with the same overrides (validated early)."""
    entries = []
    for name in names:
        if name not in SELECTORS:
            raise ValueError(f"unknown selector {name!r}; known: {', '.join(sorted(SELECTORS))}")
        entries.append(Entry(label=name, selector=name, overrides=dict(overrides or {})))
    return entries


def sweep_entries(name: str, key: str, values: Sequence[Any], base: dict[str, Any]) -> list[Entry]:
    """One entry per value of a hyperparameter, labelled like `bots[lam=0.05]`."""
    return [
        Entry(label=f"{name}[{key}={v}]", selector=name, overrides={**base, key: v}) for v in values
    ]


def cached_runs(
    name: str,
    scenario: str,
    entries: Sequence[Entry],
    seeds: Sequence[int],
    steps: int,
    batch: int,
    rollouts: int,
    jobs: int | None,
    baseline: str = "uniform",
) -> list[dict[str, Any]]:
    """run_benchmark's runs, cached under the system temp dir by everything that makes them
    (scenario, entries, seeds, sizes), so a script rerun that only changes its summary does
    not simulate again, and a changed entry list never reads another's runs."""
    key = json.dumps(
        [scenario, [repr(e) for e in entries], list(seeds), steps, batch, rollouts, baseline]
    )
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"frontier_rft_{name}_{digest}.json"
    if cache.is_file():
        runs: list[dict[str, Any]] = json.loads(cache.read_text())
        return runs
    res = run_benchmark(scenario, entries, seeds, steps, batch, rollouts, jobs, baseline)
    cache.write_text(json.dumps(res["runs"]))
    return list(res["runs"])


def run_benchmark(
    scenario: str | ScenarioConfig,
    entries: Sequence[Entry],
    seeds: Sequence[int],
    steps: int = 200,
    batch: int = 32,
    rollouts: int = 8,
    jobs: int | None = None,
    baseline: str = "uniform",
    progress: Callable[[int, int, str], None] | None = None,
    given: Sequence[str] = ("prompts",),
) -> dict[str, Any]:
    """Run every entry on every seed (plus the baseline) and summarise against the baseline."""
    cfg = get_scenario(scenario) if isinstance(scenario, str) else scenario
    if steps < 1 or batch < 1 or rollouts < 1 or not seeds:
        raise ValueError("steps, batch and rollouts must be >= 1 and at least one seed given")
    if batch > cfg.num_tasks:
        raise ValueError(f"batch {batch} exceeds the scenario's {cfg.num_tasks} tasks")
    entries = list(entries)
    if not any(e.label == baseline for e in entries):
        entries.insert(0, Entry(label=baseline, selector=baseline))
    given = parse_given(",".join(given))
    _check_entries(cfg, entries, given, rollouts)
    specs = [RunSpec(cfg, e, int(s), steps, batch, rollouts, given) for e in entries for s in seeds]
    runs = run_many(specs, jobs, progress)
    return {
        "format": RESULTS_FORMAT,
        "scenario": {
            "name": cfg.name,
            "description": cfg.description,
            "config": {
                f.name: (list(v) if isinstance(v := getattr(cfg, f.name), tuple) else v)
                for f in dataclasses.fields(cfg)
            },
        },
        "settings": {
            "steps": steps,
            "batch": batch,
            "rollouts": rollouts,
            "seeds": [int(s) for s in seeds],
            "baseline": baseline,
            "given": list(given),
        },
        "labels": [e.label for e in entries],
        "real_rl": real_rl_context(
            cfg.name,
            entries,
            modified=cfg.name in SCENARIOS and SCENARIOS[cfg.name] != cfg,
        ),
        "category_names": runs[0]["category_names"],
        "success_bins": list(SUCCESS_BINS),
        "runs": runs,
        "summary": _summaries(runs, [e.label for e in entries], baseline),
    }


def _check_entries(
    cfg: ScenarioConfig, entries: Sequence[Entry], given: Sequence[str], rollouts: int
) -> None:
    """Fail before spawning workers: unknown names, bad overrides, duplicate labels, fewer
    rollouts around a selector that does not walk the data or a screen of n or more."""
    labels = [e.label for e in entries]
    if len(set(labels)) != len(labels):
        raise ValueError(f"duplicate labels in the comparison: {labels}")
    probe = SimulatedLearner(cfg.replace(num_tasks=min(cfg.num_tasks, 64), eval_tasks=8), seed=0)
    pool = given_pool(probe, given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        for e in entries:
            selector = make_selector(
                e.selector,
                pool,
                seed=0,
                **e.overrides,
                **collaborators(e.selector, probe),
            )
            if e.sampler.kind == FewerRollouts.kind:
                try:
                    e.sampler.config.check_group_size(rollouts)
                    e.sampler.build(selector)
                except ValueError as exc:
                    raise ValueError(f"entry {e.label!r}: {exc}") from None


def run_many(
    specs: Sequence[RunSpec],
    jobs: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[dict[str, Any]]:
    """`run_one` of every spec, in `jobs` worker processes (default: one per CPU); the
    records in the order of `specs`. `progress(done, total, note)` follows each finished run."""
    jobs = jobs or os.cpu_count() or 1
    done: list[dict[str, Any] | None] = [None] * len(specs)
    if jobs == 1 or len(specs) == 1:
        for i, spec in enumerate(specs):
            done[i] = run_one(spec)
            if progress:
                progress(i + 1, len(specs), f"{spec.entry.label} seed {spec.seed}")
        return [r for r in done if r is not None]
    # Fresh interpreters, not forks: a forked child of a process that already ran an
    # OpenMP region (scikit-learn's k-means, when SEC clusters prompts) can deadlock.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(run_one, spec): i for i, spec in enumerate(specs)}
        for count, future in enumerate(as_completed(futures), start=1):
            i = futures[future]
            done[i] = future.result()
            if progress:
                progress(count, len(specs), f"{specs[i].entry.label} seed {specs[i].seed}")
    return [r for r in done if r is not None]


def _summaries(
    runs: list[dict[str, Any]], labels: list[str], baseline: str
) -> dict[str, dict[str, Any]]:
    base = {r["seed"]: r["score"] for r in runs if r["label"] == baseline}
    spent = {r["seed"]: sum(r["rollouts"]) for r in runs if r["label"] == baseline}
    out: dict[str, dict[str, Any]] = {}
    for label in labels:
        mine = [r for r in runs if r["label"] == label]
        out[label] = dict(
            summarize(
                curves={r["seed"]: r["score"] for r in mine},
                baselines=base,
                per_step={
                    key: {r["seed"]: r[key] for r in mine}
                    for key in ("etr", "mean_abs_adv", "overhead_ms")
                },
                finals={
                    "distinct_trained": {r["seed"]: float(r["distinct_trained"][-1]) for r in mine},
                    # every rollout generated on the common schedule, screened ones included
                    "rollouts_total": {r["seed"]: float(sum(r["rollouts"])) for r in mine},
                    "rollouts_vs_baseline": {
                        r["seed"]: sum(r["rollouts"]) / spent[r["seed"]] for r in mine
                    },
                },
            )
        )
        out[label]["method_metrics"] = _final_method_metrics(mine)
        out[label]["method_metrics_dropped"] = max(
            int(r.get("selector_metrics_dropped", 0)) for r in mine
        )
    return out


def _final_method_metrics(runs: list[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    """Each method-specific metric's last finite value per seed, as mean and std over seeds."""
    finals: dict[str, list[float]] = {}
    for r in runs:
        for key, values in r["selector_metrics"].items():
            last = next((v for v in reversed(values) if v is not None), None)
            if last is not None:
                finals.setdefault(key, []).append(float(last))
    return {
        key: {"mean": float(np.mean(v)), "std": float(np.std(v)), "seeds": len(v)}
        for key, v in sorted(finals.items())
    }


def write_results(results: dict[str, Any], out: Path) -> None:
    """results.json and records.csv (one row per label, seed and step) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    _write_records(results, out / "records.csv")


def _write_records(results: dict[str, Any], path: Path) -> None:
    """One CSV row per (label, seed, step): the per-step records behind the figures."""
    metric_keys = sorted({k for r in results["runs"] for k in r["selector_metrics"]})
    columns = ["label", "selector", "seed", "step", "score", "etr", "mean_abs_adv"]
    columns += ["distinct_trained", "overhead_ms", *metric_keys]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for r in results["runs"]:
            for t in range(len(r["etr"])):
                row = [r["label"], r["selector"], r["seed"], t + 1, r["score"][t + 1]]
                row += [r[k][t] for k in ("etr", "mean_abs_adv", "distinct_trained", "overhead_ms")]
                row += [r["selector_metrics"].get(k, [None] * (t + 1))[t] for k in metric_keys]
                writer.writerow(row)
