"""One reference-trainer step's data as its phases hand it on (`Collected` from the rollouts,
`Trained` from the update) and the step's metrics, computed in one function from them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from frontier_rft.core.advantages import group_advantages
from frontier_rft.metrics_log import curriculum_metrics
from frontier_rft.sampling.step import SUCCESS, Round, Sampler, StepSamples, rollout_metrics
from frontier_rft.sampling.wraps_sampler import WrapsSampler

__all__ = [
    "SUCCESS",
    "Collected",
    "Group",
    "Trained",
    "call_metrics",
    "step_metrics",
    "tokens_generated",
    "wrap_tokens",
]


@dataclass
class Group:
    """One rolled-out prompt: its task, prompt ids, n completions and their rewards."""

    task: int
    prompt: list[int]
    completions: list[list[int]]
    rewards: np.ndarray


@dataclass
class Collected:
    """A step's rollouts: what its sampler returned (and rescue added), whole groups with their
    completions, and what generating them cost."""

    samples: StepSamples
    """The groups to train on (rescue's round included)."""
    sampled: StepSamples
    """The sampler's own rounds: the step's reward metrics, shadows and reward log."""
    train: list[Group]
    """This step's groups to train on, whole, with their completions."""
    replayed: list[Group]
    """backfill: the replayed groups of earlier steps, trained after `train`."""
    groups: list[Group]
    """Every group the sampler rolled out, whole."""
    records: Sequence[Any] = ()
    """METIS: this step's scored judgments, for the judge loss."""
    generate_s: float = 0.0
    """Seconds spent generating."""
    padded_rows: int = 0
    """pad_rows: rows generated only to fill a bucket, dropped."""
    calls: Sequence[tuple[int, int, float]] = ()
    """Each call to generate: (rows, decode steps, seconds)."""


@dataclass
class Trained:
    """What a step's update trained and reported."""

    advantages: np.ndarray
    """The fresh groups' per-rollout advantages."""
    loss_scale: float
    """The surrogate's scale (FewerRollouts: groups trained / B)."""
    parts: dict[str, float] = field(default_factory=dict)
    """The update's loss and policy metrics (and backfill's)."""
    update_s: float = 0.0
    """Seconds the update took."""


def call_metrics(calls: Sequence[tuple[int, int, float]]) -> dict[str, float]:
    """The shapes of a step's calls to generate, summed (what a run's own step-cost curve is
    fitted from: step_cost/own_curve.py)."""
    return {
        "perf/generate_calls": float(len(calls)),
        "perf/generate_rows": float(sum(r for r, _, _ in calls)),
        "perf/decode_steps": float(sum(n for _, n, _ in calls)),
        "perf/decode_row_steps": float(sum(r * n for r, n, _ in calls)),
    }


def tokens_generated(rounds: Sequence[Round]) -> int:
    """Completion tokens the rounds generated (their payloads: completions as token lists)."""
    return sum(len(c) for r in rounds for p in r.payloads or () for c in p)


def wrap_tokens(sampler: Sampler, samples: StepSamples) -> dict[str, float]:
    """Each generating wrap's completion tokens this step (`<name>/generated_tokens`): the
    rounds it added after those of the sampler it wraps (`sampler` the step's, outermost)."""
    out: dict[str, float] = {}
    while isinstance(sampler, WrapsSampler) and samples.wrapped is not None:
        if sampler.generates != "nothing":
            added = samples.rounds[len(samples.wrapped.rounds) :]
            out[f"{sampler.name}/generated_tokens"] = float(tokens_generated(added))
        sampler, samples = sampler.wraps, samples.wrapped
    return out


def step_metrics(
    got: Collected,
    trained: Trained,
    *,
    estimator: str,
    rollouts_total: int,
    distinct_trained: int | None,
    sampler_metrics: dict[str, float],
    started: tuple[float, float],
) -> dict[str, float]:
    """The step's train/, perf/, loss/ and curriculum/ metrics (`started`: the step's wall
    and CPU clocks when it began)."""
    samples, groups = got.samples, got.groups
    rolled_rewards = np.concatenate([g.rewards for g in groups])
    rolled_var = np.array([np.var(g.rewards) for g in groups])
    rolled_adv = np.concatenate(
        [group_advantages(g.rewards, np.array([0, len(g.rewards)]), estimator) for g in groups]
    )
    gen_tokens = sum(len(c) for g in groups for c in g.completions)
    # What the step paid for: every completion generated this step (screening's and
    # Pilot-Commit's and rescue's included), and the rows and tokens the policy's forward
    # and backward passes ran over (the trained groups' completions; an earlier pilot's,
    # backfill's replayed ones and rescued groups' rescue rows included).
    rows = [*got.train, *got.replayed]
    adv = trained.advantages
    return {
        "train/reward_mean": float(rolled_rewards.mean()),
        "train/success_rate": float((rolled_rewards >= SUCCESS).mean()),
        "train/effective_task_ratio": float((rolled_var > 0).mean()),
        "train/mean_abs_advantage": float(np.abs(rolled_adv).mean()),
        "train/mean_abs_advantage_trained": float(np.abs(adv).mean()) if adv.size else 0.0,
        "train/completion_tokens": gen_tokens / rolled_rewards.size,
        "train/rollouts": float(samples.rollouts),
        "train/rollouts_total": float(rollouts_total),
        "train/generated_tokens": float(tokens_generated(samples.rounds)),
        "train/trained_rows": float(sum(len(g.completions) for g in rows)),
        "train/trained_tokens": float(sum(len(c) for g in rows for c in g.completions)),
        "train/groups_trained": float(len(got.train)),
        **(
            {"train/distinct_prompts_trained": float(distinct_trained)}
            if distinct_trained is not None
            else {}
        ),
        "train/sampling_rounds": float(len(got.sampled.rounds)),
        "train/loss_scale": trained.loss_scale,
        **{f"train/{k}": v for k, v in rollout_metrics(got.sampled).items() if k != "rollouts"},
        "perf/select_ms": 1e3 * samples.select_seconds,
        "perf/generate_s": got.generate_s,
        **call_metrics(got.calls),
        "perf/update_s": trained.update_s,
        "perf/update_width": float(max((len(c) for g in rows for c in g.completions), default=0)),
        "perf/tokens_per_s": gen_tokens / max(got.generate_s, 1e-9),
        "perf/step_s": time.perf_counter() - started[0],
        "perf/step_cpu_s": time.process_time() - started[1],
        **trained.parts,
        **curriculum_metrics(sampler_metrics, "all"),  # curriculum/... as TRL, verl
    }
