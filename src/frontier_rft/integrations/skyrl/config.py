"""The `frontier:` settings of a SkyRL run, as the verl adapter's sampler config.

SkyRL's dataloader is a torchdata `StatefulDataLoader`, as verl's, so the SkyRL adapter reuses
verl's `FrontierSampler` and its config class; this module says which of its fields apply
on SkyRL and what they mean there, and reads SkyRL's settings into the one plan's
(`integrations.plan`) clashes and run length (`skyrl_auto_rollouts`). Imports neither
SkyRL nor torch.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from frontier_rft.core.config import did_you_mean
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.plan import (
    RowCount,
    TrainerFacts,
    adapter_plan,
    auto,
    auto_log,
    clashes,
    message,
    planned_epochs,
)
from frontier_rft.integrations.verl.config import VerlSamplerConfig
from frontier_rft.sampling.step_plan import StepPlan, StepRows
from frontier_rft.selectors.registry import SELECTORS

__all__ = [
    "DEFAULT_TASK_ID_KEY",
    "FULLY_ASYNC",
    "GROUP_RELATIVE_ESTIMATORS",
    "GROUP_SIZE",
    "KEPT_WITH_DYNAMIC_SAMPLING",
    "KEPT_WITH_FULLY_ASYNC",
    "LINEAR_POLICY_LOSSES",
    "NOT_ON_SKYRL",
    "OWN_STATE_FILE",
    "SHADOWS_WITH_DYNAMIC_SAMPLING",
    "SHADOWS_WITH_FULLY_ASYNC",
    "SKYRL",
    "SKYRL_FIELDS",
    "SKYRL_SETTING",
    "SkyRLSamplerConfig",
    "kept_advantage_factors",
    "kept_loss_problem",
    "resolved_plan",
    "skyrl_auto_rollouts",
    "skyrl_planned_epochs",
    "skyrl_rows",
    "skyrl_sampler_config",
    "skyrl_step_plan",
    "unknown_settings",
]

_log = logging.getLogger(__name__)

SKYRL = TrainerFacts(
    name="SkyRL",
    kept="SkyRL's synchronous trainer (FrontierRayPPOTrainer)",
    filter="trainer.algorithm.dynamic_sampling.type",
    length=("trainer.epochs", "trainer.max_training_steps", "trainer.train_batch_size"),
    clashes=("auto+shadows", "kept+async", "kept+filter", "kept+loss"),
)
"""What SkyRL's trainers can do with a step (integrations.plan asks it; its texts are there)."""


@dataclasses.dataclass(frozen=True)
class SkyRLSamplerConfig(VerlSamplerConfig):
    """The `frontier:` settings of a SkyRL run: verl's sampler settings (SkyRL reuses its
    sampler), refused in SkyRL's words (its `rollouts: fewer_steps` explains SkyRL's loop)."""

    trainer: ClassVar[TrainerFacts] = SKYRL


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
DYNAMIC_SAMPLING_ON_SKYRL = message(SKYRL, "sampler:dynamic_sampling")
"""Why a TRL dynamic-sampling option among the frontier settings is refused, and what to do
(the plan's text: SkyRL does not run the dynamic_sampling step sampler)."""

KEPT_WITH_DYNAMIC_SAMPLING = message(SKYRL, "kept+filter")
"""Why `rollouts: kept` is refused beside SkyRL's dynamic sampling (the plan's text, named
here for users' imports, as are the three below)."""

GROUP_SIZE = "generator.n_samples_per_prompt"
"""SkyRL's setting of the rollouts per prompt (a group)."""
SHADOWS_WITH_DYNAMIC_SAMPLING = message(SKYRL, "shadows+filter")
"""Why shadows are refused beside SkyRL's dynamic sampling."""

FULLY_ASYNC = "trainer.fully_async.enabled"
"""SkyRL's setting that chooses its fully-async trainer (FrontierFullyAsyncRayPPOTrainer)."""
KEPT_WITH_FULLY_ASYNC = message(SKYRL, "kept+async")
"""Why `rollouts: kept` is refused with SkyRL's fully-async trainer."""
SHADOWS_WITH_FULLY_ASYNC = message(SKYRL, "shadows+async")
"""Why shadows are refused with SkyRL's fully-async trainer."""

LINEAR_POLICY_LOSSES = frozenset(
    {"regular", "dual_clip", "gspo", "cispo", "rollout_is", "sapo", "dppo", "importance_sampling"}
)
"""SkyRL 0.3's trainer.algorithm.policy_loss_type values whose loss is c x itself when every
advantage is c x itself (c > 0), read from its ppo_utils: clip_cov (absolute covariance
bounds), kl_cov (a term without the advantage) and cross_entropy (none) are not."""


GROUP_RELATIVE_ESTIMATORS = frozenset({"grpo", "rloo", "maxrl"})
"""SkyRL 0.3's trainer.algorithm.advantage_estimator values that give a group whose rewards
are all equal zero advantage (read from its ppo_utils; grpo is its default): only there is
a prompt passed over for coming back all equal a group that would have taught nothing. gae
(a critic's values) and reinforce++ (whitened over the batch) are not."""


