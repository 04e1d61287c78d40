"""The batch planner's plan for a run's own trainer: the plan from the noise meter's terms and a
step-cost curve, and the settings that make it, in the trainer's own keys. `frontier
plan-batch LOG` and the TRL trainer's end-of-run line say it the same way
(`plan_run`, then `plan_lines`); before a run, `frontier plan-batch` without a log says the
least-regret start from the curve alone (`start_run`, then `plan_lines`).

A plan (step_cost/planner.py) is B prompts x K rollouts an optimizer step, the step the noise
meter measured, and a learning-rate factor. Each trainer spells that step in its own keys:

- frontier train: `--batch-size B --group-size K --lr`;
- TRL 1.16: an optimizer step trains per_device_train_batch_size x processes x
  gradient_accumulation_steps rows. The micro-batch (per_device_train_batch_size) is what fits
  the GPU's memory, so it stays at most the run's own (the largest that divides the rows and
  leaves at least 2 micro-batches: the noise meter reads two), and the accumulation makes up
  the step; `num_generations` K, and `generation_batch_size` as TRL counts it
  (`trl_generation_batch`) with
  steps_per_generation left unset (TRL's default, the accumulation steps: one generation a
  step), `learning_rate`;
- verl: `data.train_batch_size` B with `actor_rollout_ref.actor.ppo_mini_batch_size` B (one
  update a step, the step planned), `actor_rollout_ref.rollout.n` K,
  `actor_rollout_ref.actor.optim.lr`;
- SkyRL: `trainer.train_batch_size` B with `trainer.policy_mini_batch_size` B,
  `generator.n_samples_per_prompt` K, `trainer.policy.optimizer_config.lr`.

The learning rate is the rate kept, which did better on the one regime measured, with the
planner's square-root rule of thumb beside it.
"""

from __future__ import annotations

from typing import Any

from frontier_rft.integrations.currency import no_curve, plan_curve
from frontier_rft.integrations.trl.currency import TRAINING_ARGUMENTS, trl_generation_batch
from frontier_rft.step_cost.advice import Currency, DeviceHint
from frontier_rft.step_cost.curve import load_curve
from frontier_rft.step_cost.planner import BatchPlan, NoiseTerms, curve_cost, plan_batch
from frontier_rft.step_cost.start_plan import MAX_START_CANDIDATES, StartPlan, start_plan

__all__ = [
    "DEFAULT_LENGTH",
    "DEFAULT_MAX_PROMPTS",
    "DEFAULT_PER_DEVICE",
    "TRAINERS",
    "plan_lines",
    "plan_run",
    "start_advice",
    "start_for_call",
    "start_run",
    "trainer_settings",
]

DEFAULT_PER_DEVICE = int(TRAINING_ARGUMENTS["per_device_train_batch_size"])
"""A TRL run's micro-batch where it is not known (transformers' default): the TRL settings keep
the micro-batch at most this and raise the accumulation."""

TRAINERS = ("frontier", "trl", "verl", "skyrl")
"""The trainers whose settings a plan is said in."""
DEFAULT_LENGTH = 512
"""Completion tokens where nothing says the run's: TRL 1.16's max_completion_length default."""
DEFAULT_MAX_PROMPTS = 1024
"""The most prompts a planned step takes where the pool's size is not known."""


def plan_run(
    terms: NoiseTerms,
    curve: str,
    *,
    length: int,
    prompts: int,
    rollouts: int,
    max_prompts: int = DEFAULT_MAX_PROMPTS,
) -> BatchPlan:
    """The plan against a step of `prompts` x `rollouts` on `curve` (a shipped curve's name or
    a measured curve's file) at `length` completion tokens: K kept, 1 to `max_prompts`
    prompts."""
    cost = curve_cost(load_curve(curve), length)
    return plan_batch(
        terms,
        cost,
        prompts=prompts,
        rollouts=rollouts,
        min_rows=rollouts,
        max_rows=max_prompts * rollouts,
        max_prompts=max_prompts,
    )


def start_run(
    curve: str,
    *,
    length: int,
    prompts: int,
    rollouts: int,
    max_prompts: int = DEFAULT_MAX_PROMPTS,
) -> StartPlan:
    """The least-regret start (step_cost/start_plan.py) on `curve` at `length` completion
    tokens: K kept, `prompts` (the configured step) to `max_prompts` prompts."""
    cost = curve_cost(load_curve(curve), length)
    return start_plan(cost, rollouts=rollouts, min_prompts=prompts, max_prompts=max_prompts)


def _lr(plan: BatchPlan | StartPlan, lr: float | None) -> str:
    """The rate kept first (it did better on the one regime measured), the square-root rule's
    beside it where the step changes."""
    factor = plan.lr_factor
    kept = "your learning rate" if lr is None else f"{lr:g}"
    if factor == 1.0:
        return kept
    rule = f"x {factor:.3g}" if lr is None else f"{lr * factor:.3g}, {factor:.3g}x"
    return f"{kept} (kept; the square-root rule: {rule})"


