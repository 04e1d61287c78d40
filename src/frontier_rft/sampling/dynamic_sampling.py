"""DAPO dynamic sampling (Yu et al. 2025) as a wrapper around any built selector.

DAPO over-samples prompts, rolls them all out, and trains only on groups whose rewards
are not all equal (zero-spread groups give zero group-relative advantage). A step runs
rounds until it has B mixed groups of its own, at most `max_rounds` rounds. By default
(mode 'fixed') round 1 is sized for B minus the usable surplus and each later round for what
is still missing, 3x the open slots; DAPO's released code (mode 'dapo', round_rule 'dapo')
rolls out a full 3x B every round and truncates what it kept to B. A step trains on its own
fresh mixed groups first; mixed groups of an earlier step (kept only with `max_surplus > 0`,
at most `max_staleness` steps old) only cover a deficit. By default the surplus is
discarded, as DAPO does (docs/selectors/dapo.md: why, measured).

It wraps a selector the way optax.MultiSteps wraps a transformation: it is not a Selector
and not registered; the selector inside proposes every candidate and learns from every
rollout, once. The trainer and the simulator drive it through `sample` (the same call as
`PassThrough`, frontier_rft.sampling.passthrough):

    ds = DynamicSampling(make_selector("uniform", pool, seed=0))   # 3x the open slots
    samples = ds.sample(step, B, n, rollout)     # rollout(ids) -> n rewards per id
    train(samples.train)                         # at most B mixed groups, fresh first

With `adaptive=True` the number of candidates follows the measured zero-variance share z
(GRESO's rule): ceil(need / (1 - z) * adaptive_margin), clamped (see num_candidates).
`DynamicSamplingConfig.greso()` is GRESO's own recipe: round 1 fixed at 1.5 B, later
rounds from the last round's z, capped at 1.5 B, and a round the estimate fits under the
cap is the last (the step may train a short batch). `DynamicSamplingConfig.for_mode(name)`
names these settings (MODES).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from frontier_rft.core.bounds import MAX_ABS_VALUE, MAX_STEP, bounded_int, is_finite_real
from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import (
    read_array,
    read_int,
    read_keys,
)
from frontier_rft.sampling.base import WrapsSelector, checked_wrapper_args
from frontier_rft.sampling.filtered_batch import FilteredBatch, csr, gather
from frontier_rft.sampling.step import (
    MAX_GROUP_SIZE,
    RolloutFn,
    Round,
    StepSamples,
    check_rollout,
    run_round,
)

__all__ = [
    "DAPO_MOVED",
    "MODES",
    "RETIRED_NAMES",
    "TRAIN_ROUND_RULES",
    "DynamicSampling",
    "DynamicSamplingConfig",
    "FilteredBatch",
]

DAPO_MOVED = (
    "'dapo' is a wrapper now, not a selector: in code use "
    "DynamicSampling(make_selector('uniform', pool, seed=s), DynamicSamplingConfig.dapo()) "
    "(from frontier_rft import DynamicSampling, DynamicSamplingConfig); in a TRL config set "
    "dynamic_sampling: dapo with selector: uniform (frontier train: --selector uniform "
    "--dynamic-sampling --dapo-round-rule dapo; frontier simulate: --dynamic-sampling dapo)"
)
"""The message every former `dapo` entry point raises (make_selector, load_selector, configs)."""
RETIRED_NAMES = {"dapo": DAPO_MOVED}
"""Former selector names this package took over (frontier_rft registers them)."""

_KIND = "dynamic_sampling"
ROUND_RULES = ("standard", "greso", "dapo")
TRAIN_ROUND_RULES = ("standard", "dapo")
"""DynamicSamplingConfig.round_rule values the reference trainer offers (GRESO's rounds need
GRESO's other settings: the simulator and TRL have them)."""
MODES = ("fixed", "adaptive", "greso", "dapo")
"""Dynamic sampling settings by name, the one vocabulary of every front end (TRL's
`dynamic_sampling`, `frontier simulate --dynamic-sampling`, bench entries; the reference
trainer sets the same fields): fixed = rounds of 3x the open slots; adaptive = rounds sized
from the measured zero-variance share (GRESO's rule); greso = GRESO's scripts; dapo = DAPO's
released code, full 3x B rounds (`DynamicSamplingConfig.for_mode`)."""
_SURPLUS = ("task_ids", "steps", "counts", "rewards")
_ZERO_VAR = ("step", "groups", "zero")
_STATE_KEYS = (
    "kind",
    "config",
    "surplus",
    "clock",
    "zero_variance",
    "totals",
    "last",
    "inner",
)
_DROPPED_KEYS = ("seed",)
"""Keys of states saved by earlier versions, read and unused (the seed drove nothing)."""


@dataclass(frozen=True)
class DynamicSamplingConfig:
    """DAPO dynamic sampling (defaults: mode 'fixed', rounds of 3x the open slots, surplus
    discarded; DAPO's own rounds are round_rule 'dapo')."""

    oversample: float = 3.0
    """Candidates per open training slot: ceil(need * oversample) (rule 'dapo': per batch
    slot, every round; DAPO: 3x; GRESO's round 1: 1.5x)."""
    max_surplus: int = 0
    """Most surplus mixed groups kept to cover later deficits (0 = discard, as DAPO does)."""
    max_staleness: int = 1
    """Surplus groups older than this many steps are dropped (1 = usable at the next step)."""
    adaptive: bool = False
    """Size rounds from the measured zero-variance share z (GRESO) instead of oversample."""
    adaptive_margin: float = 1.25
    """adaptive: safety factor on need / (1 - z) (GRESO: 1.25)."""
    min_oversample: float = 1.0
    """adaptive: fewest candidates per open slot (rule 'greso': per batch slot; GRESO: 0.5)."""
    max_oversample: float = 3.0
    """adaptive: most candidates per open slot, also at z = 1 (rule 'greso': per batch slot,
    the per-round cap; GRESO: 1.5)."""
    max_rounds: int = 10
    """Most sampling rounds per step while the batch lacks mixed groups (DAPO's
    max_num_gen_batches)."""
    round_rule: str = "standard"
    """'standard': every round sized as above; 'dapo': DAPO's released code (every round
    ceil(oversample x B) whatever is still open, the kept groups truncated to B); 'greso':
    GRESO's scripts (round 1 fixed at oversample x B, later rounds from the last round's z
    clamped to [min, max] x B, and a round whose estimate fits under the cap is the last: the
    step may train a short batch)."""

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
            1 <= self.max_rounds <= 10_000,
            f"max_rounds must be an int in [1, 10000] (DAPO: 10), got {self.max_rounds!r}",
        )
        check(
            1.0 <= self.adaptive_margin <= 100.0,
            f"adaptive_margin must be in [1, 100] (GRESO: 1.25), got {self.adaptive_margin!r}",
        )
        check(
            0.0 < self.min_oversample <= self.max_oversample <= 1e6,
            "need 0 < min_oversample <= max_oversample <= 1e6 (defaults 1 and 3), got "
            f"min_oversample={self.min_oversample!r}, max_oversample={self.max_oversample!r}",
        )
        check(
            self.round_rule in ROUND_RULES,
            f"round_rule must be one of {ROUND_RULES}, got {self.round_rule!r}",
        )
        check(
            not (self.adaptive and self.round_rule == "dapo"),
            "round_rule 'dapo' rolls out oversample x B every round (DAPO's gen_batch_size); "
            "adaptive sizing is the 'standard' rule: set adaptive false or round_rule standard",
        )

    @classmethod
    def for_mode(cls, mode: str) -> DynamicSamplingConfig:
        """The settings of a named mode (MODES): fixed (the defaults), adaptive, greso
        (greso()) or dapo (dapo()); ValueError naming the modes otherwise."""
        if mode == "fixed":
            return cls()
        if mode == "adaptive":
            return cls(adaptive=True)
        if mode == "greso":
            return cls.greso()
        if mode == "dapo":
            return cls.dapo()
        raise ValueError(f"dynamic sampling mode must be one of {', '.join(MODES)}, got {mode!r}")

    @classmethod
    def dapo(cls) -> DynamicSamplingConfig:
        """DAPO's released code (verl recipe/dapo, gen_batch_size = 3 x train_batch_size,
        max_num_gen_batches = 10): every round 3 B prompts, groups with reward spread kept
        until B, the rest discarded."""
        return cls(round_rule="dapo")

    @classmethod
    def greso(cls) -> DynamicSamplingConfig:
        """GRESO's released scripts (sampling_batch_size 192 for 128 training prompts): round 1
        1.5 B, later rounds floor(need / (1 - z_last) * 1.25) within [0.5 B, 1.5 B], the last
        round when that estimate fits under 1.5 B; surplus dropped."""
        return cls(
            oversample=1.5,
            adaptive=True,
            adaptive_margin=1.25,
            min_oversample=0.5,
            max_oversample=1.5,
            round_rule="greso",
        )


