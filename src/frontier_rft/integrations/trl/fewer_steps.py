"""`rollouts: fewer_steps` in TRL's trainers: whole generation batches of the prompts the
selector keeps, the run ended once they have walked `num_train_epochs` passes over the prompts.

TRL plans its steps (and builds its learning-rate schedule over them) from the data loader's
length before training starts, when the prompts a skip will pass over in later epochs are not
known. So the run is ended by the data and the schedule follows the data:

- the sampler (`FrontierRepeatSampler(passes=...)`) selects no chunk once the selector's walk
  has made the passes; the epoch's iteration ends there, and `EndAtPasses` stops the run at
  that epoch's end (the steps TRL planned beyond it are not taken);
- the schedule's step is uniform's step at the same point of the data: the passes walked up
  to the chunk being trained x uniform's steps per pass, within a chunk of several optimizer
  steps moved on in equal parts (`follow_passes`). Warm-up, cosine and linear decay thus end
  where uniform's end, at the last pass.

Whether the run ends by its passes is decided once, by its plan (resolve.py: a run set by
`max_steps` keeps its steps and says so; the passes they walk grow instead).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler

__all__ = ["EndAtPasses", "PassClock", "check_pass_schedule", "follow_passes"]

# Typed as Any so the module type-checks the same with or without the trl extra installed.
_TrainerCallback: Any = TrainerCallback

NOT_LAMBDA = ("reduce_lr_on_plateau", "greedy")
"""TRL learning-rate schedules that are not a function of the step, so cannot follow passes."""


def check_pass_schedule(training: Any) -> None:
    """Refuse, before the model loads, a learning-rate schedule a `rollouts: fewer_steps` run
    could not move by its passes (one that is not a function of the step), whether the run
    ends by its passes or, under max_steps, by its steps (as `frontier check-config` does)."""
    kind = getattr(training, "lr_scheduler_type", "linear")
    kind = str(getattr(kind, "value", kind))  # TrainingArguments holds a SchedulerType
    if kind in NOT_LAMBDA:
        raise ValueError(
            f"rollouts: fewer_steps moves the learning-rate schedule by the passes walked; "
            f"lr_scheduler_type {kind} is not a schedule of the step: use linear, cosine or "
            "constant_with_warmup, or rollouts: full"
        )


class PassClock:
    """Where training is in the data, for the schedule: the passes walked before and after
    the chunk being trained, and the optimizer step its generation began at."""

    def __init__(self, sampler: FrontierRepeatSampler, steps_per_generation: int):
        self.sampler = sampler
        self.steps_per_generation = max(1, int(steps_per_generation))
        self.before = sampler.passes_trained
        self.after = sampler.passes_trained
        self.began_at = 0

    def generating(self, task_ids: Any, global_step: int) -> None:
        """A generation for `task_ids` (its rows' prompts) begins at `global_step`."""
        self.before = self.sampler.passes_trained
        self.after = self.sampler.passes_of(task_ids)
        self.began_at = int(global_step)

    def passes(self, global_step: int) -> float:
        """The passes walked when optimizer step `global_step` (0-based, the one now ending)
        is done: the chunk's passes, reached in equal parts over its optimizer steps."""
        done = min(self.steps_per_generation, max(1, global_step - self.began_at + 1))
        return self.before + (self.after - self.before) * done / self.steps_per_generation


def follow_passes(
    scheduler: Any,
    clock: PassClock,
    total_steps: int,
    passes: float,
    global_step: Callable[[], int],
) -> None:
    """Make `scheduler` (a LambdaLR over TRL's planned `total_steps`) take, at each step,
    uniform's step at the same point of the data: passes walked x total_steps / passes. A
    ValueError for a scheduler that is not a function of the step."""
    from torch.optim.lr_scheduler import LambdaLR

    if not isinstance(scheduler, LambdaLR):
        raise ValueError(
            f"rollouts: fewer_steps moves the learning-rate schedule by the passes walked; "
            f"{type(scheduler).__name__} is not a schedule of the step: use linear, cosine or "
            "constant_with_warmup, or rollouts: full"
        )
    per_pass = total_steps / passes

    def by_passes(rule: Callable[[int], float]) -> Callable[[int], float]:
        def lr(_step: int) -> float:
            at = round(clock.passes(global_step()) * per_pass)
            return rule(min(total_steps, at))

        return lr

    scheduler.lr_lambdas = [by_passes(rule) for rule in scheduler.lr_lambdas]


class EndAtPasses(_TrainerCallback):  # type: ignore[misc]
    """Stops training at the end of the epoch in which the sampler found the passes walked
    (TRL's remaining planned steps are not taken), and saves and evaluates there as
    transformers does at uniform's last step (`DefaultFlowCallback.on_step_end` at
    `max_steps`): a step-based checkpoint and evaluation at the step that ends the passes,
    where save_steps / eval_steps did not already fall on it."""

    def __init__(self, sampler: FrontierRepeatSampler):
        self.sampler = sampler

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self.sampler.passes_done:
            return
        control.should_training_stop = True
        step = int(state.global_step)
        if step >= int(state.max_steps):
            return  # TRL's own last step: transformers already saved and evaluated there
        if (
            _strategy(args.eval_strategy) == "steps"
            and step % max(1, int(state.eval_steps or 1)) != 0
            and (args.eval_delay or 0) <= step
        ):
            control.should_evaluate = True
        if _strategy(args.save_strategy) == "steps" and step % max(1, int(state.save_steps or 1)):
            control.should_save = True


def _strategy(value: Any) -> str:
    """A transformers strategy enum's (or plain string's) value."""
    return str(getattr(value, "value", value))
