"""Pre-flight check of a verl config, its frontier-rft part first: no GPU, no Ray, verl
read (where installed) but never imported.

`check_verl_config(config)` reads a verl config as a plain mapping (a Hydra YAML file as
written, or the config verl composed) and names every mistake in what the frontier-rft
sampler will read, not only the first: where the sampler is plugged in
(`trainer.v1.sampler.custom_sampler`, or `data.sampler` on verl <= 0.7), each
VerlSamplerConfig field (unknown names with the closest one, refused values; TRL's
dynamic-sampling options with a pointer to verl's filter), the selector and its config,
verl's batch size and dataloader workers, verl's own keys against the installed verl's
config (`verl_keys`; said to be unchecked without verl), and, when `data.train_files` names
local files it can read, the columns the sampler reads. It also says what `rollouts: auto`
(the default) will be and the run's step, as the buffer decides them
(`auto.verl_step_plan`). `frontier check-config verl FILE.yaml` prints it;
`hydra_preflight.FrontierPreflight` runs it inside verl before Ray starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frontier_rft.core.config import config_problems, did_you_mean
from frontier_rft.integrations.data_columns import REMOTE_PREFIXES, read_parquet_ids
from frontier_rft.integrations.plan import (
    auto_choice,
    default_shadows_line,
    kept_choice,
    message,
    set_shadows_line,
)
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
from frontier_rft.integrations.verl.auto import (
    kept_blockers,
    length_problems,
    verl_step_plan,
)
from frontier_rft.integrations.verl.config import (
    BATCH_SIZE_NOT_READ,
    DYNAMIC_SAMPLING_ON_VERL,
    VERL,
    VerlSamplerConfig,
    _interpolated,
    trl_only,
)
from frontier_rft.integrations.verl.currency import verl_currency, verl_start_lines
from frontier_rft.integrations.verl.kept_step import VERL_DEFAULT_ESTIMATOR
from frontier_rft.integrations.verl.verl_keys import check_verl_keys
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.step_cost.advice import DeviceHint, currency_line

__all__ = [
    "LEGACY_CLASS",
    "LEGACY_PATH",
    "V1_BUFFERS",
    "V1_PATH",
    "check_verl_config",
    "group_size_problems",
    "shadow_problems",
]

V1_PATH = "pkg://frontier_rft.integrations.verl.v1"
"""`trainer.v1.sampler.custom_sampler.path` of the frontier-rft replay buffers."""
V1_BUFFERS = {"sync": "FrontierReplayBuffer", "async": "FrontierReplayBufferAsync"}
"""The buffer class for verl's sync trainer, and for its async ones (colocate/separate)."""
LEGACY_PATH = "pkg://frontier_rft.integrations.verl"
"""`data.sampler.class_path` of FrontierSampler on verl <= 0.7."""
LEGACY_CLASS = "FrontierSampler"


