"""TRL adapter: GRPOTrainer / RLOOTrainer whose prompts come from a frontier-rft selector.

Needs the `trl` extra. `trainer` holds the trainer classes (their checkpoints and logs in
`checkpoints` and `run_log`), `resolve` the one resolution of a run's step into a
`StepPlan` (the trainer's and `frontier check-config trl`'s), `arguments` the checks of what
a trainer is given, `sampler` the RepeatSampler replacement, `rewards` the reward taps that
feed the selector, `state` the checkpoint files, `preflight` the checks that run before a
model loads, `step_driver` the one driver of a
generation step through a step sampler inside GRPOTrainer (DAPO's dynamic sampling, with
`dynamic_config`; fewer rollouts, with `fewer_config`). `FrontierConfig` (and `preflight`)
import without TRL or torch, so a config can be checked anywhere; the trainer classes
import TRL on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from frontier_rft.integrations.trl.config import FrontierConfig

if TYPE_CHECKING:
    from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler
    from frontier_rft.integrations.trl.trainer import (
        FrontierGRPOTrainer,
        FrontierRLOOTrainer,
        FrontierTrainerMixin,
        task_rows,
    )

__all__ = [
    "FrontierConfig",
    "FrontierGRPOTrainer",
    "FrontierRLOOTrainer",
    "FrontierRepeatSampler",
    "FrontierTrainerMixin",
    "task_rows",
]


def __getattr__(name: str) -> Any:
    """The trainer-side names, imported (with TRL and torch) on first use."""
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}.trainer"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
