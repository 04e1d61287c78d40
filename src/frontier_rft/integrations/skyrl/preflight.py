"""Pre-flight check of a SkyRL run's frontier-rft settings: no GPU, no Ray, SkyRL not imported.

`check_skyrl_config(config)` reads a plain mapping: the `frontier:` settings and whichever of
SkyRL's own keys are given (a YAML file as `frontier check-config skyrl` reads it, or the
command line as `frontier_rft.integrations.skyrl.main` sees it), and names every mistake, one
line each: the `frontier:` fields (unknown names with the closest one, refused values, verl-
or TRL-only options), the selector, its config and the metadata it needs, SkyRL's batch size
and dynamic-sampling type (and `rollouts: kept` beside it), `trainer.fully_async.enabled` (and
`rollouts: kept` or shadows beside it), and, when `data.train_data` names
local files it can read, the columns the adapter reads. It also says what `rollouts: auto`
(the default) will be and the run's step (`config.skyrl_step_plan`, as the entrypoint
decides it).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from frontier_rft.core.config import config_problems
from frontier_rft.integrations.data_columns import REMOTE_PREFIXES, local_rows
from frontier_rft.integrations.plan import auto_choice, kept_choice, message
from frontier_rft.integrations.pool import column_problems
from frontier_rft.integrations.preflight import (
    DataColumns,
    Report,
    dotted_get,
    read_data_columns,
    requirement_problems,
    sampler_pool_fields,
    selector_problems,
    shadow_bounds_note,
    shown,
)
from frontier_rft.integrations.skyrl.config import (
    DEFAULT_TASK_ID_KEY,
    FULLY_ASYNC,
    GROUP_SIZE,
    SKYRL,
    SKYRL_FIELDS,
    SKYRL_SETTING,
    SkyRLSamplerConfig,
    kept_loss_problem,
    skyrl_planned_epochs,
    skyrl_step_plan,
    unknown_settings,
)
from frontier_rft.integrations.skyrl.currency import skyrl_currency, skyrl_start_lines
from frontier_rft.integrations.verl.config import VerlSamplerConfig
from frontier_rft.integrations.verl.preflight import (
    POOL_OPTIONS,
    default_shadows_choice,
    group_size_problems,
    shadow_problems,
)
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.step_cost.advice import DeviceHint, currency_line

__all__ = ["DYNAMIC_SAMPLING_TYPES", "check_skyrl_config"]

DYNAMIC_SAMPLING_TYPES = (None, "filter", "replace")
"""SkyRL 0.3's trainer.algorithm.dynamic_sampling.type values."""


