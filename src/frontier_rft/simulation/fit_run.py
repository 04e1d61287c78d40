"""Fit the calibrated simulated learner to the first steps of a user's own training run.

What a run tells (docs/simulation.md, "Fit to your own run"): per step, the mean reward of
the rolled-out groups and the share of groups with mixed outcomes (ETR), plus the pool size,
prompts per step, rollouts per prompt, total steps and the selector. From those:

- the pool's start: the mean pass rate and zero-variance share at step 0 (the intercepts of
  straight lines fitted to the first K steps' reward and 1 - ETR, less noisy than any one
  step) give the start offset and spread of the task logits (`calibration.fit_start`, one
  level);
- the learner's speed: the learning rate whose simulated reward and ETR curves (same
  selector, pool size and batch) are nearest, in squared error, to the run's first K steps;
- everything else (the mechanism: normalised steps, task-specific updates, interference)
  stays as calibrated on real GRPO (scenario small-pool).

The calibration error is the RMSE of the simulated reward and ETR curves against the run's,
beside the RMSE a perfect fit would have (one simulated run against the mean of several).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import F64
from frontier_rft.simulation.calibration import fit_start
from frontier_rft.simulation.runner import Entry, RunSpec, run_one, sampler_spec
from frontier_rft.simulation.scenario import SCENARIOS, ScenarioConfig

__all__ = ["RunFit", "RunLog", "fit_run"]

START_STEPS = 5
"""Fewest steps a fit reads (two more are required: a line needs a slope and a start)."""
RATE_GRID = np.geomspace(1 / 30, 30, 15)
"""Learning rates tried, relative to the calibrated scenario's, before refining."""
REFINE = 6
"""Golden-section steps (in log rate) around the best grid rate."""
CHECK_SEEDS = tuple(range(8))
"""Simulated runs the fitted learner's curves and their run-to-run noise are measured on."""


