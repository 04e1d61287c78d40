"""verl adapter: a curriculum sampler (`sampler`) and the v1 trainer's replay buffer (`v1`).

Needs the `verl` extra. The v1 buffer is imported from `frontier_rft.integrations.verl.v1`
(verl's `pkg://` custom-sampler path), not from here, since it imports verl's v1 trainer.
`VerlSamplerConfig` and `preflight` import without verl or torch; the sampler names import
torch (and verl when installed) on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from frontier_rft.integrations.verl.config import VerlSamplerConfig

if TYPE_CHECKING:
    from frontier_rft.integrations.verl.sampler import FrontierSampler, install_feedback_hook
    from frontier_rft.integrations.verl.task_ids import read_task_ids

__all__ = ["FrontierSampler", "VerlSamplerConfig", "install_feedback_hook", "read_task_ids"]

_HOMES = {
    "FrontierSampler": "sampler",
    "install_feedback_hook": "sampler",
    "read_task_ids": "task_ids",
}
"""The module of each name imported on first use (the sampler's with torch)."""


def __getattr__(name: str) -> Any:
    """The sampler-side names, imported (with torch) on first use."""
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