def check_skyrl_config(config: Mapping[str, Any], hint: DeviceHint | None = None) -> Report:
    """Every mistake in the frontier-rft part of a SkyRL config (see the module); `hint`: what
    check-config was told of the device (the currency line's GPU or curve)."""
    report = Report()
    fields = config.get(SKYRL_SETTING)
    if fields is None:
        report.notes.append(
            f"no {SKYRL_SETTING}: settings: the defaults apply (selector "
            f"{VerlSamplerConfig.selector}, rollouts {VerlSamplerConfig.rollouts}, seed 0)"
        )
        fields = {}
    if not isinstance(fields, Mapping):
        report.add(SKYRL_SETTING, [f"must be a mapping of settings, got {shown(fields)}"])
        return report
    values = {str(k): v for k, v in fields.items()}
    report.add(SKYRL_SETTING, unknown_settings(values))
    values = {k: v for k, v in values.items() if k in SKYRL_FIELDS}
    report.add(SKYRL_SETTING, config_problems(SkyRLSamplerConfig, values, fixed={"batch_size": 1}))
    default = VerlSamplerConfig(batch_size=1)
    selector = values.get("selector", default.selector)
    report.add(
        SKYRL_SETTING,
        selector_problems(selector, values.get("selector_config"), values.get("selector_judge")),
    )
    report.add(
        SKYRL_SETTING,
        requirement_problems(
            selector, values.get("selector_config"), sampler_pool_fields(values), POOL_OPTIONS
        ),
    )
    batch = dotted_get(config, "trainer.train_batch_size")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        report.add("trainer.train_batch_size", [f"must be a positive int, got {shown(batch)}"])
    epochs = dotted_get(config, "trainer.epochs")
    if epochs is not None and not _interpolation(epochs) and not _positive_int(epochs):
        report.add(
            "trainer.epochs",
            [f"must be a positive int (SkyRL counts whole passes), got {shown(epochs)}"],
        )
    ds_type = dotted_get(config, "trainer.algorithm.dynamic_sampling.type")
    if ds_type not in DYNAMIC_SAMPLING_TYPES:
        report.add(
            "trainer.algorithm.dynamic_sampling.type",
            [f"must be filter, replace or null (SkyRL 0.3), got {shown(ds_type)}"],
        )
    fully_async = dotted_get(config, FULLY_ASYNC)
    if fully_async is not None and not isinstance(fully_async, bool):
        report.add(FULLY_ASYNC, [f"must be true or false, got {shown(fully_async)}"])
    policy_loss = dotted_get(config, "trainer.algorithm.policy_loss_type")
    estimator = dotted_get(config, "trainer.algorithm.advantage_estimator")
    loss_scale = values.get("loss_scale", VerlSamplerConfig.loss_scale)
    if values.get("rollouts") == "kept":
        _check_kept(config, ds_type, batch, report)
        problem = kept_loss_problem(policy_loss, loss_scale, estimator)
        if problem is not None:
            report.add(SKYRL_SETTING, [problem])
        if fully_async is True:
            report.add(SKYRL_SETTING, [message(SKYRL, "kept+async")])
        report.rollouts += kept_choice(SKYRL, values, VerlSamplerConfig.selector)
    plan = (
        _step_plan(config, values, ds_type, fully_async is True, batch)
        if _known(selector)
        else None
    )
    if plan is not None:
        if values.get("rollouts", "auto") == "auto":
            report.choices.append(auto_choice(SKYRL, plan.rollouts, plan.reason))
            if plan.rollouts == "kept":
                _check_kept(config, None, batch, report)  # its note on SkyRL's LR schedule
        report.plan.append(plan.words())
    currency = skyrl_currency(config, hint)  # read once: the line and the start's curve
    report.currency.append(currency_line(currency))  # what a step costs, and where
    report.start += skyrl_start_lines(config, hint, currency)  # where to start, from the curve
    refusal = (
        message(SKYRL, "shadows+filter")
        if ds_type is not None
        else message(SKYRL, "shadows+async")
        if fully_async is True
        else None
    )
    group = dotted_get(config, GROUP_SIZE)
    report.add(GROUP_SIZE, group_size_problems(group, GROUP_SIZE))
    report.add(SKYRL_SETTING, shadow_problems(values.get("shadows"), group, GROUP_SIZE, refusal))
    report.shadows += default_shadows_choice(values, in_parts=refusal is not None)
    note = shadow_bounds_note(
        values, sampler_pool_fields(values), SKYRL_SETTING, VerlSamplerConfig.selector
    )
    if note is not None:
        report.notes.append(note)
    _check_data(config, values, report)
    return report


