"""`rollouts: auto` on verl (VerlSamplerConfig's default): `kept` where a verl step can shrink,
`full` elsewhere, with one warning line naming the setting in the way.

`kept` works with verl's v1 sync trainer through FrontierReplayBuffer, without
`algorithm.filter_groups`, `trainer.v1.sampler.sync_refill_failed_groups` or a
`data.gen_batch_size` of its own, and without shadows; `kept_blockers` names every other
case with the refusal an explicit `rollouts: kept` gets (integrations.plan's MESSAGES).
`auto_rollouts` reads verl's config into the plan's clashes and run length, and
`integrations.plan.auto` decides; asked by the v1 buffer when verl builds it (before the
dataloader is rebuilt), by FrontierSampler used as a per-prompt sampler (the legacy trainer,
verl <= 0.7), and by `frontier check-config verl` and the Hydra pre-flight before launch.
Imports neither verl nor torch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from frontier_rft.core.selector import Selector
from frontier_rft.integrations.data_columns import local_rows
from frontier_rft.integrations.plan import (
    adapter_plan,
    auto,
    auto_log,
    clashes,
    message,
    planned_epochs,
    positive_number,
)
from frontier_rft.integrations.preflight import dotted_get, shown
from frontier_rft.integrations.verl.config import VERL, VerlSamplerConfig, _interpolated
from frontier_rft.integrations.verl.kept_step import kept_loss_problems
from frontier_rft.sampling.step_plan import StepPlan, StepRows

__all__ = [
    "LENGTH_KEYS",
    "VERL_DEFAULT_BATCH",
    "VERL_DEFAULT_EPOCHS",
    "auto_rollouts",
    "kept_blockers",
    "length_problems",
    "resolved_plan",
    "verl_planned_epochs",
    "verl_rows",
    "verl_step_plan",
]

_log = logging.getLogger(__name__)

VERL_DEFAULT_BATCH = 1024
"""verl's data.train_batch_size when a config leaves it out (0.9.1)."""
VERL_DEFAULT_EPOCHS = 30
"""verl's trainer.total_epochs when a config leaves it out (0.9.1)."""


LENGTH_KEYS = {
    "trainer.total_epochs": "a positive int (verl's default 30)",
    "trainer.total_training_steps": "a positive int, or null for every epoch's steps",
    "data.train_max_samples": "an int (-1, verl's default: every row)",
}
"""The verl settings that set a run's length, and what verl accepts for each."""


def length_problems(config: Mapping[str, Any]) -> list[str]:
    """The settings of LENGTH_KEYS in verl config `config` that verl cannot take, one line
    each with the fix: a word, a fraction, .inf or NaN where verl counts in whole epochs,
    steps and rows (verl's range() and slicing fail on them after Ray starts). An
    interpolation and an unset key are left to verl."""
    out = []
    for key, wanted in LENGTH_KEYS.items():
        value = dotted_get(config, key)
        if value is None or _interpolated(value):
            continue
        whole = isinstance(value, int) and not isinstance(value, bool)
        positive = key != "data.train_max_samples"
        if whole and (value > 0 or not positive or (key.endswith("steps") and value == -1)):
            continue
        example = {"trainer.total_epochs": 2, "trainer.total_training_steps": 500}.get(key, -1)
        out.append(f"{key} must be {wanted}, got {shown(value)}: set {key}: {example}")
    return out


def verl_planned_epochs(config: Mapping[str, Any]) -> float | None:
    """Passes over the prompts verl config `config` plans (`plan.planned_epochs`):
    trainer.total_epochs, or fewer where trainer.total_training_steps ends the run first
    (steps of data.train_batch_size prompts over the rows of data.train_files, at most
    data.train_max_samples). None where that needs rows this cannot count (remote, neither
    parquet nor JSON lines, `data_columns.local_rows`) or a value is an interpolation.
    ValueError, one line naming the setting and its fix, for a length verl cannot take
    (`length_problems`: .inf, a fraction, a word)."""
    problems = length_problems(config)
    if problems:
        raise ValueError("; ".join(problems))
    epochs = dotted_get(config, "trainer.total_epochs")
    steps = dotted_get(config, "trainer.total_training_steps")
    batch = dotted_get(config, "data.train_batch_size")

    def rows() -> int | None:
        counted = local_rows(dotted_get(config, "data.train_files"))
        cap = dotted_get(config, "data.train_max_samples")
        return min(counted, cap) if counted is not None and positive_number(cap) else counted

    return planned_epochs(
        VERL_DEFAULT_EPOCHS if epochs is None else epochs,
        steps=None if steps == -1 else steps,
        prompts_per_step=VERL_DEFAULT_BATCH if batch is None else batch,
        rows=rows,
    )


