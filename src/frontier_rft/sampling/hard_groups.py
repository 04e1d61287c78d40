"""Larger groups for prompts predicted hard: a sampler around a sampler that gives each prompt
whose every earlier group came back all wrong N more rollouts, in the step's own generation
call.

Where rows are nearly free and steps are dear (a latency-bound GPU step: 64x the rows for 1.6x
the seconds on the H200, docs/results/device_cost.md) a prompt likely to come back all wrong
is cheaper to give a larger group up front than to rescue in a second call (`Rescue`): with
pass rate p a group of n is flat-wrong with probability (1 - p)^n, one of n + N with
(1 - p)^(n + N). The prediction is the run's own evidence, the only kind there is before a
prompt's first group: a prompt is predicted hard once it has been rolled out and none of its
completions so far was correct (`HardGroups.seen`, `HardGroups.solved`, one bool a prompt
each, saved in the sampler's state). A prompt not yet rolled out is not predicted anything.

One call: the wrapped sampler's first rollout call of the step is sent as one call with the
predicted-hard prompts of that call repeated at its end, N rollouts each (the rollout function
gets those ids twice; every group keeps its own payload). The wrapped sampler sees only its own
groups of n; a trained group whose prompt got the N trains joined to them, n + N rollouts as one
group (rewards and payloads: the extra part continues it, as rescue's does), its advantages over
the whole joined group. Extra rollouts of a group the wrapped sampler does not train are spent.

Normalisation and cost, as rescue's: a joined group is one group, one prompt's share of the
loss; the N rollouts a predicted-hard prompt gets count in the step's rollouts
(`StepSamples.rollouts`) and in `hard_groups/rollouts`, but in no extra generation call
(`train/sampling_rounds` counts the wrapped sampler's calls). The selector reads only the
groups of n its sampler rolled out (`StepSamples.sampled`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.state_check import read_array
from frontier_rft.sampling.more_rollouts import MoreRollouts
from frontier_rft.sampling.step import (
    SUCCESS,
    Rolled,
    RolloutFn,
    Round,
    Sampler,
    StepSamples,
    check_rollout,
    rolled_counts,
)
from frontier_rft.sampling.wraps_sampler import Generates

__all__ = ["HardGroups"]

I64 = NDArray[np.int64]


class HardGroups(MoreRollouts):
    """A sampler whose predicted-hard prompts get `extra` more rollouts in the step's first
    generation call, joined to their groups (see the module docstring)."""

    name: ClassVar[str] = "hard_groups"
    joins: ClassVar[str] = "joins more rollouts to the groups a step trains"
    generates: ClassVar[Generates] = "in_first_call"
    counted: ClassVar[tuple[str, str, str]] = ("groups_joined", "groups_solved", "prompts_hard")

    def __init__(self, sampler: Sampler, extra: int, success: float = SUCCESS):
        super().__init__(sampler, extra, success)
        num_tasks = sampler.inner.num_tasks
        self.seen = np.zeros(num_tasks, dtype=np.bool_)
        """Prompts rolled out in some step of this run."""
        self.solved = np.zeros(num_tasks, dtype=np.bool_)
        """Prompts with a correct completion in some group of this run (the extras included)."""

    def hard(self) -> NDArray[np.bool_]:
        """(num_tasks,) the prompts predicted hard now: rolled out, never solved."""
        return _predicted_hard(self.seen, self.solved)

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """The wrapped sampler's step, its first call carrying N more rollouts of each
        predicted-hard prompt in it, and those joined to the prompts' trained groups. Its
        `sampled` is the wrapped sampler's own samples; `wrap_metrics` the step's
        hard_groups/ counts."""
        check_rollout(rollout)  # refused before the wrapped sampler moves
        hard = self.hard()
        first: list[Round] = []  # the extras of the first call, once it is made

        def one_call(ids: Any, counts: Any = None) -> Any:
            if first:  # the wrapped sampler's later calls, as they are
                return rollout(ids) if counts is None else rollout(ids, counts)
            ids = np.asarray(ids, dtype=np.int64)
            given = np.full(ids.shape[0], group_size) if counts is None else counts
            sizes = np.asarray(given, dtype=np.int64)
            more = ids[hard[ids]]
            counts_more = np.full(more.shape[0], self.extra, dtype=np.int64)
            rewards, payloads = rolled_counts(
                rollout, np.concatenate([ids, more]), np.concatenate([sizes, counts_more])
            )
            own = int(sizes.sum())
            self.check_rewards(rewards[own:])  # the wrapped sampler checks its own part
            tail = payloads[ids.shape[0] :] if payloads is not None else None
            first.append(Round(more, rewards[own:], 0.0, counts_more, tail))
            if payloads is None:
                return rewards[:own]
            return Rolled(rewards[:own], payloads[: ids.shape[0]])

        samples = self.wraps.sample(step, batch_size, group_size, one_call)
        seen, solved = self.seen.copy(), self.solved.copy()  # changed once the step is done
        own = samples.groups()
        seen[own.task_ids] = True
        solved[np.repeat(own.task_ids, own.counts)[own.rewards >= self.success]] = True
        if not first or not first[0].task_ids.size:
            out = self.joined(samples, None, (), (0, 0, _predicted_hard(seen, solved).sum()))
            self.seen, self.solved = seen, solved
            return out
        extra = first[0]
        hit = np.any(extra.rewards.reshape(-1, self.extra) >= self.success, axis=1)
        solved[extra.task_ids[hit]] = True
        train = samples.train
        where = {int(t): j for j, t in enumerate(extra.task_ids.tolist())}
        joins = []
        for g in range(train.num_groups):  # a group of the first call whose prompt got more
            r, k = train.parts(g)[0]
            j = where.get(int(samples.rounds[r].task_ids[k])) if r == 0 else None
            if j is not None:
                joins.append((g, j))
        tally = (len(joins), hit.sum(), _predicted_hard(seen, solved).sum())
        out = self.joined(samples, extra, joins, tally)
        self.seen, self.solved = seen, solved  # only once joined: a refused step changes nothing
        return out

    # ------------------------------------------------------------------ state
    def _own_state(self) -> dict[str, Any]:
        return {"extra": self.extra, "seen": self.seen.copy(), "solved": self.solved.copy()}

    def _read_own(self, saved: Any) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        own = self._read_extra(saved, ("extra", "seen", "solved"))
        n = self.seen.shape[0]
        seen: NDArray[np.bool_] = read_array(own, "seen", self.name, np.bool_, shape=(n,))
        solved: NDArray[np.bool_] = read_array(own, "solved", self.name, np.bool_, shape=(n,))
        return seen, solved

    def _set_own(self, own: tuple[NDArray[np.bool_], NDArray[np.bool_]]) -> None:
        self.seen, self.solved = own


def _predicted_hard(seen: NDArray[np.bool_], solved: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The prompts predicted hard: rolled out (`seen`) and never solved."""
    out: NDArray[np.bool_] = seen & ~solved
    return out