def check_verl_config(config: Mapping[str, Any], hint: DeviceHint | None = None) -> Report:
    """Every mistake in the frontier-rft part of verl config `config` (see the module); `hint`:
    what check-config was told of the device (the currency line's GPU or curve)."""
    report = Report()
    found = _sampler_section(config, report)
    if found is None:
        return report
    section, fields = found
    if not isinstance(fields, Mapping):
        report.add(section, [f"must be a mapping of VerlSamplerConfig fields, got {fields!r}"])
        return report
    values = {str(k): v for k, v in fields.items()}
    skipped = sorted(k for k, v in values.items() if _interpolated(v))
    if skipped:
        report.notes.append(f"{section}: {', '.join(skipped)} not checked (interpolations)")
    values = {k: v for k, v in values.items() if k not in skipped}
    if "batch_size" in values:
        values.pop("batch_size")
        report.add(section, [BATCH_SIZE_NOT_READ])
    for key in trl_only(values):
        values.pop(key)
        report.add(
            section, [f"unknown option {key!r} (the TRL adapter's): {DYNAMIC_SAMPLING_ON_VERL}"]
        )
    batch = _batch_size(config, report)
    _check_workers(config, legacy=section == "data.sampler.frontier", report=report)
    report.add(section, config_problems(VerlSamplerConfig, values, fixed={"batch_size": 1}))
    default = VerlSamplerConfig(batch_size=1)
    report.add(
        section,
        selector_problems(
            values.get("selector", default.selector),
            values.get("selector_config"),
            values.get("selector_judge"),
        ),
    )
    report.add(
        section,
        requirement_problems(
            values.get("selector", default.selector),
            values.get("selector_config"),
            sampler_pool_fields(values),
            POOL_OPTIONS,
        ),
    )
    legacy = section == "data.sampler.frontier"
    if values.get("rollouts") == "kept":
        loss_scale = values.get("loss_scale", VerlSamplerConfig.loss_scale)
        report.add(section, kept_blockers(config, legacy=legacy, loss_scale=loss_scale))
        report.rollouts += kept_choice(VERL, values, default.selector)
    lengths = length_problems(config)
    report.add("", lengths)
    plan = None if lengths else _step_plan(config, values, skipped, legacy=legacy)
    if plan is not None:  # the run's length decides auto: unknown until those are fixed
        if values.get("rollouts", "auto") == "auto":
            report.choices.append(auto_choice(VERL, plan.rollouts, plan.reason))
        report.plan.append(plan.words())
    currency = verl_currency(config, hint)  # read once: the line and the start's curve
    report.currency.append(currency_line(currency))  # what a step costs, and where
    report.start += verl_start_lines(config, hint, currency)  # where to start, from the curve
    if values.get("rollouts") != "full" and dotted_get(config, "algorithm.adv_estimator") is None:
        report.notes.append(
            f"algorithm.adv_estimator: not set here (verl's default, {VERL_DEFAULT_ESTIMATOR}, "
            "is not group-relative: a run with it keeps full batches; set it to grpo)"
        )
    filtered = dotted_get(config, "algorithm.filter_groups.enable") is True
    group = "actor_rollout_ref.rollout.n"
    report.add(group, group_size_problems(dotted_get(config, group), group))
    report.add("", rollout_problems(config, legacy=section == "data.sampler.frontier"))
    refusal = message(VERL, "shadows+filter") if filtered else None
    report.add(
        section,
        shadow_problems(
            values.get("shadows"),
            dotted_get(config, group),
            group,
            refusal,
            values.get("rollouts"),
        ),
    )
    report.shadows += default_shadows_choice(values, in_parts=filtered)
    note = shadow_bounds_note(values, sampler_pool_fields(values), section, default.selector)
    if note is not None:
        report.notes.append(note)
    _check_data(config, values, batch, report)
    check_verl_keys(config, section, report)  # the frontier-rft part first, then verl's own
    return report


def _step_plan(
    config: Mapping[str, Any], values: Mapping[str, Any], skipped: list[str], *, legacy: bool
) -> StepPlan | None:
    """The run's step as the buffer or sampler resolves it when verl builds it
    (`auto.verl_step_plan`: `rollouts: auto` included); None where it cannot be known here
    (rollouts interpolated, an unknown selector or a bad setting: named as problems)."""
    name = values.get("selector", VerlSamplerConfig.selector)
    if "rollouts" in skipped or not isinstance(name, str) or name not in SELECTORS:
        return None
    try:
        sampler = VerlSamplerConfig.from_fields(values, 1, "frontier")
    except (TypeError, ValueError):  # config_problems names it
        return None
    return verl_step_plan(sampler, config, selector=SELECTORS[name], legacy=legacy)[0]


POOL_OPTIONS = {
    "prompts": "prompt_key: COLUMN",
    "categories": "category_keys: [COLUMN]",
    "difficulty": "difficulty_key: COLUMN",
    "reference_pass_rates": "pass_rate_keys: [WEAK, STRONG]",
    "features": "features_key: COLUMN (or self_embeddings_model: MODEL_DIR)",
}
"""The VerlSamplerConfig field that gives the sampler's TaskPool each metadata field."""


