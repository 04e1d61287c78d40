"""What the wraps that give a step's groups more rollouts share (`MoreRollouts`): Rescue's N
for an all-wrong group of a never-solved prompt, HardGroups' N for a prompt predicted hard.
Both need the groups a step trains whole (the class fact `refusal`), both join their extra
part to a trained group as rescue first did (`joined`), and both are built and saved by their
N (`extra`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import bounded_int
from frontier_rft.core.state_check import check_keys, read_int
from frontier_rft.sampling.spec import KINDS
from frontier_rft.sampling.step import (
    MAX_GROUP_SIZE,
    SUCCESS,
    RolloutFn,
    Round,
    Sampler,
    StepSamples,
    fresh_batch,
    outside_unit,
    rolled_counts,
)
from frontier_rft.sampling.wraps_sampler import WrapsSampler

__all__ = ["MoreRollouts"]


class MoreRollouts(WrapsSampler):
    """A wrap that joins `extra` more rollouts to some of the groups a step trains."""

    uneven_groups: ClassVar[bool] = True
    settings: ClassVar[tuple[str, ...]] = ("extra",)
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = ({"extra": 2}, {"extra": 5})
    joins: ClassVar[str]
    """What it does to a step's groups, as its refusal says it."""
    counted: ClassVar[tuple[str, str, str]]
    """Its step metrics beside `rollouts` (those it added), under its name: the groups given
    them, those of them with a correct completion, and its prompts' count after the step."""

    @classmethod
    def refusal(cls, kind: str, config: Any) -> str | None:
        """Why it cannot wrap sampler `kind` set by `config`: only a kind whose class is
        `rescuable` trains its groups whole; one whose config splits each in two rounds
        (`splits_groups`: FewerRollouts' screen) is refused too."""
        row = KINDS[kind]
        split = row.fact("splits_groups", config)
        if row.fact("rescuable") and not split:
            return None
        return (
            f"{cls.name} {cls.joins}, which sampler {kind!r}"
            f"{' with screening' if split else ''} drops or splits: use plain GRPO or "
            f"--rollouts kept without --screen, or set {cls.name} 0"
        )

    @classmethod
    def checked_settings(cls, **settings: Any) -> dict[str, Any]:
        """N: an int in [1, MAX_GROUP_SIZE], named by the wrap (`rescue 0` is refused)."""
        return {"extra": bounded_int(settings["extra"], cls.name, lo=1, hi=MAX_GROUP_SIZE)}

    def __init__(self, sampler: Sampler, extra: int, success: float = SUCCESS):
        why = self.refusal(sampler.kind, sampler.config)
        if why is not None:
            raise ValueError(why)
        self.wraps = sampler
        self.extra: int = self.checked_settings(extra=extra)["extra"]
        """N: the more rollouts a group gets."""
        self.success = success
        """A rollout whose reward reaches this is correct."""

    def rewrap(self, sampler: Sampler) -> MoreRollouts:
        return type(self)(sampler, self.extra, self.success)

    def joined(
        self,
        samples: StepSamples,
        extra: Round | None,
        joins: Iterable[tuple[int, int]],
        counts: tuple[float, float, float],
    ) -> StepSamples:
        """The step's samples with `extra` after its rounds and, for each (g, j) of `joins`,
        group j of `extra` appended to trained group g (None: as sampled); its metrics are the
        inner wraps' and, under this wrap's name, the rollouts of `extra` and `counts` (named
        by `counted`)."""
        rollouts = 0 if extra is None else extra.rewards.shape[0]
        named = zip(("rollouts", *self.counted), (rollouts, *counts), strict=True)
        own = {f"{self.name}/{k}": float(v) for k, v in named}
        metrics = {**samples.wrap_metrics, **own}
        train, nominal = samples.train, samples.nominal_groups
        if extra is None:
            return StepSamples(samples.step, samples.rounds, train, nominal, samples, metrics)
        if train.from_surplus.any() or (train.steps != samples.step).any():
            raise RuntimeError(f"{self.name} got a group of an earlier step to extend")
        rounds = (*samples.rounds, extra)
        picks = [train.parts(g)[0] for g in range(train.num_groups)]
        tails = {picks[g]: train.parts(g)[1:] for g in range(train.num_groups)}
        for g, j in joins:
            tails[picks[g]] += ((len(samples.rounds), j),)
        batch = fresh_batch(rounds, picks, samples.step, train.deficit, tails)
        return StepSamples(samples.step, rounds, batch, nominal, samples, metrics)

    def rolled(
        self, rollout: RolloutFn, ids: NDArray[np.int64], counts: NDArray[np.int64]
    ) -> tuple[NDArray[np.float64], tuple[Any, ...] | None]:
        """`rollout(ids, counts)` as `rolled_counts` returns it, its rewards checked to be pass
        rates in [0, 1] as every kind's own rounds that read them so are (`roll_unit_round`):
        this wrap marks a prompt solved by them and no selector checks them."""
        rewards, payloads = rolled_counts(rollout, ids, counts)
        self.check_rewards(rewards)
        return rewards, payloads

    def check_rewards(self, rewards: NDArray[np.float64]) -> None:
        """A ValueError naming this wrap unless `rewards`, of the rollouts it made itself,
        are pass rates in [0, 1] (NaN, inf, 1.5 or 1e300 are not)."""
        bad = outside_unit(rewards)
        if bad is not None:
            raise ValueError(
                f"{self.name} reads the rewards of its own rollouts as pass rates in [0, 1] (a "
                f"reward of {self.success:g} is a correct completion), got {bad!r}: rescale the "
                f"rewards, or set {self.name} 0"
            )

    def _read_extra(self, saved: Any, keys: tuple[str, ...]) -> dict[str, Any]:
        """Its own saved state with `keys` ('extra' among them), checked to hold its N."""
        own = check_keys(saved, f"{self.name} state", keys)
        extra = read_int(own, "extra", self.name, lo=1, hi=MAX_GROUP_SIZE)
        if extra != self.extra:
            raise ValueError(
                f"{self.name} state was saved with {self.name} {extra}, not {self.extra}"
            )
        return own
