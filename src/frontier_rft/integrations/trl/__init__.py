"""TRL adapter: GRPOTrainer / RLOOTrainer whose prompts come from a frontier-rft selector.

Needs the `trl` extra. `trainer` holds the trainer classes, `sampler` the RepeatSampler
replacement, `rewards` the reward taps that feed the selector, `state` the checkpoint seam.
"""

from frontier_rft.integrations.trl.trainer import (
    FrontierConfig,
    FrontierGRPOTrainer,
    FrontierRepeatSampler,
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