def _sampler_section(config: Mapping[str, Any], report: Report) -> tuple[str, Any] | None:
    """(where the sampler's fields live, those fields), after checking how the sampler is
    plugged in; None (with a problem) when no frontier-rft sampler is plugged in."""
    custom = dotted_get(config, "trainer.v1.sampler.custom_sampler")
    legacy = dotted_get(config, "data.sampler")
    v1_path = custom.get("path") if isinstance(custom, Mapping) else None
    legacy_path = legacy.get("class_path") if isinstance(legacy, Mapping) else None
    if isinstance(v1_path, str) and "frontier_rft" in v1_path:
        where = "trainer.v1.sampler.custom_sampler"
        if v1_path != V1_PATH:
            report.add(f"{where}.path", [f"{v1_path!r} is not the frontier-rft buffer: {V1_PATH}"])
        mode = dotted_get(config, "trainer.v1.trainer_mode") or "sync"
        want = V1_BUFFERS["sync" if mode == "sync" else "async"]
        name = custom.get("name") if isinstance(custom, Mapping) else None
        if name != want:
            hint = "" if name in V1_BUFFERS.values() else did_you_mean(name, V1_BUFFERS.values())
            report.add(f"{where}.name", [f"{name!r}{hint}: trainer_mode {mode} needs {want}"])
        if dotted_get(config, "trainer.use_v1") is False:
            # rollouts: kept names the legacy trainer itself (kept_blockers): no RayPPOTrainer
            kept = dotted_get(config, "trainer.v1.sampler.sampler_kwargs.rollouts") == "kept"
            report.add(
                "trainer.use_v1",
                ["false: verl's legacy trainer ignores trainer.v1.sampler, so the selector would "
                 "never run; set it to true" + ("" if kept else ", or plug FrontierSampler into "
                 "RayPPOTrainer (docs/integrations/verl.md)")],
            )  # fmt: skip
        return "trainer.v1.sampler.sampler_kwargs", dotted_get(
            config, "trainer.v1.sampler.sampler_kwargs"
        ) or {}
    if isinstance(legacy_path, str) and "frontier_rft" in legacy_path:
        if legacy_path != LEGACY_PATH:
            report.add(
                "data.sampler.class_path",
                [f"{legacy_path!r} is not the frontier-rft sampler: {LEGACY_PATH}"],
            )
        name = legacy.get("class_name") if isinstance(legacy, Mapping) else None
        if name != LEGACY_CLASS:
            report.add(
                "data.sampler.class_name",
                [f"{name!r}{did_you_mean(name, [LEGACY_CLASS])}: use {LEGACY_CLASS}"],
            )
        return "data.sampler.frontier", dotted_get(config, "data.sampler.frontier") or {}
    report.add(
        "",
        ["no frontier-rft sampler is plugged in: set trainer.v1.sampler.custom_sampler.path: "
         f"{V1_PATH} and .name: {V1_BUFFERS['sync']} (verl 0.9, docs/integrations/verl.md)"],
    )  # fmt: skip
    return None


ROLLOUT = "actor_rollout_ref.rollout"
ROLLOUT_NAMES = ("vllm", "sglang", "trtllm")
"""verl 0.9's rollout engines (`verl.workers.rollout.base._ROLLOUT_REGISTRY`)."""
ROLLOUT_MODE = "async"
"""verl 0.9's one rollout mode: `sync` was removed (RolloutConfig refuses it), and the
registry has no engine under any other."""
VERL_ROLLOUT_DEFAULTS = {"tensor_model_parallel_size": 2, "n_gpus_per_node": 8, "nnodes": 1}
"""verl's defaults for what the rollout's parallel sizes are checked against."""


def _unset(value: Any) -> bool:
    """A value not set yet: absent, a Hydra interpolation left unresolved, or OmegaConf's
    mandatory marker '???' (verl's own defaults leave the rollout's name so until a run sets
    it): nothing to check."""
    return value is None or _interpolated(value) or value == "???"


