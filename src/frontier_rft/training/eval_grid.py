"""An evaluation grid on a cost axis: the held-out score at the same points for every arm.

Arms that spend differently a step (more prompts a step, a filter that generates more) are
compared in cost: passes over the prompts, rollouts, or a named device's projected seconds. Read
at each arm's own evaluation steps, a time-to-score follows how often each arm was evaluated,
not what it learned. A grid fixes the points instead: every `spacing` units of its axis, the
run is evaluated in the state it holds there, the state after the last step that ended at or
before the point (a step that spans a point leaves the point to the state before it, which the
trainer keeps a copy of while the step runs). Every arm with the same grid is then read at the
same points of cost.

`TrainConfig.eval_grid` names the lines (`"h200:3.5"`, `"passes:0.25"`); the trainer advances
an `EvalClock` with each step's metrics row; the bench reads the same axes back from a run's
rows (`cumulative`, `serving_steps`), with the same per-step costs, so a point the trainer
evaluated is the point the report reads.
"""

from __future__ import annotations

import bisect
import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from frontier_rft.core.config import check, did_you_mean
from frontier_rft.sampling.logged_shape import step_shape
from frontier_rft.step_cost import CURVES, StepCostCurve, StepShape, load_curve

__all__ = [
    "GRID_AXES",
    "EvalClock",
    "GridEvaluations",
    "GridLine",
    "cumulative",
    "parse_grid",
    "projected_step_seconds",
    "serving_steps",
    "step_cost",
]

GRID_AXES: dict[str, str] = {
    "passes": "passes over the training prompts (prompts rolled out / pool size)",
    "rollouts": "rollouts generated",
    **{name: f"seconds projected on the shipped {name} step-cost curve" for name in CURVES},
}
"""Each axis a grid may lie on, and what its unit is."""
_MAX_POINTS = 100_000
"""Most grid points one line may place in a run (a spacing too fine for its axis is refused)."""


@dataclass(frozen=True)
class GridLine:
    """Evaluate every `spacing` units of `axis` (one line of an evaluation grid)."""

    axis: str
    """A key of GRID_AXES."""
    spacing: float
    """Units of the axis between two grid points (> 0)."""

    @classmethod
    def parse(cls, text: str) -> GridLine:
        """'h200:3.5' -> GridLine('h200', 3.5); a ValueError naming what is wrong."""
        axis, sep, number = str(text).partition(":")
        axis = axis.strip()
        check(
            bool(sep) and axis in GRID_AXES,
            f"eval_grid line {text!r}: write AXIS:SPACING with AXIS one of "
            f"{', '.join(GRID_AXES)}{did_you_mean(axis, GRID_AXES)}, e.g. passes:0.25",
        )
        try:
            spacing = float(number)
        except ValueError:
            spacing = math.nan
        check(
            math.isfinite(spacing) and spacing > 0,
            f"eval_grid line {text!r}: the spacing must be a finite number > 0",
        )
        return cls(axis, spacing)

    def words(self) -> str:
        """E.g. 'every 0.25 passes' or 'every 3.5 h200-projected seconds'."""
        unit = "" if self.axis in ("passes", "rollouts") else "-projected seconds"
        return f"every {self.spacing:g} {self.axis}{unit}"


def parse_grid(lines: Sequence[str]) -> tuple[GridLine, ...]:
    """The lines of an eval_grid, each axis at most once."""
    parsed = tuple(GridLine.parse(text) for text in lines)
    axes = [line.axis for line in parsed]
    check(len(set(axes)) == len(axes), f"eval_grid names an axis twice: {list(lines)}")
    return parsed


@cache
def _curve(name: str) -> StepCostCurve:
    return load_curve(name)


def step_cost(axis: str, row: Mapping[str, Any], *, pool_size: int, length: int) -> float:
    """What one step (its metrics row) cost along `axis`: its prompts over the pool, its
    rollouts, or its seconds on a shipped curve (its logged shape, every call at `length`
    decode steps, as the bench projects it; a shape beyond the curve costs 0, as there)."""
    if axis == "passes":
        return float(row.get("train/prompts", 0.0) or 0.0) / max(1, pool_size)
    if axis == "rollouts":
        return float(row.get("train/rollouts", 0.0) or 0.0)
    return projected_step_seconds(axis, step_shape(row, length))


