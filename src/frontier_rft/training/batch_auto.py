"""The reference trainer acting on the batch planner: `batch_plan: auto` (TrainConfig).

With `batch_plan: fixed` (the default) nothing here runs: every step rolls out `batch_size`
prompts at the configured learning rate, bit for bit as before.

With `batch_plan: auto`, after every metered step (the noise meter, `noise_every`) whose
smoothed terms hold at least `MIN_METERED` metered steps and define a noise scale (|G|^2 > 0,
both variances >= 0: `read_terms`), the trainer asks the planner (step_cost/planner.py) for
the shape minimising T(B) = (1 + B_noise / B) t(B), t the step's seconds on the shipped curve
`plan_curve` at `max_new_tokens` decode steps (`curve_cost`), and trains the plan's prompts
from the next step on (`decide`):

- the group size K stays the run's `group_size` (the meter measured the terms at that K);
- the prompts only grow: from the current step's up to `batch_max` (0: the pool) and never
  beyond the pool. The noise scale grows as training goes on (McCandlish et al. 2018, sec.
  2.3: B_noise rises as the loss falls), so a plan that wants fewer prompts than now reads a
  noisy early estimate more often than a real change; a step that never shrinks also never
  undoes an lr it raised, and the run's rows a step stay monotone and easy to read;
- the learning rate (`batch_lr_rule`): 'sqrt' sets AdamW's lr to lr x min(sqrt(P / B_0),
  `LR_CAP`), P the prompts a step now and B_0 the configured `batch_size` (the square-root
  rule of Malladi et al. 2022 for Adam, the product of the plans' own factors, capped once for
  the run); 'none' keeps lr. The default is 'sqrt': S(B) = S_min (1 + B_noise / B) assumes the
  step size fits the batch, and with one Adam rate a larger batch mostly averages away noise
  without moving further (one Adam rate for every batch is not McCandlish's setting, arXiv
  1812.06162). Measured on fast-format-lr4 (10 pairs, docs/results/device_cost.md section
  2b), 'none' reached uniform's plateau in 0.75x [0.50, 1.00] of 'sqrt''s projected H200
  seconds; the default stays 'sqrt' because the pinned bench entry `uniform-auto` runs it.

Where the run starts (`batch_start`): 'configured' starts at `batch_size`; 'least_regret' starts
at the prompts whose worst-case slowdown over every noise scale is least on the same curve
(step_cost/start_plan.py), since before the meter has read anything every noise scale is
possible: on a latency-bound curve that is well above a small configured step, on a CPU it is
about the configured step. The plans then grow from there; the lr factor follows the start's
prompts by the same rule. The start is logged once, in the first step's row, as
`plan/start_prompts` and `plan/start_worst_ratio`.

Each plan logs `plan/prompts`, `plan/rows`, `plan/lr_factor` (the factor on lr now),
`plan/seconds_ratio` (T(plan) / T(now)), `plan/b_noise` and `plan/metered_steps` (the evidence
it read) in that step's metrics row; the prompts a step, the lr factor and the metered steps
last read are saved with the checkpoint (exact resume).
"""

from __future__ import annotations

from typing import Any

from frontier_rft.core.noise_scale import GEOMETRIES, NoiseEma
from frontier_rft.sampling.step_plan import StepPlan, StepRows
from frontier_rft.step_cost.curve import CURVES, load_curve
from frontier_rft.step_cost.planner import (
    BatchPlan,
    NoiseTerms,
    StepCost,
    curve_cost,
    plan_batch,
    sqrt_lr_factor,
)
from frontier_rft.step_cost.start_plan import StartPlan, start_plan

__all__ = [
    "BATCH_LR_RULES",
    "BATCH_PLANS",
    "BATCH_STARTS",
    "LR_CAP",
    "MIN_METERED",
    "PLAN_CURVES",
    "PLAN_NOISES",
    "BatchAuto",
    "auto_refusal",
    "decide",
    "lr_factor",
    "read_terms",
]

