"""`check_trl_config`: every mistake in a TRL YAML file that the `trl.grpo` script would
find before its model loads, or TRL after it, found without a model, a GPU or TRL itself
(`frontier check-config trl FILE.yaml`).

What it checks, in the file's values: each key (frontier-rft's, the script's, TRL's own,
read from TRL's source; without TRL installed, TRL's keys are left unchecked and said to
be), each FrontierConfig and script value, the selector's config and the metadata it cannot
run without, the model path, the logging backends, the reward functions (found and read
from source, never imported), `reward_range` with several of them, the held-out set an
evaluation needs, the columns of the training and held-out files the adapter, TRL and
the reward functions read, `num_generations` (at least 2) and an unquoted `eval_strategy: no`
(YAML's false). A refused option is read at its default, so that it hides no other check.

The run's step is the trainer's own: the file's values go through the same resolution
(resolve.py: what `rollouts: auto` chooses, with the installed TRL's version, and what the
chosen step, dynamic sampling or fewer rollouts, is refused for in TRL's settings, the seam
it wraps in TRL's GRPOTrainer (read from TRL's source, not imported) and the data's columns),
and its plan is printed (`plan:`).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from frontier_rft.core.config import config_problems, did_you_mean
from frontier_rft.integrations.data_columns import local_rows
from frontier_rft.integrations.plan import (
    auto_choice,
    default_shadows_line,
    set_shadows_line,
)
from frontier_rft.integrations.preflight import (
    DataColumns,
    Report,
    read_data_columns,
    selector_problems,
    selector_reward_bounds,
    shadow_bounds_note,
    shown,
)
from frontier_rft.integrations.trl.config import REWARDS, FrontierConfig, FrontierScriptArguments
from frontier_rft.integrations.trl.currency import trl_currency
from frontier_rft.integrations.trl.fewer_config import (
    _TRL_NUM_GENERATIONS,
    TRL,
    trl_kept_line,
)
from frontier_rft.integrations.trl.keys import (
    TRL_CLASSES,
    TRL_TYPES,
    dataclass_annotations_from_source,
    dataclass_fields_from_source,
    parsed_as_trl,
)
from frontier_rft.integrations.trl.preflight import (
    batch_problems,
    data_problems,
    eval_problems,
    generation_problems,
    length_problems,
    local_model_path,
    model_config_problems,
    pool_batch_problems,
    pool_fields,
    pool_problems,
    report_to_problems,
    reward_range_problems,
    reward_sum_problems,
    strategy_problems,
    vllm_problems,
)
from frontier_rft.integrations.trl.resolve import Resolution, TrlRun, resolve_step
from frontier_rft.integrations.trl.reward_source import RewardSource, reward_source
from frontier_rft.integrations.trl.seam_check import installed_trl, source_seam_problem
from frontier_rft.integrations.trl.start_lines import trl_start_lines
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.step_cost.advice import DeviceHint, currency_line

__all__ = ["NEAR_MISS", "check_trl_config", "launch_processes"]

MAX_SUGGESTIONS = 100
"""Unknown keys given a closest-name suggestion; the rest are named without one (difflib
costs ~0.5 ms a key against TRL's 220: 70,000 keys would take half a minute)."""

NEAR_MISS = 0.85
"""Without TRL, a key at least this close (difflib's ratio) to a frontier-rft key gets a
note asking whether it was meant: no TRL 1.16 key comes closer than 0.83 (reward_clip_range
to reward_range), a one-letter slip of a frontier-rft key is above 0.87."""

_SELECTOR_KEYS = ("selector", "selector_config", "selector_judge")
"""The FrontierConfig fields that name the selector, judged together."""
_COLUMN_KEYS = ("prompt_column", "category_columns", "difficulty_column", "pass_rate_columns",
                "features_column")  # fmt: skip
"""The FrontierConfig fields that name dataset columns."""
_POOL_KEYS = (*_SELECTOR_KEYS, *_COLUMN_KEYS, "reward_range")
"""The FrontierConfig fields the data, selector and reward checks read."""
_SELECTOR_DROPS = ((), ("selector_judge",), ("selector_config",),
                   ("selector_config", "selector_judge"), _SELECTOR_KEYS)  # fmt: skip
"""The selector options left at their defaults, fewest first, until the rest is valid."""


def _trl_keys(kind: Any) -> set[str] | None:
    """Every key TRL's parser accepts for trainer `kind` (grpo, rloo), or None without TRL.
    Read from TRL's source (trl/keys.py); where that cannot be followed, TRL is imported
    (and so torch, ~2 CPU s): only called for keys that are not frontier-rft's."""
    if importlib.util.find_spec("trl") is None:
        return None
    kind = "rloo" if kind == "rloo" else "grpo"
    found = [dataclass_fields_from_source("trl", name) for name in TRL_CLASSES[kind]]
    if all(f is not None for f in found):
        return set().union(*(f for f in found if f is not None)) | {"env"}  # env: TrlParser's
    trl: Any = importlib.import_module("trl")
    config = trl.RLOOConfig if kind == "rloo" else trl.GRPOConfig
    classes = (trl.ScriptArguments, config, trl.ModelConfig)
    return {f.name for cls in classes for f in fields(cls)} | {"env"}  # env: TrlParser's


def _annotations(kind: Any) -> dict[str, str]:
    """Each key's annotation, as TRL's parser types it: TRL's own fields for trainer `kind`
    (read from its source; without it, those the checks read, `TRL_TYPES`) and frontier-rft's."""
    kind = "rloo" if kind == "rloo" else "grpo"
    found = [dataclass_annotations_from_source("trl", name) for name in TRL_CLASSES[kind]]
    out = dict(TRL_TYPES)
    for typed in found if all(a is not None for a in found) else ():
        out.update(typed or {})
    for cls in (FrontierConfig, FrontierScriptArguments):
        out.update({f.name: _annotation_text(f.type) for f in fields(cls)})
    return out


def _annotation_text(annotation: Any) -> str:
    """A dataclass field's annotation as source text. A field's `type` is that text (this
    package postpones annotations) until transformers' HfArgumentParser, building a parser for
    the class, replaces it with the resolved type (`int`, whose str() is "<class 'int'>")."""
    if isinstance(annotation, str):
        return annotation
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def launch_processes(processes: int | None = None) -> tuple[int, str]:
    """The processes a TRL run is launched on, and where that count comes from: `processes`
    as given (check-config's --processes), else num_processes in accelerate's default config
    file (what `accelerate launch` without --config_file reads), else 1 (`python -m`; an
    `accelerate launch` with no config starts one process a GPU: give --processes)."""
    if processes is not None:
        return processes, "--processes"
    found = _accelerate_default()
    if found is not None:
        return found
    return 1, "none given: pass --processes N for a multi-GPU launch"


def _accelerate_default() -> tuple[int, str] | None:
    """(num_processes, where) from accelerate's default config file, where accelerate 1.x
    looks for it ($HF_HOME/accelerate/default_config.yaml; HF_HOME defaults to
    $XDG_CACHE_HOME/huggingface, then ~/.cache/huggingface); None: no such file, or no
    positive num_processes in it. Read with the bounds of a config file."""
    import yaml

    from frontier_rft.core.yamlsafe import MAX_YAML_CHARS, load_yaml

    cache = os.environ.get("XDG_CACHE_HOME", "~/.cache")
    home = os.environ.get("HF_HOME") or os.path.join(cache, "huggingface")
    try:
        path = Path(home).expanduser() / "accelerate" / "default_config.yaml"
        if not path.is_file():
            return None
        with open(path, encoding="utf-8") as fh:
            data = load_yaml(fh.read(MAX_YAML_CHARS + 1))
    except (OSError, RuntimeError, ValueError, yaml.YAMLError):
        return None  # unreadable: counted as none given
    n = data.get("num_processes") if isinstance(data, dict) else None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return None
    return n, f"num_processes in {path}, accelerate launch's default config; --processes overrides"


def check_trl_config(
    values: Mapping[str, Any], processes: int | None = None, hint: DeviceHint | None = None
) -> Report:
    """Every mistake in a TRL YAML file's values that can be found without a model (see the
    module); relative paths are read from the working directory, as the script reads them.
    `processes`: the processes the run is launched on (`launch_processes` when None), which
    the batch rule, a max_steps run's length in epochs and the currency line depend on;
    `hint`: what check-config was told of the device (the currency line's GPU or curve)."""
    report = Report()
    count, source = launch_processes(processes)
    # the values as TRL's parser hands them to the trainer (a quoted "4" is 4): so the check
    # resolves the plan and the currency the run will have
    values, unparsed = parsed_as_trl(values, _annotations(values.get("trainer", "grpo")))
    ours = {f.name for f in fields(FrontierConfig)}
    script_keys = {f.name for f in fields(FrontierScriptArguments)}
    frontier = {k: v for k, v in values.items() if k in ours}
    script = {k: v for k, v in values.items() if k in script_keys}
    others = [str(k) for k in values if k not in ours and k not in script_keys]
    _check_keys(others, ours | script_keys, script.get("trainer", "grpo"), report)
    whole = _build(frontier)  # the file's FrontierConfig, built once: None where it refuses
    if whole is None:
        report.add("", config_problems(FrontierConfig, frontier))
    # A FILE.py:FUNCTION reward name: `_rewards` below says it with the file read (whether it
    # defines the function, the dotted path to write), so the bare refusal is left out here.
    script_problems = config_problems(FrontierScriptArguments, script)
    report.add("", [p for p in script_problems if "not FILE.py:FUNCTION" not in p])
    default = FrontierConfig()
    report.add(
        "",
        selector_problems(
            frontier.get("selector", default.selector),
            _mapping(frontier.get("selector_config")),
            frontier.get("selector_judge"),
        ),
    )
    report.sampler += _sampler_line(whole)
    files, held_out = values.get("dataset_files"), values.get("eval_dataset_files")
    first = files[0] if isinstance(files, list) and files else files
    data = read_data_columns(first) if isinstance(first, str) else None
    step, named = _step_config(frontier, whole)  # a refused option read at its default
    run = TrlRun(
        settings=values,
        trainer=_trainer(values),
        columns=tuple(data.names) if isinstance(data, DataColumns) else (),
        rows=partial(local_rows, files),
        processes=count,
        seam=source_seam_problem,  # TRL's GRPOTrainer, read from its source
        version=installed_trl(),
    )
    resolution = resolve_step(step, run)  # the trainer's own resolution (resolve.py)
    report.add("", list(resolution.problems))  # the step next to TRL's settings
    report.add("", _shadow_problems(whole, values))
    report.notes += _shadow_bounds_notes(whole, frontier)
    model = _model_problems(values)
    report.add("", model)
    if "report_to" in values:  # absent: transformers' default, none
        report.add("", report_to_problems(values["report_to"]))
    report.add("", generation_problems(values))
    report.add("", batch_problems(values, count, source))
    report.add("", pool_batch_problems(values, count, source, local_rows(files)))
    report.add("", vllm_problems(values, count, source))
    report.add("", length_problems(values))
    report.add("", strategy_problems(values))
    # Every check below runs whatever else is wrong: a refused option is read at its default
    # (FrontierConfig's own check above names it) and only the checks that read it wait.
    config, refused = _pool_config(frontier)
    reward_names = script.get("reward_funcs", ["answer_match"])
    if isinstance(reward_names, str):  # the script reads one name as a list of one
        reward_names = [reward_names]
    if not _strings(reward_names):
        reward_names = []  # FrontierScriptArguments names the wrong type
    rewards = _rewards(reward_names, report)
    if not refused:
        report.add("", pool_problems(config))
    report.add(
        "",
        _reward_range_problems(
            config, refused, frontier, reward_names, values.get("reward_weights")
        ),
    )
    plan = resolution.plan
    if named and plan is not None:  # the selector the file names, read: the run's step
        report.choices += _auto_choice(resolution, values, data, count, source)
        # its reason is said once, on the auto or rollouts line: not again here
        report.plan.append(replace(plan, reason="").words())
    # what a step costs on this device (a model whose config is refused above: not read)
    priced = {k: v for k, v in values.items() if k != "model_name_or_path" or not model}
    currency = trl_currency(priced, processes=count, hint=hint)  # the line and the start's curve
    report.currency.append(currency_line(currency))
    report.start += trl_start_lines(  # where to start, from the curve alone, as at start-up
        values, currency, processes=count, max_prompts=local_rows(files), hint=hint
    )
    if plan is not None and not resolution.chosen and plan.reason:  # how a set step's run ends
        report.rollouts.append(plan.reason)
    report.rollouts += _kept_line(step, values, count) if named else []
    report.shadows += _default_shadows_choice(whole)
    report.add(
        "",
        eval_problems(
            values.get("eval_strategy", "no"), values.get("eval_on_start"), files, held_out
        ),
    )
    # a value TRL's parser refuses, where no check above has named its key in its own words
    report.add(
        "",
        [p for p in unparsed if not any(q.startswith(p.split()[0] + " ") for q in report.problems)],
    )
    if refused & set(_COLUMN_KEYS):
        report.notes.append("columns not checked until the column options above are fixed")
        return report
    step_data = list(resolution.data_problems)  # the step's refusal of the data's columns
    if not _check_files("dataset_files", files, config, rewards, report, step_data):
        name = values.get("dataset_name")
        why = f"dataset_name {name!r} is not read here" if name else "no dataset_files given"
        report.notes.append(f"{why}: columns not checked")
    _check_files("eval_dataset_files", held_out, config, rewards, report, held_out=True)
    return report


_STEP_KEYS = (*_SELECTOR_KEYS, "sampler", "sampler_config", "dynamic_sampling",
              "dynamic_sampling_config", "dynamic_sampling_tol", "rollouts", "screen",
              "loss_scale", "shadows")  # fmt: skip
"""The FrontierConfig fields the step's resolution reads."""


def _step_config(
    frontier: Mapping[str, Any], whole: FrontierConfig | None
) -> tuple[FrontierConfig, bool]:
    """The file's FrontierConfig `whole`, or where it is refused one of the step's options as
    given (`_STEP_KEYS`): each option refused alone read at its default (FrontierConfig's own
    check names it), then the selector's options, then every one; and whether it holds the
    selector the file names (its auto and plan lines are then the run's)."""
    given = {k: v for k, v in frontier.items() if k in _STEP_KEYS}
    if whole is None:  # each refused alone, then the selector's options, then all of them
        kept = {k: v for k, v in given.items() if _build({k: v}) is not None}
        step = {k: v for k, v in kept.items() if k not in _SELECTOR_KEYS}
        whole = _build(kept) or _build(step) or FrontierConfig()
    named = all(getattr(whole, k) == given[k] for k in _SELECTOR_KEYS if k in given)
    return whole, named and whole.selector in SELECTORS


def _trainer(values: Mapping[str, Any]) -> str:
    """The file's TRL trainer, as the checks read it (a wrong type: FrontierScriptArguments
    names it)."""
    trainer = values.get("trainer", "grpo")
    return trainer if isinstance(trainer, str) else "grpo"


def _sampler_line(config: FrontierConfig | None) -> list[str]:
    """The step sampler a file's `sampler:` and `sampler_config:` name, with its settings away
    from their defaults; none without `sampler:`, or where FrontierConfig refuses the file
    (`config` None: its own check above names why)."""
    if config is None or config.sampler is None:
        return []
    spec = config.sampler_spec()
    defaults = SamplerSpec(spec.kind).fields()  # its settings away from the defaults, shown
    shown = ", ".join(f"{k}: {v}" for k, v in spec.fields().items() if v != defaults[k])
    return [f"{spec.kind}" + f" ({shown})" * bool(shown) + " runs each generation step"]


def _auto_choice(
    resolution: Resolution, values: Mapping[str, Any], data: Any, processes: int, source: str
) -> list[str]:
    """What `rollouts: auto` (the default) chose for this file on `processes` (counted from
    `source`), as the trainer chooses it (`resolve_step`: the TRL version and seam
    included): one line, none when the step is set otherwise or refused."""
    plan = resolution.plan
    if not resolution.chosen or plan is None:
        return []
    mode, why = plan.rollouts, plan.reason
    steps = values.get("max_steps", -1)
    on = isinstance(steps, int) and steps > 0 and "the run is" in why
    many = f"{processes} process{'es' * (processes != 1)}"
    counted = f"; max_steps counted on {many} ({source})" * on
    unread = "" if isinstance(data, DataColumns) else " (unless the data has an image column)"
    return [
        auto_choice(
            TRL, mode, why, unread=unread * (mode == "kept"), after=counted, tested=tested_trl()
        )
    ]


def _kept_line(config: FrontierConfig, values: Mapping[str, Any], processes: int) -> list[str]:
    """What a hand-set kept step (rollouts: kept, or sampler: fewer_rollouts with skip) does
    with the selector, and what it measured (`plan.kept_line`), or that it saves nothing at
    one prompt a step (`one_prompt_steps`), as the trainer's start-up line says it."""
    if not config.step_chosen() or StepPlan(config.sampler_spec()).rollouts != "kept":
        return []
    line = trl_kept_line(values, processes, config.selector_spec.cls)
    return [line.removeprefix("frontier-rft: rollouts: ")]


def tested_trl() -> str:
    """The installed TRL in the words of the auto line's kept (`resolve_step` chooses kept on a
    tested version with the seam it wraps only)."""
    version = installed_trl()  # the distribution's metadata: importing TRL takes seconds
    if version is None:
        return ", with TRL not installed (pip install 'frontier-rft[trl]')"
    return f", on TRL {version} (a tested version)"


def _default_shadows_choice(config: FrontierConfig | None) -> list[str]:
    """The line naming the shadows the run follows, set or (unset) the default (none: unset
    and none follow;
    `config` None: the file's FrontierConfig is refused, which config_problems names)."""
    if config is None:
        return []
    try:
        rules = config.shadow_configs()
    except (ValueError, TypeError):
        return []  # config_problems names it
    if config.shadows is not None:
        return [set_shadows_line([r.name for r in rules])] if rules else []
    return [default_shadows_line([r.name for r in rules], planned=True)] if rules else []


def _shadow_bounds_notes(config: FrontierConfig | None, frontier: Mapping[str, Any]) -> list[str]:
    """A shadow that holds rewards to a range the selector does not (preflight's note)."""
    if config is None:
        return []  # config_problems names it
    note = shadow_bounds_note(frontier, set(pool_fields(config)), "", FrontierConfig.selector)
    return [] if note is None else [note]


def _shadow_problems(config: FrontierConfig | None, values: Mapping[str, Any]) -> list[str]:
    """A shadow's screen against num_generations (FrontierConfig checks the rest; `config`
    None: it refuses the file)."""
    n = values.get("num_generations", _TRL_NUM_GENERATIONS)
    if config is None or not config.shadows or not isinstance(n, int) or isinstance(n, bool):
        return []
    try:
        config.shadow_configs(n)
    except ValueError as exc:
        return [str(exc)]
    return []


def _check_keys(others: list[str], ours: set[str], trainer: Any, report: Report) -> None:
    """Keys that are neither frontier-rft's nor the script's: TRL's, or mistakes. Without
    TRL they cannot be told apart, so none is flagged; a near miss of a frontier-rft key
    gets a note."""
    trl_keys = _trl_keys(trainer) if others else set()
    if trl_keys is not None:
        known = ours | trl_keys
        unknown = [k for k in others if k not in known]
        report.add("", [_unknown(k, known, i) for i, k in enumerate(unknown)])
        return
    count = f"{len(others)} key{'s' * (len(others) > 1)}"
    report.notes.append(
        f"not checked: TRL's own keys, as trl is not installed ({count} here are not "
        "frontier-rft's; pip install trl to check them)"
    )
    for key in others[:MAX_SUGGESTIONS]:
        near = difflib.get_close_matches(key, list(ours), n=1, cutoff=NEAR_MISS)
        if near:
            report.notes.append(
                f"{shown(key)} is not a frontier-rft key: if you meant {near[0]!r}, rename it"
            )


def _unknown(key: str, known: set[str], index: int) -> str:
    hint = did_you_mean(key, known) if index < MAX_SUGGESTIONS else ""
    return f"unknown key {shown(key)}{hint}"


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _mapping(value: Any) -> Any:
    """selector_config as FrontierConfig reads it (a JSON string on the command line)."""
    if isinstance(value, str):
        from frontier_rft.core.jsonsafe import loads_bounded

        try:  # bounded as FrontierConfig reads it
            return loads_bounded(value, max_chars=1 << 20, max_depth=32) if value.strip() else {}
        except ValueError:
            return None  # FrontierConfig's own check names it
    return value


def _build(options: Mapping[str, Any]) -> FrontierConfig | None:
    try:
        return FrontierConfig(**options)
    except (TypeError, ValueError):
        return None


def _pool_config(frontier: Mapping[str, Any]) -> tuple[FrontierConfig, set[str]]:
    """A FrontierConfig of the selector, column and reward-range options as given, and the
    options it leaves at their defaults because they are refused (FrontierConfig's own
    check names them): each refused alone, then the selector's options, which are judged
    together, as few of them as make the rest valid."""
    given = {k: v for k, v in frontier.items() if k in _POOL_KEYS}
    whole = _build(given)
    if whole is not None:
        return whole, set()
    refused = {k for k in given if k not in _SELECTOR_KEYS and _build({k: given[k]}) is None}
    kept = {k: v for k, v in given.items() if k not in refused}
    for drop in _SELECTOR_DROPS:
        config = _build({k: v for k, v in kept.items() if k not in drop})
        if config is not None:
            return config, refused | (set(drop) & set(given))
    return FrontierConfig(), set(given)


def _reward_range_problems(
    config: FrontierConfig,
    refused: set[str],
    frontier: Mapping[str, Any],
    reward_names: list[str],
    weights: Any,
) -> list[str]:
    """Several reward functions without reward_range, whatever else is refused: with the
    selector's options refused, the rewards it reads are [0, 1], the strictest (as
    selector_reward_bounds reads a selector it cannot build)."""
    if "reward_range" in refused:
        return []  # given, but refused: FrontierConfig's check names it
    if not refused & set(_SELECTOR_KEYS):
        return reward_range_problems(config, reward_names, weights)
    if config.reward_range is not None:
        return []
    name = frontier.get("selector", config.selector)
    bounds = selector_reward_bounds(
        name,
        _mapping(frontier.get("selector_config")),
        pool_fields(config),
        frontier.get("selector_judge"),
    )
    return reward_sum_problems(reward_names, weights, name, bounds)


def _model_problems(values: Mapping[str, Any]) -> list[str]:
    """model_name_or_path: a string (a hub id, or a local model directory that exists, whose
    config.json sizes are whole numbers: `model_config_problems`)."""
    if "model_name_or_path" not in values:
        return []
    try:
        path = local_model_path(values["model_name_or_path"])
    except (ValueError, OSError, RuntimeError) as exc:  # OSError: a path too long to look up
        return [" ".join(str(exc).split())]
    return model_config_problems(path)  # the sizes its currency line reads, bounded


def _rewards(names: list[str], report: Report) -> dict[str, Any]:
    """Each reward function by name: a built-in one, or what its source says (a function
    not found is a problem; one whose source cannot be read, a note)."""
    out: dict[str, Any] = {}
    for name in names:
        if name in REWARDS:
            out[name] = REWARDS[name]
            continue
        if "." not in name.strip("."):
            continue  # FrontierScriptArguments names it
        found: RewardSource = reward_source(name)
        if found.problem is not None:
            report.add("", [found.problem])
        elif found.unchecked is not None:
            report.notes.append(found.unchecked)
        else:
            out[name] = found
    return out


def _check_files(
    option: str,
    files: Any,
    config: FrontierConfig,
    rewards: Mapping[str, Any],
    report: Report,
    step: list[str] | None = None,
    *,
    held_out: bool = False,
) -> bool:
    """The columns of the first of `files` (the option's value), with `step` (the run's step's
    refusals of those columns, `Resolution.data_problems`); False when none is given."""
    paths = [files] if isinstance(files, str) else files if isinstance(files, list) else []
    if not paths or not all(isinstance(p, str) for p in paths):
        return False  # none, or FrontierScriptArguments names the wrong type
    data = read_data_columns(paths[0])
    if not isinstance(data, DataColumns):
        (report.problems if data.startswith("no such file") else report.notes).append(
            f"{option}: {data}"
        )
        return True
    problems = data_problems(
        data.names, config, data.first_row, rewards, script=True, held_out=held_out
    )
    problems += step or []
    report.add(f"{paths[0]} (columns: {', '.join(data.names)})", problems)
    return True
