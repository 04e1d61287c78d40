"""Checks of a TRL run that need no model, no GPU and (except the list of TRL's own keys)
no TRL: they run before anything slow.

- `local_model_path`: a model name that looks like a local path must be a model directory;
  checked on disk before any hub call (`frontier_rft.model_dirs` says which names do).
- `report_to_problems`: every logging backend in `report_to` must be installed.
- `data_problems`: the columns the adapter, TRL's trainer and the reward functions read.
- `check_trl_config`: all of these on a TRL YAML file's values, plus every FrontierConfig
  field and every unknown key (`frontier check-config trl FILE.yaml`).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from frontier_rft.core.config import closest, config_problems, did_you_mean
from frontier_rft.integrations.pool import column_problems
from frontier_rft.integrations.preflight import (
    DataColumns,
    Report,
    read_data_columns,
    selector_problems,
    shown,
)
from frontier_rft.integrations.trl.config import REWARDS, FrontierConfig, FrontierScriptArguments
from frontier_rft.integrations.trl.dynamic_config import config_file_problems
from frontier_rft.integrations.trl.keys import TRL_CLASSES, dataclass_fields_from_source
from frontier_rft.model_dirs import looks_local, model_dir_problem

__all__ = [
    "REPORT_TO_PACKAGES",
    "TRL_REWARD_ARGUMENTS",
    "check_trl_config",
    "data_problems",
    "local_model_path",
    "report_to_problems",
    "reward_columns",
]

REPORT_TO_PACKAGES = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "wandb": ("wandb",),
    "mlflow": ("mlflow",),
    "comet_ml": ("comet_ml",),
    "trackio": ("trackio",),
    "swanlab": ("swanlab",),
    "clearml": ("clearml",),
    "dvclive": ("dvclive",),
    "neptune": ("neptune",),
}
"""`report_to` backends and the modules transformers needs for each (any one of them)."""

TRL_REWARD_ARGUMENTS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
     "environments"}
)  # fmt: skip
"""What TRL's GRPOTrainer passes every reward function besides the dataset's columns
(TRL 1.16, `_calculate_rewards`); any other required argument must be a column."""

TRL_PROMPT = "prompt"
"""The column TRL's GRPO and RLOO trainers generate from."""


def local_model_path(name: Any, flag: str = "model_name_or_path") -> str:
    """`name` as transformers should load it: a hub id unchanged; a name that looks like a
    local path (with `~` expanded) after checking it holds a model; ValueError otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"{flag} must be a hub id (Qwen/Qwen2.5-0.5B-Instruct) or a local model "
            f"directory, got {shown(name)}"
        )
    if not looks_local(name):
        return name
    path = os.path.expanduser(name)
    problem = model_dir_problem(path, flag, markers=("config.json", "adapter_config.json"))
    if problem is not None:
        raise ValueError(
            f"{problem}. A name that looks like a path (starting with /, ~ or ., or whose first "
            "folder exists here) is read from disk, never from the hub: fix the path, or give "
            "a hub id such as Qwen/Qwen2.5-0.5B-Instruct"
        )
    return path


def report_to_problems(report_to: Any) -> list[str]:
    """One message per `report_to` backend whose package is not installed, or one saying
    `report_to` is no backend name nor list of names (transformers would refuse it after
    the model loads: null, a number, a bool and a nested list all end in its ValueError)."""
    if isinstance(report_to, list | tuple) and all(isinstance(n, str) for n in report_to):
        names = list(report_to)
    elif isinstance(report_to, str):
        names = [report_to]
    else:
        return [
            "report_to must be a logging backend (wandb, tensorboard), a list of them, all or "
            f"none, got {shown(report_to)}"
        ]
    out = []
    for name in names:
        modules = REPORT_TO_PACKAGES.get(str(name), ())
        if modules and not any(importlib.util.find_spec(m) for m in modules):
            out.append(
                f"report_to {name}: the {modules[0]} package is not installed; pip install "
                f"{modules[0]}, or set report_to: none (selector metrics still go to "
                "frontier_metrics.jsonl)"
            )
    return out


def reward_columns(func: Callable[..., Any]) -> list[str]:
    """Dataset columns reward function `func` needs: its arguments without a default that
    TRL does not pass itself (for `answer_match`, `answer`)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: nothing to read
        return []
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        p.name
        for p in params
        if p.kind in named and p.default is p.empty and p.name not in TRL_REWARD_ARGUMENTS
    ]


def data_problems(
    names: list[str],
    config: FrontierConfig | None,
    first_row: Mapping[str, Any] | None = None,
    rewards: Mapping[str, Callable[..., Any]] | None = None,
    *,
    script: bool = False,
) -> list[str]:
    """What is missing from training data with columns `names`: TRL's prompt column, the
    columns `config` names (None: a ready selector, which reads none) and those the
    `rewards` functions need, each with the closest existing column. With `script`, the
    fix for the prompt is the `grpo` script's --prompt_column (it hands that column to TRL
    as its prompt); otherwise a rename."""
    out = []
    wanted = config.named_columns() if config is not None else []
    prompt = config.prompt_column if config is not None else TRL_PROMPT
    if script and prompt not in names:
        near = closest(prompt, names)
        fix = f"--prompt_column {near}" if near else "--prompt_column COLUMN"
        out.append(
            f"no prompt column {prompt!r}{did_you_mean(prompt, names)}: set {fix} to the "
            "column that holds the prompts"
        )
    elif not script and TRL_PROMPT not in names:
        near = closest(TRL_PROMPT, names) or "question"
        out.append(
            f"no {TRL_PROMPT!r} column, which TRL's trainer generates from"
            f"{did_you_mean(TRL_PROMPT, names)}: rename the column that holds the prompts, "
            f"e.g. ds = ds.rename_column({near!r}, {TRL_PROMPT!r})"
        )
    if script or prompt == TRL_PROMPT:
        wanted = wanted[1:]  # the prompt column is reported above
    flag = "--" if script else ""
    out += [f"{flag}{p}" for p in column_problems(names, wanted, first_row)]
    for name, func in (rewards or {}).items():
        for column in reward_columns(func):
            if column not in names:
                out.append(
                    f"reward function {name!r} reads column {column!r}, which the data "
                    f"lacks{did_you_mean(column, names)}"
                )
    return out


