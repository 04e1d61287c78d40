"""A TaskPool and a selector from a trainer's dataset columns (shared by the TRL and verl adapters).

What a user of a trainer has is a dataset. Its prompt text is always there and is the pool's
default evidence (each selector derives what it needs from it, see `frontier selectors`);
columns the user names add richer metadata:

| adapter option (TRL `*_column`, verl `*_key`) | TaskPool field | used by |
|---|---|---|
| prompt | `prompts` (text; chat messages joined as `role: content`) | everyone that derives |
| category (one or more columns) | `categories` (labels in order of first appearance) | sec |
| difficulty | `difficulty` (larger = harder) | offline, adcl |
| pass rates (weak, strong) | `reference_pass_rates` | bots interpolation, dots |
| features | `features` (one vector per row) | pcl, frontier, bots, sec clusters |

A key with a dot reads inside a mapping column (`extra_info.level`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import SelectorConfig, config_from_dict, did_you_mean
from frontier_rft.core.feedback import refused_rewards
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.features.text import prompt_text
from frontier_rft.selectors import SELECTORS
from frontier_rft.selectors.registry import check_selector_name

__all__ = [
    "PoolColumns",
    "SelectorSpec",
    "build_pool",
    "column_problems",
    "evidence_summary",
    "judge_problem",
    "make_pool_selector",
    "prompt_text",
    "refused_rewards",
    "reward_pair",
]

ColumnReader = Callable[[str], Sequence[Any]]
"""Returns every row's value of a top-level column, in dataset order."""


@dataclass(frozen=True)
class PoolColumns:
    """Which dataset columns (or `column.field` paths) hold which metadata."""

    prompt: str | None = "prompt"
    """Prompt text, or a list of chat messages; None: no prompt text."""
    categories: tuple[str, ...] = ()
    """Category columns (several make joint arms, e.g. source and level)."""
    difficulty: str | None = None
    """Numeric difficulty, larger = harder."""
    pass_rates: tuple[str, ...] = ()
    """Two columns: the weak and the strong reference model's pass rate in [0, 1]."""
    features: str | None = None
    """One numeric vector per row (your own embeddings)."""

    def __post_init__(self) -> None:
        if len(self.pass_rates) not in (0, 2):
            raise ValueError(
                f"pass rate columns must be two (weak, strong), got {list(self.pass_rates)}"
            )


def _values(read: ColumnReader, key: str, names: Sequence[str]) -> list[Any]:
    head, _, rest = key.partition(".")
    if head not in names:
        raise ValueError(
            f"the dataset has no column {head!r}{did_you_mean(head, names)} "
            f"(columns: {', '.join(names)})"
        )
    values = list(read(head))
    for part in rest.split(".") if rest else ():
        out = []
        for i, v in enumerate(values):
            if not isinstance(v, Mapping) or part not in v:
                raise ValueError(f"row {i} of column {head!r} has no field {part!r} ({key!r})")
            out.append(v[part])
        values = out
    return values


def column_problems(
    names: Sequence[str],
    wanted: Sequence[tuple[str, str]],
    first_row: Mapping[str, Any] | None = None,
) -> list[str]:
    """One message per `(option, key)` whose column the data lacks (`names`: its columns),
    with the closest existing name; a `column.field` key is also looked up in `first_row`
    when given. Cheap: reads no column, so it runs before anything slow."""
    out = []
    for option, key in wanted:
        head, _, rest = key.partition(".")
        if head not in names:
            out.append(f"{option}: no column {head!r}{did_you_mean(head, names)}")
            continue
        value = None if first_row is None else first_row.get(head)
        for part in rest.split(".") if rest else ():
            if not isinstance(value, Mapping):
                break  # unknown layout (or no row given): the full read will tell
            if part not in value:
                hint = did_you_mean(part, [str(k) for k in value])
                out.append(f"{option}: column {head!r} has no field {part!r} ({key}){hint}")
                break
            value = value[part]
    return out


