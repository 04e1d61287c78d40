"""The old home of the step samplers and the shadow rule, kept for users' imports: use
`frontier_rft.sampling` (and `frontier_rft.shadow` for the rule).

`from frontier_rft.wrappers.dynamic_sampling import DynamicSampling` and every other module
path of the old package resolve to the very module of its new home (registered under the old
name), so a class imported either way is one object.
"""

from __future__ import annotations

import importlib
import sys

from frontier_rft.sampling import *  # noqa: F403 - the old package's names, the same objects
from frontier_rft.sampling import __all__ as __all__
from frontier_rft.shadow import rule as shadow

MOVED = (
    "allocation",
    "allocation_rule",
    "base",
    "dynamic_sampling",
    "fewer_rollouts",
    "filtered_batch",
    "passthrough",
    "pilot_commit",
    "sampler_file",
    "sampler_flags",
    "step",
    "wrapper_file",
)
"""The old package's submodules, each now `frontier_rft.sampling.<name>`."""

# The old submodule names point at the moved modules (not copies): `import
# frontier_rft.wrappers.step` finds the entry here once this package has run. The shadow
# rule moved to the shadow room (frontier_rft.shadow.rule).
sys.modules[f"{__name__}.shadow"] = shadow
for _name in MOVED:
    _module = importlib.import_module(f"frontier_rft.sampling.{_name}")
    sys.modules[f"{__name__}.{_name}"] = _module
    globals()[_name] = _module  # `from frontier_rft.wrappers import step` as before
