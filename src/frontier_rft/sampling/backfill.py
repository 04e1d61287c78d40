"""Backfill: a sampler around a sampler that fills the group slots a step frees with
replayed informative groups of earlier steps.

A step that frees slots trains G <= B groups of its own: a kept step (`rollouts: kept`,
FewerRollouts), or any kind whose row states `frees_slots` (`sampling/spec.py`).
`Backfill(sampler, capacity, max_age, max_uses)` runs the wrapped sampler's step, then
appends up to B - G of the youngest groups it holds after the fresh ones, each as it was
trained at its own step (its rewards and its completions, the payload its rollout carried;
no new rollout: after rollout-level replay, arXiv 2606.04560; DOTS-RR, arXiv 2506.05316).
It holds a step's informative (mixed) trained groups once the trainer has updated on them
and handed back, through `Backfill.trained`, the log-probs the behaviour policy (the one that
sampled them) gave each of their tokens: those exist only after the update's first pass, so
that one call is the trainer's part of the loop.

What lives where: this module holds the groups (a `GroupStore`: prompt, step, rewards,
completions), their uses and their float32 behaviour log-probs, in the sampler's state (saved
and resumed exactly, `step_sampler.npz`), and decides which groups a step replays. The
importance correction of a replayed row against its behaviour log-probs (the ratios, the
dual-clip cap, their metrics) is the trainer's, beside its loss (training/backfill.py):
it needs the policy's log-probs, which no sampler sees. A replayed group's advantages are
its rewards' under the run's estimator, as at its own step (the same numbers).

Bounds: a group is held once, at the step it was trained, replayed at most `max_uses` times,
dropped when older than `max_age` steps, and at most `capacity` are held (the oldest dropped
first). The youngest held groups are replayed first (no RNG: a resumed run replays what the
straight one did). The step's `loss_scale` counts a replayed group as a fresh one
((G + replayed) / B under loss_scale 'batch').

The simulator has no policy and no log-probs, and no entry asks for backfill: it runs only in
the reference trainer (TrainConfig.backfill 'replay', built by TrainConfig.step_sampler).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import bounded_int
from frontier_rft.core.state_check import check_keys, read_array, read_int
from frontier_rft.sampling.filtered_batch import FilteredBatch
from frontier_rft.sampling.spec import KINDS, SamplerSpec
from frontier_rft.sampling.step import RolloutFn, Sampler, StepSamples
from frontier_rft.sampling.store import GroupStore, payload_state
from frontier_rft.sampling.wraps_sampler import WrapsSampler

__all__ = ["Backfill"]

F32 = NDArray[np.float32]
_BOUNDS = ("capacity", "max_age", "max_uses")
"""Backfill's settings, as its state names them."""
_NAMED = {
    "capacity": "backfill_buffer",
    "max_age": "backfill_max_age",
    "max_uses": "backfill_max_uses",
}
"""Each setting as TrainConfig names it (what its refusal says)."""


