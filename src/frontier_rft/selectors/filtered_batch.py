"""The training batch DAPO's filter hands the trainer, and the CSR helpers that build it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.advantages import Estimator, group_advantages
from frontier_rft.core.feedback import GroupBatch

__all__ = ["FilteredBatch"]


@dataclass(frozen=True, eq=False)
class FilteredBatch:
    """The groups to train on at one step, CSR layout: group g is rewards[offsets[g]:offsets[g+1]].

    Surplus groups from earlier calls come first (oldest first), then this call's fresh
    mixed groups. Masks index the rollouts of the Feedback given to `filter_groups`, so
    the trainer can pick its own per-rollout tensors: `kept_mask` marks those trained on
    now, `buffered_mask` those buffered as surplus (keep their sequences for later).
    Surplus entries dropped by this call are listed in `released_*` so their stored
    sequences can be freed.
    """

    task_ids: NDArray[np.int64]
    """(K,) task of each returned group."""
    steps: NDArray[np.int64]
    """(K,) step whose rollouts formed the group (older than now for surplus groups)."""
    policy_version: NDArray[np.int64]
    """(K,) oldest policy version of the group's rollouts, -1 where unknown."""
    counts: NDArray[np.int64]
    """(K,) rollouts per group."""
    offsets: NDArray[np.int64]
    """(K+1,) CSR offsets into `rewards`."""
    rewards: NDArray[np.float64]
    """Rewards grouped by returned group, each group in arrival order."""
    from_surplus: NDArray[np.bool_]
    """(K,) True for groups buffered by an earlier call."""
    kept_mask: NDArray[np.bool_]
    """Over the given feedback's rollouts: True where trained on now."""
    buffered_mask: NDArray[np.bool_]
    """Over the given feedback's rollouts: True where buffered as surplus."""
    released_task_ids: NDArray[np.int64]
    """Surplus groups dropped by this call (stale, superseded or overflow): their tasks..."""
    released_steps: NDArray[np.int64]
    """...and steps, so the trainer can free the sequences it kept for them."""
    deficit: int
    """batch_size minus the groups returned (> 0 when there was not enough signal)."""

    @property
    def num_groups(self) -> int:
        return int(self.task_ids.shape[0])

    @property
    def rollout_task_ids(self) -> NDArray[np.int64]:
        """Task id of every returned rollout (grouped layout)."""
        return np.repeat(self.task_ids, self.counts)

    def advantages(self, estimator: Estimator = "grpo") -> NDArray[np.float64]:
        """Per-rollout advantages of the returned groups (grouped layout)."""
        if self.num_groups == 0:
            return np.zeros(0, dtype=np.float64)
        return group_advantages(self.rewards, self.offsets, estimator)


def gather(
    offsets: NDArray[np.int64], idx: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(counts, rollout positions) of groups `idx` of a CSR layout, concatenated in idx order."""
    counts = (offsets[idx + 1] - offsets[idx]).astype(np.int64)
    new_starts = np.cumsum(counts) - counts
    pos = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(
        offsets[idx] - new_starts, counts
    )
    return counts, pos


def group_by_task(
    step: int, version: int, ids: NDArray[np.int64], rewards: NDArray[np.float64]
) -> tuple[GroupBatch, NDArray[np.int64]]:
    """GroupBatch.from_rollouts for one policy version, plus the grouped -> input order.

    One stable argsort, group starts from the sorted ids (no second sort in np.unique).
    """
    order = np.argsort(ids, kind="stable")
    ids_sorted = ids[order]
    starts = np.flatnonzero(np.concatenate([[True], ids_sorted[1:] != ids_sorted[:-1]]))
    offsets = np.append(starts, ids_sorted.shape[0]).astype(np.int64)
    batch = GroupBatch(
        step=step,
        task_ids=ids_sorted[starts],
        counts=np.diff(offsets),
        rewards=rewards[order],
        offsets=offsets,
        policy_version=np.full(starts.shape[0], version, dtype=np.int64),
    )
    return batch, order


def member(values: NDArray[np.int64], sorted_ids: NDArray[np.int64]) -> NDArray[np.bool_]:
    """np.isin(values, sorted_ids) for sorted, distinct sorted_ids, by binary search."""
    if sorted_ids.shape[0] == 0:
        return np.zeros(values.shape[0], dtype=np.bool_)
    pos = np.minimum(np.searchsorted(sorted_ids, values), sorted_ids.shape[0] - 1)
    return np.asarray(sorted_ids[pos] == values)


def csr(counts: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