def _trl(plan: BatchPlan | StartPlan, lr: str, processes: int, per_device: int) -> str:
    rows = plan.rows
    if rows % processes:
        return (
            f"TRL: {rows:,} rows a step do not split over {processes} processes; plan again "
            "with --max-prompts or --processes that fit"
        )
    per_process = rows // processes
    # A larger step through more micro-batches, never larger ones: the run's micro-batch is
    # what its memory holds (a 1,024-row step in one micro-batch would not fit most GPUs).
    fits = [
        d
        for d in range(1, min(per_device, per_process) + 1)
        if per_process % d == 0 and per_process // d >= 2
    ]
    micro = max(fits) if fits else per_process
    values = {
        "per_device_train_batch_size": micro,
        "gradient_accumulation_steps": per_process // micro,
    }
    micro, ga, gbs = trl_generation_batch(values, processes)
    meter = "" if ga > 1 else " (one micro-batch a step: the noise meter is off at it)"
    return (
        f"TRL (GRPOConfig, {processes} process{'es' * (processes > 1)}): "
        f"per_device_train_batch_size={micro} gradient_accumulation_steps={ga}{meter} "
        f"num_generations={plan.rollouts} generation_batch_size={gbs} (steps_per_generation "
        f"unset; the micro-batch at most your {per_device}) learning_rate={lr}"
    )


def trainer_settings(
    plan: BatchPlan | StartPlan,
    trainer: str,
    *,
    lr: float | None = None,
    processes: int = 1,
    per_device: int = DEFAULT_PER_DEVICE,
) -> str:
    """One line: the settings of `trainer` (TRAINERS) that make `plan`'s step (the module says
    how), the learning rate scaled from `lr` (the run's, None: unknown)."""
    rate = _lr(plan, lr)
    p, k = plan.prompts, plan.rollouts
    if trainer == "frontier":
        return f"frontier train: --batch-size {p} --group-size {k} --lr {rate}"
    if trainer == "trl":
        return _trl(plan, rate, processes, per_device)
    if trainer == "verl":
        return (
            f"verl: data.train_batch_size={p} actor_rollout_ref.actor.ppo_mini_batch_size={p} "
            f"actor_rollout_ref.rollout.n={k} actor_rollout_ref.actor.optim.lr={rate}"
        )
    if trainer == "skyrl":
        return (
            f"SkyRL: trainer.train_batch_size={p} trainer.policy_mini_batch_size={p} "
            f"generator.n_samples_per_prompt={k} trainer.policy.optimizer_config.lr={rate}"
        )
    raise ValueError(f"batch planner: trainer must be one of {TRAINERS}, got {trainer!r}")


def plan_lines(
    plan: BatchPlan | StartPlan,
    trainer: str = "frontier",
    *,
    lr: float | None = None,
    processes: int = 1,
    per_device: int = DEFAULT_PER_DEVICE,
) -> list[str]:
    """A plan (`plan_run`, or a start: `start_run`) in two lines: what it is and read (its
    `describe`), then the settings to change for `trainer` (`trainer_settings`), with the
    learning rate's caveat."""
    settings = trainer_settings(plan, trainer, lr=lr, processes=processes, per_device=per_device)
    return [
        plan.describe(),
        f"set for your trainer: {settings}; the learning rate kept: on the one regime "
        "measured it reached uniform's plateau sooner than the square-root rule (a rule of "
        "thumb; docs/results/device_cost.md)",
    ]


def start_advice(
    trainer: str,
    *,
    prompts: int,
    rollouts: int,
    length: int,
    curve: str,
    lr: float | None = None,
    processes: int = 1,
    per_device: int = DEFAULT_PER_DEVICE,
    max_prompts: int = DEFAULT_MAX_PROMPTS,
) -> list[str]:
    """What an adapter says at start-up: the least-regret start from its step of `prompts` x
    `rollouts` up to `max_prompts` (at most MAX_START_CANDIDATES counts) on `curve`, in
    `trainer`'s keys (`plan_lines`); else one line saying why there is none."""
    top = max(prompts, min(max_prompts, prompts + MAX_START_CANDIDATES - 1))
    try:
        start = start_run(curve, length=length, prompts=prompts, rollouts=rollouts, max_prompts=top)
    except ValueError as exc:  # e.g. one rollout a prompt, or a curve that gives no seconds
        return [f"start plan: none ({exc})"]
    return plan_lines(start, trainer, lr=lr, processes=processes, per_device=per_device)


def start_for_call(
    trainer: str,
    currency: Currency | None,
    *,
    prompts: int,
    rollouts: int,
    lr: Any = None,
    hint: DeviceHint | None = None,
    processes: int = 1,
    per_device: int = DEFAULT_PER_DEVICE,
    max_prompts: int = DEFAULT_MAX_PROMPTS,
) -> list[str]:
    """What a pre-flight or a trainer's start-up says after the currency line: the start from
    the step of `prompts` x `rollouts` at the judged call's completion length (`start_advice`),
    on the curve `currency` was read from (`plan_curve`); none, and what to measure, where no
    measured curve applies. `lr`: the config's value, read where it is a number."""
    curve = plan_curve(currency, hint)
    if curve is None or currency is None:  # no currency read: no curve either
        return [no_curve(currency)]
    number = isinstance(lr, int | float) and not isinstance(lr, bool)
    return start_advice(
        trainer,
        prompts=prompts,
        rollouts=rollouts,
        length=currency.call.completion_tokens,
        curve=curve,
        lr=float(lr) if number else None,
        processes=processes,
        per_device=per_device,
        max_prompts=max_prompts,
    )
