"""DAPO dynamic sampling (Yu et al. 2025) as a wrapper around any registered selector.

DAPO over-samples prompts, rolls them all out, and trains only on groups whose rewards
are not all equal (zero-spread groups give zero group-relative advantage). This wrapper
keeps the surplus mixed groups of a step (rewards included) and trains on them first at
the next step instead of throwing them away.

Trainer loop (the wrapper never rolls anything out itself):

    ids = sel.candidates(B)          # sel.select(sel.num_candidates(B)): ceil(B*oversample) ids
    rewards = rollout(ids)           # n rollouts per id
    fb = Feedback(task_ids, rewards, step=t)
    sel.update(fb)                   # every rollout teaches the inner selector, exactly once
    out = sel.filter_groups(fb, B)   # surplus of earlier steps first, then fresh mixed groups
    train(out)                       # out.deficit > 0: top up with another candidates round

`select(n)` returns exactly n ids (the Selector contract), so the oversampled size is
asked for explicitly through `num_candidates`/`candidates`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.advantages import Estimator, group_advantages
from frontier_rft.core.bounds import MAX_ABS_VALUE, MAX_STEP
from frontier_rft.core.config import SelectorConfig, check, config_from_dict, config_to_dict
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.feedback import Feedback, GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Rollout, Selector
from frontier_rft.core.state_check import read_array, read_float, read_int, read_keys

__all__ = ["DynamicSamplingConfig", "DynamicSamplingSelector", "FilteredBatch"]

_TOTALS = (
    "filter_calls",
    "groups_in",
    "groups_filtered",
    "surplus_used",
    "stale_dropped",
    "overflow_dropped",
    "superseded_dropped",
)
_LAST = (
    "filtered_share",
    "effective_ratio_before",
    "effective_ratio_after",
    "deficit",
    "surplus_used",
)


def _registered() -> dict[str, type[Selector]]:
    # Imported lazily: the registry imports this module.
    from frontier_rft.selectors.registry import SELECTORS

    return SELECTORS


@dataclass(frozen=True)
class DynamicSamplingConfig(SelectorConfig):
    """DAPO dynamic sampling around an inner selector (defaults: DAPO's released recipe)."""

    inner: str = "uniform"
    """Registered name of the selector that proposes candidates (DAPO itself samples uniformly)."""
    inner_config: dict[str, Any] = field(default_factory=dict)
    """Config overrides for the inner selector, e.g. {"lam": 0.2}; JSON values only."""
    oversample: float = 3.0
    """Candidates per training slot: num_candidates(B) = ceil(B*oversample) (DAPO: 3x)."""
    max_surplus: int = 1024
    """Most surplus mixed groups buffered for later steps; oldest dropped first (0 = discard)."""
    max_staleness: int = 1
    """Surplus groups older than this many steps are dropped (1 = usable at the next step)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        known = _registered()
        check(
            self.inner in known,
            f"inner must be a registered selector name, one of {sorted(known)}; got {self.inner!r}",
        )
        check(
            not issubclass(known[self.inner], DynamicSamplingSelector),
            "inner cannot be 'dapo' itself; wrap a proposing selector such as 'uniform' or 'bots'",
        )
        check(
            all(isinstance(k, str) for k in self.inner_config),
            f"inner_config must be a dict of option name -> value, got {self.inner_config!r}",
        )
        # Validate against the inner config class now, and store the JSON form (tuples as
        # lists) so a config survives a JSON round trip unchanged; the copy also keeps
        # later edits of the caller's dict out of this frozen config.
        built = config_from_dict(
            known[self.inner].config_class, self.inner_config, what=f"inner selector {self.inner!r}"
        )
        as_json = config_to_dict(built)
        object.__setattr__(self, "inner_config", {k: as_json[k] for k in self.inner_config})
        check(
            1.0 <= self.oversample <= 1e6,
            f"oversample must be a number in [1, 1e6] (1 = none; DAPO: 3), got {self.oversample!r}",
        )
        for name in ("max_surplus", "max_staleness"):
            value = getattr(self, name)
            check(value >= 0, f"{name} must be a non-negative int, got {value!r}")


@dataclass(frozen=True, eq=False)
class FilteredBatch:
    """The groups to train on at one step, CSR layout: group g is rewards[offsets[g]:offsets[g+1]].

    Surplus groups from earlier calls come first (oldest first), then this call's fresh
    mixed groups. Masks index the rollouts of the Feedback given to `filter_groups`, so
    the trainer can pick its own per-rollout tensors: `kept_mask` marks those trained on
    now, `buffered_mask` those buffered as surplus (keep their sequences for later).
    Surplus entries dropped by this call are listed in `released_*` so their stored
    sequences can be freed.
    """

    task_ids: NDArray[np.int64]
    """(K,) task of each returned group."""
    steps: NDArray[np.int64]
    """(K,) step whose rollouts formed the group (older than now for surplus groups)."""
    policy_version: NDArray[np.int64]
    """(K,) oldest policy version of the group's rollouts, -1 where unknown."""
    counts: NDArray[np.int64]
    """(K,) rollouts per group."""
    offsets: NDArray[np.int64]
    """(K+1,) CSR offsets into `rewards`."""
    rewards: NDArray[np.float64]
    """Rewards grouped by returned group, each group in arrival order."""
    from_surplus: NDArray[np.bool_]
    """(K,) True for groups buffered by an earlier call."""
    kept_mask: NDArray[np.bool_]
    """Over the given feedback's rollouts: True where trained on now."""
    buffered_mask: NDArray[np.bool_]
    """Over the given feedback's rollouts: True where buffered as surplus."""
    released_task_ids: NDArray[np.int64]
    """Surplus groups dropped by this call (stale, superseded or overflow): their tasks..."""
    released_steps: NDArray[np.int64]
    """...and steps, so the trainer can free the sequences it kept for them."""
    deficit: int
    """batch_size minus the groups returned (> 0 when there was not enough signal)."""

    @property
    def num_groups(self) -> int:
        return int(self.task_ids.shape[0])

    @property
    def rollout_task_ids(self) -> NDArray[np.int64]:
        """Task id of every returned rollout (grouped layout)."""
        return np.repeat(self.task_ids, self.counts)

    def advantages(self, estimator: Estimator = "grpo") -> NDArray[np.float64]:
        """Per-rollout advantages of the returned groups (grouped layout)."""
        if self.num_groups == 0:
            return np.zeros(0, dtype=np.float64)
        return group_advantages(self.rewards, self.offsets, estimator)


class _InnerCollaborators:
    """Class attribute: the union of every registered selector's collaborator names.

    Computed when read (make_selector reads it to route keyword arguments), because the
    inner selector is chosen by config and the registry is built after this module. The
    wrapper forwards to its inner those names the inner accepts and rejects the rest.
    """

    def __get__(self, obj: object, owner: type | None = None) -> tuple[str, ...]:
        names = {
            name
            for cls in _registered().values()
            if not issubclass(cls, DynamicSamplingSelector)
            for name in cls.collaborators
        }
        return tuple(sorted(names))


def _gather(
    offsets: NDArray[np.int64], idx: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(counts, rollout positions) of groups `idx` of a CSR layout, concatenated in idx order."""
    counts = (offsets[idx + 1] - offsets[idx]).astype(np.int64)
    new_starts = np.cumsum(counts) - counts
    pos = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(
        offsets[idx] - new_starts, counts
    )
    return counts, pos


def _group(
    step: int, version: int, ids: NDArray[np.int64], rewards: NDArray[np.float64]
) -> tuple[GroupBatch, NDArray[np.int64]]:
    """GroupBatch.from_rollouts for one policy version, plus the grouped -> input order.

    One stable argsort, group starts from the sorted ids (no second sort in np.unique).
    """
    order = np.argsort(ids, kind="stable")
    ids_sorted = ids[order]
    starts = np.flatnonzero(np.concatenate([[True], ids_sorted[1:] != ids_sorted[:-1]]))
    offsets = np.append(starts, ids_sorted.shape[0]).astype(np.int64)
    batch = GroupBatch(
        step=step,
        task_ids=ids_sorted[starts],
        counts=np.diff(offsets),
        rewards=rewards[order],
        offsets=offsets,
        policy_version=np.full(starts.shape[0], version, dtype=np.int64),
    )
    return batch, order


def _member(values: NDArray[np.int64], sorted_ids: NDArray[np.int64]) -> NDArray[np.bool_]:
    """np.isin(values, sorted_ids) for sorted, distinct sorted_ids, by binary search."""
    if sorted_ids.shape[0] == 0:
        return np.zeros(values.shape[0], dtype=np.bool_)
    pos = np.minimum(np.searchsorted(sorted_ids, values), sorted_ids.shape[0] - 1)
    return np.asarray(sorted_ids[pos] == values)


def _csr(counts: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


class DynamicSamplingSelector(Selector):
    """DAPO dynamic sampling: oversample with an inner selector, train on mixed groups only.

    `select`, `update`, `state_dict` and the RNG of the inner selector are wrapped whole
    (its state is nested in this one's). Feedback reaches the inner selector exactly once
    per rollout, when this selector folds it in; surplus groups re-used for training are
    never sent again. Collaborators (e.g. METIS's `judge`) are forwarded to the inner.
    """

    name = "dapo"
    needs = Needs(
        "what its inner selector reads (default: uniform)",
        "as its inner selector",
        "as its inner selector (inner=NAME)",
    )
    cost = Cost("sublinear", "O(B)", "oversample and filter groups")
    color = "#637939"  # dark olive green
    # On its own in the simulator's loop it proposes exactly what its inner selector does
    # (the filter acts in the trainer), so `frontier simulate` runs it only when named.
    in_simulator = False
    test_configs = ({"inner": "bots", "inner_config": {"plugin": "regression"}},)
    config_class = DynamicSamplingConfig
    collaborators = _InnerCollaborators()

    @classmethod
    def default_collaborators(cls, rollout: Rollout | None = None) -> dict[str, Any]:
        """Those of the default inner selector (collaborators are forwarded to the inner)."""
        return _registered()[DynamicSamplingConfig.inner].default_collaborators(rollout)

    def __init__(
        self,
        pool: TaskPool,
        config: DynamicSamplingConfig | None = None,
        *,
        seed: int = 0,
        **collaborators: Any,
    ):
        super().__init__(pool, config, seed=seed)
        cfg = self.dapo_config
        inner_cls = _registered()[cfg.inner]
        extra = sorted(set(collaborators) - set(inner_cls.collaborators))
        if extra:
            raise ValueError(
                f"inner selector {cfg.inner!r} takes no collaborator(s) {extra}; "
                f"it accepts {list(inner_cls.collaborators) or 'none'}"
            )
        inner_config = config_from_dict(inner_cls.config_class, cfg.inner_config, what=cfg.inner)
        # The inner gets this seed, so dapo(inner=X, seed=s) proposes exactly what X(seed=s)
        # selects; the wrapper's own draws (surplus shuffling) use a jumped, disjoint stream.
        self.inner = inner_cls(pool, inner_config, seed=seed, **collaborators)
        # The inner selector's evidence is this selector's: what it derived (text features,
        # clusters, a plug-in) is reported as evidence/<what>/<source>, refreshes included.
        self.evidence = self.inner.evidence
        self.rng = np.random.Generator(np.random.PCG64(self.seed).jumped())
        self._sur_ids = np.zeros(0, dtype=np.int64)
        self._sur_steps = np.zeros(0, dtype=np.int64)
        self._sur_versions = np.zeros(0, dtype=np.int64)
        self._sur_counts = np.zeros(0, dtype=np.int64)
        self._sur_rewards = np.zeros(0, dtype=np.float64)
        self._clock = -1  # newest step seen by filter_groups; staleness is measured from it
        self._ftotals = dict.fromkeys(_TOTALS, 0)
        self._flast = dict.fromkeys(_LAST, float("nan"))

    @property
    def dapo_config(self) -> DynamicSamplingConfig:
        return self.config  # type: ignore[return-value]

    @property
    def reward_bounds(self) -> tuple[float, float] | None:
        return self.inner.reward_bounds

    @property
    def allows_repeats(self) -> bool:
        return self.inner.allows_repeats

    def _refresh_features(self, features: NDArray[np.float64] | None) -> bool:
        """Refreshed features go to the inner selector (False if it reads none). None is the
        base class rolling back a rejected state: the inner's own state restores its features."""
        if features is None:
            return True
        return self.inner.refresh_features(features)

    # ------------------------------------------------------------------ trainer-facing
    def num_candidates(self, batch_size: int) -> int:
        """Ids to roll out for a training batch of `batch_size` groups: ceil(B*oversample), <= N."""
        _check_batch_size(batch_size)
        want = math.ceil(int(batch_size) * self.dapo_config.oversample)
        return want if self.allows_repeats else min(want, self.num_tasks)

    def candidates(self, batch_size: int) -> NDArray[np.int64]:
        """`select(num_candidates(batch_size))`: the oversampled ids to roll out."""
        return self.select(self.num_candidates(batch_size))

    def filter_groups(self, feedback: Feedback, batch_size: int) -> FilteredBatch:
        """Assemble the training batch: buffered surplus first (oldest first), then fresh mixed
        groups; buffer the fresh mixed groups that do not fit. Does not update the inner
        selector (call `update(feedback)` for that); on invalid input nothing changes.
        """
        _check_batch_size(batch_size)
        if not isinstance(feedback, Feedback):
            raise ValueError(
                f"filter_groups expects a frontier_rft.Feedback, got {type(feedback).__name__}"
            )
        ids, rewards = feedback.validated(self.num_tasks, self.reward_bounds)
        cfg = self.dapo_config
        step = int(feedback.step)
        version = -1 if feedback.policy_version is None else int(feedback.policy_version)
        batch, order = _group(step, version, ids, rewards)
        mixed = batch.mixed
        clock = max(self._clock, step)

        # Surplus entries: drop stale ones and those with a fresher mixed group of the same task.
        stale = clock - self._sur_steps > cfg.max_staleness
        superseded = ~stale & _member(self._sur_ids, batch.task_ids[mixed])
        alive = np.flatnonzero(~stale & ~superseded)  # buffer is kept sorted oldest first
        take_s, keep_s = alive[:batch_size], alive[batch_size:]
        fresh = np.flatnonzero(mixed)
        fresh = fresh[self.rng.permutation(fresh.shape[0])]  # unbiased split train/surplus
        room = batch_size - take_s.shape[0]
        take_f, spill = fresh[:room], fresh[room:]

        # Training batch: surplus part, then fresh part.
        sur_off = _csr(self._sur_counts)
        cs, pos_s = _gather(sur_off, take_s)
        cf, pos_f = _gather(batch.offsets, take_f)
        kept_mask = np.zeros(ids.shape[0], dtype=np.bool_)
        kept_mask[order[pos_f]] = True
        counts = np.concatenate([cs, cf])
        out_steps = np.concatenate(
            [self._sur_steps[take_s], np.full(take_f.shape[0], step, np.int64)]
        )

        # New buffer: remaining old entries + spill, sorted by step, newest max_surplus kept.
        ck, pos_k = _gather(sur_off, keep_s)
        cp, pos_p = _gather(batch.offsets, spill)
        b_ids = np.concatenate([self._sur_ids[keep_s], batch.task_ids[spill]])
        b_steps = np.concatenate([self._sur_steps[keep_s], np.full(spill.shape[0], step, np.int64)])
        b_versions = np.concatenate([self._sur_versions[keep_s], batch.policy_version[spill]])
        b_counts = np.concatenate([ck, cp])
        b_rewards = np.concatenate([self._sur_rewards[pos_k], batch.rewards[pos_p]])
        n_old = keep_s.shape[0]
        by_step = np.argsort(b_steps, kind="stable")
        cut = max(0, by_step.shape[0] - cfg.max_surplus)
        survive, overflow = by_step[cut:], by_step[:cut]
        spill_kept = np.zeros(spill.shape[0], dtype=np.bool_)
        spill_kept[survive[survive >= n_old] - n_old] = True
        buffered_mask = np.zeros(ids.shape[0], dtype=np.bool_)
        buffered_mask[order[pos_p[np.repeat(spill_kept, cp)]]] = True
        rel = np.concatenate(
            [np.flatnonzero(stale | superseded), keep_s[overflow[overflow < n_old]]]
        )
        released_ids, released_steps = self._sur_ids[rel], self._sur_steps[rel]
        bc_off = _csr(b_counts)
        nc, npos = _gather(bc_off, survive)

        result = FilteredBatch(
            task_ids=np.concatenate([self._sur_ids[take_s], batch.task_ids[take_f]]),
            steps=out_steps,
            policy_version=np.concatenate(
                [self._sur_versions[take_s], batch.policy_version[take_f]]
            ),
            counts=counts,
            offsets=_csr(counts),
            rewards=np.concatenate([self._sur_rewards[pos_s], batch.rewards[pos_f]]),
            from_surplus=np.repeat([True, False], [take_s.shape[0], take_f.shape[0]]),
            kept_mask=kept_mask,
            buffered_mask=buffered_mask,
            released_task_ids=released_ids,
            released_steps=released_steps,
            deficit=int(batch_size - counts.shape[0]),
        )
        # Commit (nothing below can fail on valid input).
        self._sur_ids, self._sur_steps = b_ids[survive], b_steps[survive]
        self._sur_versions, self._sur_counts = b_versions[survive], nc
        self._sur_rewards = b_rewards[npos]
        self._clock = clock
        t, g = self._ftotals, batch.num_groups
        t["filter_calls"] += 1
        t["groups_in"] += g
        t["groups_filtered"] += g - int(mixed.sum())
        t["surplus_used"] += int(take_s.shape[0])
        t["stale_dropped"] += int(stale.sum())
        t["superseded_dropped"] += int(superseded.sum())
        t["overflow_dropped"] += int(overflow.shape[0])
        self._flast = {
            "filtered_share": 1.0 - float(mixed.mean()),
            "effective_ratio_before": float(mixed.mean()),
            "effective_ratio_after": counts.shape[0] / batch_size,
            "deficit": float(result.deficit),
            "surplus_used": float(take_s.shape[0]),
        }
        return result

    # ------------------------------------------------------------------ Selector hooks
    def _select(self, n: int) -> NDArray[np.int64]:
        return self.inner.select(n)

    def _observe(self, batch: GroupBatch) -> None:
        # The batch is already validated, de-duplicated and grouped by this selector's
        # base class, so it is folded into the inner selector directly (as its own flush
        # would), once: no second validation/grouping pass, and each group keeps its own
        # policy version. The inner's pending buffer and dedupe memory stay unused.
        self.inner.fold(batch)

    def _state_dict(self) -> dict[str, Any]:
        return {
            "inner": self.inner.state_dict(),
            "surplus": {
                "task_ids": self._sur_ids,
                "steps": self._sur_steps,
                "versions": self._sur_versions,
                "counts": self._sur_counts,
                "rewards": self._sur_rewards,
            },
            "clock": self._clock,
            "totals": dict(self._ftotals),
            "last": dict(self._flast),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        who = f"{self.name} surplus"
        columns = ("task_ids", "steps", "versions", "counts", "rewards")
        sur = read_keys(state, "surplus", who, columns)
        s_ids = read_array(sur, "task_ids", who, np.int64, lo=0, hi=self.num_tasks - 1)
        size = s_ids.shape
        s_steps = read_array(sur, "steps", who, np.int64, shape=size, lo=0, hi=MAX_STEP)
        s_versions = read_array(sur, "versions", who, np.int64, shape=size, lo=-1, hi=MAX_STEP)
        s_counts = read_array(sur, "counts", who, np.int64, shape=size, lo=1)
        s_rewards = read_array(sur, "rewards", who, np.float64, finite=True)
        if int(s_counts.sum()) != s_rewards.shape[0]:
            raise ValueError("dapo state: surplus group counts do not match its rewards")
        lo, hi = self.inner.reward_bounds or (-MAX_ABS_VALUE, MAX_ABS_VALUE)
        if np.any((s_rewards < lo) | (s_rewards > hi)):
            raise ValueError(f"dapo state: surplus rewards outside [{lo}, {hi}]")
        totals = read_keys(state, "totals", self.name, _TOTALS)
        totals = {k: read_int(totals, k, self.name) for k in _TOTALS}
        last = read_keys(state, "last", self.name, _LAST)
        last = {k: read_float(last, k, self.name) for k in _LAST}
        clock = read_int(state, "clock", self.name, lo=-1)
        self.inner.load_state_dict(state["inner"])  # atomic on its own; last step that can fail
        self._sur_ids, self._sur_steps, self._sur_versions = s_ids, s_steps, s_versions
        self._sur_counts, self._sur_rewards = s_counts, s_rewards
        self._clock, self._ftotals, self._flast = clock, totals, last

    def _metrics(self) -> dict[str, float]:
        t = self._ftotals
        out = {
            "filtered_share": self._flast["filtered_share"],
            "filtered_share_cumulative": (
                t["groups_filtered"] / t["groups_in"] if t["groups_in"] else float("nan")
            ),
            "effective_ratio_before": self._flast["effective_ratio_before"],
            "effective_ratio_after": self._flast["effective_ratio_after"],
            "deficit": self._flast["deficit"],
            "surplus_used": self._flast["surplus_used"],
            "surplus_groups": float(self._sur_ids.shape[0]),
            "stale_dropped": float(t["stale_dropped"]),
            "overflow_dropped": float(t["overflow_dropped"]),
            "superseded_dropped": float(t["superseded_dropped"]),
        }
        for key, value in self.inner.metrics().items():
            out[f"inner/{key}"] = value
        return out


def _check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise ValueError(f"batch_size must be an int, got {batch_size!r}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
