"""Rollout feedback: the flat per-rollout record trainers send, and its per-task aggregation."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frontier_rft.core.advantages import Estimator, group_advantages, group_centred
from frontier_rft.core.bounds import MAX_ABS_VALUE, bounded_int, check_magnitude

__all__ = ["SUCCESS_REWARD", "Feedback", "GroupBatch", "refused_rewards", "to_unit_range"]

SUCCESS_REWARD = 1.0
"""A rollout counts as a success only when it earns the full reward (frontier replay's rule)."""
_SUCCESS_TOL = 1e-9


def to_unit_range(rewards: ArrayLike, reward_range: Sequence[float] | None) -> NDArray[np.float64]:
    """Rewards of a function whose range is `reward_range` (low, high), mapped onto [0, 1]
    as every adapter's `reward_range` maps them: linearly, clipped beyond the range (+-inf to
    1 or 0); without a range, unchanged."""
    r = np.asarray(rewards, dtype=np.float64)
    if reward_range is None:
        return r
    lo, hi = reward_range
    out: NDArray[np.float64] = np.clip((r - lo) / (hi - lo), 0.0, 1.0)
    return out


@dataclass(frozen=True, eq=False)
class Feedback:
    """Rewards of a set of rollouts: one entry per rollout, task ids repeat once per sample.

    `step` is the trainer step whose policy produced the rollouts; `policy_version`
    (optional) is the weight version, used for staleness handling.
    """

    task_ids: ArrayLike
    """Task index of each rollout (repeated n times for a group of n samples)."""
    rewards: ArrayLike
    """Scalar reward of each rollout, same length as task_ids."""
    step: int
    """Trainer step the rollouts came from, an int in [0, 2**53)."""
    policy_version: int | None = None
    """Optional policy/weights version the rollouts were sampled with, in [0, 2**53)."""

    def validated(
        self, num_tasks: int, reward_bounds: tuple[float, float] | None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Return private copies of (task_ids, rewards) or raise ValueError naming the problem."""
        bounded_int(self.step, "Feedback.step")
        if self.policy_version is not None:
            bounded_int(self.policy_version, "Feedback.policy_version")
        if isinstance(self.task_ids, np.ma.MaskedArray) or isinstance(
            self.rewards, np.ma.MaskedArray
        ):  # np.asarray would drop the mask and report the masked rollouts as real
            raise ValueError(
                "Feedback takes plain arrays, not masked ones: drop the masked rollouts "
                "first (ids[~rewards.mask], rewards.compressed())"
            )
        ids_in = np.asarray(self.task_ids)
        rewards_in = np.asarray(self.rewards)
        if ids_in.ndim != 1 or rewards_in.ndim != 1:
            raise ValueError(
                "Feedback.task_ids and Feedback.rewards must be flat 1-D arrays "
                f"(one entry per rollout), got shapes {ids_in.shape} and {rewards_in.shape}"
            )
        if ids_in.shape[0] != rewards_in.shape[0]:
            raise ValueError(
                f"Feedback has {ids_in.shape[0]} task_ids but {rewards_in.shape[0]} rewards; "
                "send one task id per rollout reward"
            )
        if ids_in.shape[0] == 0:
            raise ValueError("Feedback is empty: it carries no rollouts")
        if ids_in.dtype.kind not in "iu":
            if (
                ids_in.dtype.kind == "f"
                and np.all(np.isfinite(ids_in))
                and np.all(ids_in == np.round(ids_in))
            ):
                pass  # integral floats are accepted
            else:
                raise ValueError(f"Feedback.task_ids must be integers, got dtype {ids_in.dtype}")
        if rewards_in.dtype.kind not in "iuf" or rewards_in.dtype.kind == "b":
            raise ValueError(f"Feedback.rewards must be numeric, got dtype {rewards_in.dtype}")
        # Range-check before casting: a uint64 or float id beyond int64 would wrap around.
        bad_ids = (ids_in < 0) | (ids_in >= num_tasks)
        if np.any(bad_ids):
            pos = int(np.argmax(bad_ids))
            raise ValueError(
                f"Feedback.task_ids out of range: {int(bad_ids.sum())} id(s) outside "
                f"[0, {num_tasks}), first {ids_in[pos].item()!r}"
            )
        ids = ids_in.astype(np.int64, copy=True)
        rewards = rewards_in.astype(np.float64, copy=True)
        finite = np.isfinite(rewards)
        if not np.all(finite):
            pos = int(np.argmin(finite))
            raise ValueError(
                f"Feedback.rewards contains NaN or inf ({int((~finite).sum())} value(s), "
                f"first at position {pos}, task {int(ids[pos])}); fix the reward function"
            )
        check_magnitude(rewards, "Feedback.rewards", "divide the rewards by a constant")
        if reward_bounds is not None:
            lo, hi = reward_bounds
            outside = (rewards < lo) | (rewards > hi)
            if np.any(outside):
                pos = int(np.argmax(outside))
                raise ValueError(
                    f"Feedback.rewards must lie in [{lo}, {hi}] for this selector's settings; "
                    f"got {float(rewards[pos])!r} at position {pos}. Rescale rewards, or use a "
                    "continuous-reward setting (e.g. bots with reward_model='gaussian')"
                )
        return ids, rewards


@dataclass(frozen=True, eq=False)
class GroupBatch:
    """Feedback of one trainer step aggregated per task (one group per task), computed once.

    Rollouts are stored grouped by task (CSR layout): the rewards of group g are
    `rewards[offsets[g]:offsets[g+1]]`. Groups are sorted by task id.
    """

    step: int
    task_ids: NDArray[np.int64]
    counts: NDArray[np.int64]
    rewards: NDArray[np.float64]
    offsets: NDArray[np.int64]
    policy_version: NDArray[np.int64]
    """Oldest policy version among each group's rollouts, -1 where unknown."""

    @classmethod
    def from_rollouts(
        cls,
        step: int,
        task_ids: NDArray[np.int64],
        rewards: NDArray[np.float64],
        versions: NDArray[np.int64],
    ) -> GroupBatch:
        """Group flat rollouts by task; stable so a task's rollouts keep arrival order."""
        order = np.argsort(task_ids, kind="stable")
        ids_sorted = task_ids[order]
        start = np.flatnonzero(np.concatenate([[True], ids_sorted[1:] != ids_sorted[:-1]]))
        offsets = np.append(start, ids_sorted.shape[0]).astype(np.int64)
        uniq, counts = ids_sorted[start], np.diff(offsets)
        v = versions[order]
        pv = np.minimum.reduceat(np.where(v < 0, np.iinfo(np.int64).max, v), start)
        pv = np.where(pv == np.iinfo(np.int64).max, -1, pv)
        return cls(
            step=int(step),
            task_ids=uniq.astype(np.int64),
            counts=counts.astype(np.int64),
            rewards=rewards[order],
            offsets=offsets,
            policy_version=pv.astype(np.int64),
        )

    @property
    def num_groups(self) -> int:
        return int(self.task_ids.shape[0])

    def _sum(self, values: NDArray[Any]) -> NDArray[np.float64]:
        return np.add.reduceat(values, self.offsets[:-1]).astype(np.float64)

    @functools.cached_property
    def _canonical(self) -> NDArray[np.float64]:
        """The rewards sorted within each group. Group statistics are computed from it, so
        they do not depend on the order rollouts arrived in, to the last bit (floating-point
        sums do); `rewards` and `advantages` keep arrival order."""
        group = np.repeat(np.arange(self.num_groups), self.counts)
        return self.rewards[np.lexsort((self.rewards, group))]

    @property
    def sums(self) -> NDArray[np.float64]:
        """Sum of rewards per group."""
        return self._sum(self._canonical)

    @property
    def means(self) -> NDArray[np.float64]:
        """Mean reward per group (empirical success rate for binary rewards)."""
        return self.sums / self.counts

    @property
    def variances(self) -> NDArray[np.float64]:
        """Within-group reward variance v = (1/n) sum (r - mean)^2 (the mean squared advantage)."""
        centred = group_centred(self._canonical, self.offsets)
        return self._sum(centred * centred) / self.counts

    @property
    def successes(self) -> NDArray[np.int64]:
        """Rollouts per group that earned the full reward (r >= 1)."""
        hit = (self.rewards >= SUCCESS_REWARD - _SUCCESS_TOL).astype(np.int64)
        return np.add.reduceat(hit, self.offsets[:-1]).astype(np.int64)

    @property
    def mixed(self) -> NDArray[np.bool_]:
        """True where the group's rewards are not all equal (it carries gradient signal)."""
        lo = np.minimum.reduceat(self.rewards, self.offsets[:-1])
        hi = np.maximum.reduceat(self.rewards, self.offsets[:-1])
        return np.asarray(hi > lo)

    def advantages(self, estimator: Estimator = "grpo") -> NDArray[np.float64]:
        """Per-rollout advantages (grouped layout) under the given estimator."""
        return group_advantages(self.rewards, self.offsets, estimator)

    def mean_abs_advantage(self, estimator: Estimator = "grpo") -> NDArray[np.float64]:
        """Mean |advantage| per group."""
        advantages = group_advantages(self._canonical, self.offsets, estimator)
        return self._sum(np.abs(advantages)) / self.counts

    def select(self, mask: NDArray[np.bool_]) -> GroupBatch:
        """The sub-batch of groups where `mask` is True."""
        keep = np.repeat(mask, self.counts)
        counts = self.counts[mask]
        return GroupBatch(
            step=self.step,
            task_ids=self.task_ids[mask],
            counts=counts,
            rewards=self.rewards[keep],
            offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            policy_version=self.policy_version[mask],
        )


def refused_rewards(
    rewards: NDArray[np.float64],
    reward_range: Sequence[float] | None,
    bounds: tuple[float, float] | None,
) -> tuple[NDArray[np.bool_], str]:
    """Which rewards the selector would refuse, and what it needs (e.g. "in [0, 1]").

    With a `reward_range`, which maps rewards onto [0, 1] and clips beyond it, only NaN;
    without one, anything outside the selector's reward `bounds` (NaN and +-inf included),
    or for an unbounded selector anything not finite or above MAX_ABS_VALUE in magnitude:
    exactly what `Feedback.validated` refuses, checked first so the adapter's error can
    name the task and its reward_range option.
    """
    if reward_range is not None:
        return np.isnan(rewards), "not NaN"
    if bounds is None:
        lo, hi, need = -MAX_ABS_VALUE, MAX_ABS_VALUE, f"finite, of magnitude <= {MAX_ABS_VALUE:g}"
    else:
        lo, hi = bounds
        need = f"in [{lo:g}, {hi:g}]"
    return ~((rewards >= lo) & (rewards <= hi)), need