BATCH_PLANS = ("fixed", "auto")
"""TrainConfig.batch_plan: batch_size prompts every step, or the planner's prompts."""
BATCH_STARTS = ("configured", "least_regret")
"""TrainConfig.batch_start: batch_size prompts, or the least worst-case regret on plan_curve."""
BATCH_LR_RULES = ("sqrt", "none")
"""TrainConfig.batch_lr_rule: lr x sqrt(prompts / batch_size) (capped), or lr unchanged."""
PLAN_NOISES = tuple(GEOMETRIES)
"""TrainConfig.plan_noise: the meter's noise scale in the parameters' geometry, or in Adam's."""
MIN_METERED = 2
"""Metered steps the noise meter's averages must hold before a plan reads them."""
LR_CAP = 2.0
"""The most the square-root rule raises lr over the whole run (the planner's own default)."""
PLAN_CURVES = CURVES
"""TrainConfig.plan_curve: the shipped step-cost curves a plan prices steps on (the names
eval_grid's projected-seconds axes use)."""


def auto_refusal(config: Any) -> str | None:
    """Why `batch_plan: auto` cannot run with `config` (a TrainConfig), in one line naming the
    clash (None: it can). The step's prompts change between steps, which plain GRPO's
    passthrough step takes (every selector's `select(B)` takes its count per call: the
    contract); a sampler or wrap sized by batch_size, or a run ended by its batch_size
    passes, does not."""
    if not config.noise_every:
        return (
            "batch_plan auto reads the noise meter: set noise_every > 0 (e.g. 10), or "
            "batch_plan fixed"
        )
    if config.sampler != "passthrough":
        return (
            f"batch_plan auto changes the prompts a step, which sampler {config.sampler!r} "
            "sizes by batch_size: use sampler passthrough (plain GRPO), or batch_plan fixed"
        )
    wraps = [name for name in ("rescue", "hard_groups") if getattr(config, name)]
    wraps += ["backfill"] if config.backfill != "off" else []
    wraps += ["fewer_steps"] if config.fewer_steps else []
    if wraps:
        return (
            f"batch_plan auto changes the prompts a step, which {', '.join(wraps)} sizes by "
            "batch_size: drop it, or use batch_plan fixed"
        )
    return None


def read_terms(ema: NoiseEma) -> NoiseTerms | None:
    """The meter's smoothed terms as a plan's evidence, or None while they hold fewer than
    MIN_METERED metered steps or do not define a noise scale (|G|^2 <= 0 or a variance < 0:
    a noisy estimate, read again at the next metered step)."""
    if ema.count < MIN_METERED:
        return None
    try:
        return NoiseTerms.from_ema(ema)  # refuses what defines no noise scale
    except ValueError:
        return None


def decide(
    terms: NoiseTerms, cost: StepCost, *, prompts: int, rollouts: int, max_prompts: int
) -> BatchPlan:
    """The planner's shape at group size `rollouts`, growth only: prompts in [`prompts`,
    `max_prompts`] (the rows B K in [prompts K, max_prompts K]); ties go to fewer rows."""
    top = max(prompts, max_prompts)
    return plan_batch(
        terms,
        cost,
        prompts=prompts,
        rollouts=rollouts,
        min_rows=prompts * rollouts,
        max_rows=top * rollouts,
        max_prompts=top,
    )


def lr_factor(prompts: int, base: int, rule: str) -> float:
    """The factor on the configured lr at `prompts` a step against `base` (batch_size): the
    square-root rule capped at LR_CAP either way, or 1 (rule 'none')."""
    return 1.0 if rule == "none" else sqrt_lr_factor(prompts, base, LR_CAP)