class DynamicSampling(WrapsSelector):
    """DAPO dynamic sampling around a built selector: oversample, train on mixed groups only.

    Not a Selector: it holds one (`inner`), asks it for every round's candidates, and sends
    it every rollout's rewards exactly once. Surplus groups re-used for training are never
    sent to the inner selector again.
    """

    kind: ClassVar[str] = _KIND
    frees_slots: ClassVar[bool] = True  # it trains only mixed groups: a step short of B
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = (
        {"adaptive": True},  # mode adaptive
        asdict(DynamicSamplingConfig.greso()),  # mode greso
        {"round_rule": "dapo", "max_rounds": 3},  # mode dapo
        {"max_surplus": 1024},  # the simulator's fixed-keep
        {"adaptive": True, "max_rounds": 1},  # one call a step (dapo-onecall)
    )

    @classmethod
    def check_train(
        cls, config: Any, *, batch_size: int, group_size: int, selector: str, walks: bool
    ) -> None:
        """The round rules the reference trainer offers, and no surplus groups."""
        check_choice("round_rule", config.round_rule, TRAIN_ROUND_RULES)
        check(  # a group of an older policy needs its own log-probs, which it never keeps
            config.max_surplus == 0,
            "the reference trainer keeps no surplus groups (their sampling log-probs are "
            f"gone by the next step): set max_surplus 0, got {config.max_surplus!r}",
        )

    TOTALS = (
        "steps",
        "rounds",
        "candidates",
        "groups_in",
        "groups_filtered",
        "surplus_used",
        "stale_dropped",
        "overflow_dropped",
        "superseded_dropped",
    )
    LAST = (
        "filtered_share",
        "effective_ratio_before",
        "effective_ratio_after",
        "deficit",
        "surplus_used",
        "rounds",
        "candidates",
        "stale_share",
    )

    def __init__(
        self,
        selector: Selector,
        config: DynamicSamplingConfig | None = None,
    ):
        config = checked_wrapper_args(
            "DynamicSampling", "uniform", selector, config, DynamicSamplingConfig
        )
        self.inner = selector
        self.config = config
        self._sur_ids = np.zeros(0, dtype=np.int64)
        self._sur_steps = np.zeros(0, dtype=np.int64)
        self._sur_counts = np.zeros(0, dtype=np.int64)
        self._sur_rewards = np.zeros(0, dtype=np.float64)
        self._clock = -1  # newest step sampled; staleness is measured from it
        # Zero-variance count of the groups rolled out at the newest step (all its rounds):
        # z = zero / groups, what the adaptive rule sizes the next step's round 1 from.
        self._zv = {"step": -1, "groups": 0, "zero": 0}
        self._start_counts()

    @property
    def zero_variance_rate(self) -> float | None:
        """z: zero-variance share of the groups rolled out at the newest step (all of its
        rounds); None before any measurement."""
        zv = self._zv
        return zv["zero"] / zv["groups"] if zv["groups"] else None

    # ------------------------------------------------------------------ sizing
    def num_candidates(self, batch_size: int, z: float | None = None) -> int:
        """Ids to roll out for `batch_size` open training slots (changes nothing), the
        'standard' round rule.

        Fixed (default): ceil(B * oversample). Adaptive, once z is measured (given, else
        the newest step's): ceil(B / (1 - z) * adaptive_margin) clamped to
        [ceil(B * min_oversample), ceil(B * max_oversample)] (z = 1 gives the upper clamp).
        Never more than the pool when the inner selector does not allow repeats.
        """
        _check_batch_size(batch_size)
        if z is not None and not (is_finite_real(z) and 0.0 <= z <= 1.0):
            raise ValueError(
                f"z must be a zero-variance share in [0, 1] (or None: the newest step's), got {z!r}"
            )
        cfg, need = self.config, int(batch_size)
        z = self.zero_variance_rate if z is None else float(z)
        if not cfg.adaptive or z is None:
            want = math.ceil(need * cfg.oversample)
        else:
            lo = math.ceil(need * cfg.min_oversample)
            hi = math.ceil(need * cfg.max_oversample)
            if z >= 1.0:
                want = hi
            else:  # round away float noise first: 4 / 0.5 * 1.25 is 10, not 11
                want = min(hi, max(lo, math.ceil(round(need / (1.0 - z) * cfg.adaptive_margin, 9))))
        return self._fit(want)

    def _fit(self, want: int) -> int:
        return want if self.inner.allows_repeats else min(want, self.inner.num_tasks)

    def _greso_round(self, batch_size: int, need: int, z_last: float) -> tuple[int, bool]:
        """GRESO's later round: (size, last). The estimate is floored as its code does."""
        cfg = self.config
        cap = math.ceil(batch_size * cfg.max_oversample)
        floor = math.ceil(batch_size * cfg.min_oversample)
        est = (
            cap + 1 if z_last >= 1.0 else int(round(need / (1.0 - z_last) * cfg.adaptive_margin, 9))
        )
        return self._fit(max(min(est, cap), floor)), est <= cap

    # ------------------------------------------------------------------ one step
    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """Step `step`'s rounds and the groups to train on: this step's mixed groups first
        (one per task, in round order), then usable surplus for a deficit. Every rollout
        goes to the inner selector once; the step ends with `inner.flush()`. Invalid
        arguments change nothing; if `rollout` raises, the wrapper is unchanged and the inner
        selector keeps the rewards of the rounds already rolled out (they happened)."""
        # Every argument is checked before the inner selector proposes anything: a step it
        # would refuse later (Feedback, past MAX_STEP) must not cost a round of its RNG.
        step = bounded_int(step, "step")
        batch_size = _check_batch_size(batch_size)
        group_size = bounded_int(group_size, "group_size", lo=1, hi=MAX_GROUP_SIZE)
        check_rollout(rollout)
        cfg = self.config
        clock = max(self._clock, step)
        stale = clock - self._sur_steps > cfg.max_staleness
        usable = int((~stale).sum())
        rounds: list[Round] = []
        picks: list[tuple[int, int]] = []  # (round, group) of fresh mixed groups, one per task
        spill: list[tuple[int, int]] = []
        seen: set[int] = set()
        groups = zero = 0
        z_last: float | None = None
        last = False
        while len(picks) + usable < batch_size and len(rounds) < cfg.max_rounds and not last:
            need = batch_size - len(picks) - usable
            if cfg.round_rule == "greso" and z_last is not None:
                size, last = self._greso_round(batch_size, need, z_last)
            elif cfg.round_rule == "greso":  # round 1: fixed, whatever was measured before
                size = self._fit(math.ceil(need * cfg.oversample))
            elif cfg.round_rule == "dapo":  # verl's DAPO: the next gen_batch_size, not `need`
                size = self._fit(math.ceil(batch_size * cfg.oversample))
            else:  # z of this step so far, else the newest step's
                size = self.num_candidates(need, zero / groups if groups else None)
            one = run_round(self.inner, step, size, group_size, rollout)
            rounds.append(one)
            mixed = one.mixed
            z_last = 1.0 - float(mixed.mean())
            groups += mixed.shape[0]
            zero += int((~mixed).sum())
            for g in np.flatnonzero(mixed).tolist():
                task = int(one.task_ids[g])
                if task in seen:  # one group per task and step (a later round re-drew it)
                    continue
                seen.add(task)
                (picks if len(picks) < batch_size else spill).append((len(rounds) - 1, g))
        self.inner.flush()  # the step's sampling is over: fold it so metrics describe it

        # Surplus: stale entries and those whose task trained fresh now are dropped; the
        # newest of the rest cover what the fresh groups could not fill.
        fresh_tasks = np.sort(np.fromiter(seen, dtype=np.int64, count=len(seen)))
        superseded = ~stale & np.isin(self._sur_ids, fresh_tasks)
        alive = np.flatnonzero(~stale & ~superseded)
        room = batch_size - len(picks)
        take_s = alive[::-1][:room][::-1] if room > 0 else alive[:0]  # newest first
        keep_s = np.setdiff1d(alive, take_s)
        fresh = _fresh(rounds, picks, step)
        sur_off = csr(self._sur_counts)
        cs, pos_s = gather(sur_off, take_s)
        n_f, n_s = len(picks), take_s.shape[0]
        counts = np.concatenate([fresh["counts"], cs])
        result = FilteredBatch(
            task_ids=np.concatenate([fresh["task_ids"], self._sur_ids[take_s]]),
            steps=np.concatenate([np.full(n_f, step, np.int64), self._sur_steps[take_s]]),
            counts=counts,
            offsets=csr(counts),
            rewards=np.concatenate([fresh["rewards"], self._sur_rewards[pos_s]]),
            from_surplus=np.repeat([False, True], [n_f, n_s]),
            source_round=np.concatenate([fresh["round"], np.full(n_s, -1, np.int64)]),
            source_group=np.concatenate([fresh["group"], np.full(n_s, -1, np.int64)]),
            deficit=int(batch_size - counts.shape[0]),
            # a surplus group of an earlier step carries no payload: none is kept across steps
            payloads=() if fresh["payloads"] is None else (*fresh["payloads"], *(((None,),) * n_s)),
        )
        # New buffer: the untaken old entries, then this step's spill; newest max_surplus kept.
        sp = _fresh(rounds, spill, step)
        ck, pos_k = gather(sur_off, keep_s)
        b_ids = np.concatenate([self._sur_ids[keep_s], sp["task_ids"]])
        b_steps = np.concatenate([self._sur_steps[keep_s], np.full(len(spill), step, np.int64)])
        b_counts = np.concatenate([ck, sp["counts"]])
        b_rewards = np.concatenate([self._sur_rewards[pos_k], sp["rewards"]])
        cut = max(0, b_ids.shape[0] - cfg.max_surplus)
        survive = np.argsort(b_steps, kind="stable")[cut:]
        nc, npos = gather(csr(b_counts), survive)

        # Commit (nothing below can fail).
        self._sur_ids, self._sur_steps = b_ids[survive], b_steps[survive]
        self._sur_counts, self._sur_rewards = nc, b_rewards[npos]
        self._clock = clock
        if groups and step >= self._zv["step"]:
            self._zv = {"step": step, "groups": groups, "zero": zero}
        t = self._totals
        t["steps"] += 1
        t["rounds"] += len(rounds)
        t["candidates"] += groups
        t["groups_in"] += groups
        t["groups_filtered"] += zero
        t["surplus_used"] += n_s
        t["stale_dropped"] += int(stale.sum())
        t["superseded_dropped"] += int(superseded.sum())
        t["overflow_dropped"] += cut
        self._last = {
            "filtered_share": zero / groups if groups else float("nan"),
            "effective_ratio_before": 1.0 - zero / groups if groups else float("nan"),
            "effective_ratio_after": counts.shape[0] / batch_size,
            "deficit": float(result.deficit),
            "surplus_used": float(n_s),
            "rounds": float(len(rounds)),
            "candidates": float(groups),
            "stale_share": result.stale_share,
        }
        return StepSamples(step, tuple(rounds), result)

    # ------------------------------------------------------------------ reporting
    def metrics(self) -> dict[str, float]:
        """The inner selector's metrics unchanged, plus this wrapper's under `dapo/`."""
        t = self._totals
        z = self.zero_variance_rate
        own = dict(self._last)
        own.update(
            {
                "filtered_share_cumulative": (
                    t["groups_filtered"] / t["groups_in"] if t["groups_in"] else float("nan")
                ),
                "surplus_groups": float(self._sur_ids.shape[0]),
                "stale_dropped": float(t["stale_dropped"]),
                "overflow_dropped": float(t["overflow_dropped"]),
                "superseded_dropped": float(t["superseded_dropped"]),
                "zero_variance_rate": float("nan") if z is None else z,
            }
        )
        return self._metrics_with("dapo", own)

    # ------------------------------------------------------------------ state
    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        """Everything needed to continue exactly; the inner selector's state is nested
        unless `with_inner=False` (a checkpoint that saves the selector on its own)."""
        surplus = {
            "task_ids": self._sur_ids.copy(),
            "steps": self._sur_steps.copy(),
            "counts": self._sur_counts.copy(),
            "rewards": self._sur_rewards.copy(),
        }
        own = {"surplus": surplus, "clock": self._clock, "zero_variance": dict(self._zv)}
        return self._state(own, with_inner)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict (its nested inner state too, when it holds one); on any error
        nothing changes."""
        who = _KIND
        state = self._checked_state(state, _STATE_KEYS, _DROPPED_KEYS)
        sur = read_keys(state, "surplus", who, _SURPLUS)
        s_ids = read_array(sur, "task_ids", who, np.int64, lo=0, hi=self.inner.num_tasks - 1)
        size = s_ids.shape
        s_steps = read_array(sur, "steps", who, np.int64, shape=size, lo=0, hi=MAX_STEP)
        s_counts = read_array(sur, "counts", who, np.int64, shape=size, lo=1)
        s_rewards = read_array(sur, "rewards", who, np.float64, finite=True)
        if int(s_counts.sum()) != s_rewards.shape[0]:
            raise ValueError(f"{who} state: surplus group counts do not match its rewards")
        lo, hi = self.inner.reward_bounds or (-MAX_ABS_VALUE, MAX_ABS_VALUE)
        if np.any((s_rewards < lo) | (s_rewards > hi)):
            raise ValueError(f"{who} state: surplus rewards outside [{lo}, {hi}]")
        totals, last = self._read_counts(state, totals_hi=MAX_STEP)
        zv = read_keys(state, "zero_variance", who, _ZERO_VAR)
        zv = {
            "step": read_int(zv, "step", who, lo=-1, hi=MAX_STEP),
            "groups": read_int(zv, "groups", who),
            "zero": read_int(zv, "zero", who),
        }
        if zv["zero"] > zv["groups"]:
            raise ValueError(f"{who} state: zero_variance counts more zero groups than groups")
        clock = read_int(state, "clock", who, lo=-1)
        self._load_inner(state)  # atomic; the last step that can fail
        self._sur_ids, self._sur_steps = s_ids, s_steps
        self._sur_counts, self._sur_rewards = s_counts, s_rewards
        self._clock, self._zv, self._totals, self._last = clock, zv, totals, last


def _fresh(rounds: list[Round], picks: list[tuple[int, int]], step: int) -> dict[str, Any]:
    """Task ids, counts, concatenated rewards, rounds, positions and payloads (None when the
    rollouts carried none) of groups `picks`."""
    rows = [rounds[r].group(g) for r, g in picks]
    return {
        "task_ids": np.array([rounds[r].task_ids[g] for r, g in picks], dtype=np.int64),
        "counts": np.array([row.shape[0] for row in rows], dtype=np.int64),
        "rewards": np.concatenate(rows) if rows else np.zeros(0, dtype=np.float64),
        "round": np.array([r for r, _ in picks], dtype=np.int64),
        "group": np.array([g for _, g in picks], dtype=np.int64),
        "payloads": tuple((rounds[r].payload(g),) for r, g in picks)
        if any(one.payloads is not None for one in rounds)
        else None,
    }


def _check_batch_size(batch_size: int) -> int:
    """`batch_size` as an int in [1, MAX_STEP], else a ValueError naming it."""
    return bounded_int(batch_size, "batch_size", lo=1)
