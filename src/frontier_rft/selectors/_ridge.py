"""Exponentially-weighted online ridge regression over task features.

One learner of outcomes from features, shared by PCL (its value model), the BOTS
regression plug-in (implicit evidence for tasks not rolled out) and the difficulty that
offline/ADCL estimate online when no offline difficulty is given. Sufficient statistics
`A <- g*A + X^T X`, `c <- g*c + X^T y`, refit `w = (A + ridge*I)^-1 c` after each batch:
O(B d^2 + d^3) per update and O(d) memory per feature, independent of the pool size.

No product goes to BLAS's threads. Predictions (N x d, memory-bound, once per step over
the whole pool for the BOTS plug-in) use numpy's own matrix-vector loop: at N = 1e6,
d = 64 it takes 23 ms of one core, against 44 ms for OpenBLAS on one thread and 24 ms
wall for 48 ms CPU on two (benchmarks/matvec.py). The batch's products in `observe` run
on one BLAS thread: at B rows OpenBLAS's threads only spin, ~10x the product itself on a
busy machine.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from frontier_rft.core.arrays import F64
from frontier_rft.core.state_check import (
    AttributeState,
    check_keys,
    read_array,
    read_float,
    read_int,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

__all__ = ["OnlineRidge"]

_controller: Any = None


def one_blas_thread() -> AbstractContextManager[Any]:
    """Context limiting BLAS to one thread (~10 us; the controller is built once)."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    limit: AbstractContextManager[Any] = _controller.limit(limits=1, user_api="blas")
    return limit


class OnlineRidge(AttributeState):
    """Ridge regression y ~ [x, 1] . w with exponential forgetting of past batches."""

    STATE_KEYS = ("gram", "moment", "weights", "samples", "batches")
    """The attributes `state_dict()` saves."""

    def __init__(self, dim: int, ridge: float, forgetting: float, fit_intercept: bool = True):
        self.fit_intercept = fit_intercept
        self.ridge = float(ridge)
        self.forgetting = float(forgetting)
        d = dim + int(fit_intercept)
        self.gram: F64 = np.zeros((d, d))
        self.moment: F64 = np.zeros(d)
        self.weights: F64 = np.zeros(d)
        self.samples = 0.0  # exponentially-weighted sample count
        self.batches = 0

    def design(self, x: F64) -> F64:
        """Rows of x with the constant column appended when fitting an intercept."""
        if self.fit_intercept:
            x = np.hstack([x, np.ones((x.shape[0], 1))])
        return x

    def predict(self, x: F64) -> F64:
        """Predictions for the rows of x (0 everywhere before any data)."""
        w = self.weights
        # numpy's own matrix-vector loop, not BLAS: see the module docstring
        if self.fit_intercept:
            out: F64 = np.einsum("ij,j->i", x, w[:-1])
            out += w[-1]
            return out
        pred: F64 = np.einsum("ij,j->i", x, w)
        return pred

    def observe(self, x: F64, y: F64) -> F64:
        """Decay the statistics, add the batch, refit; returns the pre-update residuals."""
        with one_blas_thread():
            return self._observe(x, y)

    def _observe(self, x: F64, y: F64) -> F64:
        design = self.design(x)
        residual: F64 = design @ self.weights - y
        g = self.forgetting
        self.gram = g * self.gram + design.T @ design
        self.moment = g * self.moment + design.T @ y
        self.samples = g * self.samples + y.shape[0]
        penalty = self.ridge * np.eye(self.gram.shape[0])
        try:
            solved = np.linalg.solve(self.gram + penalty, self.moment)
        except np.linalg.LinAlgError:  # singular in floating point (huge, collinear features)
            solved = np.linalg.lstsq(self.gram + penalty, self.moment, rcond=None)[0]
        self.weights = np.asarray(solved, np.float64)
        self.batches += 1
        return residual

    def loaded(self, state: dict[str, Any], who: str) -> OnlineRidge:
        """A new model of this one's dimension and settings holding `state`; this one is
        unchanged (a ValueError naming `who` if the state does not fit)."""
        d = self.gram.shape[0] - int(self.fit_intercept)
        model = OnlineRidge(d, self.ridge, self.forgetting, self.fit_intercept)
        model.load_state_dict(state, who)
        return model

    def load_state_dict(self, state: dict[str, Any], who: str) -> None:
        """Restore statistics; a ValueError naming `who` leaves this regressor unchanged."""
        state = check_keys(state, f"{who} state: ridge model", self.STATE_KEYS)
        d = self.gram.shape[0]
        gram = read_array(state, "gram", who, np.float64, shape=(d, d), finite=True)
        if not _is_gram(gram):
            raise ValueError(
                f"{who} state: the ridge model's gram is not a sum of x x^T (symmetric, "
                "positive semi-definite): the state was altered; load an unaltered one"
            )
        moment = read_array(state, "moment", who, np.float64, shape=(d,), finite=True)
        weights = read_array(state, "weights", who, np.float64, shape=(d,), finite=True)
        samples = read_float(state, "samples", who, lo=0.0, hi=math.inf, nan=False)
        batches = read_int(state, "batches", who)
        self.gram, self.moment, self.weights = gram, moment, weights
        self.samples, self.batches = samples, batches


def _is_gram(gram: F64) -> bool:
    """Whether `gram` (finite) can be a decayed sum of x x^T: symmetric and positive
    semi-definite, both up to float rounding (the product X^T X is not bit-symmetric)."""
    scale = float(np.max(np.abs(gram))) if gram.size else 0.0
    if scale == 0.0:
        return True
    if not math.isfinite(scale * gram.shape[0]):  # eigvalsh would overflow
        return False
    tol = 1e-9 * scale
    if np.max(np.abs(gram - gram.T)) > tol:
        return False
    return bool(np.linalg.eigvalsh((gram + gram.T) / 2.0).min() >= -1e-6 * scale)
