"""Rescue rollouts: a sampler around a sampler that gives a never-solved prompt's all-wrong
group more rollouts, in the same step.

pass@k is won on the prompts the policy has never solved (BBG, arXiv 2606.15455), and a
group of n all-wrong completions carries no GRPO gradient. `Rescue(sampler, N)` runs the
wrapped sampler's step, then rolls out N more completions (through the same `rollout(ids,
counts)`) for each group it trains that came back with no correct completion, when its prompt
has had none in any of its groups so far in the run (`Rescue.solved`, one bool a prompt: the
one place that fact lives, saved in the sampler's state). If one of the N is correct the group
trains joined, n + N rollouts as one group (rewards and payloads: the rescue part continues
it, as a screen's second part does), its advantages over the whole joined group; if none is,
the group trains as the sampler returned it and the N are spent (zero advantage only where its
rewards are all equal: with partial credit, such as a format reward, an all-wrong group can be
mixed). The reference trainer builds it from `rescue: N` (TrainConfig.step_sampler); the
simulator from its entry's `rescue`.

Normalisation: a rescued group is one group, one prompt's share of the loss (group_weighting
'prompt': each of its rows weighs n / (n + N) of a plain group's row); the step still trains
the groups the sampler returned, so `loss_scale` (groups trained / B) is unchanged.

Cost: N rollouts, their generation and their scoring, per all-wrong trained group of a
never-solved prompt, whether or not one is correct; the forward and backward passes over the
N rows of a rescued group. They count in the step's rollouts (`StepSamples.rollouts`) and in
`rescue/rollouts`. The selector is not told their rewards: what it reads stays the groups of
n its sampler rolled out (`StepSamples.sampled`: the step's reward metrics describe those), so
its statistics and its predictor's calibration mean what they mean without rescue; a rescued
prompt counts as solved here from then on.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.state_check import read_array
from frontier_rft.sampling.more_rollouts import MoreRollouts
from frontier_rft.sampling.step import (
    SUCCESS,
    RolloutFn,
    Round,
    Sampler,
    StepSamples,
)
from frontier_rft.sampling.wraps_sampler import Generates

__all__ = ["Rescue"]


class Rescue(MoreRollouts):
    """A sampler whose trained all-wrong groups of never-solved prompts get `extra` more
    rollouts, joined when one is correct (see the module docstring)."""

    name: ClassVar[str] = "rescue"
    joins: ClassVar[str] = "extends the all-wrong groups a step trains"
    generates: ClassVar[Generates] = "own_call"
    counted: ClassVar[tuple[str, str, str]] = ("groups_tried", "groups_rescued", "prompts_solved")

    def __init__(self, sampler: Sampler, extra: int, success: float = SUCCESS):
        super().__init__(sampler, extra, success)
        self.solved = np.zeros(sampler.inner.num_tasks, dtype=np.bool_)
        """Prompts with a correct completion in some group of this run (rescue's included)."""

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """The wrapped sampler's step, with a round of N rollouts for each trained all-wrong
        group of a prompt never solved (after this step's own groups are counted), each
        rescued group joined to its rescue part. Its `sampled` is the wrapped sampler's own
        samples; `wrap_metrics` the step's rescue/ counts."""
        samples = self.wraps.sample(step, batch_size, group_size, rollout)
        solved = self.solved.copy()  # the wrapper changes only once the step is done
        own = samples.groups()
        solved[np.repeat(own.task_ids, own.counts)[own.rewards >= self.success]] = True
        train = samples.train
        wrong = np.flatnonzero(~solved[train.task_ids])
        if not wrong.size:
            out = self.joined(samples, None, (), (0, 0, solved.sum()))
            self.solved = solved
            return out
        ids = train.task_ids[wrong]
        counts = np.full(ids.shape[0], self.extra, dtype=np.int64)
        rewards, payloads = self.rolled(rollout, ids, counts)
        extra = Round(ids, rewards, 0.0, counts, payloads)
        hit: NDArray[np.bool_] = np.any(rewards.reshape(-1, self.extra) >= self.success, axis=1)
        solved[ids[hit]] = True
        joins = [(g, j) for j, g in enumerate(wrong.tolist()) if hit[j]]
        tally = (ids.shape[0], hit.sum(), solved.sum())
        out = self.joined(samples, extra, joins, tally)
        self.solved = solved  # only once the step is joined: a refused step changes nothing
        return out

    # ------------------------------------------------------------------ state
    def _own_state(self) -> dict[str, Any]:
        return {"extra": self.extra, "solved": self.solved.copy()}

    def _read_own(self, saved: Any) -> NDArray[np.bool_]:
        own = self._read_extra(saved, ("extra", "solved"))
        n = self.solved.shape[0]
        solved: NDArray[np.bool_] = read_array(own, "solved", self.name, np.bool_, shape=(n,))
        return solved

    def _set_own(self, own: NDArray[np.bool_]) -> None:
        self.solved = own