def rollout_problems(config: Mapping[str, Any], *, legacy: bool = False) -> list[str]:
    """What verl refuses about the rollout engine only once Ray has started and the workers
    build it: a `rollout.name` it has no engine for, a `rollout.mode` other than async, and
    a rollout of tensor x data x pipeline parallel GPUs that does not divide the GPUs
    (trainer.n_gpus_per_node x trainer.nnodes), as TRL's check of
    vllm_tensor_parallel_size against the processes. `legacy`: verl 0.7's curriculum-sampler
    interface, whose engines also ran hf and sync."""
    out = []
    names = ROLLOUT_NAMES + ("hf",) * legacy
    modes = (ROLLOUT_MODE,) + ("sync",) * legacy
    name = dotted_get(config, f"{ROLLOUT}.name")
    if not _unset(name) and name not in names:
        near = did_you_mean(str(name), list(names))
        out.append(
            f"{ROLLOUT}.name must be one of {', '.join(names)} (verl has no other "
            f"rollout engine and fails once Ray starts), got {shown(name)}{near}"
        )
    mode = dotted_get(config, f"{ROLLOUT}.mode")
    if not _unset(mode) and mode not in modes:
        why = "verl 0.7 has no other" if legacy else "verl removed sync and has no other"
        out.append(
            f"{ROLLOUT}.mode must be {' or '.join(modes)} ({why}), got {shown(mode)}"
            f"{did_you_mean(str(mode), list(modes))}: set {ROLLOUT}.mode: async or leave it out"
        )
    sizes = {}
    for key in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size"):
        sizes[key] = dotted_get(config, f"{ROLLOUT}.{key}")
    for key in ("n_gpus_per_node", "nnodes"):
        sizes[key] = dotted_get(config, f"trainer.{key}")
    given = {k: v for k, v in sizes.items() if v is not None}
    if not any(k.endswith("parallel_size") for k in given):
        return out  # verl's own defaults (2 on 8 GPUs) fit
    values = {k: given.get(k, VERL_ROLLOUT_DEFAULTS.get(k, 1)) for k in sizes}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values.values()):
        return out  # not ints: verl's config check names them
    tp = values["tensor_model_parallel_size"]
    engine = tp * values["data_parallel_size"] * values["pipeline_model_parallel_size"]
    gpus = values["n_gpus_per_node"] * values["nnodes"]
    if gpus % engine:
        what = f"tensor_model_parallel_size {tp}" if engine == tp else f"{engine} GPUs an engine"
        rest = engine // tp  # data x pipeline parallel
        fits = next((d for d in range(tp, 0, -1) if gpus % (d * rest) == 0), None)
        fix = (
            f"set {ROLLOUT}.tensor_model_parallel_size: {fits}"
            if fits
            else "give the rollout a number of GPUs that divides them"
        )
        out.append(
            f"{ROLLOUT}.{what} does not divide the {gpus} GPUs (trainer.n_gpus_per_node x "
            f"trainer.nnodes): verl splits them into rollout engines of that size and fails "
            f"once Ray starts; {fix}"
        )
    return out


def group_size_problems(size: Any, key: str) -> list[str]:
    """A trainer's rollouts per prompt (`size`, its setting `key`; None: not set here, the
    trainer's default) below 2 or not an int: a group of one reward has no spread, so every
    selector learns nothing from it and a group-relative advantage is 0."""
    if size is None or _interpolated(size):
        return []
    if isinstance(size, int) and not isinstance(size, bool) and size >= 2:
        return []
    return [
        f"must be an int >= 2 (a group needs two rollouts to compare), got {shown(size)}: "
        f"set {key}: 8"
    ]


