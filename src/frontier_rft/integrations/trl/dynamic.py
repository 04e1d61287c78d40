"""DAPO dynamic sampling inside TRL's GRPOTrainer: the old import names of what
`step_driver` runs for every step sampler (`DynamicGeneration` is `StepDriver`; dynamic
sampling's counters, summary keys and empty-step rule are its row of `driver_kinds.KINDS`)."""

from __future__ import annotations

from frontier_rft.integrations.trl.driver_kinds import DAPO_SUMMARY, DYNAMIC_COUNTERS
from frontier_rft.integrations.trl.seam_check import check_wrappable
from frontier_rft.integrations.trl.step_driver import AdapterSeam, StepDriver, filler_groups

__all__ = [
    "DAPO_SUMMARY",
    "DYNAMIC_COUNTERS",
    "AdapterSeam",
    "DynamicGeneration",
    "check_wrappable",
    "filler_groups",
]

DynamicGeneration = StepDriver
"""The one step driver, by its old name (it drives whichever sampler it is given)."""