@dataclass(frozen=True)
class RunLog:
    """What the fit reads from a training run."""

    source: str
    """Where it was read from (shown in reports)."""
    num_tasks: int
    """Training prompts in the pool."""
    batch: int
    """Prompts per step."""
    rollouts: int
    """Rollouts per prompt (the group size)."""
    steps: int
    """Steps of the whole run (the simulated budget)."""
    selector: str
    """The selector the run used ('uniform' when it is not one the simulator runs)."""
    dynamic_sampling: bool
    """Whether the run used DAPO's dynamic sampling (fixed oversampling)."""
    reward_mean: F64
    """Mean reward of the rolled-out groups, per step (first steps of the run)."""
    etr: F64
    """Share of rolled-out groups with mixed outcomes, per step."""
    at: NDArray[np.int64] | None = None
    """The step (0-based, increasing) each value was measured at; None: steps 0, 1, 2, ...
    A trainer that logs every k-th step (TRL's logging_steps) gives every k-th."""

    def __post_init__(self) -> None:
        for name in ("num_tasks", "batch", "rollouts", "steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.rollouts < 2:
            raise ValueError("rollouts per prompt must be >= 2 (a group needs two to vary)")
        if self.batch > self.num_tasks:
            raise ValueError(f"batch {self.batch} exceeds the pool's {self.num_tasks} prompts")
        if self.reward_mean.shape != self.etr.shape or self.reward_mean.size < START_STEPS + 2:
            raise ValueError(
                f"need reward and ETR for at least {START_STEPS + 2} steps, got "
                f"{self.reward_mean.size} and {self.etr.size}"
            )
        at = self.steps_at
        if at.shape != self.etr.shape or (at.size and (at[0] < 0 or np.any(np.diff(at) <= 0))):
            raise ValueError("`at` must hold one increasing step (>= 0) per value")
        for name, values in (("reward_mean", self.reward_mean), ("etr", self.etr)):
            if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
                raise ValueError(
                    f"{name} values must lie in [0, 1] (the fit assumes pass/fail rewards)"
                )

    @property
    def steps_at(self) -> NDArray[np.int64]:
        """The step each value was measured at."""
        if self.at is None:
            return np.arange(self.reward_mean.size, dtype=np.int64)
        return np.asarray(self.at, dtype=np.int64)

    @property
    def span(self) -> int:
        """Steps the values cover (through the last one measured)."""
        return int(self.steps_at[-1]) + 1 if self.reward_mean.size else 0


@dataclass(frozen=True)
class RunFit:
    """The fitted scenario and how far its curves are from the run's."""

    scenario: ScenarioConfig
    steps_fitted: int
    """The run's steps the fit covers (values logged at `RunLog.steps_at` among them)."""
    sim_reward: F64
    """Simulated mean reward per step (mean over seeds)."""
    sim_etr: F64
    reward_rmse: float
    etr_rmse: float
    reward_noise: float
    """The RMSE a perfect fit would have: one simulated run's per-step reward against the
    mean over simulated runs (which prompts were drawn and how their rollouts came out)."""
    etr_noise: float
    """The same for the ETR."""


def _entry(log: RunLog) -> Entry:
    mode = "fixed" if log.dynamic_sampling else None
    return Entry(log.selector, log.selector, sampler=sampler_spec(dynamic_sampling=mode))


def _runs(cfg: ScenarioConfig, log: RunLog, seeds: Sequence[int]) -> tuple[F64, F64]:
    """Reward and ETR (rows: seeds) of the run's selector on `cfg`, at the run's steps."""
    at = log.steps_at
    rewards, etrs = [], []
    for seed in seeds:
        rec = run_one(RunSpec(cfg, _entry(log), seed, log.span, log.batch, log.rollouts))
        rewards.append(np.asarray(rec["reward_mean"])[at])
        etrs.append(np.asarray(rec["etr"])[at])
    return np.asarray(rewards, dtype=np.float64), np.asarray(etrs, dtype=np.float64)


def _curves(cfg: ScenarioConfig, log: RunLog, seeds: Sequence[int]) -> tuple[F64, F64]:
    """Mean reward and ETR per step of the run's selector on `cfg`, averaged over seeds."""
    rewards, etrs = _runs(cfg, log, seeds)
    return rewards.mean(axis=0), etrs.mean(axis=0)


def _run_noise(values: F64) -> float:
    """RMS distance of one simulated run's per-step values from the mean over runs: what a
    perfect fit's RMSE would be (prompt draws and rollouts both vary from step to step)."""
    n = values.shape[0]
    return float(np.sqrt(values.var(axis=0, ddof=1).mean() * (1 + 1 / n))) if n > 1 else math.nan


def fitted_start(log: RunLog, base: ScenarioConfig) -> ScenarioConfig:
    """One level whose start matches the run's step 0 (mean reward, zero-variance share)."""
    steps = log.steps_at.astype(np.float64)
    mean = float(np.polynomial.polynomial.polyfit(steps, log.reward_mean, 1)[0])
    mixed = float(np.polynomial.polynomial.polyfit(steps, log.etr, 1)[0])
    offset, spread = fit_start(
        log.rollouts,
        mean=min(max(mean, 0.0), 1.0),
        zero_share=min(max(1.0 - mixed, 0.0), 1.0),
        slope=base.slope,
    )
    return base.replace(
        name="fitted",
        description=(
            f"fitted to the first {log.span} steps of {log.source} (pool start and "
            "speed; the mechanism as calibrated on real GRPO)"
        ),
        num_tasks=log.num_tasks,
        num_levels=1,
        level_mix=(1.0,),
        domain_offsets=(offset,),
        task_noise=spread,
        initial_skill=0.0,
    )


def fit_run(
    log: RunLog, base: ScenarioConfig | None = None, seeds: Sequence[int] = (0, 1, 2)
) -> RunFit:
    """Fit start state and learning rate to `log` (module docstring); deterministic in seeds."""
    base = base or SCENARIOS["small-pool"]
    cfg = fitted_start(log, base)

    def sse(log_rate: float) -> float:
        reward, etr = _curves(cfg.replace(learning_rate=math.exp(log_rate)), log, seeds)
        return float(((reward - log.reward_mean) ** 2).sum() + ((etr - log.etr) ** 2).sum())

    grid = np.log(base.learning_rate * RATE_GRID)
    losses = [sse(x) for x in grid]
    i = int(np.argmin(losses))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    golden = (math.sqrt(5) - 1) / 2
    a, b = hi - golden * (hi - lo), lo + golden * (hi - lo)
    fa, fb = sse(a), sse(b)
    for _ in range(REFINE):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - golden * (hi - lo)
            fa = sse(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + golden * (hi - lo)
            fb = sse(b)
    best = min([(losses[i], grid[i]), (fa, a), (fb, b)])[1]
    fitted = cfg.replace(learning_rate=float(math.exp(best)))
    rewards, etrs = _runs(fitted, log, CHECK_SEEDS)
    reward, etr = rewards.mean(axis=0), etrs.mean(axis=0)
    return RunFit(
        scenario=fitted,
        steps_fitted=log.span,
        sim_reward=reward,
        sim_etr=etr,
        reward_rmse=float(np.sqrt(np.mean((reward - log.reward_mean) ** 2))),
        etr_rmse=float(np.sqrt(np.mean((etr - log.etr) ** 2))),
        reward_noise=_run_noise(rewards),
        etr_noise=_run_noise(etrs),
    )
