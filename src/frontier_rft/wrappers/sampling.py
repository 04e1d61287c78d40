"""One step's sampling, written once: what the reference trainer and the simulator both drive.

A sampler turns "step t needs B groups of n rollouts" into rounds of rollouts and the groups
to train on. Two exist: `PassThrough` (one round of B prompts, every group trained: plain
GRPO) and `DynamicSampling` (DAPO: rounds of oversampled prompts until B mixed groups).
Both are called the same way, so a trainer's step reads the same with either:

    samples = sampler.sample(step, B, n, rollout)   # rollout(ids) -> n rewards per id
    for r in samples.rounds: ...                    # what was rolled out (metrics)
    train(samples.train)                            # FilteredBatch: the groups to train on
    samples.rollouts                                # rollouts spent this step

The sampler sends every rollout's rewards to the selector inside exactly once, and ends
the step on it (`Selector.flush`), so its metrics describe the step.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import Selector
from frontier_rft.wrappers.filtered_batch import FilteredBatch, csr

__all__ = ["PassThrough", "RolloutFn", "Round", "Sampler", "StepSamples"]

RolloutFn = Callable[[NDArray[np.int64]], NDArray[np.float64]]
"""rollout(ids) -> rewards, group_size per id, id-major (the caller keeps any completions)."""


@dataclass(frozen=True, eq=False)
class Round:
    """One round of a step: the prompts rolled out and their rewards (id-major)."""

    task_ids: NDArray[np.int64]
    """(k,) prompts rolled out in this round, in the order given to rollout()."""
    rewards: NDArray[np.float64]
    """(k * n,) their rewards, group by group."""
    select_seconds: float
    """Time the selector took to propose this round."""

    @property
    def group_rewards(self) -> NDArray[np.float64]:
        """(k, n) rewards, one row per prompt."""
        return self.rewards.reshape(self.task_ids.shape[0], -1)

    @property
    def mixed(self) -> NDArray[np.bool_]:
        """(k,) True where the group's rewards are not all equal (a GRPO gradient)."""
        g = self.group_rewards
        out: NDArray[np.bool_] = g.max(axis=1) > g.min(axis=1)
        return out


@dataclass(frozen=True, eq=False)
class StepSamples:
    """What one step sampled: its rounds, the groups to train on, the rollouts spent."""

    step: int
    rounds: tuple[Round, ...]
    train: FilteredBatch

    @property
    def rollouts(self) -> int:
        """Rollouts generated this step (all rounds)."""
        return int(sum(r.rewards.shape[0] for r in self.rounds))

    @property
    def task_ids(self) -> NDArray[np.int64]:
        """Every prompt rolled out this step, round after round."""
        if not self.rounds:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([r.task_ids for r in self.rounds])

    @property
    def select_seconds(self) -> float:
        return float(sum(r.select_seconds for r in self.rounds))


class Sampler(Protocol):
    """What the trainer and the simulator call: PassThrough or DynamicSampling."""

    inner: Selector

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """Roll out step `step`'s rounds and return the groups to train on."""
        ...

    def metrics(self) -> dict[str, float]:
        """The selector's metrics (plus the sampler's own, namespaced)."""
        ...


def run_round(
    selector: Selector, step: int, size: int, group_size: int, rollout: RolloutFn
) -> Round:
    """Propose `size` prompts, roll them out, send every reward to the selector once."""
    start = time.perf_counter()
    ids = selector.select(size)
    seconds = time.perf_counter() - start
    rewards = np.asarray(rollout(ids), dtype=np.float64)
    if rewards.shape != (ids.shape[0] * group_size,):
        raise ValueError(
            f"rollout returned {rewards.shape} rewards for {ids.shape[0]} prompts; expected "
            f"{group_size} per prompt ({ids.shape[0] * group_size}), prompt-major"
        )
    start = time.perf_counter()
    selector.update(Feedback(task_ids=np.repeat(ids, group_size), rewards=rewards, step=step))
    return Round(ids, rewards, seconds + time.perf_counter() - start)


def fresh_batch(
    rounds: tuple[Round, ...], picks: list[tuple[int, int]], step: int, deficit: int
) -> FilteredBatch:
    """A FilteredBatch of this step's groups `picks` = [(round, group)], no surplus."""
    n_groups = len(picks)
    r_idx = np.array([p[0] for p in picks], dtype=np.int64)
    g_idx = np.array([p[1] for p in picks], dtype=np.int64)
    rows = [rounds[r].group_rewards[g] for r, g in picks]
    counts = np.array([row.shape[0] for row in rows], dtype=np.int64)
    return FilteredBatch(
        task_ids=np.array([rounds[r].task_ids[g] for r, g in picks], dtype=np.int64),
        steps=np.full(n_groups, step, dtype=np.int64),
        counts=counts,
        offsets=csr(counts),
        rewards=np.concatenate(rows) if rows else np.zeros(0),
        from_surplus=np.zeros(n_groups, dtype=np.bool_),
        source_round=r_idx,
        source_group=g_idx,
        deficit=deficit,
    )


class PassThrough:
    """Plain GRPO sampling: one round of `batch_size` prompts, every group trained."""

    def __init__(self, selector: Selector):
        if not isinstance(selector, Selector):
            raise ValueError(f"PassThrough wraps a built selector, got {type(selector).__name__}")
        self.inner = selector

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """One round of batch_size prompts; all of its groups are trained on."""
        one = run_round(self.inner, step, batch_size, group_size, rollout)
        self.inner.flush()  # the step is complete: fold it now so metrics describe it
        picks = [(0, g) for g in range(one.task_ids.shape[0])]
        rounds = (one,)
        return StepSamples(step, rounds, fresh_batch(rounds, picks, step, 0))

    def metrics(self) -> dict[str, float]:
        return self.inner.metrics()

    def state_dict(self) -> dict[str, Any]:
        """Nothing of its own: the selector's state is saved with the selector."""
        return {}
