"""verl adapter: a curriculum sampler (`sampler`) and the v1 trainer's replay buffer (`v1`).

Needs the `verl` extra. The v1 buffer is imported from `frontier_rft.integrations.verl.v1`
(verl's `pkg://` custom-sampler path), not from here, since it imports verl's v1 trainer.
"""

from frontier_rft.integrations.verl.sampler import (
    FrontierSampler,
    VerlSamplerConfig,
    install_feedback_hook,
    read_task_ids,
)

__all__ = ["FrontierSampler", "VerlSamplerConfig", "install_feedback_hook", "read_task_ids"]