class Backfill(WrapsSampler):
    """A sampler whose steps' freed group slots are filled with replayed informative groups of
    earlier steps (see the module docstring)."""

    holds_groups: ClassVar[bool] = True
    replays: ClassVar[bool] = True
    name: ClassVar[str] = "backfill"
    settings: ClassVar[tuple[str, ...]] = _BOUNDS
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = (
        {"capacity": 2, "max_age": 2, "max_uses": 2},
        {"capacity": 16, "max_age": 1, "max_uses": 1},
    )

    @classmethod
    def refusal(cls, kind: str, config: Any) -> str | None:
        """Why backfill cannot wrap sampler `kind` set by `config`: it fills the group slots a
        step frees, so only a kind whose steps may train fewer than the batch's groups
        (`frees_slots`, a fact of its row) has any to fill."""
        if KINDS[kind].fact("frees_slots", config):
            return None
        freeing = [k for k in KINDS if SamplerSpec(k).fact("frees_slots")]
        return (
            f"backfill replay fills the group slots a step frees, which sampler {kind!r} "
            f"never does: use a sampler that does ({', '.join(freeing)}; e.g. add --rollouts "
            "kept), or set backfill off"
        )

    @classmethod
    def checked_settings(cls, **settings: Any) -> dict[str, Any]:
        """Its bounds, each a positive int, named as TrainConfig names them."""
        return {key: bounded_int(settings[key], _NAMED[key], lo=1) for key in _BOUNDS}

    def __init__(self, sampler: Sampler, capacity: int, max_age: int, max_uses: int):
        why = self.refusal(sampler.kind, sampler.config)
        if why is not None:
            raise ValueError(why)
        self.wraps = sampler
        bounds = self.checked_settings(capacity=capacity, max_age=max_age, max_uses=max_uses)
        self.capacity: int = bounds["capacity"]
        """Most groups held (the oldest dropped first)."""
        self.max_age: int = bounds["max_age"]
        """A held group older than this many steps is dropped."""
        self.max_uses: int = bounds["max_uses"]
        """Times a held group is replayed at most."""
        self.store = GroupStore.empty()
        """The held groups, oldest first."""
        self.uses = np.zeros(0, dtype=np.int64)
        """(M,) times each held group has been replayed."""
        self.behaviour: tuple[tuple[F32, ...], ...] = ()
        """(M,) per held group, each completion's tokens' log-probs under the policy that
        sampled it (float32)."""
        self._fresh: FilteredBatch | None = None
        """The last step's fresh trained groups, until the trainer hands back their
        log-probs (`trained`)."""

    def rewrap(self, sampler: Sampler) -> Backfill:
        return Backfill(sampler, self.capacity, self.max_age, self.max_uses)

    def held(self) -> list[tuple[int, int, int]]:
        return self.wraps.held() + self.store.keys()

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """The wrapped sampler's step, then up to B - G of the youngest held groups no older
        than max_age, replayed after the fresh ones (`StepSamples.replayed`, their rows'
        behaviour log-probs in `StepSamples.behaviour`); `wrap_metrics` the inner
        wrappers' and the step's backfill/ counts."""
        samples = self.wraps.sample(step, batch_size, group_size, rollout)
        fresh = samples.train
        live = step - self.store.step <= self.max_age
        store, uses = self.store.keep(live), self.uses[live]
        behaviour = tuple(b for b, keep in zip(self.behaviour, live.tolist(), strict=True) if keep)
        rows = np.arange(store.size, dtype=np.int64)[::-1][: max(0, batch_size - fresh.num_groups)]
        uses = uses.copy()
        uses[rows] += 1
        train = store.trained_after(fresh, rows)
        replayed = tuple(lp for i in rows.tolist() for lp in behaviour[i])
        left = uses < self.max_uses
        self.store, self.uses = store.keep(left), uses[left]
        self.behaviour = tuple(b for b, keep in zip(behaviour, left.tolist(), strict=True) if keep)
        self._fresh = fresh
        staleness = step - store.step[rows]
        metrics = {
            **samples.wrap_metrics,
            "backfill/replayed_groups": float(rows.shape[0]),
            "backfill/replayed_rows": float(store.counts[rows].sum()),
            "backfill/staleness_mean": float(np.mean(staleness)) if rows.size else 0.0,
        }
        return StepSamples(
            step,
            samples.rounds,
            train,
            samples.nominal_groups,
            samples,
            metrics,
            replayed=rows.shape[0],
            behaviour=replayed,
        )

    def trained(self, behaviour: Sequence[Any]) -> dict[str, float]:
        """What the trainer hands back after updating on the last step's groups: each fresh
        row's tokens' log-probs under the policy that sampled them (at the update's first
        pass), in the rows' order. Holds the step's informative fresh groups with them (the
        oldest dropped past capacity); returns the groups held."""
        fresh = self._fresh
        if fresh is None:
            raise RuntimeError("backfill was handed log-probs before a step sampled groups")
        rows = [np.asarray(lp, dtype=np.float32).copy() for lp in behaviour]
        if len(rows) != int(fresh.counts.sum()):
            raise ValueError(
                f"backfill got log-probs of {len(rows)} rows for the step's "
                f"{int(fresh.counts.sum())} fresh rows"
            )
        mixed = np.flatnonzero(fresh.mixed)
        ends = fresh.offsets.tolist()
        store = self.store.add_trained(fresh, mixed)
        added = tuple(tuple(rows[ends[g] : ends[g + 1]]) for g in mixed.tolist())
        _check_lengths(store.payloads[self.store.size :], added, "the trainer's log-probs")
        drop = max(0, store.size - self.capacity)
        self.store = store.keep(np.arange(store.size) >= drop)
        self.uses = np.concatenate([self.uses, np.zeros(len(added), dtype=np.int64)])[drop:]
        self.behaviour = (self.behaviour + added)[drop:]
        self._fresh = None
        return {"backfill/buffer_groups": float(self.store.size)}

    # ------------------------------------------------------------------ state
    def _own_state(self) -> dict[str, Any]:
        flat = [lp for group in self.behaviour for lp in group]
        return {
            **{key: getattr(self, key) for key in _BOUNDS},
            "store": self.store.state(),
            "uses": self.uses.copy(),
            "behaviour": np.concatenate([np.zeros(0, dtype=np.float32), *flat]),
        }

    def _read_own(self, saved: Any) -> tuple[GroupStore, NDArray[np.int64], tuple[Any, ...]]:
        who = "backfill"
        own = check_keys(saved, f"{who} state", (*_BOUNDS, "store", "uses", "behaviour"))
        for key in _BOUNDS:
            value = read_int(own, key, who, lo=1)
            if value != getattr(self, key):
                raise ValueError(
                    f"{who} state was saved with {key} {value}, not {getattr(self, key)}"
                )
        store = GroupStore.read(own["store"], who, self.inner.num_tasks, unit=False)
        if store.size > self.capacity or not np.all(np.isfinite(store.rewards)):
            raise ValueError(f"{who} state: the held groups do not fit this run")
        uses = read_array(own, "uses", who, np.int64, shape=(store.size,), hi=self.max_uses - 1)
        flat = read_array(own, "behaviour", who, np.float32, finite=True)
        tokens = payload_state(store.payloads)
        if tokens["form"] != "tokens" and store.size:
            raise ValueError(f"{who} state: a held group has no completions")
        lengths = tokens.get("lengths", np.zeros(0, dtype=np.int64))
        if flat.shape != (int(lengths.sum()),):
            raise ValueError(f"{who} state: the log-probs do not match the held completions")
        cut = np.cumsum(lengths).tolist()
        # [0, *cut][:-1]: the starts, none for an empty buffer ([0, *cut[:-1]] gave one)
        per_row = [flat[a:b] for a, b in zip([0, *cut][:-1], cut, strict=True)]
        ends = np.cumsum([len(p) for p in store.payloads]).tolist()
        behaviour = tuple(tuple(per_row[a:b]) for a, b in zip([0, *ends][:-1], ends, strict=True))
        return store, uses, behaviour

    def _set_own(self, own: tuple[GroupStore, NDArray[np.int64], tuple[Any, ...]]) -> None:
        self.store, self.uses, self.behaviour = own
        self._fresh = None


def _check_lengths(payloads: Sequence[Any], behaviour: Sequence[Sequence[F32]], what: str) -> None:
    """A ValueError unless each group's log-probs are one 1-D array per completion, each as
    long as its completion (`payloads`: token lists)."""
    for payload, rows in zip(payloads, behaviour, strict=True):
        if payload is None:
            raise ValueError(
                "backfill holds each group's completions: return Rolled(rewards, payloads) "
                "from the rollout function"
            )
        if [len(c) for c in payload] != [lp.shape[0] if lp.ndim == 1 else -1 for lp in rows]:
            raise ValueError(f"backfill: {what} do not match the completions' lengths")
