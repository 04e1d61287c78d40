"""Task suites: a family's generator, verifier and demonstrations, held-out splits, pools.

What the reference trainer, the real-RL benchmark and ZIP-RC-Lite inference load a task
family through (`load_task`). The training pool, the SFT demonstrations and the held-out
split are disjoint by construction: a task is held out when a hash of its canonical key
(target and sorted numbers for Countdown) falls in one bucket of HELDOUT_BUCKETS, whatever
seed generated it. So no seed choice can leak an evaluation task into training.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from frontier_rft.core.pool import TaskPool
from frontier_rft.tasks import arithmetic, countdown
from frontier_rft.tasks.base import TaskItem, TasksExhausted, Verifier, pool_from_items
from frontier_rft.tasks.countdown_features import countdown_features, countdown_key, countdown_keys

__all__ = [
    "HELDOUT_BUCKETS",
    "TASKS",
    "SplitTooLarge",
    "TaskSuite",
    "build_pool",
    "countdown_levels",
    "heldout_split",
    "is_heldout",
    "load_task",
    "task_key",
    "train_split",
]

HELDOUT_BUCKETS = 8
"""One key-hash bucket in this many is reserved for evaluation."""


@dataclass(frozen=True)
class TaskSuite:
    """What a trainer or an evaluation needs from a task family."""

    name: str
    """Task family name (one of TASKS)."""
    generate: Callable[[int, int, str], list[TaskItem]]
    """generate(n, seed, levels) -> items with ids 0..n-1 and level = position in `levels`."""
    verifier: Verifier
    """Scores a completion in [0, 1]."""
    demonstration: Callable[[TaskItem], str]
    """A correct completion (solver output) for supervised warm start."""
    pool_extras: Callable[[Sequence[TaskItem]], dict[str, Any]]
    """TaskPool metadata beyond levels/difficulty/prompts (features, keys)."""


def _countdown_extras(items: Sequence[TaskItem]) -> dict[str, Any]:
    numbers = [it.reference["numbers"] for it in items]
    targets = [it.reference["target"] for it in items]
    return {
        "features": countdown_features(numbers, targets),
        "keys": tuple(countdown_keys(numbers, targets)),
    }


def countdown_levels(spec: str) -> list[countdown.CountdownLevel]:
    """Parse '2x20,3x20,4x20' (N numbers drawn from 1..M, targets 1..999) or '3,4' (the
    task's default ranges for N numbers) into CountdownLevel specs, in order."""
    out = []
    for part in (p.strip() for p in spec.split(",")):
        count, sep, top = part.partition("x")
        try:
            n = int(count)
            if not sep:
                out.append(countdown.COUNTDOWN_LEVELS[n])
                continue
            out.append(countdown.CountdownLevel(n, 1, int(top), min_target=1, max_target=999))
        except (ValueError, KeyError) as exc:
            raise ValueError(
                f"bad countdown level {part!r} in {spec!r}: write N (default ranges, N in "
                f"{sorted(countdown.COUNTDOWN_LEVELS)}) or NxM (N numbers from 1..M), "
                "e.g. '2x20,3x20'"
            ) from exc
    return out


def _generate_countdown(n: int, seed: int, levels: str) -> list[TaskItem]:
    specs = countdown_levels(levels)
    items = countdown.generate_countdown(n, seed, levels=specs)
    # generate_countdown cycles through `specs` in order and numbers its levels by count
    # of numbers (2 and 3 numbers share level 0); our level is the position in the list.
    return [dataclasses.replace(it, level=i % len(specs)) for i, it in enumerate(items)]


def _generate_arithmetic(n: int, seed: int, levels: str) -> list[TaskItem]:
    return arithmetic.generate_addition(n, seed, arithmetic.addition_levels(levels))


def _arithmetic_extras(items: Sequence[TaskItem]) -> dict[str, Any]:
    return {
        "features": arithmetic.addition_features(items),
        "keys": tuple(task_key(it) for it in items),
    }


class _Family(NamedTuple):
    """A task family as `load_task` assembles it: the verifier is built per call."""

    generate: Callable[[int, int, str], list[TaskItem]]
    verifier: Callable[..., Verifier]
    demonstration: Callable[[TaskItem], str]
    pool_extras: Callable[[Sequence[TaskItem]], dict[str, Any]]


_FAMILIES = {
    "countdown": _Family(
        _generate_countdown,
        countdown.CountdownVerifier,
        countdown.countdown_demonstration,
        _countdown_extras,
    ),
    "arithmetic": _Family(
        _generate_arithmetic,
        arithmetic.ArithmeticVerifier,
        arithmetic.addition_demonstration,
        _arithmetic_extras,
    ),
}
TASKS = tuple(_FAMILIES)
"""The task families `load_task` knows."""


def load_task(name: str, format_reward: float | None = None) -> TaskSuite:
    """The TaskSuite of a task family.

    `format_reward` overrides the reward of a well-formatted wrong answer (None keeps the
    task's default; 0 makes the reward binary success)."""
    if name not in _FAMILIES:
        raise ValueError(f"unknown task {name!r}; available: {', '.join(TASKS)}")
    family = _FAMILIES[name]
    options = {} if format_reward is None else {"format_reward": float(format_reward)}
    verifier = family.verifier(**options)
    return TaskSuite(name, family.generate, verifier, family.demonstration, family.pool_extras)


def task_key(item: TaskItem) -> str:
    """Canonical identity of a task: Countdown by (target, sorted numbers), arithmetic by its
    operation and operands (sorted for sums and products), else its prompt."""
    ref = item.reference
    if item.domain == "arithmetic":
        key = arithmetic.arithmetic_key(ref)
        if key is not None:
            return key
    if item.domain == "countdown" and "numbers" in ref and "target" in ref:
        return countdown_key(ref["numbers"], ref["target"])
    return f"{item.domain}|{item.prompt}"


def is_heldout(item: TaskItem) -> bool:
    """True for tasks reserved for evaluation (one key-hash bucket of HELDOUT_BUCKETS)."""
    digest = hashlib.sha256(task_key(item).encode("utf-8")).digest()
    return digest[0] % HELDOUT_BUCKETS == 0


class SplitTooLarge(ValueError):
    """A split asked for more distinct tasks than its levels hold for that seed."""

    def __init__(self, message: str, capacity: int | None):
        super().__init__(message)
        self.capacity = capacity
        """The largest split these levels give for this seed (None: not known)."""


@dataclass(frozen=True)
class _Split:
    """Which tasks a split keeps, and how many it draws per task asked for at first."""

    name: str
    keep: Callable[[TaskItem], bool]
    oversample: float


_TRAIN = _Split("training", lambda it: not is_heldout(it), 1.25)
_HELDOUT = _Split("held-out", is_heldout, 1.25 * HELDOUT_BUCKETS)
_GROWTHS = 12
"""Draws a split tries, each 1.5x the one before, before it gives up."""


def _draws(n: int, split: _Split) -> list[int]:
    """The sizes of the draws a split of n tries, in order."""
    sizes = [int(n * split.oversample) + 8]
    while len(sizes) < _GROWTHS:
        sizes.append(int(sizes[-1] * 1.5))
    return sizes


def _filtered(suite: TaskSuite, n: int, seed: int, levels: str, split: _Split) -> list[TaskItem]:
    """The first n distinct-key items satisfying `split.keep`, ids renumbered 0..n-1.

    The generators draw a seeded stream, so a larger draw extends a smaller one.
    """
    for want in _draws(n, split):  # grow the draw until enough items survive the filter
        try:
            items = suite.generate(want, seed, levels)
        except TasksExhausted as exc:
            capacity = _split_capacity(suite, seed, levels, split, exc.drawn)
            raise SplitTooLarge(
                f"levels {levels!r} hold at most {capacity} distinct {split.name} tasks for "
                f"seed {seed}, not {n}; ask for fewer tasks or widen the number range "
                "(e.g. 2x30 instead of 2x20)",
                capacity,
            ) from exc
        except ValueError as exc:
            raise SplitTooLarge(
                f"levels {levels!r} have too few distinct tasks for a split of {n} ({exc}); "
                "ask for fewer tasks or widen the number range (e.g. 2x30 instead of 2x20)",
                None,
            ) from exc
        out = _first_distinct(items, n, split.keep)
        if len(out) == n:
            return out
    raise SplitTooLarge(f"could not generate {n} distinct tasks of levels {levels!r}", None)


def _first_distinct(
    items: Sequence[TaskItem], n: int, keep: Callable[[TaskItem], bool]
) -> list[TaskItem]:
    """Up to n items of distinct keys that `keep` accepts, in order, ids renumbered."""
    out: list[TaskItem] = []
    seen: set[str] = set()
    for it in items:
        key = task_key(it)
        if key in seen or not keep(it):
            continue
        seen.add(key)
        out.append(dataclasses.replace(it, task_id=len(out)))
        if len(out) == n:
            break
    return out


def _split_capacity(suite: TaskSuite, seed: int, levels: str, split: _Split, drawn: int) -> int:
    """The largest n for which `_filtered` succeeds, given that the seed's stream ends after
    `drawn` items: the same draws and filter, replayed on prefixes of that stream."""
    stream = suite.generate(drawn, seed, levels)
    kept = [0]  # kept[w]: items the filter keeps among the first w drawn
    seen: set[str] = set()
    for it in stream:
        key = task_key(it)
        fresh = key not in seen and split.keep(it)
        if fresh:
            seen.add(key)
        kept.append(kept[-1] + fresh)
    for n in range(kept[-1], -1, -1):
        for want in _draws(n, split):
            if want > drawn:
                break
            if kept[want] >= n:
                return n
    return 0


def train_split(suite: TaskSuite, n: int, seed: int, levels: str) -> list[TaskItem]:
    """n distinct training tasks (never a held-out key); SplitTooLarge past what `levels` hold."""
    return _filtered(suite, n, seed, levels, _TRAIN)


def heldout_split(suite: TaskSuite, n: int, seed: int, levels: str) -> list[TaskItem]:
    """n distinct held-out tasks (held-out keys only); SplitTooLarge past what `levels` hold."""
    return _filtered(suite, n, seed, levels, _HELDOUT)


def build_pool(
    suite: TaskSuite, items: Sequence[TaskItem], reference_pass_rates: Any = None
) -> TaskPool:
    """TaskPool of items: levels as categories, difficulty, prompts, plus the suite's extras
    (and (N, 2) weak/strong reference pass rates for BOTS when given)."""
    extras = suite.pool_extras(items)
    features = extras.pop("features", None)
    if reference_pass_rates is not None:
        extras["reference_pass_rates"] = reference_pass_rates
    return pool_from_items(items, features=features, **extras)
