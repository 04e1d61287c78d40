"""The step to start at before the noise meter has read anything: the least worst-case regret.

The planner (step_cost/planner.py) picks the rows B a step minimising the device seconds to a
given progress, T(B) = S_min (1 + B_noise / B) t(B), and needs the noise scale B_noise, which a
run measures only after some metered steps. Before that, every B_noise >= 0 is possible. A
start of B rows then risks at most

    R(B) = sup over B_noise >= 0 of  T(B; B_noise) / min over B' of T(B'; B_noise),

the factor by which its seconds exceed the best candidate's had the noise scale been known
(S_min cancels). The start is the candidate with the least R (ties: fewer rows): a minimax-regret
choice that needs no guess of the noise scale, only the cost curve.

**Exact.** With K fixed, T(B; x) = t(B) + (t(B) / B) x is a line in x = B_noise (intercept
t(B), slope t(B) / B). The best candidate's seconds E(x) = min over B' is their lower envelope,
concave and piecewise linear. On each piece T(B; x) / E(x) is a ratio of two lines, monotone in
x, so the supremum lies at x = 0 (t(B) / min t), at a breakpoint of the envelope, or as x grows
without bound ((t(B) / B) / min (t / B)). `start_plan` walks the envelope and reads R at those
points; nothing is sampled.

On a latency-bound device (t nearly flat in B up to a knee) R is least well above the smallest
step: more rows cost almost nothing and are worth much if B_noise is large. On a device whose
step grows in proportion to its rows (a CPU) the smallest step risks least.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from frontier_rft.step_cost.planner import COST_KINDS, StepCost, sqrt_lr_factor

__all__ = ["MAX_START_CANDIDATES", "START_LR_CAP", "StartPlan", "start_plan"]

MAX_START_CANDIDATES = 4_096
"""The most prompt counts one start weighs (the walk is quadratic in them at worst: ~0.5 s)."""
START_LR_CAP = 2.0
"""The cap on the square-root rule's advice, either way (the planner's default)."""


def _fail(message: str) -> NoReturn:
    raise ValueError(f"start plan: {message}")


@dataclass(frozen=True)
class StartPlan:
    """Where a run starts before the meter has read anything, and what it risks."""

    prompts: int
    """Prompts a step to start at."""
    rollouts: int
    """Rollouts a prompt (the run's group size)."""
    worst_ratio: float
    """R: the most its device seconds to any progress exceed the best candidate's, over every
    noise scale."""
    configured_ratio: float
    """R of the smallest candidate (the configured step), for comparison."""
    configured_prompts: int
    """The smallest candidate's prompts (the configured step)."""
    lr_factor: float
    """The square-root rule's factor against the configured step, capped (a rule of thumb)."""
    cost_kind: str
    """COST_KINDS key of the cost read."""
    cost_source: str
    """Which curve or fit, at what length."""

    @property
    def rows(self) -> int:
        return self.prompts * self.rollouts

    def describe(self) -> str:
        """One line: the start, what it risks, and the evidence it read."""
        return (
            f"start plan: {self.rows:,} rows a step ({self.prompts:,} prompts x {self.rollouts} "
            f"rollouts) before the noise meter has read anything: at most {self.worst_ratio:.3g}x "
            "the device seconds of the best step to the same progress, whatever the noise scale "
            f"(the configured step, {self.configured_prompts * self.rollouts:,} rows: up to "
            f"{self.configured_ratio:.3g}x), on "
            f"{COST_KINDS[self.cost_kind]}, {self.cost_source}; then meter the run and plan "
            "from its noise scale (frontier plan-batch RUN)"
        )


def _envelope_points(intercept: np.ndarray, slope: np.ndarray) -> list[float]:
    """The x >= 0 where the lower envelope of the lines intercept + slope x changes line."""
    points: list[float] = []
    x = 0.0
    # The line lowest at 0; among ties the flattest, which stays lowest after 0.
    current = int(np.lexsort((slope, intercept))[0])
    while True:
        flatter = slope < slope[current]
        if not flatter.any():
            return points
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = (intercept - intercept[current]) / (slope[current] - slope)
        cross = np.where(flatter, np.maximum(cross, x), np.inf)
        at = float(cross.min())
        if not math.isfinite(at):
            return points
        # Of the lines meeting there, the flattest takes over.
        ties = np.flatnonzero(cross <= at * (1 + 1e-12))
        current = int(ties[np.argmin(slope[ties])])
        x = at
        points.append(at)


def start_plan(cost: StepCost, *, rollouts: int, min_prompts: int, max_prompts: int) -> StartPlan:
    """The prompts a step in [`min_prompts`, `max_prompts`] at group size `rollouts` whose
    worst-case regret over every noise scale is least (module docstring); ties to fewer."""
    for name, value, low in (
        ("rollouts", rollouts, 2),
        ("min_prompts", min_prompts, 1),
        ("max_prompts", max_prompts, 1),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            _fail(f"{name} must be an int >= {low}, got {value!r}")
    if min_prompts > max_prompts:
        _fail(f"min_prompts {min_prompts} is above max_prompts {max_prompts}")
    count = max_prompts - min_prompts + 1
    if count > MAX_START_CANDIDATES:
        _fail(
            f"{count:,} prompt counts in [{min_prompts}, {max_prompts}], more than "
            f"{MAX_START_CANDIDATES:,}: set a smaller maximum (batch_max; plan-batch --max-prompts)"
        )
    prompts = np.arange(min_prompts, max_prompts + 1)
    rows = prompts * rollouts
    seconds = np.array([float(cost.seconds(int(n))) for n in rows])
    bad = ~(np.isfinite(seconds) & (seconds > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        got = float(seconds[i])
        _fail(f"the cost ({cost.source}) gave {got!r} seconds at {int(rows[i])} rows; need > 0")
    slope = seconds / rows
    worst = np.maximum(seconds / seconds.min(), slope / slope.min())
    for x in _envelope_points(seconds, slope):
        at = seconds + slope * x
        worst = np.maximum(worst, at / at.min())
    best = int(np.argmin(worst))  # the first of equals: the fewest rows
    return StartPlan(
        prompts=int(prompts[best]),
        rollouts=rollouts,
        worst_ratio=float(worst[best]),
        configured_ratio=float(worst[0]),
        configured_prompts=min_prompts,
        lr_factor=sqrt_lr_factor(int(rows[best]), int(rows[0]), START_LR_CAP),
        cost_kind=cost.kind,
        cost_source=cost.source,
    )
