"""Read what `frontier simulate --fit` needs from a training log (an untrusted file, bounded).

A run directory of `frontier train` holds metrics.jsonl (one JSON object per line; training
steps carry `train/reward_mean` and `train/effective_task_ratio`) and run.json (its config:
`train_size`, `batch_size`, `group_size`, `steps`, `selector`, `dynamic_sampling`). Any
other JSONL file works when its step records carry a mean reward (`train/reward_mean` or
`reward`) and an ETR (`train/effective_task_ratio` or
`curriculum/feedback/effective_task_ratio`), one record per step, with the pool size, batch,
rollouts and steps given as flags. The TRL and verl adapters' frontier_metrics.jsonl works
as it is: its records carry the selector's own `curriculum/feedback/reward_mean`,
`curriculum/feedback/effective_task_ratio` (both of the newest step it folded) and
`curriculum/feedback/steps` (that step's number, so a log written every k-th step, as TRL's
logging_steps, is placed right), and the selector is read from its `curriculum/<name>/`
keys. docs/simulation.md lists what a log needs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.jsonsafe import load_json_file, loads_bounded
from frontier_rft.sampling.sampler_flags import legacy_train_fields
from frontier_rft.simulation.fit_run import START_STEPS, RunLog

__all__ = ["ETR_KEYS", "REWARD_KEYS", "SELECTOR_KEYS", "read_run_log"]

REWARD_KEYS = ("train/reward_mean", "reward")
"""Keys a step record may carry its mean rollout reward under (first found wins)."""
ETR_KEYS = ("train/effective_task_ratio", "curriculum/feedback/effective_task_ratio")
"""Keys a step record may carry its share of mixed-outcome groups under."""
SELECTOR_KEYS = (
    "curriculum/feedback/reward_mean",
    "curriculum/feedback/effective_task_ratio",
    "curriculum/feedback/steps",
)
"""The selector's own reward, ETR and step count, as every adapter logs them (read when a
record has none of REWARD_KEYS): the reward and ETR of its newest step, numbered steps - 1."""
MAX_LINE_CHARS = 1 << 20
"""Longest JSONL line read (a metrics record is a few kB)."""
MAX_LINES = 1_000_000
"""Most lines scanned for the first K steps."""
MAX_COUNT = 10_000_000
"""Bound on the pool size, batch, rollouts and steps read from run.json."""


def _number(record: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        value = record.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _values(record: dict[str, Any], count: int) -> tuple[float, float, int] | None:
    """(mean reward, ETR, step) of a step record; None for any other record. A trainer's
    own reward and ETR are of consecutive steps (`count`: records read so far); the
    selector's are of the step its step count names."""
    reward, etr = _number(record, REWARD_KEYS), _number(record, ETR_KEYS)
    if reward is not None and etr is not None:
        return reward, etr, count
    reward, etr, steps = (_number(record, (key,)) for key in SELECTOR_KEYS)
    if reward is None or etr is None or steps is None or not 1 <= steps <= MAX_COUNT:
        return None
    return reward, etr, int(steps) - 1


def _selector_of(record: dict[str, Any], known: tuple[str, ...]) -> tuple[str | None, bool]:
    """The selector whose `curriculum/<name>/` metrics a record carries, and whether it ran
    inside DAPO's dynamic sampling (`curriculum/dapo/`)."""
    named = next((n for n in known if any(k.startswith(f"curriculum/{n}/") for k in record)), None)
    return named, any(k.startswith("curriculum/dapo/") for k in record)


def _read_steps(
    path: Path, k: int, known: tuple[str, ...] = ()
) -> tuple[list[float], list[float], list[int], str | None, bool]:
    """Mean reward, ETR and step of the step records within the first `k` steps of a JSONL
    file, and the selector (and DAPO) its records name."""
    rewards: list[float] = []
    etrs: list[float] = []
    at: list[int] = []
    selector, dapo = None, False
    last_step = -math.inf
    try:
        fh = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror})") from None
    with fh:
        for number in range(1, MAX_LINES + 1):
            line = fh.readline(MAX_LINE_CHARS + 1)
            if not line:
                break
            if len(line) > MAX_LINE_CHARS:
                raise ValueError(
                    f"{path}: line {number} is longer than {MAX_LINE_CHARS} characters"
                )
            if not line.strip():
                continue
            try:
                record = loads_bounded(line, max_chars=MAX_LINE_CHARS, max_depth=4)
            except ValueError as exc:
                if not line.endswith("\n"):
                    break  # the last line, torn by a crash mid-write
                raise ValueError(f"{path}: line {number} is not a JSON record ({exc})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}: line {number} is not a JSON object")
            values = _values(record, len(rewards))
            if values is None:
                continue  # an evaluation or another trainer's record
            reward, etr, index = values
            if at and index == at[-1]:
                continue  # logged again before the selector folded another step
            if at and index < at[-1]:
                raise ValueError(
                    f"{path}: line {number}: the selector's step count goes back from "
                    f"{at[-1] + 1} to {index + 1} (a log appended to by a second run?); pass "
                    "a log of one run"
                )
            if index >= k:
                break
            step = _number(record, ("step",))
            if step is not None:
                if step <= last_step:
                    raise ValueError(
                        f"{path}: line {number}: step {step:g} does not follow {last_step:g} "
                        "(a log appended to by a second run?); pass a log of one run"
                    )
                last_step = step
            rewards.append(reward)
            etrs.append(etr)
            at.append(index)
            if selector is None:
                selector, dapo = _selector_of(record, known)
            if dapo and _number(record, REWARD_KEYS) is None:
                raise ValueError(
                    f"{path}: line {number}: a run inside DAPO's dynamic sampling, whose "
                    "selector metrics are of its last sampling round, not of a step: log the "
                    "step's mean reward and ETR as train/reward_mean and "
                    "train/effective_task_ratio"
                )
    return rewards, etrs, at, selector, dapo


