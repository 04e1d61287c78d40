"""The numeric bounds every input is held to, and the checks that enforce them.

Steps and policy versions are integers in [0, MAX_STEP]: below 2**53 they are exact as
float64 too (metrics, JSON readers in other languages) and no sum or difference of two of
them can overflow int64. Rewards and float TaskPool metadata are finite with magnitude at
most MAX_ABS_VALUE: squares, group sums and products of two such values (advantages,
variances, Gram matrices, kernel logits) then stay finite in float64 for any realistic
number of rollouts or feature columns.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_ABS_VALUE", "MAX_STEP", "bounded_int", "check_magnitude", "is_finite_real"]

MAX_STEP = 2**53 - 1
"""Largest accepted trainer step or policy version."""
MAX_ABS_VALUE = 1e100
"""Largest accepted |reward| and |float metadata| (difficulty, features)."""


def bounded_int(value: Any, what: str, lo: int = 0, hi: int = MAX_STEP) -> int:
    """`value` as a Python int in [lo, hi], else a ValueError naming `what` and the range.

    Accepts Python and numpy integers (np.uint64 included, compared exactly); rejects
    bools, floats (even integral ones) and everything else.
    """
    wanted = (
        "a non-negative int below 2**53" if (lo, hi) == (0, MAX_STEP) else f"an int in [{lo}, {hi}]"
    )
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"{what} must be {wanted}, got {value!r}")
    number = int(value)
    if not lo <= number <= hi:
        raise ValueError(f"{what} must be {wanted}, got {number}")
    return number


def check_magnitude(values: NDArray[Any], what: str, fix: str = "rescale it") -> None:
    """ValueError when a finite float array holds an entry with |x| > MAX_ABS_VALUE."""
    if values.size == 0:
        return
    peak = float(np.max(np.abs(values)))
    if peak > MAX_ABS_VALUE:
        raise ValueError(
            f"{what} holds a value of magnitude {peak:.3g}, above the supported "
            f"{MAX_ABS_VALUE:.0e}; {fix}"
        )


def is_finite_real(value: object) -> bool:
    """A Python/numpy int or float (not bool) that is finite."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, int | float | np.integer | np.floating
    ):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False