def kept_blockers(
    config: Mapping[str, Any],
    *,
    legacy: bool,
    async_buffer: bool = False,
    loss_scale: str = VerlSamplerConfig.loss_scale,
) -> list[str]:
    """Why `rollouts: kept` cannot shrink a step of verl config `config` (a plain mapping or
    verl's DictConfig), one line per cause, as the adapter refuses it: the legacy trainer
    (`legacy`: data.sampler or FrontierSampler built by hand; or trainer.use_v1 false), the
    async trainers (trainer_mode colocate_async / separate_async, or `async_buffer`:
    FrontierReplayBufferAsync), verl's DAPO filter, its refill of failed groups, a
    gen_batch_size of its own, and an actor loss no factor normalises with `loss_scale`
    (kept_step.kept_loss_problems)."""
    return clashes(VERL, _kept_clashes(config, legacy, async_buffer, loss_scale))


def _kept_clashes(
    config: Mapping[str, Any], legacy: bool, async_buffer: bool, loss_scale: str
) -> dict[str, Any]:
    """Which of VERL's kept clashes config `config` turns on (`plan.clashes`' `on`); the
    legacy trainer alone where it is one (nothing else there is worth naming)."""
    if legacy or dotted_get(config, "trainer.use_v1") is False:
        return {"kept+legacy": True}
    mode = dotted_get(config, "trainer.v1.trainer_mode") or "sync"
    on: dict[str, Any] = {}
    if mode != "sync" and not _interpolated(mode):
        on["kept+async"] = [f"trainer_mode {mode}: {message(VERL, 'kept+async')}"]
    else:
        on["kept+async"] = async_buffer
    on["kept+filter"] = dotted_get(config, "algorithm.filter_groups.enable") is True
    on["kept+refill"] = dotted_get(config, "trainer.v1.sampler.sync_refill_failed_groups") is True
    gen, train = (
        dotted_get(config, "data.gen_batch_size"),
        dotted_get(config, "data.train_batch_size"),
    )
    train = VERL_DEFAULT_BATCH if train is None else train
    if gen is not None and not _interpolated(gen) and not _interpolated(train) and gen != train:
        on["kept+gen_batch_size"] = {"gen_batch_size": gen}
    on["kept+loss"] = kept_loss_problems(config, loss_scale)
    return on


def auto_rollouts(
    config: Mapping[str, Any],
    *,
    selector: type[Selector],
    shadows: Sequence[str] | None,
    legacy: bool,
    async_buffer: bool = False,
    loss_scale: str = VerlSamplerConfig.loss_scale,
) -> tuple[str, str, bool]:
    """What `rollouts: auto` means for verl config `config` with `selector` (its class) and
    `shadows`: (mode, why, whether to warn), by `plan.auto` from the run's length
    (`verl_planned_epochs`; unknown for an empty `config`, a sampler built without verl's),
    `kept_blockers` (legacy, async_buffer, loss_scale: as there) and the shadows."""
    on = {"auto+shadows": bool(shadows), **_kept_clashes(config, legacy, async_buffer, loss_scale)}
    lines = clashes(VERL, on)
    # verl's workers train on GPUs: its rollouts are generated by vLLM or SGLang there
    epochs = verl_planned_epochs(config) if config else None
    return auto(VERL, selector, lines, epochs, device="gpu")


def verl_rows(sampler: VerlSamplerConfig, config: Mapping[str, Any]) -> StepRows:
    """A verl step's rows, as its config sizes it: the sampler's batch_size prompts
    (data.gen_batch_size, else data.train_batch_size) in one call, actor_rollout_ref.rollout.n
    rollouts each (None where `config` does not say: a sampler built from verl's data config
    alone, or an interpolation)."""
    n = dotted_get(config, "actor_rollout_ref.rollout.n") if config else None
    whole = isinstance(n, int) and not isinstance(n, bool) and n >= 1
    return StepRows(sampler.batch_size, n if whole else None)


def verl_step_plan(
    sampler: VerlSamplerConfig,
    config: Mapping[str, Any],
    *,
    selector: type[Selector],
    legacy: bool,
    async_buffer: bool = False,
) -> tuple[StepPlan, bool]:
    """The run's step as every door's plan (`plan.adapter_plan`, its rows `verl_rows`),
    `rollouts: auto` resolved by `auto_rollouts` (its reason, why auto chose it), and whether
    that choice is said as a warning: what the buffer, the sampler and `frontier check-config
    verl` all read."""
    rows = verl_rows(sampler, config)
    if sampler.rollouts != "auto":
        return adapter_plan(sampler.rollouts, sampler.loss_scale, rows=rows), False
    mode, why, warn = auto_rollouts(
        config,
        selector=selector,
        shadows=sampler.shadows,
        legacy=legacy,
        async_buffer=async_buffer,
        loss_scale=sampler.loss_scale,
    )
    return adapter_plan(mode, sampler.loss_scale, why, rows), warn


def resolved_plan(
    sampler: VerlSamplerConfig, config: Mapping[str, Any], **resolution: Any
) -> StepPlan:
    """The run's plan (`verl_step_plan`, with its keywords `resolution`), what the buffer and
    the sampler hold and read their rollouts and batch from; `rollouts: auto`'s choice said in
    one log line (a warning when a setting keeps a skipping selector from kept)."""
    plan, warn = verl_step_plan(sampler, config, **resolution)
    if sampler.rollouts == "auto":
        auto_log(_log, VERL, plan.rollouts, plan.reason, warn)
    return plan
