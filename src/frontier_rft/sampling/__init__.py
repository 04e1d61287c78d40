"""Samplers around a selector: what one training step rolls out and trains on.

`PassThrough` (plain GRPO), `DynamicSampling` (DAPO's filter), `Allocation` (per-prompt
rollout counts under a fixed budget), `FewerRollouts` (uniform's schedule, a smaller bill) and
`PilotCommit` (Pilot-Commit's candidate screening) and `ConformalStop` (C-GRPO's stop rule,
kind 'cgrpo') are driven the same way, and so are `Rescue` and `Backfill`, which wrap any of
them (their groups kept in a `GroupStore`),
by the reference trainer and the simulator (`sample(step, B, n, rollout)`), the way optax
keeps its transforms apart from the optimizers they wrap. `SamplerSpec(kind, config)` names
one, at every door (`spec.KINDS`: a row per kind); `StepPlan` is a run's whole step, decided
once: the sampler, the wraps around it (`step_plan.WRAPS`: a row per wrap), how the run ends.
"""

from __future__ import annotations

from frontier_rft.sampling.allocation import Allocation, AllocationConfig
from frontier_rft.sampling.backfill import Backfill
from frontier_rft.sampling.conformal_stop import ConformalStop, ConformalStopConfig
from frontier_rft.sampling.dynamic_sampling import (
    DAPO_MOVED,
    RETIRED_NAMES,
    DynamicSampling,
    DynamicSamplingConfig,
)
from frontier_rft.sampling.filtered_batch import FilteredBatch
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.pilot_commit import PilotCommit, PilotCommitConfig
from frontier_rft.sampling.rescue import Rescue
from frontier_rft.sampling.spec import KINDS, SamplerSpec
from frontier_rft.sampling.step import RolloutFn, Round, Sampler, StepSamples
from frontier_rft.sampling.step_plan import WRAPS, StepPlan, StepRows, Wrap
from frontier_rft.sampling.store import GroupStore

__all__ = [
    "DAPO_MOVED",
    "KINDS",
    "RETIRED_NAMES",
    "WRAPS",
    "Allocation",
    "AllocationConfig",
    "Backfill",
    "ConformalStop",
    "ConformalStopConfig",
    "DynamicSampling",
    "DynamicSamplingConfig",
    "FilteredBatch",
    "GroupStore",
    "PassThrough",
    "PilotCommit",
    "PilotCommitConfig",
    "Rescue",
    "RolloutFn",
    "Round",
    "Sampler",
    "SamplerSpec",
    "StepPlan",
    "StepRows",
    "StepSamples",
    "Wrap",
]
