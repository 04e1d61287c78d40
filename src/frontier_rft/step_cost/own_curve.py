"""A run's own step-cost curve, fitted from the step shapes and seconds its log holds.

The reference trainer logs, each step, how its calls to generate and its update were shaped and
what they took (`RUN_KEYS`); where those shapes vary, a run's rows fix a small cost model,

    a call to generate r rows for L decode steps:  alpha + beta L + gamma r L   seconds,
    an update over r rows of width W tokens:       delta + epsilon r + zeta r W  seconds,

fitted by non-negative least squares over the steps (a step of several calls sums its calls'
terms, which the logged sums give exactly). alpha is a call's fixed cost, beta the latency of
one decode step (what a latency-bound device pays whatever its rows), gamma the cost of a
row's decode step (what grows with rows); the update's terms likewise. The fit becomes a
`StepCostCurve` (name 'run') on the rows and lengths the run met, so the knee, a step's seconds
and the currency read the run's own device as they read a shipped curve. A run whose calls all
had the same rows cannot say how seconds follow rows: `fit_own_curve` refuses it, naming the
shape that did not vary; one whose calls all decoded one length has a call's fixed cost folded
into its decode steps' (alpha = 0, said in the curve's provenance).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frontier_rft.step_cost.curve import Cell, StepCostCurve

__all__ = ["RUN_KEYS", "OwnFit", "fit_own_curve"]

RUN_KEYS = {
    "perf/generate_s": "seconds of the step's calls to generate",
    "perf/generate_calls": "calls to generate the step made",
    "perf/generate_rows": "rows those calls generated (padding rows included)",
    "perf/decode_steps": "decode steps of those calls, summed (a call's: its longest completion)",
    "perf/decode_row_steps": "rows x decode steps of those calls, summed",
    "perf/update_s": "seconds of the step's policy update",
    "train/trained_rows": "rows of the update",
    "perf/update_width": "the update's width: its longest completion, in tokens",
}
"""The metrics a run's own curve is fitted from (the reference trainer logs them each step)."""
_MIN_STEPS = 4


@dataclass(frozen=True)
class OwnFit:
    """A run's fitted cost model and the curve it makes."""

    generate: tuple[float, float, float]
    """(alpha, beta, gamma): seconds of a call, of a decode step, of a row's decode step."""
    update: tuple[float, float, float]
    """(delta, epsilon, zeta): seconds of an update, of a row, of a row's token."""
    steps: int
    """Steps fitted."""
    curve: StepCostCurve
    """The fit on the run's own grid of rows and lengths."""

    def generate_seconds(self, rows: float, length: float) -> float:
        """Seconds of one call to generate `rows` rows for `length` decode steps."""
        return _generate_seconds(self.generate, rows, length)

    def update_seconds(self, rows: float, width: float) -> float:
        """Seconds of an update over `rows` rows `width` tokens wide."""
        return _update_seconds(self.update, rows, width)


def _generate_seconds(coef: tuple[float, float, float], rows: float, length: float) -> float:
    a, b, c = coef
    return a + b * length + c * rows * length


def _update_seconds(coef: tuple[float, float, float], rows: float, width: float) -> float:
    d, e, z = coef
    return d + e * rows + z * rows * width if rows > 0 else 0.0


def _coefficients(values: NDArray[np.float64]) -> tuple[float, float, float]:
    a, b, c = (float(v) for v in values)
    if not all(math.isfinite(v) for v in (a, b, c)):
        raise ValueError("the run's own curve: its fit is not finite (seconds logged as NaN?)")
    return a, b, c


def _nnls(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """Non-negative least squares over few columns: the best of the subsets' fits whose
    coefficients are all >= 0 (exact for 3 columns: 8 subsets)."""
    best, best_err = np.zeros(x.shape[1]), float(y @ y)
    for k in range(1, x.shape[1] + 1):
        for cols in itertools.combinations(range(x.shape[1]), k):
            coef = np.linalg.lstsq(x[:, cols], y, rcond=None)[0]
            if np.any(coef < 0):
                continue
            err = float(np.sum((x[:, cols] @ coef - y) ** 2))
            if err < best_err:
                best, best_err = np.zeros(x.shape[1]), err
                best[list(cols)] = coef
    return best


def _grid(values: NDArray[np.float64]) -> list[int]:
    """A few points spanning what a run met: its extremes and the powers of two between."""
    lo, hi = int(values.min()), int(values.max())
    inner = [2**k for k in range(1, 20) if lo < 2**k < hi]
    return sorted({lo, *inner, hi})


def _varies(values: NDArray[np.float64], what: str, fix: str) -> None:
    """A one-line ValueError where `values` (one a step) never changed."""
    if np.unique(values).size < 2:
        raise ValueError(
            f"this run's {what} never varied ({values[0]:g} every step): its own curve cannot "
            f"tell how seconds follow them; {fix}"
        )


def fit_own_curve(
    rows: Iterable[Mapping[str, float]],
    *,
    device_class: str = "cpu",
    device_name: str = "",
    model: str = "",
    source: str = "the run's metrics",
) -> OwnFit:
    """The run's own cost model and curve from its logged step rows (evaluation rows and rows
    without `RUN_KEYS` skipped); a one-line ValueError where its shapes did not vary or it has
    fewer than 4 steps."""
    steps = [r for r in rows if all(isinstance(r.get(k), (int, float)) for k in RUN_KEYS)]
    steps = [r for r in steps if r["perf/generate_calls"] > 0]
    fix = "read a shipped curve (cpu, h200) or run benchmarks/step_cost.py on this device"
    if len(steps) < _MIN_STEPS:
        raise ValueError(
            f"{source}: {len(steps)} step(s) with shapes and seconds logged, fewer than "
            f"{_MIN_STEPS}; {fix}"
        )
    col = {k: np.array([float(r[k]) for r in steps]) for k in RUN_KEYS}
    calls = col["perf/generate_calls"]
    _varies(col["perf/generate_rows"] / calls, "rows a call to generate", fix)
    gen_x = np.column_stack([calls, col["perf/decode_steps"], col["perf/decode_row_steps"]])
    folded = np.unique(col["perf/decode_steps"] / calls).size < 2
    if folded:  # one length throughout: a call's own cost is not told from its decode steps'
        gen_x[:, 0] = 0.0
    generate = _nnls(gen_x, col["perf/generate_s"])
    trained = col["train/trained_rows"] > 0
    upd_rows, width = col["train/trained_rows"][trained], col["perf/update_width"][trained]
    upd_x = np.column_stack([np.ones_like(upd_rows), upd_rows, upd_rows * width])
    update = _nnls(upd_x, col["perf/update_s"][trained]) if trained.any() else np.zeros(3)
    gen, upd = _coefficients(generate), _coefficients(update)
    per_call = col["perf/generate_rows"] / calls
    lengths = _grid(col["perf/decode_steps"] / calls)
    cells = tuple(
        Cell(r, n, _generate_seconds(gen, r, n), _update_seconds(upd, r, n))
        for r in _grid(per_call)
        for n in lengths
    )
    a, b, c = gen
    curve = StepCostCurve(
        name="run",
        device_class=device_class,
        device_name=device_name,
        model=model,
        provenance=(
            f"fitted from {source}: {len(steps)} steps; a call to generate r rows for L decode "
            f"steps {a:.3g} + {b:.3g} L + {c:.3g} r L s"
            + (
                " (its calls all decoded one length: a call's cost is in its steps')"
                if folded
                else ""
            )
        ),
        cells=cells,
    )
    return OwnFit(gen, upd, len(steps), curve)
