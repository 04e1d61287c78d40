"""The `frontier:` settings of a SkyRL run, as the verl adapter's sampler config.

SkyRL's dataloader is a torchdata `StatefulDataLoader`, as verl's, so the SkyRL adapter reuses
verl's `FrontierSampler` and its config class; this module says which of its fields apply
on SkyRL and what they mean there, and what `rollouts: auto` means on SkyRL
(`skyrl_auto_rollouts`). Imports neither SkyRL nor torch.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from frontier_rft.core.config import did_you_mean
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.auto_rollouts import (
    SHADOWS_FOLLOW_UNIFORM,
    RowCount,
    auto_log,
    planned_epochs,
    resolve_auto,
)
from frontier_rft.integrations.verl.config import VerlSamplerConfig
from frontier_rft.selectors.registry import SELECTORS

__all__ = [
    "DEFAULT_TASK_ID_KEY",
    "FULLY_ASYNC",
    "GROUP_SIZE",
    "KEPT_DOC",
    "KEPT_WITH_DYNAMIC_SAMPLING",
    "KEPT_WITH_FULLY_ASYNC",
    "NOT_ON_SKYRL",
    "OWN_STATE_FILE",
    "SHADOWS_WITH_DYNAMIC_SAMPLING",
    "SHADOWS_WITH_FULLY_ASYNC",
    "SKYRL_FIELDS",
    "SKYRL_SETTING",
    "TRAINER",
    "resolved_rollouts",
    "skyrl_auto_rollouts",
    "skyrl_planned_epochs",
    "skyrl_sampler_config",
    "unknown_settings",
]

_log = logging.getLogger(__name__)

TRAINER = "SkyRL"
"""Whose batch `rollouts: auto`'s lines name."""

SKYRL_SETTING = "frontier"
"""Top-level key of the frontier-rft settings beside SkyRL's config (`frontier.selector=...`)."""
OWN_STATE_FILE = "frontier_sampler.pt"
"""The selector's state in each `global_step_N` folder, beside SkyRL's `data.pt`: read on resume
(SkyRL only warns when `data.pt` fails; its fully-async trainer keeps no dataloader state)."""
DEFAULT_TASK_ID_KEY = "index"
"""task_id_key's default: a data column `index` when the file has one, else the row position."""

NOT_ON_SKYRL: dict[str, str] = {
    "batch_size": "batch_size is not read: the selector's batch is SkyRL's "
    "trainer.train_batch_size; set that instead",
    "reward_key": "reward_key is verl's: the SkyRL adapter reads the rewards SkyRL's generator "
    "returns (token-level rewards summed, step-wise ones from each trajectory's last step)",
}
"""VerlSamplerConfig fields with no meaning on SkyRL, and why (refused by name)."""
DYNAMIC_SAMPLING_ON_SKYRL = (
    "is the TRL adapter's option: on SkyRL, dynamic sampling is SkyRL's own "
    "trainer.algorithm.dynamic_sampling.type=filter (the adapter reports the groups it drops)"
)
"""Why a TRL dynamic-sampling option among the frontier settings is refused, and what to do."""

KEPT_DOC = "docs/integrations/skyrl.md, 'Fewer rollouts on SkyRL's own schedule'"
"""Where `rollouts: kept` on SkyRL is explained (its errors point there)."""
KEPT_WITH_DYNAMIC_SAMPLING = (
    "rollouts: kept with trainer.algorithm.dynamic_sampling.type set: SkyRL's filter samples "
    "batch after batch until train_batch_size groups are mixed (replace copies groups over "
    "the dropped ones), which fills the batch kept shrinks; set dynamic_sampling.type=null, "
    f"or rollouts: full; see {KEPT_DOC}"
)
"""Why `rollouts: kept` is refused beside SkyRL's dynamic sampling (trainer and check-config)."""

GROUP_SIZE = "generator.n_samples_per_prompt"
"""SkyRL's setting of the rollouts per prompt (a group)."""
SHADOWS_WITH_DYNAMIC_SAMPLING = (
    "shadows with trainer.algorithm.dynamic_sampling.type set: SkyRL's filter reports a step's "
    "groups in several sampling rounds, and a shadow reads each prompt's whole group once a "
    "step; shadow a run without it (dynamic_sampling.type=null), or drop frontier.shadows"
)
"""Why shadows are refused beside SkyRL's dynamic sampling."""

FULLY_ASYNC = "trainer.fully_async.enabled"
"""SkyRL's setting that chooses its fully-async trainer (FrontierFullyAsyncRayPPOTrainer)."""
KEPT_WITH_FULLY_ASYNC = (
    f"rollouts: kept with {FULLY_ASYNC}: SkyRL's fully-async trainer trains mini-batches of "
    "exactly train_batch_size groups and generates a fixed number of prompts an epoch, which "
    "fewer kept prompts would leave waiting; use rollouts: full, or the synchronous trainer"
)
"""Why `rollouts: kept` is refused with SkyRL's fully-async trainer."""
SHADOWS_WITH_FULLY_ASYNC = (
    f"shadows with {FULLY_ASYNC}: a shadow reads each prompt's whole group once a step, and "
    "the fully-async trainer's groups of one draw arrive over several steps; drop "
    "frontier.shadows, or shadow a run of the synchronous trainer"
)
"""Why shadows are refused with SkyRL's fully-async trainer."""

