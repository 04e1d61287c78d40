"""One step's sampling, written once: what the reference trainer and the simulator both drive.

A sampler turns "step t needs B groups of n rollouts" into rounds of rollouts and the groups
to train on. The kinds (`spec.KINDS`, a row each) are `PassThrough` (one round of B prompts,
every group trained: plain GRPO), `DynamicSampling` (DAPO: rounds of oversampled prompts until
B mixed groups), `Allocation` (B prompts, the budget B x n spread over them: groups of
different sizes, rolled out by rollout(ids, counts)), `FewerRollouts`, `PilotCommit` and
`ConformalStop`; `Rescue` and `Backfill` wrap any of them (`wraps_sampler`). All are called
the same way, so a trainer's step reads the same with any:

    samples = sampler.sample(step, B, n, rollout)   # rollout(ids) -> n rewards per id
    for r in samples.rounds: ...                    # what was rolled out (metrics)
    train(samples.train)                            # FilteredBatch: the groups to train on
    samples.rollouts                                # rollouts spent this step

A rollout function returns the rewards, or `Rolled(rewards, payloads)`: the rewards and one
opaque payload per group (the reference trainer's completions as token lists; nothing in the
simulator). The payloads travel with the groups: `samples.train.payloads[g]` holds the payload
of every part of group g (a pilot and its commit, a group and its rescue), so a trainer reads
whole groups from the sampler instead of finding them by round and position. `sampling/`
never looks inside a payload; only the store (`sampling/store.py`) saves one.

The sampler sends every rollout's rewards to the selector inside exactly once, and ends
the step on it (`Selector.flush`), so its metrics describe the step.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.filtered_batch import FilteredBatch, csr

__all__ = [
    "MAX_GROUP_SIZE",
    "SIZE_BINS",
    "SUCCESS",
    "Rolled",
    "RolloutFn",
    "Round",
    "Sampler",
    "StepSamples",
    "check_rollout",
    "outside_unit",
    "roll_unit_round",
    "rollout_metrics",
    "split_rolled",
]

MAX_GROUP_SIZE = 1 << 20
"""Most rollouts per prompt a step takes: past it, a typo."""

SUCCESS = 1.0
"""A rollout counts as solved when its reward reaches this (Countdown's 0.1 is format only)."""

RolloutFn = Callable[..., Any]
"""rollout(ids) -> rewards, group_size per id, id-major, or `Rolled` (the rewards and one
payload per id). A sampler that gives prompts groups of different sizes (Allocation) calls
rollout(ids, counts): counts[i] rewards for ids[i], id-major."""


@dataclass(frozen=True, eq=False)
class Rolled:
    """What a rollout function returns when its groups carry data the trainer needs later:
    the rewards (id-major, as bare rewards would be) and one opaque payload per id, in order."""

    rewards: Any
    """The rewards, id-major: anything numpy reads as floats."""
    payloads: Sequence[Any]
    """One payload per prompt rolled out, in the order of the ids (its completions, say)."""


def split_rolled(result: Any, groups: int) -> tuple[NDArray[np.float64], tuple[Any, ...] | None]:
    """A rollout function's result as (rewards as float64, payloads or None when it returned
    bare rewards); a ValueError when it gave another number of payloads than `groups`."""
    if not isinstance(result, Rolled):
        return np.asarray(result, dtype=np.float64), None
    payloads = tuple(result.payloads)
    if len(payloads) != groups:
        raise ValueError(
            f"rollout returned {len(payloads)} payloads for {groups} prompts; give one per "
            "prompt, in the order of the ids"
        )
    return np.asarray(result.rewards, dtype=np.float64), payloads


def check_rollout(rollout: object) -> None:
    """A ValueError when `rollout` is not a function: every sampler asks before its
    selector proposes anything, so a refused call moves nothing (its RNG included)."""
    if not callable(rollout):
        raise ValueError(
            f"rollout must be a function, rollout(ids) -> rewards (Allocation, FewerRollouts "
            f"and PilotCommit call rollout(ids, counts)); got {type(rollout).__name__}"
        )


@dataclass(frozen=True, eq=False)
class Round:
    """One round of a step: the prompts rolled out and their rewards (id-major)."""

    task_ids: NDArray[np.int64]
    """(k,) prompts rolled out in this round, in the order given to rollout()."""
    rewards: NDArray[np.float64]
    """(k * n,) their rewards, group by group."""
    select_seconds: float
    """Time the selector took to propose this round."""
    counts: NDArray[np.int64] | None = None
    """(k,) rollouts of each prompt; None: every group the same size (rewards / k)."""
    payloads: tuple[Any, ...] | None = None
    """(k,) the rollout's payload of each group (`Rolled`); None: it returned bare rewards."""

    def payload(self, g: int) -> Any:
        """Group g's payload (None when the rollout gave none)."""
        return None if self.payloads is None else self.payloads[g]

    @functools.cached_property
    def sizes(self) -> NDArray[np.int64]:
        """(k,) rollouts of each prompt."""
        if self.counts is not None:
            return self.counts
        k = self.task_ids.shape[0]
        return np.full(k, self.rewards.shape[0] // k if k else 0, dtype=np.int64)

    @functools.cached_property
    def offsets(self) -> NDArray[np.int64]:
        """(k+1,) CSR offsets: group g is rewards[offsets[g]:offsets[g+1]]."""
        return csr(self.sizes)

    def group(self, g: int) -> NDArray[np.float64]:
        """The rewards of group g."""
        off = self.offsets
        return self.rewards[off[g] : off[g + 1]]

    @property
    def group_rewards(self) -> NDArray[np.float64]:
        """(k, n) rewards, one row per prompt (groups of one size only: else use `group`)."""
        sizes = self.sizes
        if sizes.size and np.any(sizes != sizes[0]):
            raise ValueError("this round's groups differ in size: read them with group(g)")
        return self.rewards.reshape(self.task_ids.shape[0], -1)

    @property
    def mixed(self) -> NDArray[np.bool_]:
        """(k,) True where the group's rewards are not all equal (a GRPO gradient)."""
        if self.task_ids.shape[0] == 0:
            return np.zeros(0, dtype=np.bool_)
        starts = self.offsets[:-1]
        hi = np.maximum.reduceat(self.rewards, starts)
        out: NDArray[np.bool_] = hi > np.minimum.reduceat(self.rewards, starts)
        return out


def rolled_counts(
    rollout: RolloutFn, ids: NDArray[np.int64], counts: NDArray[np.int64]
) -> tuple[NDArray[np.float64], tuple[Any, ...] | None]:
    """`rollout(ids, counts)` as (rewards, payloads or None), checked to hold counts[i]
    rewards of each of `ids`, id-major; a ValueError saying what came back otherwise."""
    rewards, payloads = split_rolled(rollout(ids, counts), ids.shape[0])
    total = int(counts.sum())
    if rewards.shape != (total,):
        raise ValueError(
            f"rollout returned {rewards.shape} rewards for {ids.shape[0]} prompts; "
            f"expected counts[i] per prompt ({total} in all), id-major"
        )
    return rewards, payloads


def outside_unit(rewards: NDArray[np.float64]) -> float | None:
    """The first reward that is not a pass rate in [0, 1] (NaN and inf included); None when
    every one is: what a sampler that reads rewards as pass rates checks of its rollouts."""
    bad = np.flatnonzero(~((rewards >= 0.0) & (rewards <= 1.0)))  # NaN compares false
    return float(rewards[bad[0]]) if bad.size else None


def roll_unit_round(
    selector: Selector,
    step: int,
    ids: NDArray[np.int64],
    counts: NDArray[np.int64],
    rollout: RolloutFn,
    seconds: float,
    why_unit: str,
) -> Round:
    """Roll out counts[i] of each of `ids`, check that the rewards are pass rates in [0, 1]
    (`why_unit`: the refusal, saying why the sampler needs them), send them to `selector`
    once. The rollout step of samplers that read a group's mean as its pass rate."""
    rewards, payloads = rolled_counts(rollout, ids, counts)
    if outside_unit(rewards) is not None:
        raise ValueError(why_unit)
    start = time.perf_counter()
    selector.update(Feedback(task_ids=np.repeat(ids, counts), rewards=rewards, step=step))
    return Round(ids, rewards, seconds + time.perf_counter() - start, counts, payloads)


@dataclass(frozen=True, eq=False)
class StepSamples:
    """What one step sampled: its rounds, the groups to train on, the rollouts spent."""

    step: int
    rounds: tuple[Round, ...]
    train: FilteredBatch
    nominal_groups: int = 0
    """Groups uniform's step would train (B), when the loss is normalised by them instead of
    by the groups trained (FewerRollouts' loss_scale 'batch'); 0: by the groups trained."""
    wrapped: StepSamples | None = None
    """What the wrapped sampler returned, when a sampler around a sampler (Rescue) added rounds
    after its own; None: these rounds are all the sampler's own."""
    wrap_metrics: Mapping[str, float] = field(default_factory=dict)
    """This step's metrics of the wrappers around the sampler (rescue/...), namespaced."""
    replayed: int = 0
    """The last this many groups of `train` are replayed groups of earlier steps (Backfill),
    trained again against their behaviour log-probs; 0: every group is this step's."""
    behaviour: tuple[NDArray[np.float32], ...] = ()
    """Backfill: each replayed row's tokens' log-probs under the policy that sampled it (the
    rows of the replayed groups, in order), as the trainer handed them back."""

    @property
    def sampled(self) -> StepSamples:
        """The innermost sampler's own samples, before any wrapper added rounds: what the
        selector read, and what a step's reward metrics, shadows and reward log describe."""
        return self if self.wrapped is None else self.wrapped.sampled

    @property
    def loss_scale(self) -> float:
        """Factor on the step's policy-gradient loss: groups trained / nominal_groups (1 when
        nominal is 0). The reference trainer leaves its KL and entropy terms unscaled."""
        if not self.nominal_groups:
            return 1.0
        return self.train.num_groups / self.nominal_groups

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

    def groups(self) -> FilteredBatch:
        """Every group rolled out this step (trained or not), each whole: the parts of a
        group continued in a later round (train.continued) joined to it, in round order. A
        part continuing a group begun at an earlier step (a Pilot-Commit pilot committed
        later, train.steps[g] < step) is listed on its own: only this step's rollouts."""
        merged: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {}
        for g, tail in enumerate(self.train.continued):
            if tail and int(self.train.steps[g]) == self.step:
                merged[self.train.parts(g)[0]] = tail
        joined = {part for tail in merged.values() for part in tail}
        picks = [
            (r, g)
            for r, one in enumerate(self.rounds)
            for g in range(one.task_ids.shape[0])
            if (r, g) not in joined
        ]
        return fresh_batch(self.rounds, picks, self.step, 0, merged)


SIZE_BINS = (2, 4, 8, 16, 32, 64, 128)
"""Upper edges of the group-size histogram (`rollout_metrics`): n <= 2, 3-4, ..., > 128."""


def rollout_metrics(samples: StepSamples) -> dict[str, float]:
    """What a step spent and got, for any sampler: rollouts, prompts rolled out, rollouts per
    prompt, informative (mixed) groups and their number per rollout, the flat groups by side
    (all correct; flat and not all correct), and the histogram of
    group sizes (`n_to_<edge>`: groups of size in (previous edge, edge]; `n_over_128`)."""
    groups = samples.groups()
    rollouts = int(groups.counts.sum())
    informative = int(groups.mixed.sum())
    k = groups.num_groups
    # the flat groups by side: all solved (every reward 1) or not (all wrong, or all at a
    # partial reward), what says whether both flat sides are present
    solved = (
        np.minimum.reduceat(groups.rewards, groups.offsets[:-1]) >= 1.0
        if k
        else np.zeros(0, dtype=np.bool_)
    )
    out = {
        "rollouts": float(rollouts),
        "prompts": float(k),
        "rollouts_per_prompt": rollouts / k if k else float("nan"),
        "informative_groups": float(informative),
        "informative_per_rollout": informative / rollouts if rollouts else float("nan"),
        "all_correct_groups": float(solved.sum()),
        "flat_unsolved_groups": float(k - informative - int(solved.sum())),
    }
    edges = np.searchsorted(np.asarray(SIZE_BINS), groups.counts, side="left")
    hist = np.bincount(edges, minlength=len(SIZE_BINS) + 1)
    for edge, count in zip(SIZE_BINS, hist, strict=False):
        out[f"n_to_{edge}"] = float(count)
    out[f"n_over_{SIZE_BINS[-1]}"] = float(hist[-1])
    return out


class Sampler(Protocol):
    """What the trainer, the simulator and TRL call, and what a checkpoint saves: PassThrough,
    DynamicSampling, Allocation, FewerRollouts or PilotCommit, told apart by `kind` alone."""

    @property
    def kind(self) -> str:
        """The sampler's name in a checkpoint (a resume under another sampler is refused; a
        sampler around a sampler, Rescue, gives the wrapped one's)."""
        ...

    @property
    def inner(self) -> Selector:
        """The selector inside."""
        ...

    @property
    def config(self) -> Any:
        """Its frozen config dataclass, saved beside its state (None: it has no settings)."""
        ...

    uneven_groups: ClassVar[bool]
    """Its groups differ in size within a step (`WrapsSelector` says more of each fact)."""
    holds_groups: ClassVar[bool]
    """It trains, at a later step, groups it rolled out earlier."""
    rescuable: ClassVar[bool]
    """Its trained groups are this step's whole groups, which rescue may extend."""
    replays: ClassVar[bool]
    """It trains groups of earlier steps again against their sampling policy's log-probs,
    handed back by the trainer after each update (`trained`)."""

    def trained(self, behaviour: Sequence[Any]) -> dict[str, float]:
        """The step's fresh rows' tokens' log-probs under the policy that sampled them, handed
        back after the update (held by a sampler that `replays`); the metrics of what it holds."""
        ...

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """Roll out step `step`'s rounds and return the groups to train on."""
        ...

    def metrics(self) -> dict[str, float]:
        """The selector's metrics (plus the sampler's own, namespaced)."""
        ...

    def held(self) -> list[tuple[int, int, int]]:
        """(step, round, position) of groups rolled out that a later step may train: their
        completions are the trainer's to keep (Pilot-Commit's buffer; none for the others)."""
        ...

    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        """Its kind, config and own state; the selector's nested unless `with_inner=False`."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict of its kind and config; on any error nothing changes."""
        ...


def run_round(
    selector: Selector, step: int, size: int, group_size: int, rollout: RolloutFn
) -> Round:
    """Propose `size` prompts, roll them out, send every reward to the selector once."""
    start = time.perf_counter()
    ids = selector.select(size)
    seconds = time.perf_counter() - start
    rewards, payloads = split_rolled(rollout(ids), ids.shape[0])
    if rewards.shape != (ids.shape[0] * group_size,):
        raise ValueError(
            f"rollout returned {rewards.shape} rewards for {ids.shape[0]} prompts; expected "
            f"{group_size} per prompt ({ids.shape[0] * group_size}), prompt-major"
        )
    start = time.perf_counter()
    selector.update(Feedback(task_ids=np.repeat(ids, group_size), rewards=rewards, step=step))
    return Round(ids, rewards, seconds + time.perf_counter() - start, payloads=payloads)


def fresh_batch(
    rounds: tuple[Round, ...],
    picks: list[tuple[int, int]],
    step: int,
    deficit: int,
    continued: Mapping[tuple[int, int], tuple[tuple[int, int], ...]] | None = None,
) -> FilteredBatch:
    """A FilteredBatch of this step's groups `picks` = [(round, group)], no surplus; a pick
    in `continued` has its further parts' rewards appended."""
    n_groups = len(picks)
    r_idx = np.array([p[0] for p in picks], dtype=np.int64)
    g_idx = np.array([p[1] for p in picks], dtype=np.int64)
    tails = [(continued or {}).get(p, ()) for p in picks]
    rows = [
        np.concatenate([rounds[r].group(g), *(rounds[rr].group(gg) for rr, gg in tail)])
        for (r, g), tail in zip(picks, tails, strict=True)
    ]
    counts = np.array([row.shape[0] for row in rows], dtype=np.int64)
    carries = any(r.payloads is not None for r in rounds)
    payloads = tuple(
        tuple(rounds[rr].payload(gg) for rr, gg in (pick, *tail))
        for pick, tail in zip(picks, tails, strict=True)
    )
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
        continued=tuple(tails) if any(tails) else (),
        payloads=payloads if carries else (),
    )