def _count(config: dict[str, Any], key: str, where: Path) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_COUNT:
        raise ValueError(f"{where}: config.{key} must be an int in [1, {MAX_COUNT}], got {value!r}")
    return value


def read_run_log(
    path: str | Path,
    k: int,
    *,
    pool_size: int | None = None,
    batch: int | None = None,
    rollouts: int | None = None,
    steps: int | None = None,
    known_selectors: tuple[str, ...] = (),
) -> RunLog:
    """The first `k` steps of a run: a `frontier train` run directory, or a JSONL file plus
    pool_size, batch, rollouts and steps. ValueError in one line naming what is missing."""
    path = Path(path)
    selector, dynamic = "uniform", False
    if path.is_dir():
        metrics, info_path = path / "metrics.jsonl", path / "run.json"
        if not metrics.is_file():
            raise ValueError(
                f"{path} has no metrics.jsonl: pass a `frontier train` --out directory"
            )
        if not info_path.is_file():
            raise ValueError(f"{path} has no run.json: pass a `frontier train` --out directory")
        info = load_json_file(info_path, "a run.json", max_chars=1 << 20, max_depth=8)
        config = info.get("config") if isinstance(info, dict) else None
        if not isinstance(config, dict):
            raise ValueError(f"{info_path}: no 'config' object (not written by frontier train)")
        pool_size = _count(config, "train_size", info_path)
        batch = _count(config, "batch_size", info_path)
        rollouts = _count(config, "group_size", info_path)
        steps = _count(config, "steps", info_path)
        name = config.get("selector")
        selector = name if isinstance(name, str) and name in known_selectors else "uniform"
        try:  # a run written before TrainConfig.sampler names it by flat fields
            dynamic = legacy_train_fields(config).get("sampler") == "dynamic_sampling"
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{info_path}: unreadable sampler settings ({exc})") from None
    elif path.is_file():
        metrics = path
        missing = [
            flag
            for flag, value in (
                ("--fit-pool", pool_size), ("--batch", batch), ("--rollouts", rollouts),
                ("--steps", steps),
            )
            if value is None
        ]  # fmt: skip
        if missing:
            raise ValueError(f"{path} is a bare log: also pass {', '.join(missing)}")
    else:
        raise ValueError(f"{path} does not exist: pass a `frontier train` run directory or a JSONL")
    rewards, etrs, at, named, dapo = _read_steps(metrics, k, known_selectors)
    if not rewards:
        raise ValueError(
            f"{metrics}: no step record has a mean reward ({' or '.join(REWARD_KEYS)}) and an "
            f"ETR ({' or '.join(ETR_KEYS)}), nor the selector's {', '.join(SELECTOR_KEYS)} "
            "(every frontier-rft adapter logs them)"
        )
    if not path.is_dir() and named is not None:  # a bare log names its selector itself
        selector, dynamic = named, dapo
    if len(rewards) < START_STEPS + 2:
        raise ValueError(
            f"{metrics}: {len(rewards)} step record(s) in the run's first {k} steps; the fit "
            f"needs records of at least {START_STEPS + 2} steps: raise --fit-steps, or log "
            "more often (TRL logs every logging_steps)"
        )
    assert pool_size is not None and batch is not None and rollouts is not None and steps
    return RunLog(
        source=str(path),
        num_tasks=pool_size,
        batch=batch,
        rollouts=rollouts,
        steps=steps,
        selector=selector,
        dynamic_sampling=dynamic,
        reward_mean=np.asarray(rewards, dtype=np.float64),
        etr=np.asarray(etrs, dtype=np.float64),
        at=np.asarray(at, dtype=np.int64),
    )
