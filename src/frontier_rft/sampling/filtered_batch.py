"""The groups a step trains on, and the CSR helpers that build them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.advantages import Estimator, group_advantages

__all__ = ["FilteredBatch"]


@dataclass(frozen=True, eq=False)
class FilteredBatch:
    """The groups to train on at one step, CSR layout: group g is rewards[offsets[g]:offsets[g+1]].

    This step's fresh groups come first (in the order they were drawn for training), then
    any surplus groups of earlier steps that covered a deficit. A fresh group is
    `rounds[source_round]`'s group `source_group` of the step's StepSamples, so a trainer
    picks its own per-rollout data (completions) from what it rolled out in that round.
    """

    task_ids: NDArray[np.int64]
    """(K,) task of each group."""
    steps: NDArray[np.int64]
    """(K,) step whose rollouts formed the group (older than now for surplus groups), or for
    a fresh group its first part (a Pilot-Commit pilot committed at a later step: its pilot's
    step, with source_round/source_group the pilot's place in that step; the further parts
    in `continued` are this step's)."""
    counts: NDArray[np.int64]
    """(K,) rollouts per group."""
    offsets: NDArray[np.int64]
    """(K+1,) CSR offsets into `rewards`."""
    rewards: NDArray[np.float64]
    """Rewards grouped by group, each group in rollout order."""
    from_surplus: NDArray[np.bool_]
    """(K,) True for groups of an earlier step (kept as surplus then)."""
    source_round: NDArray[np.int64]
    """(K,) round of this step the group was rolled out in; -1 for surplus groups."""
    source_group: NDArray[np.int64]
    """(K,) the group's position among that round's ids; -1 for surplus groups."""
    deficit: int
    """batch_size minus the groups returned (> 0 when there was not enough signal)."""
    continued: tuple[tuple[tuple[int, int], ...], ...] = field(default=())
    """Per group, the further (round, group) parts of this step that extend it, in order
    (a two-stage allocation's commit rollouts after its pilot); () when no group has any.
    The group's rewards hold its first part's, then each further part's."""
    payloads: tuple[tuple[Any, ...], ...] = field(default=())
    """Per group, the payload of each of its parts (`parts(g)` order: the first part's, then
    each further part's; a committed pilot's from the store); () when the rollouts carried
    none (a rollout function that returns bare rewards)."""

    def payload_parts(self, g: int) -> tuple[Any, ...]:
        """The payloads of group g's parts, first part first; a ValueError when the step's
        rollouts carried none (the rollout function returned bare rewards, not `Rolled`)."""
        if not self.payloads:
            raise ValueError(
                "this step's groups carry no payloads: return Rolled(rewards, payloads) from "
                "the rollout function to get each group's completions back"
            )
        return self.payloads[g]

    def parts(self, g: int) -> tuple[tuple[int, int], ...]:
        """(round, group) of every part of fresh group g, the first one first."""
        head = ((int(self.source_round[g]), int(self.source_group[g])),)
        return head + (self.continued[g] if self.continued else ())

    @property
    def num_groups(self) -> int:
        return int(self.task_ids.shape[0])

    @property
    def stale_share(self) -> float:
        """Share of the groups that come from an earlier step (0.0 when there are none)."""
        return float(self.from_surplus.mean()) if self.num_groups else 0.0

    @property
    def mixed(self) -> NDArray[np.bool_]:
        """(K,) True where the group's rewards are not all equal (it carries a gradient)."""
        if self.num_groups == 0:
            return np.zeros(0, dtype=np.bool_)
        starts = self.offsets[:-1]
        hi = np.maximum.reduceat(self.rewards, starts)
        out: NDArray[np.bool_] = hi > np.minimum.reduceat(self.rewards, starts)
        return out

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


def csr(counts: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
