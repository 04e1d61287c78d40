"""BOTS, Bayesian online task selection, and its MoPPS and DOTS presets: one family, one
folder.

- `selector`: the three selectors (one Beta posterior per task, Thompson sampling);
- `config`: their hyperparameters;
- `plugins`, `regression`: the implicit-evidence plug-ins (interpolation, kernel, an
  online regression on task features);
- `lazy`: candidate mode's lazily aged posteriors;
- `shard`: what the sharded selector service needs to run BOTS across shards.
"""

from __future__ import annotations

from frontier_rft.selectors.bots.config import BOTSConfig, DOTSConfig, MoPPSConfig
from frontier_rft.selectors.bots.selector import BOTSSelector, DOTSSelector, MoPPSSelector

__all__ = [
    "BOTSConfig",
    "BOTSSelector",
    "DOTSConfig",
    "DOTSSelector",
    "MoPPSConfig",
    "MoPPSSelector",
]