def kept_loss_problem(
    policy_loss_type: Any, loss_scale: str, advantage_estimator: Any = None
) -> str | None:
    """Why `rollouts: kept` with `loss_scale` cannot train SkyRL's loss (one line), or None:
    an advantage estimator that is not group-relative (`GROUP_RELATIVE_ESTIMATORS`; None:
    SkyRL's grpo), or under batch a policy loss not linear in the advantages, which the
    factor batch puts on them does not scale."""
    if isinstance(advantage_estimator, str) and (
        advantage_estimator not in GROUP_RELATIVE_ESTIMATORS
    ):
        return (
            f"rollouts: kept with trainer.algorithm.advantage_estimator={advantage_estimator}: "
            "its advantages are not group-relative, so a prompt whose rollouts all score alike "
            "still trains and skipping it is not free; set advantage_estimator=grpo (or rloo), "
            "or rollouts: full"
        )
    loss = policy_loss_type or "regular"
    if loss_scale != "batch" or loss in LINEAR_POLICY_LOSSES:
        return None
    return message(SKYRL, "kept+loss", loss=loss, setting=SKYRL_SETTING)


def kept_advantage_factors(
    prompts: Sequence[int], mini_batch_size: int, loss_scale: str
) -> list[float]:
    """The factor on each policy mini-batch's advantages of a kept step (`prompts`: prompts in
    each mini-batch, `mini_batch_size`: SkyRL's policy_mini_batch_size). SkyRL reduces the
    loss over what a mini-batch holds (its `loss_reduction`, put on the advantages); batch
    scales each by its share of a full mini-batch (the left-out groups counted as all-equal
    groups of advantage 0: G / B with one mini-batch a step), kept leaves the mean."""
    if loss_scale == "kept":
        return [1.0] * len(prompts)
    return [k / mini_batch_size for k in prompts]


SKYRL_FIELDS = tuple(
    f.name for f in dataclasses.fields(VerlSamplerConfig) if f.name not in NOT_ON_SKYRL
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
    return SkyRLSamplerConfig.from_fields(fields, int(train_batch_size), SKYRL_SETTING)


def skyrl_planned_epochs(
    epochs: Any, max_training_steps: Any, train_batch_size: Any, rows: RowCount
) -> float | None:
    """Passes over the `rows` training prompts a SkyRL run plans (`plan.
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
    policy_loss_type: Any = None,
    loss_scale: str = VerlSamplerConfig.loss_scale,
    advantage_estimator: Any = None,
) -> tuple[str, str, bool]:
    """What `frontier.rollouts: auto` (the default) means on SkyRL: (mode, why, whether to
    warn). kept with the synchronous trainer (FrontierRayPPOTrainer) where the selector skips
    within a step at no measured loss for a run of `epochs` passes (`skyrl_planned_epochs`;
    None: unknown), without SkyRL's dynamic sampling (`dynamic_sampling`: its type, None when
    off) and shadows; full with the fully-async trainer, beside dynamic sampling or with a
    policy loss `loss_scale` cannot scale or an `advantage_estimator` that is not
    group-relative (`kept_loss_problem`), with a warning naming why
    (`plan.auto`). The entrypoint (before Ray starts), the trainer and `frontier
    check-config skyrl` ask this."""
    loss = kept_loss_problem(policy_loss_type, loss_scale, advantage_estimator)
    on = {
        "auto+shadows": bool(shadows),
        "kept+async": fully_async,
        "kept+filter": dynamic_sampling is not None,
        "kept+loss": [loss] if loss is not None else None,
    }
    return auto(SKYRL, selector, clashes(SKYRL, on), epochs, device="gpu")  # its workers: GPUs


def skyrl_rows(config: VerlSamplerConfig, group_size: Any = None) -> StepRows:
    """A SkyRL step's rows, as its config sizes it: trainer.train_batch_size prompts (the
    sampler's batch_size) in one call, generator.n_samples_per_prompt (`group_size`) rollouts
    each (None where not known yet: `frontier check-config skyrl` without it)."""
    whole = isinstance(group_size, int) and not isinstance(group_size, bool) and group_size >= 1
    return StepRows(config.batch_size, group_size if whole else None)


def skyrl_step_plan(
    config: VerlSamplerConfig,
    *,
    fully_async: bool,
    dynamic_sampling: Any,
    selector: type[Selector] | None = None,
    epochs: float | None = None,
    policy_loss_type: Any = None,
    advantage_estimator: Any = None,
    group_size: Any = None,
) -> tuple[StepPlan, bool]:
    """The run's step as every door's plan (`plan.adapter_plan`, its rows `skyrl_rows` of
    `group_size`), `rollouts: auto` resolved by `skyrl_auto_rollouts` (the arguments as there;
    its reason, why auto chose it), and whether that choice is said as a warning: what the
    entrypoint, the trainer and `frontier check-config skyrl` all read."""
    rows = skyrl_rows(config, group_size)
    if config.rollouts != "auto":
        return adapter_plan(config.rollouts, config.loss_scale, rows=rows), False
    mode, why, warn = skyrl_auto_rollouts(
        selector=selector or SELECTORS[config.selector],
        shadows=config.shadows,
        fully_async=fully_async,
        dynamic_sampling=dynamic_sampling,
        epochs=epochs,
        policy_loss_type=policy_loss_type,
        loss_scale=config.loss_scale,
        advantage_estimator=advantage_estimator,
    )
    return adapter_plan(mode, config.loss_scale, why, rows), warn


def resolved_plan(config: VerlSamplerConfig, **resolution: Any) -> StepPlan:
    """The run's plan (`skyrl_step_plan`, with its keywords `resolution`), which the trainer and
    its sampler hold and read their rollouts and batch from; `rollouts: auto`'s choice said in
    one log line."""
    plan, warn = skyrl_step_plan(config, **resolution)
    if config.rollouts == "auto":
        auto_log(_log, SKYRL, plan.rollouts, plan.reason, warn)
    return plan
