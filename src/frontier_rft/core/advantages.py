"""Group-relative advantage estimators (GRPO, Dr.GRPO, RLOO), vectorised over ragged groups."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["ESTIMATORS", "GRPO_STD_EPS", "Estimator", "group_advantages"]

Estimator = Literal["grpo", "drgrpo", "rloo"]
ESTIMATORS: tuple[str, ...] = ("grpo", "drgrpo", "rloo")
GRPO_STD_EPS = 1e-6
"""Added to the group std in GRPO normalisation; a zero-spread group gets advantage 0."""


def group_centred(rewards: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """r - mean(group) per rollout; exactly 0 for a constant group.

    Centring on each group's first reward before taking the mean makes a constant
    group's deviations exactly zero (sum/n of 0.1 three times is not exactly 0.1).
    """
    counts = np.diff(offsets)
    starts = offsets[:-1]
    shifted = rewards - np.repeat(rewards[starts], counts)
    centred: NDArray[np.float64] = shifted - np.repeat(
        np.add.reduceat(shifted, starts) / counts, counts
    )
    return centred


def group_advantages(
    rewards: NDArray[np.float64], offsets: NDArray[np.int64], estimator: str = "grpo"
) -> NDArray[np.float64]:
    """Advantage of every rollout, groups given in CSR layout (`offsets` has G+1 entries).

    - grpo:   (r - mean) / (std + eps), std the population std of the group, so the
              expected |A| for binary rewards is 2*sqrt(p(1-p)).
    - drgrpo: r - mean (centred only).
    - rloo:   r_i - mean_{j != i} r_j = n/(n-1) * (r_i - mean); 0 for single-rollout groups.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown advantage estimator {estimator!r}; choose one of {ESTIMATORS}")
    counts = np.diff(offsets)
    starts = offsets[:-1]
    centred = group_centred(rewards, offsets)
    if estimator == "drgrpo":
        return centred
    if estimator == "rloo":
        scale = np.where(counts > 1, counts / np.maximum(counts - 1, 1), 0.0)
        loo: NDArray[np.float64] = centred * np.repeat(scale, counts)
        return loo
    std = np.sqrt(np.add.reduceat(centred * centred, starts) / counts)
    advantages: NDArray[np.float64] = centred / (np.repeat(std, counts) + GRPO_STD_EPS)
    return advantages
