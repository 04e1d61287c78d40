"""One run of a selector on a simulated learner: the loop every trainer runs.

Each step the sampler (frontier_rft.sampling: PassThrough, or DAPO's DynamicSampling, the
same object the reference trainer drives) runs the step's rounds on the simulated policy
and returns the groups to train on; the learner takes one training step on them and the
held-out score is measured; `run_one` returns the per-step record. Comparing
selectors over seeds, and summarising them, is the benchmark's
(frontier_rft.bench.simulation.benchmark).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import check, config_from_dict
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.jsonsafe import finite_or_none
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.sampling.allocation import Allocation, AllocationConfig
from frontier_rft.sampling.dynamic_sampling import MODES, DynamicSampling, DynamicSamplingConfig
from frontier_rft.sampling.fewer_rollouts import (
    RUN_FIELDS,
    FewerRollouts,
    FewerRolloutsConfig,
    fewer_rollouts_from_run,
)
from frontier_rft.sampling.filtered_batch import FilteredBatch, gather
from frontier_rft.sampling.sampler_flags import SamplerFlags
from frontier_rft.sampling.spec import KINDS, SamplerSpec
from frontier_rft.sampling.step import Sampler, rollout_metrics
from frontier_rft.sampling.step_plan import StepPlan, Wrap
from frontier_rft.selectors import SELECTORS, make_selector
from frontier_rft.simulation.learner import SimulatedLearner
from frontier_rft.simulation.scenario import ScenarioConfig

__all__ = [
    "GIVEN",
    "SUCCESS_BINS",
    "Entry",
    "RunSpec",
    "collaborators",
    "given_pool",
    "parse_given",
    "run_one",
    "sampler_spec",
    "spelled",
]

# Bins of a selected group's empirical success rate: exactly 0 and exactly 1 (no gradient)
# apart from the mixed groups in between.
SUCCESS_BINS = (0.0, 1e-9, 0.2, 0.4, 0.6, 0.8, 1.0 - 1e-9, 1.0)
MAX_METRIC_SERIES = 40
"""Method-specific metric series kept per run (the first ones, in sorted key order)."""
NON_LLM_JUDGE_NOTE = "non-LLM heuristic judge"
"""Note of a run whose selector takes a judge: the simulator gives it its class's default
(no policy here to judge), the non-LLM one."""
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


DYNAMIC_SAMPLING = (None, *MODES, "fixed-keep")
"""`sampler_spec`'s dynamic_sampling: off, a mode (MODES: rounds of 3x the open slots, GRESO's
adaptive sizing, GRESO's own recipe, DAPO's full 3x B rounds; DynamicSamplingConfig.for_mode), or
fixed keeping the surplus for the next step (max_surplus 1024: the measurement behind
discarding it)."""


@dataclass(frozen=True)
class Entry:
    """One selector configuration to compare: a display label, a name and its overrides,
    inside its step sampler (plain GRPO unless `sampler` says otherwise)."""

    label: str
    selector: str
    overrides: dict[str, Any] = field(default_factory=dict)
    sampler: SamplerSpec = field(default_factory=SamplerSpec)
    """The step sampler around the selector, any kind (sampling.spec.KINDS); `sampler_spec`
    builds one from the simulator's flags (a dynamic sampling mode, allocation or fewer
    rollouts' fields). The same spec as a bench-rl entry's run, so a real verdict applies to
    the simulated entry that runs the same thing."""
    oracle: bool = False
    """With allocation: its rule reads each prompt's true pass rate (the simulated learner's,
    as a Beta of strength 1e4) instead of its posterior: what allocation could gain at best
    (not part of the spec)."""
    rescue: int = 0
    """Rescue rollouts around the step sampler (sampling/rescue.py, TrainConfig.rescue): N
    more for a never-solved prompt's all-wrong trained group, joined when one is correct
    (0 = off)."""

    def __post_init__(self) -> None:
        check(
            isinstance(self.sampler, SamplerSpec),
            f"entry {self.label!r}: sampler must be a SamplerSpec (sampler_spec builds one from "
            f"the simulator's flags), got {self.sampler!r}",
        )
        if self.oracle and "posterior" not in KINDS[self.sampler.kind].extras:
            raise ValueError(f"entry {self.label!r}: oracle is for allocation; set allocation")
        try:
            self.plan()
        except ValueError as exc:
            raise ValueError(f"entry {self.label!r}: {exc}") from None

    def plan(self) -> StepPlan:
        """Its step: the sampler, inside Rescue with `rescue`."""
        wraps = (Wrap.of("rescue", extra=self.rescue),) if self.rescue else ()
        return StepPlan(self.sampler, wraps)


_FLAGS = ("dynamic_sampling", "allocation", "fewer_rollouts")


def sampler_spec(
    dynamic_sampling: str | None = None,
    allocation: Mapping[str, Any] | None = None,
    fewer_rollouts: Mapping[str, Any] | None = None,
) -> SamplerSpec:
    """The step sampler the simulator's flags spell, at most one of them (none: plain GRPO):
    a `dynamic_sampling` mode (DYNAMIC_SAMPLING), `allocation`'s AllocationConfig fields
    ({} = its defaults) or `fewer_rollouts`' run fields, spelt as TrainConfig and the bench
    spell them ({"rollouts": "kept", "screen": 4}). The simulator's one conversion into the
    spec (`spelled` reads it back); ValueError naming the field."""
    flags = (dynamic_sampling, allocation, fewer_rollouts)
    named = [k for k, v in zip(_FLAGS, flags, strict=True) if v is not None]
    if len(named) > 1:
        raise ValueError(
            f"{' and '.join(named)} do not combine (each is the step's sampler); choose one"
        )
    if fewer_rollouts is not None:
        return SamplerSpec(FewerRollouts.kind, _fewer_rollouts(fewer_rollouts))
    if allocation is not None:
        config = config_from_dict(AllocationConfig, dict(allocation), what="allocation")
        return SamplerSpec(Allocation.kind, config)
    if dynamic_sampling is None:
        return SamplerSpec()
    if dynamic_sampling not in DYNAMIC_SAMPLING:
        raise ValueError(
            f"dynamic_sampling must be one of {DYNAMIC_SAMPLING}, got {dynamic_sampling!r}"
        )
    return SamplerSpec(DynamicSampling.kind, dynamic_sampling_config(dynamic_sampling))


def _fewer_rollouts(fields: Mapping[str, Any]) -> FewerRolloutsConfig:
    """The FewerRolloutsConfig of a run's fields, as TrainConfig builds it."""
    what = "fewer_rollouts"
    unknown = sorted(set(fields) - set(RUN_FIELDS))
    if unknown:
        raise ValueError(f"{what} takes {', '.join(RUN_FIELDS)}; got {unknown}")
    try:
        config = fewer_rollouts_from_run(**fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: {exc}") from None
    if config is None:
        raise ValueError(
            f"{what}: rollouts full without screening is uniform's step; set rollouts=kept "
            "or screen=K"
        )
    return config


def spelled(spec: SamplerSpec) -> dict[str, Any]:
    """How a run's record names its step sampler: `sampler_spec`'s arguments that build
    `spec` (None where off), and, for a spec they do not spell (another kind or settings),
    its (kind, config) pair under "sampler" (so every record of a flag-spelt entry stays as
    it was)."""
    out: dict[str, Any] = dict.fromkeys(_FLAGS)
    if spec.kind == DynamicSampling.kind:
        modes = (m for m in DYNAMIC_SAMPLING[1:] if dynamic_sampling_config(m) == spec.config)
        out["dynamic_sampling"] = next(modes, None)
    elif spec.kind == Allocation.kind:
        defaults = AllocationConfig()
        out["allocation"] = {k: v for k, v in spec.fields().items() if v != getattr(defaults, k)}
    elif spec.kind == FewerRollouts.kind:
        out["fewer_rollouts"] = {
            k: v for k, v in SamplerFlags.of_spec(spec).changed().items() if k in RUN_FIELDS
        }
    if not spec.fact("plain") and all(v is None for v in out.values()):
        out["sampler"] = list(spec.pair())
    return out


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


def collaborators(selector: str, learner: SimulatedLearner) -> dict[str, Any]:
    """The collaborators the selector's class gives a caller without its own, built on the
    simulated policy's rollouts (ADCL re-estimates its next chunk with a few of them)."""
    cls = SELECTORS.get(selector)
    return cls.default_collaborators(learner.rollout) if cls is not None else {}


def sampler_for(entry: Entry, selector: Selector, learner: SimulatedLearner) -> Sampler:
    """The step sampler of `entry` (`Entry.sampler`) around `selector`, built as the
    reference trainer builds its own; with `Entry.oracle`, the allocation reads `learner`'s
    true pass rates."""
    oracle = _true_rates(learner) if entry.oracle else None
    return entry.plan().build(selector, posterior=oracle)


def dynamic_sampling_config(mode: str) -> DynamicSamplingConfig:
    """The DynamicSamplingConfig of a dynamic sampling mode of DYNAMIC_SAMPLING (not None)."""
    if mode == "fixed-keep":
        return DynamicSamplingConfig(max_surplus=1024)
    return DynamicSamplingConfig.for_mode(mode)


def _true_rates(learner: SimulatedLearner) -> Callable[[NDArray[np.int64]], tuple[Any, Any]]:
    """Beta (a, b) of strength 1e4 at each prompt's current true pass rate (Entry.oracle)."""

    def posterior(ids: NDArray[np.int64]) -> tuple[Any, Any]:
        p = np.clip(learner.pass_rates()[ids], 1e-6, 1.0 - 1e-6)
        return 1e4 * p, 1e4 * (1.0 - p)

    return posterior


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
            **collaborators(name, learner),
        )
    sampler = sampler_for(spec.entry, sel, learner)
    categories, category_names = _category_axis(learner)
    bins = np.asarray(SUCCESS_BINS)
    trained = np.zeros(learner.pool.num_tasks, dtype=bool)
    trained_last_step = np.zeros(learner.pool.num_tasks, dtype=bool)
    record: dict[str, Any] = {
        "label": spec.entry.label,
        "selector": name,
        "overrides": dict(spec.entry.overrides),
        **spelled(spec.entry.sampler),
        **({"rescue": spec.entry.rescue} if spec.entry.rescue else {}),
        "seed": spec.seed,
        "note": NON_LLM_JUDGE_NOTE if "judge" in SELECTORS[name].collaborators else "",
        "given": list(spec.given),
        "evidence": dict(sel.evidence),
        "score": [learner.score()],
        "etr": [],
        "reward_mean": [],
        "mean_abs_adv": [],
        "distinct_trained": [],
        "retrained_next_step": [],
        "overhead_ms": [],
        "rollouts": [],
        "rollouts_per_prompt": [],
        "informative_per_rollout": [],
        "size_hist": [],
        "success_hist": [],
        "category_counts": [],
        "selector_metrics": {},
    }
    series: dict[str, list[float | None]] = {}

    def rollout(ids: NDArray[np.int64], counts: NDArray[np.int64] | None = None) -> Any:
        return learner.rollout(ids, spec.rollouts if counts is None else counts)

    for step in range(spec.steps):
        samples = sampler.sample(step, spec.batch, spec.rollouts, rollout)
        seconds = samples.select_seconds  # select + update: the simulated rollouts are free
        kept = samples.train
        if kept.num_groups:
            learner.train(_as_group_batch(kept, step), loss_scale=samples.loss_scale)
        trained_now = kept.task_ids[kept.mixed]  # the groups with a gradient
        # share of this step's trained groups whose prompt was trained the step before too
        record["retrained_next_step"].append(
            float(trained_last_step[trained_now].mean()) if trained_now.size else None
        )
        trained_last_step[:] = False
        trained_last_step[trained_now] = True
        record["rollouts"].append(samples.rollouts)
        rolled = samples.groups()  # every group rolled out, whole
        ids, mixed = rolled.task_ids, rolled.mixed
        trained[ids[mixed]] = True
        adv = rolled.advantages("grpo")
        means = (
            np.add.reduceat(rolled.rewards, rolled.offsets[:-1]) / rolled.counts
            if ids.size
            else adv
        )
        spent = rollout_metrics(samples)
        record["rollouts_per_prompt"].append(finite_or_none(spent["rollouts_per_prompt"]))
        record["informative_per_rollout"].append(finite_or_none(spent["informative_per_rollout"]))
        record["size_hist"].append([int(v) for k, v in spent.items() if k.startswith("n_")])
        record["score"].append(learner.score())
        record["etr"].append(float(mixed.mean()) if mixed.size else None)
        record["reward_mean"].append(float(rolled.rewards.mean()) if rolled.rewards.size else None)
        record["mean_abs_adv"].append(float(np.abs(adv).mean()) if adv.size else None)
        record["distinct_trained"].append(int(trained.sum()))
        record["overhead_ms"].append(1e3 * seconds)
        hist, _ = np.histogram(np.clip(means, 0.0, 1.0), bins=bins)
        record["success_hist"].append(hist.astype(int).tolist())
        counts = np.bincount(categories[ids], minlength=len(category_names))
        record["category_counts"].append(counts.astype(int).tolist())
        dropped = _append_metrics(
            series,
            {**sampler.metrics(), **samples.wrap_metrics},
            prefix=(f"{name}/", "dapo/", "alloc/", "fewer_rollouts/", "rescue/"),
            step=step,
        )
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
        policy_version=np.full(order.shape[0], -1, dtype=np.int64),
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