def _numbers(values: Sequence[Any], key: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column {key!r} must hold numbers ({exc})") from exc
    if not np.all(np.isfinite(arr)):
        bad = int(np.argmax(~np.isfinite(arr)))
        raise ValueError(f"column {key!r} has a missing or non-finite value at row {bad}")
    return arr


def _pass_rates(values: Sequence[Any], key: str) -> NDArray[np.float64]:
    """A pass-rate column: numbers in [0, 1], or a ValueError naming the column and row."""
    arr = _numbers(values, key)
    outside = (arr < 0) | (arr > 1)
    if outside.any():
        row = int(np.argmax(outside))
        raise ValueError(
            f"column {key!r} holds pass rate {arr[row]:g} at row {row}; pass rates must lie "
            "in [0, 1] (a fraction of rollouts solved, not a percentage)"
        )
    return arr


def _labels(values: Sequence[Any], key: str) -> NDArray[np.int64]:
    """Dense integer labels, numbered in order of first appearance."""
    codes: dict[Any, int] = {}
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise ValueError(f"column {key!r} has no category at row {i}")
        label = v if isinstance(v, str | int | float | bool) else repr(v)
        out[i] = codes.setdefault(label, len(codes))
    return out


def build_pool(
    read: ColumnReader,
    names: Sequence[str],
    num_rows: int,
    columns: PoolColumns,
    row_of_task: NDArray[np.int64] | None = None,
    features: NDArray[np.floating[Any]] | None = None,
) -> TaskPool:
    """A TaskPool whose task t is dataset row `row_of_task[t]` (default: row t).

    `features` (rows in dataset order) override the features column, e.g. self-embeddings."""
    rows = np.arange(num_rows) if row_of_task is None else np.asarray(row_of_task, np.int64)
    fields: dict[str, Any] = {}
    if columns.prompt is not None:
        texts = [prompt_text(v) for v in _values(read, columns.prompt, names)]
        fields["prompts"] = [texts[r] for r in rows]
    if columns.categories:
        cats = np.stack([_labels(_values(read, c, names), c) for c in columns.categories], axis=1)
        fields["categories"] = cats[rows, 0] if cats.shape[1] == 1 else cats[rows]
    if columns.difficulty is not None:
        key = columns.difficulty
        fields["difficulty"] = _numbers(_values(read, key, names), key)[rows]
    if columns.pass_rates:
        weak, strong = (_pass_rates(_values(read, c, names), c) for c in columns.pass_rates)
        fields["reference_pass_rates"] = np.stack([weak, strong], axis=1)[rows]
    if features is not None:
        fields["features"] = np.asarray(features, dtype=np.float64)[rows]
    elif columns.features is not None:
        key = columns.features
        try:
            vectors = np.asarray(_values(read, key, names), dtype=np.float64)
        except ValueError as exc:
            raise ValueError(f"column {key!r} must hold equal-length number lists") from exc
        if vectors.ndim != 2:
            raise ValueError(f"column {key!r} must hold one vector per row, got {vectors.shape}")
        fields["features"] = vectors[rows]
    return TaskPool(num_tasks=int(rows.shape[0]), **fields)


@dataclass(frozen=True)
class SelectorSpec:
    """An adapter's selector options, read once: the registered class, its config (None
    where the overrides are refused: `build` raises why, the preflight checks name each
    problem), the overrides and the judge. What the checks before a model loads ask is
    answered from the facts the class declares; `build` makes the selector."""

    name: str
    cls: type[Selector]
    overrides: Mapping[str, Any]
    config: SelectorConfig | None
    judge: str | None

    @classmethod
    def read(
        cls, name: str, overrides: Mapping[str, Any] | None = None, judge: str | None = None
    ) -> SelectorSpec:
        """The spec of selector `name` (ValueError naming the closest for an unknown one)."""
        check_selector_name(name)
        selector = SELECTORS[name]
        given = dict(overrides or {})
        fields = {k: v for k, v in given.items() if k not in selector.collaborators}
        try:
            config: SelectorConfig | None = config_from_dict(selector.config_class, fields)
        except (TypeError, ValueError):
            config = None
        return cls(name, selector, given, config, judge)

    def requirement_problems(self, given: set[str], options: Mapping[str, str]) -> list[str]:
        """The metadata this selector cannot run without (`Selector.requirement`) when the
        pool the adapter builds has none of it: `given` are the TaskPool fields the adapter's
        options supply ('prompts', 'reference_pass_rates', ...), `options` the setting that
        supplies each field, in the adapter's words (`pass_rate_columns: [WEAK, STRONG]`)."""
        if self.config is None:
            return []
        need = self.cls.requirement(self.config)
        if need is None or any(f in given for f in need.fields):
            return []
        ways = [options[f] for f in need.fields if f in options]
        ways += [f"selector_config: {{{k}: {v}}} ({what})" for k, v, what in need.instead]
        fields = " or ".join(f.replace("_", " ") for f in need.fields)
        return [f"selector {self.name!r} needs {fields} ({need.why}): set {'; or '.join(ways)}"]

    def reward_bounds(self, given: set[str] | frozenset[str]) -> tuple[float, float] | None:
        """The rewards it accepts over a pool holding the fields `given` (None: any finite
        reward); (0, 1), the strictest, where its config is refused (the checks say why)."""
        if self.config is None:
            return (0.0, 1.0)
        return self.cls.reward_bounds_for(self.config, frozenset(given))

    def reads_features(self, pool: TaskPool) -> bool:
        """Whether, built on `pool` (prompts, no features), it derives task features: then
        self-embeddings would replace its text features."""
        if pool.features is not None or self.config is None:
            return False
        return self.cls.reads_features(self.config, pool.given())

    def build(self, pool: TaskPool, seed: int) -> Selector:
        """The selector over `pool`; `judge='heuristic'` gives a selector that takes a judge
        (METIS) the packaged non-LLM one, its class's default (`metis/non_llm_judge`)."""
        problem = judge_problem(self.name, self.judge)
        if problem is not None:
            raise ValueError(problem)
        names = self.cls.collaborators
        collaborators = {k: v for k, v in self.overrides.items() if k in names}
        if self.judge is not None:
            collaborators["judge"] = self.cls.default_collaborators()["judge"]
        config = self.config
        if config is None:  # refused: the same call again, for its message
            fields = {k: v for k, v in self.overrides.items() if k not in names}
            config = config_from_dict(self.cls.config_class, fields, what=f"selector {self.name!r}")
        return self.cls(pool, config, seed=seed, **collaborators)


def make_pool_selector(
    name: str,
    pool: TaskPool,
    seed: int,
    config: Mapping[str, Any] | None = None,
    judge: str | None = None,
) -> Selector:
    """make_selector with an adapter's options (`SelectorSpec.build`)."""
    return SelectorSpec.read(name, config, judge).build(pool, seed)


def _takes_a_judge(name: str) -> bool:
    """Whether selector `name` declares a `judge` collaborator (it cannot run without one)."""
    cls = SELECTORS.get(name)
    return cls is not None and "judge" in cls.collaborators


def judge_problem(name: str, judge: str | None) -> str | None:
    """What is wrong with an adapter's (selector, judge) pair, or None: only a selector that
    takes a judge (METIS) takes one, 'heuristic' is the one an adapter builds, and such a
    selector needs one."""
    if judge is not None and judge != "heuristic":
        return f"judge must be 'heuristic' or unset, got {judge!r}"
    if judge is not None and not _takes_a_judge(name):
        judged = " or ".join(repr(n) for n in SELECTORS if _takes_a_judge(n))
        return f"judge applies to selector {judged} only, not {name!r}"
    if judge is None and _takes_a_judge(name):
        return (
            f"{name} needs a judge: pass a ready selector (make_selector({name!r}, pool, "
            "judge=your_llm_judge)) or set selector_judge: heuristic for the packaged non-LLM judge"
        )
    return None


def evidence_summary(selector: Selector) -> str:
    """'features=policy, plugin=regression' (or 'rewards only') for a log line."""
    items = [f"{k}={v}" for k, v in sorted(selector.evidence.items())]
    return ", ".join(items) if items else "rewards only"


def reward_pair(value: Any) -> tuple[float, float] | None:
    """(low, high) from any two-number sequence (list, tuple, array, OmegaConf list) with
    finite low < high; None when `value` is not one."""
    if isinstance(value, str | bytes | Mapping) or not hasattr(value, "__len__"):
        return None  # a mapping ({lo: 0, hi: 1}) has two entries but no positions
    try:
        if len(value) != 2:
            return None
        lo, hi = value[0], value[1]
    except (LookupError, TypeError):  # a set, or a sized type that cannot be indexed
        return None
    if not all(
        isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in (lo, hi)
    ):
        return None
    lo, hi = float(lo), float(hi)
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) and lo < hi else None
