"""What frontier-rft adds to a TRL trainer, in one object: `FrontierRun`, the run state the
trainer (trainer.py), its logging (run_log.py) and its checkpoints (checkpoints.py) share.

The trainer builds it once, after TRL has built the trainer (`FrontierTrainerMixin.
_frontier_start`), every part in that one call; what changes while the run goes is said on
its field with the one place that changes it. The trainer's public names
(`trainer.frontier_selector`, `frontier_plan`, ...) read its fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.selector import Selector
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.driver_kinds import COUNTERS
from frontier_rft.integrations.trl.fewer_steps import PassClock
from frontier_rft.integrations.trl.rewards import RewardTap
from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler
from frontier_rft.integrations.trl.step_driver import StepDriver
from frontier_rft.metrics_log import JsonlLogger
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.shadow.live import RunShadows
from frontier_rft.step_cost.advice import Currency

__all__ = ["FrontierRun", "new_counters"]


def new_counters() -> dict[str, int]:
    """The adapter's counters at a run's start (saved in each checkpoint)."""
    return {
        "generations": 0,
        "rollouts": 0,
        "unscorable": 0,
        "embedding_refreshes": 0,
        **dict.fromkeys(COUNTERS, 0),
    }


@dataclass(eq=False)
class FrontierRun:
    """A frontier-rft TRL run's state: its settings and plan, the selector and what walks,
    taps, drives and follows it, and the counters, files and flags of the run so far."""

    config: FrontierConfig
    """The run's FrontierConfig; with rollouts: auto, holding what auto chose."""
    plan: StepPlan
    """The run's step, resolved once before the model loaded (resolve.py)."""
    selector: Selector
    """The selector over the training rows (built from the data, or the one given)."""
    rows: NDArray[np.int64]
    """The dataset row of each task id."""
    shadows: RunShadows
    """Rules followed beside the run (FrontierConfig.shadows), on their own selectors."""
    sampler: FrontierRepeatSampler
    """TRL's RepeatSampler layout over the selector's picks (sampler.py)."""
    pass_clock: PassClock | None
    """Where training is in the data (rollouts: fewer_steps), which the schedule follows;
    None for a run ended by its steps."""
    tap: RewardTap
    """Each reward function's output for the selector (a hook or a wrapper each)."""
    hooks: list[Any]
    """The forward hooks on reward models (`tap.hook_module`)."""
    embedding_texts: list[str] | None
    """Each row's prompt as the policy reads it, while the selector reads self-embeddings
    (refreshed every `self_embeddings_refresh_steps`); None: none read, or no longer."""
    driver: StepDriver | None = None
    """The one step driver running each generation step through the plan's step sampler
    (`_frontier_drive`, which sets it); None: TRL's own generation (the pass-through)."""
    counters: dict[str, int] = field(default_factory=new_counters)
    """The adapter's counters (saved in each checkpoint), added to as the run goes."""
    refreshed_at: int = -1
    """The optimizer step the self-embeddings were last refreshed at (-1: never)."""
    jsonl: JsonlLogger | None = None
    """The JSONL metrics file, opened at its first record and closed when `train()` ends."""
    resuming: bool = False
    """True from `train(resume_from_checkpoint=...)` until TRL's resume position is read."""
    currency: Currency | None = None
    """The currency the run pays in, said at start-up; its curve (`plan_curve`) prices the start
    and the meter's plans. None until the trainer has read it."""

    @property
    def stop_reason(self) -> str | None:
        """Why training stopped early (dynamic sampling found no signal), else None."""
        return None if self.driver is None else self.driver.stop_reason