SKYRL_FIELDS = tuple(
    name for name in VerlSamplerConfig.__dataclass_fields__ if name not in NOT_ON_SKYRL
)
"""The settings `frontier.*` takes on SkyRL (batch_size is SkyRL's trainer.train_batch_size)."""


def unknown_settings(fields: Mapping[str, Any]) -> list[str]:
    """One line per key of `fields` that is no SkyRL setting: the reason for a verl- or
    TRL-only one, else the closest setting's name."""
    out = []
    for name in map(str, fields):
        if name in NOT_ON_SKYRL:
            out.append(f"{name}: {NOT_ON_SKYRL[name]}")
        elif name.startswith("dynamic_sampling"):
            out.append(f"{name} {DYNAMIC_SAMPLING_ON_SKYRL}")
        elif name not in SKYRL_FIELDS:
            out.append(
                f"unknown setting {name!r}{did_you_mean(name, SKYRL_FIELDS)}; the settings: "
                f"{', '.join(SKYRL_FIELDS)}"
            )
    return out


def skyrl_sampler_config(fields: Any, train_batch_size: int) -> VerlSamplerConfig:
    """The sampler config of the `frontier:` settings; ValueError naming the first mistake.
    task_id_key names a column of SkyRL's training data (see DEFAULT_TASK_ID_KEY)."""
    if fields is None:
        fields = {}
    if not isinstance(fields, Mapping):
        raise ValueError(f"{SKYRL_SETTING} must be a mapping of settings, got {fields!r}")
    unknown = unknown_settings(fields)
    if unknown:
        raise ValueError(f"{SKYRL_SETTING}: {unknown[0]}")
    return VerlSamplerConfig.from_fields(fields, int(train_batch_size), SKYRL_SETTING)


def skyrl_planned_epochs(
    epochs: Any, max_training_steps: Any, train_batch_size: Any, rows: RowCount
) -> float | None:
    """Passes over the `rows` training prompts a SkyRL run plans (`auto_rollouts.
    planned_epochs`): trainer.epochs (`epochs`; SkyRL's 1 when None), or fewer where
    trainer.max_training_steps ends it first (steps of trainer.train_batch_size prompts).
    None where that needs rows not counted, or a value is not a number."""
    return planned_epochs(
        1 if epochs is None else epochs,
        steps=max_training_steps,
        prompts_per_step=train_batch_size,
        rows=rows,
    )


def skyrl_auto_rollouts(
    *,
    selector: type[Selector],
    shadows: Any,
    fully_async: bool,
    dynamic_sampling: Any,
    epochs: float | None = None,
) -> tuple[str, str, bool]:
    """What `frontier.rollouts: auto` (the default) means on SkyRL: (mode, why, whether to
    warn). kept with the synchronous trainer (FrontierRayPPOTrainer) where the selector skips
    within a step at no measured loss for a run of `epochs` passes (`skyrl_planned_epochs`;
    None: unknown), without SkyRL's dynamic sampling (`dynamic_sampling`: its type, None when
    off) and shadows; full with the fully-async trainer or beside dynamic sampling, with a
    warning naming why (`auto_rollouts.resolve_auto`). The entrypoint (before Ray starts), the
    trainer and `frontier check-config skyrl` ask this."""
    blockers = [SHADOWS_FOLLOW_UNIFORM] if shadows else []
    if fully_async:
        blockers.append(KEPT_WITH_FULLY_ASYNC)
    if dynamic_sampling is not None:
        blockers.append(KEPT_WITH_DYNAMIC_SAMPLING)
    return resolve_auto(selector, blockers, epochs)


def resolved_rollouts(
    config: VerlSamplerConfig,
    *,
    fully_async: bool,
    dynamic_sampling: Any,
    selector: type[Selector] | None = None,
    epochs: float | None = None,
) -> VerlSamplerConfig:
    """`config` with `rollouts: auto` replaced by what it means here (`skyrl_auto_rollouts`;
    `selector`: the class of a ready selector, else the config's; `epochs`: the run's
    length, `skyrl_planned_epochs`), said in one log line; unchanged when rollouts is set."""
    if config.rollouts != "auto":
        return config
    mode, why, warn = skyrl_auto_rollouts(
        selector=selector or SELECTORS[config.selector],
        shadows=config.shadows,
        fully_async=fully_async,
        dynamic_sampling=dynamic_sampling,
        epochs=epochs,
    )
    auto_log(_log, TRAINER, mode, why, warn)
    return dataclasses.replace(config, rollouts=mode)
