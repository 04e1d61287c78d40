"""Run selectors on simulated learners: one run per (label, seed), many in parallel.

A run is the loop every trainer runs: select a batch, roll it out, send the rewards to
the selector, take one training step on the groups, measure the held-out score. The
output is the results dict documented in docs/report.md (`results.json`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.feedback import Feedback, GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.selectors import SELECTORS, make_selector
from frontier_rft.selectors.dynamic_sampling import (
    DynamicSampling,
    DynamicSamplingConfig,
    FilteredBatch,
)
from frontier_rft.selectors.filtered_batch import gather
from frontier_rft.simulation.learner import SimulatedLearner
from frontier_rft.simulation.metrics import summarize
from frontier_rft.simulation.real_rl import real_rl_context
from frontier_rft.simulation.scenario import SCENARIOS, ScenarioConfig, get_scenario

__all__ = ["GIVEN", "Entry", "RunSpec", "given_pool", "parse_given", "run_benchmark", "run_one"]

RESULTS_FORMAT = "frontier-rft-benchmark/1"
# Bins of a selected group's empirical success rate: exactly 0 and exactly 1 (no gradient)
# apart from the mixed groups in between.
SUCCESS_BINS = (0.0, 1e-9, 0.2, 0.4, 0.6, 0.8, 1.0 - 1e-9, 1.0)
MAX_METRIC_SERIES = 40
"""Method-specific metric series kept per run (the first ones, in sorted key order)."""
NON_LLM_JUDGE_NOTE = "non-LLM heuristic judge"
GIVEN = {
    "prompts": (),
    "categories": ("categories",),
    "difficulty": ("difficulty",),
    "references": ("reference_pass_rates",),
    "features": ("features",),
}
"""What a selector can be given besides the prompt text, by name -> TaskPool fields."""
GIVEN_ALL = tuple(GIVEN)


def parse_given(text: str) -> tuple[str, ...]:
    """'prompts', 'prompts,categories', 'all' -> the sorted tuple of metadata names."""
    names = {n.strip() for n in text.split(",") if n.strip()}
    if names == {"all"}:
        return GIVEN_ALL
    unknown = sorted(names - set(GIVEN))
    if unknown or not names:
        raise ValueError(
            f"unknown metadata {unknown or text!r}: choose from {', '.join(GIVEN)} "
            "(comma-separated) or 'all'"
        )
    return tuple(n for n in GIVEN if n in names | {"prompts"})


def given_pool(learner: SimulatedLearner, given: Sequence[str]) -> TaskPool:
    """The learner's pool restricted to the prompts plus the metadata named in `given`."""
    full = learner.pool
    fields = {f: getattr(full, f) for name in given for f in GIVEN[name]}
    return TaskPool(num_tasks=full.num_tasks, prompts=full.prompts, **fields)


DYNAMIC_SAMPLING = (None, "fixed", "adaptive")
"""Entry.dynamic_sampling: off, DAPO's fixed 3x oversampling, or GRESO's adaptive sizing."""


@dataclass(frozen=True)
class Entry:
    """One selector configuration to compare: a display label, a name and its overrides,
    optionally inside DAPO's dynamic sampling (`dynamic_sampling` 'fixed' or 'adaptive')."""

    label: str
    selector: str
    overrides: dict[str, Any] = field(default_factory=dict)
    dynamic_sampling: str | None = None

    def __post_init__(self) -> None:
        if self.dynamic_sampling not in DYNAMIC_SAMPLING:
            raise ValueError(
                f"entry {self.label!r}: dynamic_sampling must be one of {DYNAMIC_SAMPLING}, "
                f"got {self.dynamic_sampling!r}"
            )


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs; picklable so runs go to worker processes."""

    scenario: ScenarioConfig
    entry: Entry
    seed: int
    steps: int
    batch: int
    rollouts: int
    given: tuple[str, ...] = ("prompts",)
    """Metadata the selector gets besides prompts (keys of GIVEN)."""


def _collaborators(selector: str, learner: SimulatedLearner) -> dict[str, Any]:
    """The collaborators the selector's class gives a caller without its own, built on the
    simulated policy's rollouts (ADCL re-estimates its next chunk with a few of them)."""
    cls = SELECTORS.get(selector)
    return cls.default_collaborators(learner.rollout) if cls is not None else {}