def default_shadows_choice(values: Mapping[str, Any], *, in_parts: bool) -> list[str]:
    """The line naming the shadows a sampler follows: as set, or with `shadows` unset the
    default; none where none follow by default or the trainer reports groups `in_parts` (a
    filter, fully async), beside which the default is dropped."""
    set_ = values.get("shadows") is not None
    if in_parts:
        return []  # shadow_problems refuses set ones there
    fields = {k: values[k] for k in ("selector", "rollouts", "shadows") if k in values}
    try:
        rules = VerlSamplerConfig(batch_size=1, **fields).shadow_configs()
    except (ValueError, TypeError):
        return []  # config_problems names it
    if set_:
        return [set_shadows_line([r.name for r in rules])] if rules else []
    return [default_shadows_line([r.name for r in rules], planned=True)] if rules else []


def shadow_problems(
    rules: Any, group: Any, group_name: str, refusal: str | None, rollouts: Any = None
) -> list[str]:
    """What is wrong with a sampler's `shadows` rules beside a trainer whose group size is
    `group` (`group_name` in its config; not an int: not known), `refusal` why shadows cannot
    run there (None: they can), and the sampler's `rollouts` (None: not set; kept rolls out
    no whole group). Rules that do not parse are config_problems' to name."""
    if not rules:
        return []
    fields = {} if rollouts is None else {"rollouts": rollouts}
    try:
        sampler = VerlSamplerConfig(batch_size=1, shadows=rules, **fields)
    except (ValueError, TypeError):
        return []
    size = group if isinstance(group, int) and not isinstance(group, bool) else None
    out = []
    try:
        sampler.shadow_configs(size, group_name)
    except ValueError as exc:
        out.append(str(exc))
    return out + ([refusal] if refusal else [])


def _batch_size(config: Mapping[str, Any], report: Report) -> int | None:
    """verl's batch size as the sampler reads it (data.gen_batch_size, else
    data.train_batch_size), checked; None when the file leaves it to verl's defaults."""
    for key in ("data.gen_batch_size", "data.train_batch_size"):
        value = dotted_get(config, key)
        if value is None or _interpolated(value):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            report.add(key, [f"must be a positive int (prompts per batch), got {value!r}"])
            return None
        return value
    report.notes.append("batch size: not set here (verl's default data.train_batch_size)")
    return None


VERL_DEFAULT_WORKERS = 8
"""verl's data.dataloader_num_workers when a config leaves it out (0.7 and 0.9 alike)."""


def _check_workers(config: Mapping[str, Any], *, legacy: bool, report: Report) -> None:
    """data.dataloader_num_workers: verl <= 0.7 refuses a curriculum sampler with workers;
    verl 0.9 runs with them, the selector hearing each step's rewards late (a note)."""
    value = dotted_get(config, "data.dataloader_num_workers")
    if _interpolated(value):
        return
    unset = value is None
    workers = VERL_DEFAULT_WORKERS if unset else value
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        report.add("data.dataloader_num_workers", [f"must be an int >= 0, got {shown(value)}"])
        return
    if workers == 0:
        return
    given = f"{workers} (verl's default)" if unset else str(workers)
    if legacy:
        report.add(
            "data.dataloader_num_workers",
            [f"{given}: verl <= 0.7 refuses a curriculum sampler unless it is 0: set "
             "data.dataloader_num_workers: 0"],
        )  # fmt: skip
        return
    report.notes.append(
        f"data.dataloader_num_workers {given}: the dataloader prefetches {workers} x "
        "prefetch_factor batches, so the selector chooses that many steps behind the rewards "
        "(verl/max_feedback_lag) and a resumed run lacks the rewards reported after the "
        "checkpoint's snapshot; 0 draws each batch after the previous step's rewards "
        "(docs/integrations/verl.md, Lag between drawing and rewards)"
    )


def _wanted_columns(values: Mapping[str, Any], prompt: tuple[str, str]) -> list[tuple[str, str]]:
    """(option, column) pairs the sampler will read, from the fields as given."""
    out = [prompt]
    for option in ("category_keys", "difficulty_key", "pass_rate_keys", "features_key"):
        value = values.get(option)
        keys = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        out += [(option, k) for k in keys if isinstance(k, str)]
    key = values.get("task_id_key", "index")
    if isinstance(key, str):
        out.append(("task_id_key", "extra_info.index" if key == "index" else key))
    return out


