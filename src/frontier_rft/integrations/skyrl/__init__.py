"""SkyRL adapter: a frontier-rft selector chooses the prompts of SkyRL's `RayPPOTrainer`.

`FrontierRayPPOTrainer` (in `trainer`, which imports SkyRL) draws each dataloader batch from
the selector, reports every rollout's reward from SkyRL's two reward hooks and keeps the
selector's state in its checkpoints (`FrontierFullyAsyncRayPPOTrainer`: the same for SkyRL's
fully-async trainer); `main` is the entrypoint that reads `frontier.*`
settings beside SkyRL's own. `SKYRL_FIELDS` and `skyrl_sampler_config` import neither SkyRL
nor torch, so `frontier check-config skyrl` runs on any machine. See
docs/integrations/skyrl.md.
"""

from __future__ import annotations

from frontier_rft.integrations.skyrl.config import (
    OWN_STATE_FILE,
    SKYRL_FIELDS,
    skyrl_sampler_config,
)

__all__ = ["OWN_STATE_FILE", "SKYRL_FIELDS", "skyrl_sampler_config"]
