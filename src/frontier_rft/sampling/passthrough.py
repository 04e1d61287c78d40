"""`PassThrough`: plain GRPO's step, one round of prompts from the selector, every group
trained; the sampler the trainer, the simulator and TRL use when none other is asked for."""

from __future__ import annotations

from typing import ClassVar

from frontier_rft.core.bounds import bounded_int
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.base import WrapsSelector
from frontier_rft.sampling.step import (
    MAX_GROUP_SIZE,
    RolloutFn,
    StepSamples,
    check_rollout,
    fresh_batch,
    run_round,
)

__all__ = ["PassThrough"]


class PassThrough(WrapsSelector):
    """Plain GRPO sampling: one round of `batch_size` prompts, every group trained."""

    rescuable: ClassVar[bool] = True
    plain: ClassVar[bool] = True

    kind: ClassVar[str] = "passthrough"

    def __init__(self, selector: Selector):
        if not isinstance(selector, Selector):
            raise ValueError(f"PassThrough wraps a built selector, got {type(selector).__name__}")
        self.inner = selector
        self.config = None  # nothing to set: its state is its kind alone

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """One round of batch_size prompts; all of its groups are trained on. Invalid
        arguments change nothing (checked before the selector moves)."""
        step = bounded_int(step, "step")
        batch_size = bounded_int(batch_size, "batch_size", lo=1)
        group_size = bounded_int(group_size, "group_size", lo=1, hi=MAX_GROUP_SIZE)
        check_rollout(rollout)
        one = run_round(self.inner, step, batch_size, group_size, rollout)
        self.inner.flush()  # the step is complete: fold it now so metrics describe it
        picks = [(0, g) for g in range(one.task_ids.shape[0])]
        rounds = (one,)
        return StepSamples(step, rounds, fresh_batch(rounds, picks, step, 0))

    def metrics(self) -> dict[str, float]:
        return self.inner.metrics()
