"""What the TRL adapter checks of the arguments its trainer is given: the frontier options
themselves (`frontier_arguments`), what TRL would find only after loading the model
(`check_before_model`), what TRL's own arguments must not turn off once it has read them
(`check_built`), and the dataset's task ids (`with_task_ids`, `task_rows`).

Imports neither torch nor TRL.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.selector import Selector
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.preflight import (
    data_problems,
    local_model_path,
    pool_problems,
    reward_range_problems,
)

__all__ = [
    "check_before_model",
    "check_built",
    "frontier_arguments",
    "task_rows",
    "training_args",
    "with_task_ids",
]


def frontier_arguments(selector: Any, frontier: Any) -> FrontierConfig:
    """The run's FrontierConfig (default: FrontierConfig()); a ValueError for a `selector`
    that is not a Selector, a `frontier` that is not a FrontierConfig, or options that only
    apply when the adapter builds the selector beside a ready one."""
    if selector is not None and not isinstance(selector, Selector):
        raise ValueError(
            "selector must be a frontier_rft Selector built with make_selector(name, pool, "
            f"seed=...) or None (built from FrontierConfig), got {type(selector).__name__}"
        )
    config = FrontierConfig() if frontier is None else frontier
    if not isinstance(config, FrontierConfig):
        raise ValueError(f"frontier must be a FrontierConfig, got {type(config).__name__}")
    if selector is not None:
        unused = config.pool_options()
        if unused:
            raise ValueError(
                f"FrontierConfig {', '.join(unused)} apply when the adapter builds the "
                "selector; with selector=... put that metadata in its TaskPool instead"
            )
    return config


def check_before_model(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    config: FrontierConfig,
    selector: Selector | None,
) -> tuple[Any, ...]:
    """What TRL would find only after loading the model (or at the first step): a mistyped
    local model path; the metadata the selector `config` names cannot run without; several
    reward functions without the reward_range the selector needs; the columns TRL, the
    selector's pool (none for a ready `selector`) and the reward functions read. Returns
    `args` (and updates `kwargs`) with a `~` in the model path expanded."""
    if isinstance(kwargs.get("model"), str):
        kwargs["model"] = local_model_path(kwargs["model"], "model")
    elif args and isinstance(args[0], str):
        args = (local_model_path(args[0], "model"), *args[1:])
    funcs = kwargs.get("reward_funcs", args[1] if len(args) > 1 else None)
    funcs = funcs if isinstance(funcs, list) else [funcs]
    training = training_args(args, kwargs)
    names_of = [getattr(f, "__name__", type(f).__name__) for f in funcs]
    problems = [] if selector is not None else pool_problems(config)
    problems += reward_range_problems(
        config, names_of, getattr(training, "reward_weights", None), selector
    )
    if problems:
        raise ValueError("; ".join(problems))
    dataset = kwargs.get("train_dataset")
    names = getattr(dataset, "column_names", None)
    if not isinstance(names, list):
        return args  # not a map-style Dataset: task_rows says so
    rewards = {f.__name__: f for f in funcs if inspect.isfunction(f)}
    problems = data_problems(names, None if selector is not None else config, None, rewards)
    if problems:
        raise ValueError(f"train_dataset (columns: {', '.join(names)}): {'; '.join(problems)}")
    return args


def check_built(args: Any, config: FrontierConfig) -> None:
    """What TRL's training arguments `args`, as TRL has read them, must not turn off: the task
    id column, and every process reading the sampler (a ValueError naming the setting)."""
    if args.remove_unused_columns:
        raise ValueError(
            f"remove_unused_columns=True drops the {config.task_id_column!r} column the "
            "selector needs; set remove_unused_columns=False (TRL's default)"
        )
    if getattr(args.accelerator_config, "dispatch_batches", None):
        raise ValueError(
            "dispatch_batches=True makes only the main process read the sampler, so the "
            "other processes' selectors would drift; leave accelerator_config.dispatch_batches "
            "unset (the default for map-style datasets)"
        )


def training_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The trainer's GRPOConfig as the caller passed it, by keyword or third (None: none)."""
    return kwargs.get("args", args[2] if len(args) > 2 else None)


def with_task_ids(dataset: Any, column: str) -> Any:
    """The dataset with a `column` of row numbers added when it has none (a datasets.Dataset)."""
    names = getattr(dataset, "column_names", None)
    if names is None or column in names or not hasattr(dataset, "add_column"):
        return dataset
    return dataset.add_column(column, list(range(len(dataset))))


def task_rows(dataset: Any, column: str, num_tasks: int) -> NDArray[np.int64]:
    """Row of each task id: validates that `column` holds a permutation of 0..num_tasks-1."""
    names = getattr(dataset, "column_names", None)
    if names is None or not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
        raise ValueError(
            "the frontier-rft TRL adapter needs a map-style datasets.Dataset as train_dataset "
            f"(got {type(dataset).__name__}); streaming datasets cannot be indexed by task"
        )
    if len(dataset) == 0:
        raise ValueError("train_dataset is empty: give the trainer at least one prompt")
    if column not in names:
        raise ValueError(
            f"train_dataset has no {column!r} column (columns: {names}); add the TaskPool index "
            f"of each row, e.g. ds.map(lambda _, i: {{{column!r}: i}}, with_indices=True), set "
            "FrontierConfig(task_id_column=...), or let the adapter build the selector "
            "(FrontierConfig(selector=NAME), no selector=...)"
        )
    raw = np.asarray(dataset[column])
    if raw.ndim != 1 or raw.dtype.kind not in "iu":
        raise ValueError(
            f"column {column!r} must hold the TaskPool index (an integer) of each row, got "
            f"dtype {raw.dtype}; if it is your own id column, rename it or set "
            "FrontierConfig(task_id_column=...) to an unused name"
        )
    ids = raw.astype(np.int64)
    if ids.shape[0] != num_tasks:
        raise ValueError(
            f"train_dataset has {ids.shape[0]} rows but the selector's TaskPool has {num_tasks} "
            f"tasks; the {column!r} column must hold each pool id exactly once"
        )
    outside = (ids < 0) | (ids >= num_tasks)
    if outside.any():
        raise ValueError(
            f"column {column!r} has id {int(ids[np.argmax(outside)])} outside [0, {num_tasks})"
        )
    rows = np.full(num_tasks, -1, dtype=np.int64)
    rows[ids] = np.arange(num_tasks, dtype=np.int64)
    if (rows < 0).any():
        counts = np.bincount(ids, minlength=num_tasks)
        raise ValueError(
            f"column {column!r} must be a permutation of 0..{num_tasks - 1}: id "
            f"{int(np.argmax(counts > 1))} appears {int(counts.max())} times and id "
            f"{int(np.argmin(counts))} is missing"
        )
    return rows
