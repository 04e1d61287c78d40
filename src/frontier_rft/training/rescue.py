"""Rescue rollouts: more rollouts, in the same step, for a never-solved prompt that came back
all-wrong.

pass@k is won on the prompts the policy has never solved (BBG, arXiv 2606.15455), and a
group of n all-wrong completions carries no GRPO gradient. With `rescue: N` the reference
trainer rolls out N more completions for each group it trains that came back with no correct
completion, when its prompt has had none in any of its groups so far in the run (`Rescue.solved`,
one bool a prompt: the one place that fact lives). If one of the N is correct the group trains
joined, n + N rollouts as one group, its advantages over the whole joined group (the joined
groups of the screen, `fresh_batch`'s continued parts, and the trainer's `_joined`: the same
code); if none is, the group trains as the sampler returned it and the N are spent (zero
advantage only where its rewards are all equal: with partial credit, such as a format reward,
an all-wrong group can be mixed).

Normalisation: a rescued group is one group, one prompt's share of the loss (group_weighting
'prompt': each of its rows weighs n / (n + N) of a plain group's row); the step still trains
the groups the sampler returned, so `loss_scale` (groups trained / B) is unchanged.

Cost: N rollouts, their generation and their scoring, per all-wrong trained group of a
never-solved prompt, whether or not one is correct; the forward and backward passes over the
N rows of a rescued group. They count in the run's rollouts and generated tokens (the bill) and
in `rescue/rollouts`. The selector is not told their rewards: what it reads stays the groups of
n its sampler rolled out, so its statistics and its predictor's calibration mean what they mean
without rescue; a rescued prompt counts as solved here from then on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.sampling.filtered_batch import FilteredBatch
from frontier_rft.sampling.step import Round, StepSamples, fresh_batch, split_rolled

__all__ = ["Rescue"]


class Rescue:
    """The prompts solved so far in a run, and the rescue rollouts of one step."""

    def __init__(self, extra: int, num_tasks: int, success: float):
        self.extra = extra
        """N: rescue rollouts a group gets."""
        self.success = success
        """A rollout whose reward reaches this is correct."""
        self.solved = np.zeros(num_tasks, dtype=np.bool_)
        """Prompts with a correct completion in some group of this run (rescue's included)."""
        self.last: dict[str, float] = {}
        """This step's metrics."""

    def observe(self, batch: FilteredBatch) -> None:
        """Mark the prompts of `batch`'s groups that have a correct completion."""
        correct = np.repeat(batch.task_ids, batch.counts)[batch.rewards >= self.success]
        self.solved[correct] = True

    def step(
        self, samples: StepSamples, rollout: Callable[[np.ndarray, np.ndarray], Any]
    ) -> StepSamples:
        """`samples` with a round of N rollouts for each trained all-wrong group of a prompt
        never solved (after this step's own groups are counted), each rescued group joined to
        its rescue part; `samples` itself when there is none. Marks what is solved."""
        self.observe(samples.groups())
        train, step = samples.train, samples.step
        if train.from_surplus.any() or (train.steps != step).any():
            raise RuntimeError("rescue got a group of an earlier step to extend")
        wrong = np.flatnonzero(~self.solved[train.task_ids])
        if not wrong.size:
            self.last = self._metrics(0, 0, 0)
            return samples
        ids = train.task_ids[wrong]
        counts = np.full(ids.shape[0], self.extra, dtype=np.int64)
        rewards, payloads = split_rolled(rollout(ids, counts), ids.shape[0])
        if rewards.shape != (int(counts.sum()),):
            raise ValueError(
                f"rollout returned {rewards.shape} rewards for {ids.shape[0]} rescued prompts; "
                f"expected {self.extra} per prompt, prompt-major"
            )
        extra = Round(ids, rewards, 0.0, counts, payloads)
        hit: NDArray[np.bool_] = np.any(rewards.reshape(-1, self.extra) >= self.success, axis=1)
        self.solved[ids[hit]] = True
        rounds = (*samples.rounds, extra)
        picks = [train.parts(g)[0] for g in range(train.num_groups)]
        tails = {picks[g]: train.parts(g)[1:] for g in range(train.num_groups)}
        for j, g in enumerate(wrong.tolist()):
            if hit[j]:
                tails[picks[g]] += ((len(samples.rounds), j),)
        batch = fresh_batch(rounds, picks, step, train.deficit, tails)
        self.last = self._metrics(int(counts.sum()), ids.shape[0], int(hit.sum()))
        return StepSamples(step, rounds, batch, samples.nominal_groups)

    def _metrics(self, rollouts: int, tried: int, rescued: int) -> dict[str, float]:
        return {
            "rescue/rollouts": float(rollouts),
            "rescue/groups_tried": float(tried),
            "rescue/groups_rescued": float(rescued),
            "rescue/prompts_solved": float(self.solved.sum()),
        }

    def state(self) -> list[int]:
        """The solved prompts' indices (JSON)."""
        return [int(t) for t in np.flatnonzero(self.solved)]

    def load(self, saved: Any) -> None:
        """Inverse of `state`, checked against the run's pool."""
        n = self.solved.shape[0]
        if not isinstance(saved, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) and 0 <= t < n for t in saved
        ):
            raise ValueError(
                f"the checkpoint's rescue record is not a list of prompt indices below {n}; "
                "resume from this run's own checkpoint, or start a new --out"
            )
        solved = np.zeros(n, dtype=np.bool_)
        solved[saved] = True
        self.solved = solved
