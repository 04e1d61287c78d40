"""Fewer rollouts (`rollouts: kept`, `screen: k`) inside TRL's GRPOTrainer: the old import
names of what `step_driver` runs for every step sampler (`FewerGeneration` is `StepDriver`;
fewer rollouts' counters, summary keys and empty-step rule are its row of
`driver_kinds.KINDS`, its loss scaling `FewerRollouts`' own `StepSamples.loss_scale`)."""

from __future__ import annotations

from frontier_rft.integrations.trl.driver_kinds import FEWER_COUNTERS, FEWER_SUMMARY
from frontier_rft.integrations.trl.seam_check import check_screenable
from frontier_rft.integrations.trl.step_driver import StepDriver

__all__ = ["FEWER_COUNTERS", "FEWER_SUMMARY", "FewerGeneration", "check_screenable"]

FewerGeneration = StepDriver
"""The one step driver, by its old name (it drives whichever sampler it is given)."""