def _check_data(
    config: Mapping[str, Any], values: Mapping[str, Any], batch: int | None, report: Report
) -> None:
    """The columns the sampler reads, in every local training file that can be read."""
    files = dotted_get(config, "data.train_files")
    paths = [files] if isinstance(files, str) else files if isinstance(files, list) else []
    local = [
        str(p) for p in paths if not _interpolated(p) and not str(p).startswith(REMOTE_PREFIXES)
    ]
    if not local:
        report.notes.append("data.train_files: no local file named, columns not checked")
        return
    given_prompt = values.get("prompt_key")
    if isinstance(given_prompt, str):
        prompt = ("prompt_key", given_prompt)
    else:
        verl_key = dotted_get(config, "data.prompt_key")
        prompt = ("data.prompt_key", verl_key if isinstance(verl_key, str) else "prompt")
    rows: list[int | None] = []
    ids_readable = True
    for path in local:
        data = read_data_columns(path)
        if not isinstance(data, DataColumns):
            (report.problems if data.startswith("no such file") else report.notes).append(
                f"data.train_files: {data}"
            )
            rows.append(None)
            ids_readable = False
            continue
        problems = column_problems(data.names, _wanted_columns(values, prompt), data.first_row)
        report.add(f"{path} (columns: {', '.join(data.names)})", [_why(p) for p in problems])
        rows.append(data.rows)
        ids_readable &= not any(p.startswith("task_id_key:") for p in problems)
    total = sum(r for r in rows if r is not None)
    if batch is not None and None not in rows and batch > total:
        report.add("", [f"batch size {batch} exceeds the {total} rows of data.train_files"])
    key = values.get("task_id_key", "index")
    if ids_readable and isinstance(key, str):
        _check_task_ids(local, "extra_info.index" if key == "index" else key, report)


def _check_task_ids(paths: list[str], key: str, report: Report) -> None:
    """Task ids must be unique over all training files (verl joins them into one dataset,
    and the sampler refuses a repeated id, after Ray starts): the id column of each parquet
    file, read alone, compared within and across files."""
    import numpy as np

    seen: list[tuple[str, Any]] = []
    for path in paths:
        if not path.lower().endswith(".parquet"):
            report.notes.append(f"data.train_files: {path}: {key} values of non-parquet files "
                                "are not compared")  # fmt: skip
            continue
        ids = read_parquet_ids(path, key)
        if isinstance(ids, str):
            report.notes.append(f"data.train_files: {ids}")
            continue
        uniq, counts = np.unique(ids, return_counts=True)
        if uniq.size != ids.size:
            repeated = uniq[counts > 1]
            report.add(
                "data.train_files",
                [f"{path} repeats {repeated.size} {key} value(s) (first {int(repeated[0])}): "
                 f"give every row a unique {key}"],
            )  # fmt: skip
        for other, other_ids in seen:
            shared = np.intersect1d(other_ids, uniq, assume_unique=True)
            if shared.size:
                offset = int(other_ids.max()) + 1
                report.add(
                    "data.train_files",
                    [f"{other} and {path} share {shared.size:,} {key} value(s) (first "
                     f"{int(shared[0])}); verl joins the files and then refuses the repeated "
                     f"task ids after Ray starts (verl's preprocessors number each file from 0): "
                     f"renumber one file's {key} (e.g. add {offset} to {path}'s) so ids are "
                     "unique across files, or set task_id_key to a column that is"],
                )  # fmt: skip
        seen.append((path, uniq))


def _why(problem: str) -> str:
    """A missing task id column, with what verl does without one."""
    if problem.startswith("task_id_key:"):
        return (
            f"{problem}; verl then uses task id 0 for every prompt: give every row a unique "
            "extra_info.index (or set task_id_key to the column of stable ids)"
        )
    return problem
