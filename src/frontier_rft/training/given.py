"""What the selector is given: the TaskPool a training run builds from its tasks.

A user of an RL trainer has prompts. The reference trainer therefore gives selectors, by
default, exactly what every user has plus what the trainer itself can compute for free:
the prompt text and the policy's own self-embeddings (mean-pooled hidden states of the
chat-templated prompt, `frontier_rft.features.policy_embeddings`), optionally refreshed
every K steps through `selector.refresh_features`. Richer metadata is given only when asked
for, and the run's `run.json` ("given", "evidence") and metrics say which was used.

| name            | TaskPool field       | where it comes from                                |
|-----------------|----------------------|----------------------------------------------------|
| `prompts`       | prompts              | the task text (always given)                       |
| `self`          | features             | the policy's mean-pooled hidden states (default)   |
| `categories`    | categories           | the generator's level (SEC arms)                   |
| `difficulty`    | difficulty           | the generator's offline difficulty score           |
| `task_features` | features, keys       | task-structured vectors (Countdown 14-d, sums 8-d) |
| `references`    | reference_pass_rates | `--reference-pass-rates FILE` (weak/strong rates)  |

`rich` = categories, difficulty, task_features (references come with their file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.pool import TaskPool
from frontier_rft.tasks.base import TaskItem

__all__ = ["GIVEN_NAMES", "SELF", "build_given_pool", "parse_given"]

SELF = "self"
GIVEN_NAMES = ("prompts", SELF, "categories", "difficulty", "task_features")
"""Metadata a training run can give its selector (references come with their file)."""
_PRESETS = {"rich": ("categories", "difficulty", "task_features")}


def parse_given(text: str) -> tuple[str, ...]:
    """'self' / 'prompts' / 'rich' / a comma list of GIVEN_NAMES -> canonical sorted names.

    `prompts` is always included. `self` and `task_features` both set the task features,
    so they exclude each other."""
    names: set[str] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        names.update(_PRESETS.get(part, (part,)))
    unknown = sorted(names - set(GIVEN_NAMES))
    if unknown or not names:
        raise ValueError(
            f"unknown metadata {unknown or text!r} in given={text!r}: choose from "
            f"{', '.join(GIVEN_NAMES)} (comma-separated), or 'rich' "
            "(= categories,difficulty,task_features)"
        )
    if {SELF, "task_features"} <= names:
        raise ValueError("given: 'self' and 'task_features' both set the task features; choose one")
    names.add("prompts")
    return tuple(n for n in GIVEN_NAMES if n in names)


def build_given_pool(
    items: Sequence[TaskItem],
    extras: dict[str, Any],
    given: Sequence[str],
    *,
    references: NDArray[np.float64] | None = None,
    embed: Callable[[], NDArray[np.float32]] | None = None,
) -> TaskPool:
    """The TaskPool of `items` restricted to the metadata named in `given`.

    `extras` are the task suite's pool extras (task-structured `features`, `keys`);
    `embed()` computes the policy self-embeddings (called only when `self` is given).
    """
    fields: dict[str, Any] = {"prompts": tuple(it.prompt for it in items)}
    if "categories" in given:
        fields["categories"] = np.array([it.level for it in items], dtype=np.int64)
    if "difficulty" in given:
        fields["difficulty"] = np.array([it.difficulty for it in items], dtype=np.float64)
    if "task_features" in given:
        if extras.get("features") is not None:
            fields["features"] = np.asarray(extras["features"], dtype=np.float64)
        if extras.get("keys") is not None:
            fields["keys"] = extras["keys"]
    if SELF in given:
        if embed is None:
            raise ValueError("given 'self' needs the policy to embed the prompts")
        fields["features"] = np.asarray(embed(), dtype=np.float64)
    if references is not None:
        fields["reference_pass_rates"] = references
    return TaskPool(num_tasks=len(items), **fields)
