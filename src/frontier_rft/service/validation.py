"""Boundary checks of the selector service: nothing is acknowledged or logged before them.

A value that passed the selector's own validation could still poison a service: a step
or policy version that does not fit in int64 breaks every later state_dict and save,
and, once in the write-ahead log, every restart; a far-future policy version makes
every later update look stale. The service therefore checks, before it applies or logs
anything:

- steps and policy versions: integers in [0, MAX_INTEGER] (2**53 - 1: exact in float64
  and in every JSON reader, and far beyond any trainer's step count);
- rewards: |r| <= MAX_ABS_REWARD (1e12), so sums over many rollouts stay finite in
  every selector's arithmetic (rescale larger rewards);
- policy versions from workers: at most `max_version_jump` ahead of the newest version
  the service has seen (0 before any), see ServiceConfig.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.feedback import Feedback

__all__ = [
    "MAX_ABS_REWARD",
    "MAX_INTEGER",
    "Checked",
    "check_feedback",
    "check_integer",
    "check_jump",
    "check_record",
]

MAX_INTEGER = 2**53 - 1
"""Largest step or policy version the service accepts."""
MAX_ABS_REWARD = 1e12
"""Largest reward magnitude the service accepts."""

Checked = tuple[NDArray[np.int64], NDArray[np.float64], int, int | None]
"""(task ids, rewards, step, policy version) of a feedback that passed every check."""


def check_integer(value: Any, name: str, *, optional: bool = False) -> int | None:
    """`value` as an int in [0, MAX_INTEGER] (None passes when optional), else ValueError."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an int, got {value!r}")
    v = int(value)
    if not 0 <= v <= MAX_INTEGER:
        raise ValueError(f"{name} must lie in [0, 2**53 - 1], got {v}")
    return v


def check_record(record: Any) -> dict[str, Any]:
    """A logged operation read back from disk, checked before anything is replayed: the
    fields every operation and its kind need, with the bounds a live call has."""
    if not isinstance(record, dict):
        raise ValueError(f"log record {str(record)[:60]!r} is not an object")
    seq = check_integer(record.get("seq"), "log record seq")
    where = f"log record {seq}"
    op = record.get("op")
    if not isinstance(op, str):
        raise ValueError(f"{where}: no operation name ('op')")
    if op == "select":
        n = check_integer(record.get("n"), f"{where}: select size n")
        check_integer(record.get("v"), f"{where}: policy version v", optional=True)
        t = record.get("t")
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
            raise ValueError(f"{where}: select time t must be a finite number, got {t!r}")
        ids = record.get("ids")
        if not isinstance(ids, list) or len(ids) != n:
            raise ValueError(f"{where}: select ids must be a list of {n} task ids")
    elif op == "version":
        check_integer(record.get("v"), f"{where}: policy version v")
    elif op in ("propose", "split"):  # a shard's rounds (shard.py): the trainer's version
        check_integer(record.get("v"), f"{where}: policy version v", optional=True)
    return record


def check_feedback(
    feedback: Any, num_tasks: int, reward_bounds: tuple[float, float] | None
) -> Checked:
    """The selector's validation plus the service's bounds; raises ValueError, changes nothing."""
    if not isinstance(feedback, Feedback):
        raise ValueError(f"update expects a frontier_rft.Feedback, got {type(feedback).__name__}")
    step = check_integer(feedback.step, "Feedback.step")
    version = check_integer(feedback.policy_version, "Feedback.policy_version", optional=True)
    assert step is not None
    ids, rewards = feedback.validated(num_tasks, reward_bounds)
    big = np.abs(rewards) > MAX_ABS_REWARD
    if np.any(big):
        pos = int(np.argmax(big))
        raise ValueError(
            f"Feedback.rewards must lie within +-{MAX_ABS_REWARD:g} for the selector service; "
            f"got {float(rewards[pos])!r} at position {pos}: rescale the rewards"
        )
    return ids, rewards, step, version


def check_jump(version: int | None, newest: int, limit: int | None, name: str) -> None:
    """Refuse a policy version more than `limit` ahead of the newest seen (-1: none yet)."""
    if version is None or limit is None:
        return
    base = max(newest, 0)
    if version - base > limit:
        raise ValueError(
            f"{name} {version} is {version - base} ahead of the newest policy version "
            f"{newest} (limit max_version_jump={limit}): a version that far ahead would make "
            "every later update look stale. Announce a real jump with set_policy_version, "
            "or raise ServiceConfig.max_version_jump"
        )