def _step_plan(
    config: Mapping[str, Any],
    values: Mapping[str, Any],
    ds_type: Any,
    fully_async: bool,
    batch: Any,
) -> StepPlan | None:
    """The run's step as the entrypoint resolves it (`config.skyrl_step_plan`: `rollouts:
    auto` included); None where the file's fields make no sampler config (named as
    problems)."""
    try:
        prompts = batch if _positive_int(batch) else 1  # the plan's rows: SkyRL's batch
        sampler = SkyRLSamplerConfig.from_fields(values, prompts, SKYRL_SETTING)
    except ValueError:
        return None
    return skyrl_step_plan(
        sampler,
        fully_async=fully_async,
        dynamic_sampling=ds_type if ds_type in DYNAMIC_SAMPLING_TYPES else None,
        epochs=skyrl_planned_epochs(
            dotted_get(config, "trainer.epochs"),
            dotted_get(config, "trainer.max_training_steps"),
            batch,
            partial(local_rows, dotted_get(config, "data.train_data")),
        ),
        policy_loss_type=dotted_get(config, "trainer.algorithm.policy_loss_type"),
        advantage_estimator=dotted_get(config, "trainer.algorithm.advantage_estimator"),
        group_size=dotted_get(config, "generator.n_samples_per_prompt"),
    )[0]


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _interpolation(value: Any) -> bool:
    """An OmegaConf interpolation (`${...}`), which SkyRL resolves and checks itself."""
    return isinstance(value, str) and value.startswith("${")


def _known(selector: Any) -> bool:
    """Whether `selector` is a registered name (another value: config_problems names it)."""
    return isinstance(selector, str) and selector in SELECTORS


def _check_kept(config: Mapping[str, Any], ds_type: Any, batch: Any, report: Report) -> None:
    """`rollouts: kept`: refused beside SkyRL's dynamic sampling; a note where SkyRL's LR
    scheduler, which counts optimizer steps, would stretch (several mini-batches a step)."""
    if ds_type is not None and ds_type in DYNAMIC_SAMPLING_TYPES:  # a bad type is named above
        report.add(SKYRL_SETTING, [message(SKYRL, "kept+filter")])
    mini = dotted_get(config, "trainer.policy_mini_batch_size")
    if isinstance(batch, int) and isinstance(mini, int) and 0 < mini < batch:
        report.notes.append(
            f"rollouts: kept with trainer.policy_mini_batch_size {mini} < train_batch_size "
            f"{batch}: a step of K kept prompts makes ceil(K/{mini}) optimizer steps, not "
            f"{batch // mini}, and SkyRL's LR scheduler counts optimizer steps, so its warmup "
            "and decay stretch over more training steps (policy_mini_batch_size = "
            "train_batch_size keeps uniform's LR schedule)"
        )


def _check_data(config: Mapping[str, Any], values: Mapping[str, Any], report: Report) -> None:
    """The columns the adapter reads, in every local training file that can be read."""
    files = dotted_get(config, "data.train_data")
    paths = [files] if isinstance(files, str) else files if isinstance(files, list) else []
    local = [str(p) for p in paths if not str(p).startswith(REMOTE_PREFIXES)]
    if not local:
        report.notes.append("data.train_data: no local file named, columns not checked")
        return
    prompt = values.get("prompt_key")
    wanted = [("prompt_key", prompt if isinstance(prompt, str) else "prompt")]
    for option in ("category_keys", "difficulty_key", "pass_rate_keys", "features_key"):
        value = values.get(option)
        keys = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        wanted += [(option, k) for k in keys if isinstance(k, str)]
    key = values.get("task_id_key", DEFAULT_TASK_ID_KEY)
    for path in local:
        data = read_data_columns(path)
        if not isinstance(data, DataColumns):
            (report.problems if data.startswith("no such file") else report.notes).append(
                f"data.train_data: {data}"
            )
            continue
        # The default task id column may be absent: the row position stands in for it.
        mine = wanted + (
            [("task_id_key", key)] if isinstance(key, str) and key != DEFAULT_TASK_ID_KEY else []
        )
        problems = column_problems(data.names, mine, data.first_row)
        report.add(f"{path} (columns: {', '.join(data.names)})", problems)
        if key == DEFAULT_TASK_ID_KEY and DEFAULT_TASK_ID_KEY not in data.names:
            report.notes.append(
                f"{path}: no {DEFAULT_TASK_ID_KEY!r} column: task ids are row positions, which "
                "shift when data or max_prompt_length change (set frontier.task_id_key)"
            )