def _category_axis(learner: SimulatedLearner) -> tuple[NDArray[np.int64], list[str]]:
    """What the category-share figure shows: task type with several domains, else level."""
    t = learner.train_tasks
    if learner.cfg.num_domains > 1:
        return t.domain, list(learner.cfg.domain_names)
    return t.level, [f"level {k + 1}" for k in range(learner.cfg.num_levels)]


def run_one(spec: RunSpec) -> dict[str, Any]:
    """One selector on one seeded learner for `spec.steps` steps; the per-step record."""
    learner = SimulatedLearner(spec.scenario, seed=spec.seed)
    name = spec.entry.selector
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)  # recorded as "evidence" below
        sel = make_selector(
            name,
            given_pool(learner, spec.given),
            seed=spec.seed,
            **spec.entry.overrides,
            **_collaborators(name, learner),
        )
    ds = None
    if spec.entry.dynamic_sampling is not None:
        adaptive = spec.entry.dynamic_sampling == "adaptive"
        ds = DynamicSampling(sel, DynamicSamplingConfig(adaptive=adaptive))
    categories, category_names = _category_axis(learner)
    bins = np.asarray(SUCCESS_BINS)
    trained = np.zeros(learner.pool.num_tasks, dtype=bool)
    record: dict[str, Any] = {
        "label": spec.entry.label,
        "selector": name,
        "overrides": dict(spec.entry.overrides),
        "dynamic_sampling": spec.entry.dynamic_sampling,
        "seed": spec.seed,
        "note": NON_LLM_JUDGE_NOTE if name == "metis" else "",
        "given": list(spec.given),
        "evidence": dict(sel.evidence),
        "score": [learner.score()],
        "etr": [],
        "reward_mean": [],
        "mean_abs_adv": [],
        "distinct_trained": [],
        "overhead_ms": [],
        "rollouts": [],
        "success_hist": [],
        "category_counts": [],
        "selector_metrics": {},
    }
    series: dict[str, list[float | None]] = {}
    for step in range(spec.steps):
        start = time.perf_counter()
        ids = sel.select(spec.batch) if ds is None else ds.candidates(spec.batch)
        seconds = time.perf_counter() - start
        task_ids = np.repeat(ids, spec.rollouts)
        rewards = learner.rollout(ids, spec.rollouts)
        start = time.perf_counter()
        feedback = Feedback(task_ids=task_ids, rewards=rewards, step=step)
        sel.update(feedback)
        seconds += time.perf_counter() - start
        batch = GroupBatch.from_rollouts(step, task_ids, rewards, np.full(task_ids.size, -1))
        if ds is None:
            learner.train(batch)
        else:  # one candidates round per step; train on the mixed groups (surplus first)
            start = time.perf_counter()
            kept = ds.filter_groups(feedback, spec.batch)
            seconds += time.perf_counter() - start
            if kept.num_groups:
                learner.train(_as_group_batch(kept, step))
        record["rollouts"].append(int(task_ids.size))
        mixed = batch.mixed
        trained[batch.task_ids[mixed]] = True
        record["score"].append(learner.score())
        record["etr"].append(float(mixed.mean()))
        record["reward_mean"].append(float(rewards.mean()))
        record["mean_abs_adv"].append(float(batch.mean_abs_advantage("grpo").mean()))
        record["distinct_trained"].append(int(trained.sum()))
        record["overhead_ms"].append(1e3 * seconds)
        hist, _ = np.histogram(np.clip(batch.means, 0.0, 1.0), bins=bins)
        record["success_hist"].append(hist.astype(int).tolist())
        counts = np.bincount(categories[ids], minlength=len(category_names))
        record["category_counts"].append(counts.astype(int).tolist())
        metrics = sel.metrics() if ds is None else ds.metrics()
        dropped = _append_metrics(series, metrics, prefix=(f"{name}/", "dapo/"), step=step)
        if step == 0:
            record["selector_metrics_dropped"] = dropped
    record["selector_metrics"] = series
    record["category_names"] = category_names
    return record


