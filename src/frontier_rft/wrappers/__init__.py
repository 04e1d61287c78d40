"""The old home of the step samplers and the shadow rule, kept for users' imports: use
`frontier_rft.sampling` (and `frontier_rft.shadow` for the rule).

`from frontier_rft.wrappers.dynamic_sampling import DynamicSampling` and every other module
path of the old package resolve to the very module of its new home (registered under the old
name), so a class imported either way is one object.
"""

from __future__ import annotations

import sys

from frontier_rft.sampling import (
    DAPO_MOVED,
    RETIRED_NAMES,
    Allocation,
    AllocationConfig,
    DynamicSampling,
    DynamicSamplingConfig,
    FilteredBatch,
    PassThrough,
    PilotCommit,
    PilotCommitConfig,
    RolloutFn,
    Round,
    Sampler,
    StepSamples,
    allocation,
    allocation_rule,
    base,
    dynamic_sampling,
    fewer_rollouts,
    filtered_batch,
    passthrough,
    pilot_commit,
    sampler_file,
    sampler_flags,
    step,
    wrapper_file,
)
from frontier_rft.shadow import rule as shadow

# The old submodule names point at the moved modules (not copies): `import
# frontier_rft.wrappers.step` finds the entry here once this package has run. The shadow
# rule moved to the shadow room (frontier_rft.shadow.rule).
sys.modules[f"{__name__}.shadow"] = shadow
for _module in (
    allocation,
    allocation_rule,
    base,
    dynamic_sampling,
    fewer_rollouts,
    filtered_batch,
    passthrough,
    pilot_commit,
    sampler_file,
    sampler_flags,
    step,
    wrapper_file,
):
    sys.modules[f"{__name__}.{_module.__name__.rpartition('.')[2]}"] = _module

__all__ = [
    "DAPO_MOVED",
    "RETIRED_NAMES",
    "Allocation",
    "AllocationConfig",
    "DynamicSampling",
    "DynamicSamplingConfig",
    "FilteredBatch",
    "PassThrough",
    "PilotCommit",
    "PilotCommitConfig",
    "RolloutFn",
    "Round",
    "Sampler",
    "StepSamples",
]