class BatchAuto:
    """The prompts a step and the lr factor a run holds now, and the plan that moves them."""

    def __init__(self, config: Any, cost: StepCost | None = None):
        """The state of a run of `config` (a TrainConfig) at its start; `cost` the step cost
        its plans read (None: the shipped curve `plan_curve`, loaded at the first plan)."""
        self.on = config.batch_plan == "auto"
        """Whether plans are made (batch_plan auto)."""
        self.base = config.batch_size
        """B_0: the configured prompts a step, where the run starts."""
        self.rollouts = config.group_size
        """K: fixed for the run."""
        self.max_prompts = min(config.batch_max or config.train_size, config.train_size)
        """The most prompts a step: batch_max, within the pool."""
        self.rule = config.batch_lr_rule
        self.lr = config.lr
        """The configured lr the factor multiplies."""
        self.curve = config.plan_curve
        self.length = config.max_new_tokens
        self._cost = cost
        self.prompts = config.batch_size
        """Prompts a step now."""
        self.lr_factor = 1.0
        """The factor on lr now."""
        self.metered = 0
        """Metered steps the last look read (a plan is made once per new metered step)."""
        self.start: StartPlan | None = None
        """batch_start least_regret: the start, logged in the first step's row (then None)."""
        if self.on and config.batch_start == "least_regret":
            self.start = start_plan(
                self.cost(),
                rollouts=self.rollouts,
                min_prompts=self.base,
                max_prompts=max(self.base, self.max_prompts),
            )
            self.prompts = self.start.prompts
            self.lr_factor = lr_factor(self.prompts, self.base, self.rule)

    def cost(self) -> StepCost:
        """A step's seconds on the shipped curve `plan_curve` at max_new_tokens (loaded once)."""
        if self._cost is None:
            self._cost = curve_cost(load_curve(self.curve), self.length)
        return self._cost

    def after_step(self, ema: NoiseEma) -> dict[str, float]:
        """After a step: where the meter folded in a new metered step and its terms define a
        noise scale, plan the next steps' prompts and lr factor; the plan's `plan/...`
        metrics ({} where no plan is made, and always with batch_plan fixed)."""
        started = self._start_metrics()
        if not self.on or ema.count == self.metered:
            return started
        self.metered = ema.count
        terms = read_terms(ema)
        if terms is None:
            return started
        plan = decide(
            terms,
            self.cost(),
            prompts=self.prompts,
            rollouts=self.rollouts,
            max_prompts=self.max_prompts,
        )
        self.prompts = plan.prompts
        self.lr_factor = lr_factor(self.prompts, self.base, self.rule)
        return {
            **started,
            "plan/prompts": float(plan.prompts),
            "plan/rows": float(plan.rows),
            "plan/lr_factor": self.lr_factor,
            "plan/seconds_ratio": plan.seconds_ratio,
            "plan/b_noise": plan.b_noise,
            "plan/metered_steps": float(terms.steps),
        }

    def _start_metrics(self) -> dict[str, float]:
        """The start's `plan/start_...` metrics, once ({} after, and where it started as set)."""
        if self.start is None:
            return {}
        start, self.start = self.start, None
        return {
            "plan/start_prompts": float(start.prompts),
            "plan/start_worst_ratio": start.worst_ratio,
        }

    def apply(self, plan: StepPlan, optimizer: Any) -> StepPlan:
        """`plan` with the prompts a step now, and `optimizer`'s lr set to lr x the factor
        (with batch_plan fixed: `plan` as it is, the optimizer untouched)."""
        if not self.on:
            return plan
        for group in optimizer.param_groups:
            group["lr"] = self.lr * self.lr_factor
        return plan.with_rows(StepRows(self.prompts, self.rollouts))

    def state_dict(self) -> dict[str, float]:
        """What a checkpoint keeps: the prompts a step, the lr factor, the metered steps read."""
        return {"prompts": self.prompts, "lr_factor": self.lr_factor, "metered": self.metered}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Restore it (None: a checkpoint from before the planner, or a fixed run: as built)."""
        if state:
            self.start = None  # logged before the checkpoint
            self.prompts = int(state["prompts"])
            self.lr_factor = float(state["lr_factor"])
            self.metered = int(state["metered"])