# ---------------------------------------------------------------------------- a YAML file


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


def check_trl_config(values: Mapping[str, Any]) -> Report:
    """Every mistake in a TRL YAML file's values that can be found without a model (see the
    module); relative paths are read from the working directory, as the script reads them."""
    report = Report()
    ours = {f.name for f in fields(FrontierConfig)}
    script_keys = {f.name for f in fields(FrontierScriptArguments)}
    frontier = {k: v for k, v in values.items() if k in ours}
    script = {k: v for k, v in values.items() if k in script_keys}
    others = [str(k) for k in values if k not in ours and k not in script_keys]
    trl_keys = _trl_keys(script.get("trainer", "grpo")) if others else set()
    if trl_keys is None:
        report.notes.append("TRL's own keys are not checked: trl is not installed")
        for key in others[:MAX_SUGGESTIONS]:
            if closest(key, ours | script_keys):
                report.add(key, [f"not a frontier-rft key{did_you_mean(key, ours | script_keys)}"])
    else:
        known = ours | script_keys | trl_keys
        unknown = [k for k in others if k not in known]
        report.add("", [_unknown(k, known, i) for i, k in enumerate(unknown)])
    report.add("", config_problems(FrontierConfig, frontier))
    report.add("", config_problems(FrontierScriptArguments, script))
    default = FrontierConfig()
    report.add(
        "",
        selector_problems(
            frontier.get("selector", default.selector),
            _mapping(frontier.get("selector_config")),
            frontier.get("selector_judge"),
        ),
    )
    report.add("", config_file_problems(values))  # dynamic_sampling next to TRL's settings
    report.add("", _model_problems(values))
    if "report_to" in values:  # absent: transformers' default, none
        report.add("", report_to_problems(values["report_to"]))
    reward_names = script.get("reward_funcs", ["answer_match"])
    if isinstance(reward_names, str):  # the script reads one name as a list of one
        reward_names = [reward_names]
    if isinstance(reward_names, list):  # another type is named by FrontierScriptArguments
        rewards = {n: REWARDS[n] for n in reward_names if isinstance(n, str) and n in REWARDS}
        _check_data(values, frontier, rewards, report)
    return report


def _model_problems(values: Mapping[str, Any]) -> list[str]:
    """model_name_or_path: a string (a hub id, or a local model directory that exists)."""
    if "model_name_or_path" not in values:
        return []
    try:
        local_model_path(values["model_name_or_path"])
    except (ValueError, OSError, RuntimeError) as exc:  # OSError: a path too long to look up
        return [" ".join(str(exc).split())]
    return []


MAX_SUGGESTIONS = 100
"""Unknown keys given a closest-name suggestion; the rest are named without one (difflib
costs ~0.5 ms a key against TRL's 220: 70,000 keys would take half a minute)."""


def _unknown(key: str, known: set[str], index: int) -> str:
    hint = did_you_mean(key, known) if index < MAX_SUGGESTIONS else ""
    return f"unknown key {shown(key)}{hint}"


def _mapping(value: Any) -> Any:
    """selector_config as FrontierConfig reads it (a JSON string on the command line)."""
    if isinstance(value, str):
        from frontier_rft.core.jsonsafe import loads_bounded

        try:  # bounded as FrontierConfig reads it
            return loads_bounded(value, max_chars=1 << 20, max_depth=32) if value.strip() else {}
        except ValueError:
            return None  # FrontierConfig's own check names it
    return value


def _check_data(
    values: Mapping[str, Any],
    frontier: Mapping[str, Any],
    rewards: Mapping[str, Callable[..., Any]],
    report: Report,
) -> None:
    files = values.get("dataset_files")
    paths = [files] if isinstance(files, str) else files if isinstance(files, list) else []
    if not all(isinstance(p, str) for p in paths):
        return  # FrontierScriptArguments names the wrong type
    if not paths:
        name = values.get("dataset_name")
        why = f"dataset_name {name!r} is not read here" if name else "no dataset_files given"
        report.notes.append(f"{why}: columns not checked")
        return
    column_keys = ("prompt_column", "category_columns", "difficulty_column",
                   "pass_rate_columns", "features_column")  # fmt: skip
    try:
        config = FrontierConfig(**{k: v for k, v in frontier.items() if k in column_keys})
    except (TypeError, ValueError):
        report.notes.append("columns not checked until the column options above are fixed")
        return
    data = read_data_columns(paths[0])
    if not isinstance(data, DataColumns):
        where = "dataset_files"
        (report.problems if data.startswith("no such file") else report.notes).append(
            f"{where}: {data}"
        )
        return
    problems = data_problems(data.names, config, data.first_row, rewards, script=True)
    report.add(f"{paths[0]} (columns: {', '.join(data.names)})", problems)
