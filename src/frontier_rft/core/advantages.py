"""Group-relative advantage estimators (GRPO, Dr.GRPO, RLOO), vectorised over ragged groups."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["ESTIMATORS", "Estimator", "group_advantages", "GRPO_STD_EPS"]

Estimator = Literal["grpo", "drgrpo", "rloo"]
ESTIMATORS: tuple[str, ...] = ("grpo", "drgrpo", "rloo")
GRPO_STD_EPS = 1e-6
"""Added to the group std in GRPO normalisation; a zero-spread group gets advantage 0."""


def group_advantages(
    rewards: NDArray[np.float64], offsets: NDArray[np.int64], estimator: str = "grpo"
) -> NDArray[np.float64]:
    """Advantage of every rollout, groups given in CSR layout (`offsets` has G+1 entries).

    - grpo:   (r - mean) / (std + eps), std the population std of the group, so the
              expected |A| for binary rewards is 2*sqrt(p(1-p)) (DESIGN.md section 1).
    - drgrpo: r - mean (centred only).
    - rloo:   r_i - mean_{j != i} r_j = n/(n-1) * (r_i - mean); 0 for single-rollout groups.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown advantage estimator {estimator!r}; choose one of {ESTIMATORS}")
    counts = np.diff(offsets)
    starts = offsets[:-1]
    means = np.add.reduceat(rewards, starts) / counts
    centred = rewards - np.repeat(means, counts)
    if estimator == "drgrpo":
        return centred
    if estimator == "rloo":
        scale = np.where(counts > 1, counts / np.maximum(counts - 1, 1), 0.0)
        return centred * np.repeat(scale, counts)
    std = np.sqrt(np.add.reduceat(centred * centred, starts) / counts)
    return centred / (np.repeat(std, counts) + GRPO_STD_EPS)
