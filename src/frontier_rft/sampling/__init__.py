"""Samplers around a selector: what one training step rolls out and trains on.

`PassThrough` (plain GRPO), `DynamicSampling` (DAPO's filter), `Allocation` (per-prompt
rollout counts under a fixed budget), `FewerRollouts` (uniform's schedule, a smaller bill) and
`PilotCommit` (Pilot-Commit's candidate screening) and `ConformalStop` (C-GRPO's stop rule,
kind 'cgrpo') are driven the same way
by the reference trainer and the simulator (`sample(step, B, n, rollout)`), the way optax
keeps its transforms apart from the optimizers they wrap. `SamplerSpec(kind, config)` names
one, at every door (`spec.KINDS`: a row per kind).
"""

from __future__ import annotations

from frontier_rft.sampling.allocation import Allocation, AllocationConfig
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
from frontier_rft.sampling.spec import KINDS, SamplerSpec
from frontier_rft.sampling.step import RolloutFn, Round, Sampler, StepSamples

__all__ = [
    "DAPO_MOVED",
    "KINDS",
    "RETIRED_NAMES",
    "Allocation",
    "AllocationConfig",
    "ConformalStop",
    "ConformalStopConfig",
    "DynamicSampling",
    "DynamicSamplingConfig",
    "FilteredBatch",
    "PassThrough",
    "PilotCommit",
    "PilotCommitConfig",
    "RolloutFn",
    "Round",
    "Sampler",
    "SamplerSpec",
    "StepSamples",
]