@cache
def projected_step_seconds(curve: str, shape: StepShape) -> float:
    """A step's seconds on shipped curve `curve` (0 for a shape beyond it), cached: a run's
    steps repeat a few shapes, and a report prices every step of every run."""
    seconds = _curve(curve).step_seconds(shape)
    return seconds if math.isfinite(seconds) else 0.0


def cumulative(
    axis: str, rows: Sequence[Mapping[str, Any]], *, pool_size: int, length: int
) -> list[float]:
    """The cost along `axis` before step 0 and after each step of `rows` (one row a step)."""
    out = [0.0]
    for row in rows:
        out.append(out[-1] + step_cost(axis, row, pool_size=pool_size, length=length))
    return out


def _first_point_at_or_after(x: float, spacing: float) -> float:
    j = math.ceil(x / spacing)
    while j * spacing < x:  # float rounding of the division
        j += 1
    while j > 0 and (j - 1) * spacing >= x:
        j -= 1
    return j * spacing


def serving_steps(spent: Sequence[float], spacing: float) -> list[tuple[float, int]]:
    """(grid point, step) for every point within the run's spend `spent` (cost before step 0
    and after each step): the state that holds there is the last step that ended at or
    before it."""
    points = math.floor(spent[-1] / spacing + 1e-9) + 1
    check(points <= _MAX_POINTS, f"an evaluation grid of spacing {spacing:g} is too fine")
    out = []
    for j in range(points):
        g = j * spacing
        out.append((g, bisect.bisect_right(spent, g) - 1))
    return out


class EvalClock:
    """The cost a run has spent along each grid line, advanced a step at a time; says when a
    step spanned a grid point (then the state before that step holds at the point)."""

    def __init__(self, lines: Sequence[GridLine], *, pool_size: int, length: int):
        self.lines = tuple(lines)
        self.pool_size = pool_size
        self.length = length
        self.spent = {line.axis: 0.0 for line in self.lines}
        """Cost spent so far along each axis."""
        self.evaluated_step = -1
        """The last step whose state was evaluated (so a state is never evaluated twice)."""

    def advance(self, row: Mapping[str, Any]) -> bool:
        """Add one step's cost; True when a grid point lies in [before, after) on some line."""
        crossed = False
        for line in self.lines:
            before = self.spent[line.axis]
            after = before + step_cost(line.axis, row, pool_size=self.pool_size, length=self.length)
            self.spent[line.axis] = after
            crossed |= _first_point_at_or_after(before, line.spacing) < after
        return crossed

    def state_dict(self) -> dict[str, Any]:
        """The spend and the last evaluated step, for a checkpoint."""
        return {"spent": dict(self.spent), "evaluated_step": self.evaluated_step}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore `state_dict`; a checkpoint of another grid is refused by name."""
        spent = state.get("spent")
        check(
            isinstance(spent, dict) and sorted(spent) == sorted(self.spent),
            f"the checkpoint's evaluation grid ({sorted(spent or {})}) is not this run's "
            f"({sorted(self.spent)}): resume with the saved eval_grid",
        )
        assert isinstance(spent, dict)
        self.spent = {axis: float(spent[axis]) for axis in self.spent}
        self.evaluated_step = int(state.get("evaluated_step", -1))


class GridEvaluations:
    """The trainer's side of a grid: its clock, the copy of the policy a step began from, and
    the evaluation of that copy where the step spanned a grid point (once a state)."""

    def __init__(self, grid: Sequence[str], *, pool_size: int, length: int):
        self.clock = EvalClock(parse_grid(grid), pool_size=pool_size, length=length)
        self._copy: Any = None

    def before_step(self, model: Any) -> None:
        """Keep a copy of the policy as the step begins (the state a spanned point reads)."""
        if self._copy is None:
            self._copy = copy.deepcopy(model)
        self._copy.load_state_dict(model.state_dict())

    def after_step(
        self, metrics: Mapping[str, Any], step: int, evaluate: Callable[[Any, int], None]
    ) -> None:
        """Advance the clock by step `step` (its metrics row); where it spanned a point,
        `evaluate(copy, step - 1)` unless that state was evaluated already."""
        if self.clock.advance(metrics) and self.clock.evaluated_step != step - 1:
            evaluate(self._copy, step - 1)
