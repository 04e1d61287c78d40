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

from frontier_rft.core.bounds import bounded_int
from frontier_rft.core.state_check import check_keys, read_array, read_int
from frontier_rft.sampling.fewer_rollouts import screens
from frontier_rft.sampling.spec import KINDS
from frontier_rft.sampling.step import (
    MAX_GROUP_SIZE,
    SUCCESS,
    RolloutFn,
    Round,
    Sampler,
    StepSamples,
    fresh_batch,
    split_rolled,
)
from frontier_rft.sampling.wraps_sampler import WrapsSampler

__all__ = ["Rescue"]


class Rescue(WrapsSampler):
    """A sampler whose trained all-wrong groups of never-solved prompts get `extra` more
    rollouts, joined when one is correct (see the module docstring)."""

    uneven_groups: ClassVar[bool] = True
    name: ClassVar[str] = "rescue"
    settings: ClassVar[tuple[str, ...]] = ("extra",)

    @classmethod
    def refusal(cls, kind: str, config: Any) -> str | None:
        """Why rescue cannot wrap sampler `kind` set by `config`: it extends the all-wrong
        groups a step trains, which only a kind whose class is `rescuable` keeps whole; a screen
        splits each group in two rounds (FewerRollouts' screen), so a rescuable kind that
        screens is refused too."""
        split = screens(kind, config)
        if KINDS[kind].fact("rescuable") and not split:
            return None
        return (
            f"rescue extends the all-wrong groups a step trains, which sampler {kind!r}"
            f"{' with screening' if split else ''} drops or splits: use plain GRPO or "
            "--rollouts kept without --screen, or set rescue 0"
        )

    def __init__(self, sampler: Sampler, extra: int, success: float = SUCCESS):
        why = self.refusal(sampler.kind, sampler.config)
        if why is not None:
            raise ValueError(why)
        self.wraps = sampler
        self.extra = bounded_int(extra, "rescue", lo=1, hi=MAX_GROUP_SIZE)
        """N: rescue rollouts a group gets."""
        self.success = success
        """A rollout whose reward reaches this is correct."""
        self.solved = np.zeros(sampler.inner.num_tasks, dtype=np.bool_)
        """Prompts with a correct completion in some group of this run (rescue's included)."""

    def rewrap(self, sampler: Sampler) -> Rescue:
        return Rescue(sampler, self.extra, self.success)

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
        if train.from_surplus.any() or (train.steps != step).any():
            raise RuntimeError("rescue got a group of an earlier step to extend")
        wrong = np.flatnonzero(~solved[train.task_ids])
        if not wrong.size:
            self.solved = solved
            return StepSamples(
                step, samples.rounds, train, samples.nominal_groups, samples, self._metrics(0, 0, 0)
            )
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
        solved[ids[hit]] = True
        rounds = (*samples.rounds, extra)
        picks = [train.parts(g)[0] for g in range(train.num_groups)]
        tails = {picks[g]: train.parts(g)[1:] for g in range(train.num_groups)}
        for j, g in enumerate(wrong.tolist()):
            if hit[j]:
                tails[picks[g]] += ((len(samples.rounds), j),)
        batch = fresh_batch(rounds, picks, step, train.deficit, tails)
        self.solved = solved
        metrics = self._metrics(int(counts.sum()), ids.shape[0], int(hit.sum()))
        return StepSamples(step, rounds, batch, samples.nominal_groups, samples, metrics)

    def _metrics(self, rollouts: int, tried: int, rescued: int) -> dict[str, float]:
        return {
            "rescue/rollouts": float(rollouts),
            "rescue/groups_tried": float(tried),
            "rescue/groups_rescued": float(rescued),
            "rescue/prompts_solved": float(self.solved.sum()),
        }

    # ------------------------------------------------------------------ state
    def _own_state(self) -> dict[str, Any]:
        return {"extra": self.extra, "solved": self.solved.copy()}

    def _read_own(self, saved: Any) -> NDArray[np.bool_]:
        who = "rescue"
        own = check_keys(saved, f"{who} state", ("extra", "solved"))
        extra = read_int(own, "extra", who, lo=1, hi=MAX_GROUP_SIZE)
        if extra != self.extra:
            raise ValueError(f"{who} state was saved with rescue {extra}, not {self.extra}")
        n = self.solved.shape[0]
        solved: NDArray[np.bool_] = read_array(own, "solved", who, np.bool_, shape=(n,))
        return solved

    def _set_own(self, own: NDArray[np.bool_]) -> None:
        self.solved = own
