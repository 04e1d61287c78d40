"""One schema for every task family, so mixed datasets share a file format and a pool.

A `TaskItem` is what a trainer needs to roll a task out and score it: the prompt, the
reference data a verifier checks against (JSON-serialisable), and the metadata a
selector reads (difficulty level, domain). A `Verifier` maps (item, completion) to a
reward in [0, 1]. Datasets are JSONL files of `TaskItem.to_json()` records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from frontier_rft.core.jsonsafe import jsonl_records, loads_bounded
from frontier_rft.core.pool import TaskPool

__all__ = [
    "TaskItem",
    "TasksExhausted",
    "Verifier",
    "load_jsonl",
    "pool_from_items",
    "save_jsonl",
]


class TasksExhausted(ValueError):
    """A generator was asked for more distinct tasks than its levels hold (it gave up)."""

    def __init__(self, message: str, drawn: int):
        super().__init__(message)
        self.drawn = drawn
        """Distinct items drawn before it gave up: asking for this many (same seed) works."""


@dataclass(frozen=True)
class TaskItem:
    """One task: prompt, reference data for its verifier, and selector metadata."""

    task_id: int
    """Index of the task in its pool (stable across runs: selectors key on it)."""
    domain: str
    """Task family, e.g. 'countdown', 'math', 'rg:zebra_puzzles', 'code'."""
    prompt: str
    """The user message the policy answers."""
    reference: dict[str, Any] = field(default_factory=dict)
    """What the verifier checks against (numbers and target, answer, unit tests...)."""
    level: int = 0
    """Difficulty level (0 = easiest); becomes TaskPool.categories."""
    difficulty: float = 0.0
    """Offline difficulty score (larger = harder); becomes TaskPool.difficulty."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> TaskItem:
        """The item a to_json line holds; a ValueError when the line is not one."""
        return cls.from_record(
            loads_bounded(line, max_chars=MAX_LINE_CHARS, max_depth=MAX_DEPTH), "task record"
        )

    @classmethod
    def from_record(cls, data: Any, where: str) -> TaskItem:
        """The item a parsed to_json record holds; a ValueError naming `where` and the fault."""
        if not isinstance(data, dict):
            raise ValueError(f"{where} must be a JSON object, got {type(data).__name__}")
        unknown = sorted(map(str, set(data) - _FIELDS))
        if unknown:
            raise ValueError(f"{where}: unknown fields {', '.join(unknown):.200}")
        missing = sorted(_REQUIRED - set(data))
        if missing:
            raise ValueError(f"{where}: missing {', '.join(missing)}")
        kinds = {"task_id": int, "level": int, "domain": str, "prompt": str, "reference": dict}
        for key, kind in kinds.items():
            value = data.get(key, kind())
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ValueError(f"{where}: {key} must be {kind.__name__}, got {value!r:.60}")
        difficulty = data.get("difficulty", 0.0)
        if not isinstance(difficulty, int | float) or isinstance(difficulty, bool):
            raise ValueError(f"{where}: difficulty must be a number, got {difficulty!r:.60}")
        return cls(**data)


MAX_LINE_CHARS = 1 << 24
"""Longest task line load_jsonl reads (a code task's prompt and tests fit many times over)."""
MAX_DEPTH = 32
"""Deepest JSON nesting load_jsonl parses (a reference is a few levels deep)."""
_FIELDS = {"task_id", "domain", "prompt", "reference", "level", "difficulty"}
_REQUIRED = {"task_id", "domain", "prompt"}


@runtime_checkable
class Verifier(Protocol):
    """Scores a completion for a task: a reward in [0, 1]. Never executes model output
    in-process; code tasks run in a sandboxed subprocess."""

    def score(self, item: TaskItem, completion: str) -> float: ...


def save_jsonl(items: Iterable[TaskItem], path: str | os.PathLike[str]) -> None:
    """Write items as JSONL (atomic: temp file + rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for item in items:
            fh.write(item.to_json() + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)


def load_jsonl(path: str | os.PathLike[str]) -> list[TaskItem]:
    """Read items written by save_jsonl; task ids must be 0..N-1 in order."""
    with open(path, encoding="utf-8") as fh:
        records = jsonl_records(fh, path, max_chars=MAX_LINE_CHARS, max_depth=MAX_DEPTH)
        items = [TaskItem.from_record(record, where) for where, record in records]
    for i, item in enumerate(items):
        if item.task_id != i:
            raise ValueError(f"{path}: line {i + 1} has task_id {item.task_id}, expected {i}")
    return items


def pool_from_items(
    items: Sequence[TaskItem], features: np.ndarray | None = None, **extra: Any
) -> TaskPool:
    """The TaskPool a selector sees for these items (categories = (level, domain) if mixed)."""
    domains = sorted({it.domain for it in items})
    level = np.array([it.level for it in items], dtype=np.int64)
    if len(domains) > 1:
        code = {d: k for k, d in enumerate(domains)}
        categories = np.stack([level, [code[it.domain] for it in items]], axis=1)
    else:
        categories = level
    return TaskPool(
        num_tasks=len(items),
        categories=categories,
        difficulty=np.array([it.difficulty for it in items], dtype=np.float64),
        features=features,
        prompts=tuple(it.prompt for it in items),
        **extra,
    )