def _as_group_batch(kept: FilteredBatch, step: int) -> GroupBatch:
    """The groups dynamic sampling kept (distinct tasks), as the GroupBatch the learner
    trains on: groups sorted by task id, as GroupBatch keeps them."""
    order = np.argsort(kept.task_ids, kind="stable")
    counts, pos = gather(kept.offsets, order)
    return GroupBatch(
        step=step,
        task_ids=kept.task_ids[order],
        counts=counts,
        rewards=kept.rewards[pos],
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        policy_version=kept.policy_version[order],
    )


def _append_metrics(
    series: dict[str, list[float | None]],
    metrics: dict[str, float],
    prefix: str | tuple[str, ...],
    step: int,
) -> int:
    """Append this step's values; the first call picks the series (at most
    MAX_METRIC_SERIES, in natural order: arm/2 before arm/10) and returns how many it left out."""
    keys = sorted((k for k in metrics if k.startswith(prefix)), key=_natural)
    if not series:
        for key in keys[:MAX_METRIC_SERIES]:
            series[key] = [None] * step
    for key, values in series.items():
        value = metrics.get(key)
        values.append(value if value is not None and np.isfinite(value) else None)
    return max(0, len(keys) - MAX_METRIC_SERIES)


def _natural(key: str) -> list[Any]:
    """Sort key reading digit runs as numbers ('reward/2' < 'reward/10')."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key)]


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
    _check_entries(cfg, entries, given)
    specs = [RunSpec(cfg, e, int(s), steps, batch, rollouts, given) for e in entries for s in seeds]
    runs = _execute(specs, jobs, progress)
    order = {
        (e.label, int(s)): i for i, (e, s) in enumerate((e, s) for e in entries for s in seeds)
    }
    runs.sort(key=lambda r: order[(r["label"], r["seed"])])
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
            [e.label for e in entries],
            modified=cfg.name in SCENARIOS and SCENARIOS[cfg.name] != cfg,
        ),
        "category_names": runs[0]["category_names"],
        "success_bins": list(SUCCESS_BINS),
        "runs": runs,
        "summary": _summaries(runs, [e.label for e in entries], baseline),
    }


def _check_entries(cfg: ScenarioConfig, entries: Sequence[Entry], given: Sequence[str]) -> None:
    """Fail before spawning workers: unknown names, bad overrides, duplicate labels."""
    labels = [e.label for e in entries]
    if len(set(labels)) != len(labels):
        raise ValueError(f"duplicate labels in the comparison: {labels}")
    probe = SimulatedLearner(cfg.replace(num_tasks=min(cfg.num_tasks, 64), eval_tasks=8), seed=0)
    pool = given_pool(probe, given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        for e in entries:
            make_selector(
                e.selector,
                pool,
                seed=0,
                **e.overrides,
                **_collaborators(e.selector, probe),
            )


def _execute(
    specs: list[RunSpec], jobs: int | None, progress: Callable[[int, int, str], None] | None
) -> list[dict[str, Any]]:
    jobs = jobs or os.cpu_count() or 1
    done: list[dict[str, Any]] = []
    if jobs == 1 or len(specs) == 1:
        for spec in specs:
            done.append(run_one(spec))
            if progress:
                progress(len(done), len(specs), f"{spec.entry.label} seed {spec.seed}")
        return done
    # Fresh interpreters, not forks: a forked child of a process that already ran an
    # OpenMP region (scikit-learn's k-means, when SEC clusters prompts) can deadlock.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(run_one, spec): spec for spec in specs}
        for future in as_completed(futures):
            done.append(future.result())
            spec = futures[future]
            if progress:
                progress(len(done), len(specs), f"{spec.entry.label} seed {spec.seed}")
    return done


def _summaries(
    runs: list[dict[str, Any]], labels: list[str], baseline: str
) -> dict[str, dict[str, Any]]:
    base = {r["seed"]: r["score"] for r in runs if r["label"] == baseline}
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
                    "distinct_trained": {r["seed"]: float(r["distinct_trained"][-1]) for r in mine}
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
