"""DAPO dynamic sampling (Yu et al. 2025) as a wrapper around any built selector.

DAPO over-samples prompts, rolls them all out, and trains only on groups whose rewards
are not all equal (zero-spread groups give zero group-relative advantage). The wrapper
keeps the surplus mixed groups of a step (rewards included) and trains on them first at
the next step instead of throwing them away. It wraps a selector the way optax.MultiSteps
wraps a transformation: it is not a Selector and not registered; the selector inside
proposes every candidate and learns from every rollout.

Trainer loop (the wrapper never rolls anything out itself):

    ds = DynamicSampling(make_selector("uniform", pool, seed=0))   # DAPO: 3x, fixed
    ids = ds.candidates(B)           # ds.inner.select(ds.num_candidates(B))
    rewards = rollout(ids)           # n rollouts per id
    fb = Feedback(task_ids, rewards, step=t)
    ds.update(fb)                    # every rollout teaches the inner selector, exactly once
    out = ds.filter_groups(fb, B)    # surplus of earlier steps first, then fresh mixed groups
    train(out)                       # out.deficit > 0: ds.candidates(out.deficit), roll out, ...

With `adaptive=True` the number of candidates follows the measured zero-variance share z
(GRESO's rule): ceil(need / (1 - z) * adaptive_margin), clamped (see num_candidates).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import MAX_ABS_VALUE, MAX_STEP
from frontier_rft.core.config import check, check_field_types, config_from_dict
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import _PCG_KEYS, _RNG_KEYS, MAX_SEED, Selector
from frontier_rft.core.state_check import (
    check_keys,
    read_array,
    read_float,
    read_int,
    read_keys,
)
from frontier_rft.selectors.filtered_batch import (
    FilteredBatch,
    csr,
    gather,
    group_by_task,
    member,
)

__all__ = ["DAPO_MOVED", "DynamicSampling", "DynamicSamplingConfig", "FilteredBatch"]

DAPO_MOVED = (
    "'dapo' is a wrapper now, not a selector: in code use "
    "DynamicSampling(make_selector('uniform', pool, seed=s)) "
    "(frontier_rft.selectors.dynamic_sampling); in a trainer config set dynamic_sampling: true "
    "with selector: uniform (CLI: --selector uniform --dynamic-sampling)"
)
"""The message every former `dapo` entry point raises (make_selector, load_selector, configs)."""

_KIND = "dynamic_sampling"
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
_SURPLUS = ("task_ids", "steps", "versions", "counts", "rewards")
_ZERO_VAR = ("step", "groups", "zero")
_STATE_KEYS = (
    "kind",
    "config",
    "seed",
    "rng",
    "surplus",
    "clock",
    "zero_variance",
    "totals",
    "last",
    "inner",
)


@dataclass(frozen=True)
class DynamicSamplingConfig:
    """DAPO dynamic sampling (defaults: DAPO's released recipe, fixed 3x oversampling)."""

    oversample: float = 3.0
    """Candidates per training slot: num_candidates(B) = ceil(B*oversample) (DAPO: 3x)."""
    max_surplus: int = 1024
    """Most surplus mixed groups buffered for later steps; oldest dropped first (0 = discard)."""
    max_staleness: int = 1
    """Surplus groups older than this many steps are dropped (1 = usable at the next step)."""
    adaptive: bool = False
    """Size each round from the measured zero-variance share z (GRESO) instead of oversample."""
    adaptive_margin: float = 1.25
    """adaptive: safety factor on need / (1 - z) (GRESO: 1.25)."""
    min_oversample: float = 1.0
    """adaptive: fewest candidates per slot still needed (1 = never fewer than the slots)."""
    max_oversample: float = 3.0
    """adaptive: most candidates per slot, also at z = 1 (3 = never more than fixed DAPO)."""

    def __post_init__(self) -> None:
        check_field_types(self)
        check(
            1.0 <= self.oversample <= 1e6,
            f"oversample must be a number in [1, 1e6] (1 = none; DAPO: 3), got {self.oversample!r}",
        )
        for name in ("max_surplus", "max_staleness"):
            value = getattr(self, name)
            check(value >= 0, f"{name} must be a non-negative int, got {value!r}")
        check(
            1.0 <= self.adaptive_margin <= 100.0,
            f"adaptive_margin must be in [1, 100] (GRESO: 1.25), got {self.adaptive_margin!r}",
        )
        check(
            1.0 <= self.min_oversample <= self.max_oversample <= 1e6,
            "need 1 <= min_oversample <= max_oversample <= 1e6 (defaults 1 and 3), got "
            f"min_oversample={self.min_oversample!r}, max_oversample={self.max_oversample!r}",
        )


class DynamicSampling:
    """DAPO dynamic sampling around a built selector: oversample, train on mixed groups only.

    Not a Selector: it holds one (`inner`), asks it for candidates, forwards every
    rollout's feedback to it exactly once, and filters the rolled-out groups. Surplus
    groups re-used for training are never sent to the inner selector again.
    """

    def __init__(
        self,
        selector: Selector,
        config: DynamicSamplingConfig | None = None,
        *,
        seed: int | None = None,
    ):
        if not isinstance(selector, Selector):
            raise ValueError(
                "DynamicSampling wraps a built selector, e.g. "
                f"DynamicSampling(make_selector('uniform', pool)); got {type(selector).__name__}"
            )
        if config is None:
            config = DynamicSamplingConfig()
        if not isinstance(config, DynamicSamplingConfig):
            raise ValueError(f"config must be a DynamicSamplingConfig, got {type(config).__name__}")
        if seed is None:
            seed = selector.seed
        if (
            isinstance(seed, bool)
            or not isinstance(seed, int | np.integer)
            or not (0 <= seed < MAX_SEED)
        ):
            raise ValueError(f"seed must be an int in [0, 2**256) or None, got {seed!r}")
        self.inner = selector
        self.config = config
        self.seed = int(seed)
        # A jumped stream, disjoint from the inner selector's own PCG64(seed): the wrapper's
        # draws (the train/surplus split) never shift what the inner proposes.
        self.rng = np.random.Generator(np.random.PCG64(self.seed).jumped())
        self._sur_ids = np.zeros(0, dtype=np.int64)
        self._sur_steps = np.zeros(0, dtype=np.int64)
        self._sur_versions = np.zeros(0, dtype=np.int64)
        self._sur_counts = np.zeros(0, dtype=np.int64)
        self._sur_rewards = np.zeros(0, dtype=np.float64)
        self._clock = -1  # newest step seen by filter_groups; staleness is measured from it
        # Zero-variance count of the groups rolled out at the newest filtered step (all its
        # rounds so far): z = zero / groups, the adaptive rule's measurement.
        self._zv = {"step": -1, "groups": 0, "zero": 0}
        self._ftotals = dict.fromkeys(_TOTALS, 0)
        self._flast = dict.fromkeys(_LAST, float("nan"))

    @property
    def pool(self) -> Any:
        return self.inner.pool

    @property
    def num_tasks(self) -> int:
        return self.inner.num_tasks

    @property
    def zero_variance_rate(self) -> float | None:
        """z: zero-variance share of the groups rolled out at the newest step filtered (all
        of its rounds so far); None before any measurement."""
        zv = self._zv
        return zv["zero"] / zv["groups"] if zv["groups"] else None

    # ------------------------------------------------------------------ trainer-facing
    def num_candidates(self, batch_size: int) -> int:
        """Ids to roll out for `batch_size` open training slots (changes nothing).

        Fixed (default): ceil(B * oversample). Adaptive, once z is measured:
        ceil(B / (1 - z) * adaptive_margin) clamped to [ceil(B * min_oversample),
        ceil(B * max_oversample)] (z = 1 gives the upper clamp). Never more than the pool
        when the inner selector does not allow repeats.
        """
        _check_batch_size(batch_size)
        cfg, need = self.config, int(batch_size)
        z = self.zero_variance_rate
        if not cfg.adaptive or z is None:
            want = math.ceil(need * cfg.oversample)
        else:
            lo = math.ceil(need * cfg.min_oversample)
            hi = math.ceil(need * cfg.max_oversample)
            if z >= 1.0:
                want = hi
            else:  # round away float noise first: 4 / 0.5 * 1.25 is 10, not 11
                want = min(hi, max(lo, math.ceil(round(need / (1.0 - z) * cfg.adaptive_margin, 9))))
        return want if self.inner.allows_repeats else min(want, self.num_tasks)

    def candidates(self, batch_size: int) -> NDArray[np.int64]:
        """`inner.select(num_candidates(batch_size))`: the oversampled ids to roll out."""
        return self.inner.select(self.num_candidates(batch_size))

    def select(self, n: int) -> NDArray[np.int64]:
        """Exactly n ids from the inner selector (no oversampling)."""
        return self.inner.select(n)

    def update(self, feedback: Feedback, *, idempotent: bool = False) -> None:
        """Every rollout's rewards to the inner selector, once (filter_groups sends none)."""
        self.inner.update(feedback, idempotent=idempotent)

    def flush(self) -> None:
        """Fold the inner selector's buffered feedback now (see Selector.flush)."""
        self.inner.flush()

    def refresh_features(self, features: NDArray[Any]) -> bool:
        """Refreshed features go to the inner selector (False if it reads none)."""
        return self.inner.refresh_features(features)

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
        ids, rewards = feedback.validated(self.num_tasks, self.inner.reward_bounds)
        cfg = self.config
        step = int(feedback.step)
        version = -1 if feedback.policy_version is None else int(feedback.policy_version)
        batch, order = group_by_task(step, version, ids, rewards)
        mixed = batch.mixed
        clock = max(self._clock, step)

        # Surplus entries: drop stale ones and those with a fresher mixed group of the same task.
        stale = clock - self._sur_steps > cfg.max_staleness
        superseded = ~stale & member(self._sur_ids, batch.task_ids[mixed])
        alive = np.flatnonzero(~stale & ~superseded)  # buffer is kept sorted oldest first
        take_s, keep_s = alive[:batch_size], alive[batch_size:]
        fresh = np.flatnonzero(mixed)
        fresh = fresh[self.rng.permutation(fresh.shape[0])]  # unbiased split train/surplus
        room = batch_size - take_s.shape[0]
        take_f, spill = fresh[:room], fresh[room:]

        # Training batch: surplus part, then fresh part.
        sur_off = csr(self._sur_counts)
        cs, pos_s = gather(sur_off, take_s)
        cf, pos_f = gather(batch.offsets, take_f)
        kept_mask = np.zeros(ids.shape[0], dtype=np.bool_)
        kept_mask[order[pos_f]] = True
        counts = np.concatenate([cs, cf])
        out_steps = np.concatenate(
            [self._sur_steps[take_s], np.full(take_f.shape[0], step, np.int64)]
        )

        # New buffer: remaining old entries + spill, sorted by step, newest max_surplus kept.
        ck, pos_k = gather(sur_off, keep_s)
        cp, pos_p = gather(batch.offsets, spill)
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
        bc_off = csr(b_counts)
        nc, npos = gather(bc_off, survive)

        result = FilteredBatch(
            task_ids=np.concatenate([self._sur_ids[take_s], batch.task_ids[take_f]]),
            steps=out_steps,
            policy_version=np.concatenate(
                [self._sur_versions[take_s], batch.policy_version[take_f]]
            ),
            counts=counts,
            offsets=csr(counts),
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
        g, n_mixed = batch.num_groups, int(mixed.sum())
        if step != self._zv["step"]:  # a new step: z measures its rounds only
            if step > self._zv["step"]:
                self._zv = {"step": step, "groups": g, "zero": g - n_mixed}
        else:
            self._zv["groups"] += g
            self._zv["zero"] += g - n_mixed
        t = self._ftotals
        t["filter_calls"] += 1
        t["groups_in"] += g
        t["groups_filtered"] += g - n_mixed
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

    # ------------------------------------------------------------------ reporting
    def metrics(self) -> dict[str, float]:
        """The inner selector's metrics unchanged, plus this wrapper's under `dapo/`."""
        t = self._ftotals
        z = self.zero_variance_rate
        own = {
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
            "zero_variance_rate": float("nan") if z is None else z,
        }
        out = dict(self.inner.metrics())
        out.update({f"dapo/{k}": float(v) for k, v in own.items()})
        return out

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly; the inner selector's state is nested."""
        return {
            "kind": _KIND,
            "config": asdict(self.config),
            "seed": self.seed,
            "rng": _copy_rng(self.rng.bit_generator.state),
            "surplus": {
                "task_ids": self._sur_ids.copy(),
                "steps": self._sur_steps.copy(),
                "versions": self._sur_versions.copy(),
                "counts": self._sur_counts.copy(),
                "rewards": self._sur_rewards.copy(),
            },
            "clock": self._clock,
            "zero_variance": dict(self._zv),
            "totals": dict(self._ftotals),
            "last": dict(self._flast),
            "inner": self.inner.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict (inner included); on any error nothing changes."""
        who = "dynamic_sampling"
        state = check_keys(state, f"{who} state", _STATE_KEYS)
        if state["kind"] != _KIND:
            raise ValueError(f"{who} state: kind {state['kind']!r} is not {_KIND!r}")
        saved = config_from_dict(
            DynamicSamplingConfig,
            check_keys(
                state["config"], f"{who} state: config", (), optional=tuple(asdict(self.config))
            ),
            what=f"{who} state: config",
        )
        if saved != self.config:
            raise ValueError(
                f"{who} state was saved with {saved}; build the wrapper with that config first"
            )
        sur = read_keys(state, "surplus", who, _SURPLUS)
        s_ids = read_array(sur, "task_ids", who, np.int64, lo=0, hi=self.num_tasks - 1)
        size = s_ids.shape
        s_steps = read_array(sur, "steps", who, np.int64, shape=size, lo=0, hi=MAX_STEP)
        s_versions = read_array(sur, "versions", who, np.int64, shape=size, lo=-1, hi=MAX_STEP)
        s_counts = read_array(sur, "counts", who, np.int64, shape=size, lo=1)
        s_rewards = read_array(sur, "rewards", who, np.float64, finite=True)
        if int(s_counts.sum()) != s_rewards.shape[0]:
            raise ValueError(f"{who} state: surplus group counts do not match its rewards")
        lo, hi = self.inner.reward_bounds or (-MAX_ABS_VALUE, MAX_ABS_VALUE)
        if np.any((s_rewards < lo) | (s_rewards > hi)):
            raise ValueError(f"{who} state: surplus rewards outside [{lo}, {hi}]")
        totals = read_keys(state, "totals", who, _TOTALS)
        totals = {k: read_int(totals, k, who) for k in _TOTALS}
        last = read_keys(state, "last", who, _LAST)
        last = {k: read_float(last, k, who) for k in _LAST}
        zv = read_keys(state, "zero_variance", who, _ZERO_VAR)
        zv = {
            "step": read_int(zv, "step", who, lo=-1, hi=MAX_STEP),
            "groups": read_int(zv, "groups", who),
            "zero": read_int(zv, "zero", who),
        }
        if zv["zero"] > zv["groups"]:
            raise ValueError(f"{who} state: zero_variance counts more zero groups than groups")
        clock = read_int(state, "clock", who, lo=-1)
        seed = read_int(state, "seed", who, hi=MAX_SEED - 1)
        rng_state = read_keys(state, "rng", who, _RNG_KEYS)
        rng_state["state"] = check_keys(rng_state["state"], f"{who} state: rng/state", _PCG_KEYS)
        rng = np.random.Generator(np.random.PCG64())
        try:
            rng.bit_generator.state = rng_state
        except (TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"{who} state: malformed rng ({exc})") from exc
        self.inner.load_state_dict(state["inner"])  # atomic on its own; last step that can fail
        self._sur_ids, self._sur_steps, self._sur_versions = s_ids, s_steps, s_versions
        self._sur_counts, self._sur_rewards = s_counts, s_rewards
        self._clock, self._zv, self._ftotals, self._flast = clock, zv, totals, last
        self.seed, self.rng = seed, rng


def _copy_rng(state: Mapping[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, dict) else v for k, v in state.items()}


def _check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer):
        raise ValueError(f"batch_size must be an int, got {batch_size!r}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
