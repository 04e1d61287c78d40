"""Rollout allocation: how many rollouts each walked prompt gets, under a fixed budget per step.

A skip (greso, skip) stops paying for prompts that teach nothing, but every prompt it keeps
still gets n rollouts. This sampler wraps any selector, takes the B prompts it proposes and
spreads the step's budget R (default uniform's, B x n) over them (allocation_rule.py):

    maximise sum_k w_k q_k(n_k)   subject to   sum_k n_k = R,   n_min <= n_k <= n_max

with q_k(n) the chance, under prompt k's Beta posterior (structures/beta_posterior.py), that a
group of n rollouts is informative (not all rewards equal), and w_k = 1 ('informative':
the expected number of informative groups) or Knapsack RL's p (1 - p)^2 ('knapsack').
A prompt with no rollouts of its own gets the default n (group_size): nothing is known
about it. Every prompt gets at least n_min rollouts: no prompt the walk keeps goes without.

With `pilot` > 0 a step runs two rounds (a Pilot-Commit-style variant): tried prompts get
`pilot` rollouts first, untried ones their default n; the rest of the budget then continues
groups by the commit rule, 'balance' (the same objective on the posterior that includes the
pilot: only groups still all equal gain) or 'mixed' (Pilot-Commit's: the groups whose pilot
was mixed with a pass rate in the commit window first, spread evenly; then 'balance').
Solved prompts are not evicted, as Pilot-Commit does: the selector inside re-tests them.

It wraps a selector the way DynamicSampling does (not a Selector, not registered) and is
driven the same way, with a rollout that takes per-prompt counts:

    alloc = Allocation(make_selector("greso", pool, seed=0))
    samples = alloc.sample(step, B, n, rollout)   # rollout(ids, counts) -> rewards, id-major
    train(samples.train)                          # every group of the step, of its own size

docs/selectors/allocation.md derives the rule and lists the deviations from Knapsack RL and
Pilot-Commit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import bounded_int
from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.informative import MAX_GROUP, informative_probability
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_keys
from frontier_rft.sampling.allocation_rule import (
    HIGH,
    LOW,
    MIXED,
    knapsack_weight,
    marginal_gains,
    signal_gains,
    take_greedy,
)
from frontier_rft.sampling.base import WrapsSelector, checked_wrapper_args
from frontier_rft.sampling.filtered_batch import FilteredBatch
from frontier_rft.sampling.step import (
    RolloutFn,
    Round,
    StepSamples,
    check_rollout,
    fresh_batch,
    roll_unit_round,
)
from frontier_rft.structures.beta_posterior import BetaPosteriors

__all__ = ["COMMITS", "VALUES", "Allocation", "AllocationConfig"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
VALUES = ("informative", "signal", "knapsack")
COMMITS = ("balance", "mixed")
_KIND = "allocation"
_COMMIT_FIRST = 2.0  # above any probability gain: 'mixed' commits these before the rest
_STATE_KEYS = ("kind", "config", "posteriors", "totals", "last", "inner")
_DROPPED_KEYS = ("seed",)
"""Keys of states saved by earlier versions, read and unused (the seed drove nothing)."""


@dataclass(frozen=True)
class AllocationConfig:
    """Per-prompt rollout allocation (defaults: uniform's budget, Knapsack RL's 2 <= n <= 128)."""

    budget: float = 1.0
    """Rollouts per step as a multiple of uniform's B x n (rounded down to an int). Below 1
    the step spends less than uniform: untried prompts still get their default n and kept
    ones n_min, so a step with many untried prompts may spend more than the budget."""
    min_rollouts: int = 2
    """n_min: fewest rollouts of a kept prompt (Knapsack RL: 2; a group needs two)."""
    max_rollouts: int = 128
    """n_max: most rollouts of one prompt in a step (Knapsack RL: 128)."""
    value: str = "informative"
    """What a group is worth: 'informative' (the chance it is informative: the expected
    number of informative groups), 'signal' (its expected mean |GRPO advantage|) or
    'knapsack' (the chance it is informative x Knapsack RL's p (1 - p)^2)."""
    pilot: int = 0
    """Two stages: rollouts of a tried prompt's pilot, the rest committed after it (0 = one
    stage; else n_min <= pilot <= group_size)."""
    commit: str = "balance"
    """Second stage: 'balance' (continue groups still all equal, by the same objective) or
    'mixed' (Pilot-Commit: mixed pilots in the commit window first, evenly)."""
    commit_low: float = 0.125
    """commit 'mixed': lowest pilot pass rate committed to (Pilot-Commit: 0.125)."""
    commit_high: float = 0.75
    """commit 'mixed': highest pilot pass rate committed to (Pilot-Commit: 0.75)."""
    lam: float = 0.1
    """Share of a prompt's own evidence forgotten per pool-size of prompts handed out (as
    the skip selector's)."""
    alpha0: float = 1.0
    """Base prior Beta(alpha0, beta0), until 16 groups fit the empirical one: successes."""
    beta0: float = 1.0
    """Base prior Beta(alpha0, beta0): failures."""
    prior_forgetting: float = 0.95
    """Per-step decay of past groups in the empirical prior's fit (as the skip selector's)."""

    def __post_init__(self) -> None:
        check_field_types(self)
        check(
            isinstance(self.budget, int | float) and 0.0 < self.budget <= 1e3,
            f"budget must be a multiple of B x n in (0, 1000] (1 = uniform's), got {self.budget!r}",
        )
        check(
            2 <= self.min_rollouts <= self.max_rollouts <= MAX_GROUP,
            f"need 2 <= min_rollouts <= max_rollouts <= {MAX_GROUP} (a group needs two "
            f"rollouts for an advantage), got min_rollouts={self.min_rollouts!r}, "
            f"max_rollouts={self.max_rollouts!r}",
        )
        check_choice("value", self.value, VALUES)
        check_choice("commit", self.commit, COMMITS)
        check(
            self.pilot == 0 or self.min_rollouts <= self.pilot <= self.max_rollouts,
            f"pilot must be 0 (one stage) or in [min_rollouts, max_rollouts] = "
            f"[{self.min_rollouts}, {self.max_rollouts}], got {self.pilot!r}",
        )
        check(
            0.0 <= self.commit_low <= self.commit_high <= 1.0,
            f"need 0 <= commit_low <= commit_high <= 1 (Pilot-Commit: 0.125, 0.75), got "
            f"{self.commit_low!r}, {self.commit_high!r}",
        )
        check(0.0 <= self.lam <= 1.0, f"lam must lie in [0, 1] (0 = never forget), got {self.lam}")
        for name in ("alpha0", "beta0"):
            v = getattr(self, name)
            check(0.0 < v <= 1e6, f"{name} must be a positive number <= 1e6, got {v!r}")
        check(
            0.0 < self.prior_forgetting <= 1.0,
            f"prior_forgetting must lie in (0, 1], got {self.prior_forgetting}",
        )

    def step_budget(self, batch_size: int, group_size: int) -> int:
        """R, the rollouts of a step of `batch_size` prompts at default size `group_size`,
        or a ValueError naming what cannot work with these sizes."""
        for value, what in ((batch_size, "batch_size"), (group_size, "group_size")):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{what} must be a positive int, got {value!r}")
        n = int(group_size)
        if not self.min_rollouts <= n <= self.max_rollouts:
            raise ValueError(
                f"group_size {n} is the default n every untried prompt gets, so it must lie in "
                f"[min_rollouts, max_rollouts] = [{self.min_rollouts}, {self.max_rollouts}]"
            )
        if self.pilot > n:
            raise ValueError(
                f"pilot {self.pilot} exceeds group_size {n}: it would spend more on a tried "
                "prompt's pilot than an untried prompt gets; lower pilot"
            )
        budget = math.floor(self.budget * int(batch_size) * n + 1e-9)
        if budget < batch_size * self.min_rollouts:
            raise ValueError(
                f"a budget of {budget} rollouts cannot give {batch_size} prompts min_rollouts="
                f"{self.min_rollouts} each: raise budget (here >= {self.min_rollouts / n:g}) or "
                "lower min_rollouts"
            )
        if budget > batch_size * self.max_rollouts:
            raise ValueError(
                f"a budget of {budget} rollouts cannot be spent on {batch_size} prompts of at "
                f"most max_rollouts={self.max_rollouts} each: raise max_rollouts or lower budget"
            )
        return budget


class Allocation(WrapsSelector):
    """Per-prompt rollout allocation around a built selector (see the module docstring).

    Not a Selector: it holds one (`inner`), asks it for each step's prompts, and sends it
    every rollout's rewards exactly once. Its own state is the prompts' posteriors.
    """

    uneven_groups: ClassVar[bool] = True

    kind: ClassVar[str] = _KIND
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = (
        {"value": "signal"},
        {"value": "knapsack"},
        {"budget": 0.5},  # a lean budget
        {"pilot": 2},  # two stages, commit balance
        {"pilot": 2, "commit": "mixed", "budget": 0.75},
    )

    @classmethod
    def _check_sizes(cls, config: Any, batch_size: int, group_size: int) -> None:
        """Its step budget of these sizes."""
        config.step_budget(batch_size, group_size)

    TOTALS = ("steps", "rollouts", "budget", "prompts", "tried", "committed", "informative")
    LAST = (
        "rollouts",
        "budget",
        "unspent",
        "tried_share",
        "rollouts_per_tried",
        "max_rollouts",
        "predicted_informative_tried",
        "informative_tried",
        "committed_prompts",
    )

    def __init__(
        self,
        selector: Selector,
        config: AllocationConfig | None = None,
        *,
        posterior: Callable[[I64], tuple[F64, F64]] | None = None,
    ):
        config = checked_wrapper_args("Allocation", "greso", selector, config, AllocationConfig)
        if posterior is not None and not callable(posterior):
            raise ValueError(f"posterior must be a function of ids or None, got {posterior!r}")
        self.inner = selector
        self.config = config
        self.posterior = posterior or self._estimated
        """(a, b) of the Beta the rule reads for each of ids' pass rates: the posteriors'
        estimate, or the one given (an oracle: benchmarks/allocation.py --oracle gives the
        simulated learner's true rates). A collaborator: not saved with the state."""
        self.posteriors = BetaPosteriors(
            selector.num_tasks,
            config.lam,
            (config.alpha0, config.beta0),
            config.prior_forgetting,
            per_rollout=True,
        )
        self._start_counts()

    def _estimated(self, ids: I64) -> tuple[F64, F64]:
        """The posteriors' (a, b) for ids (the method's own estimate)."""
        return self.posteriors.posterior(ids)

    # ------------------------------------------------------------------ the rule
    def allocate(self, ids: I64, group_size: int, budget: int) -> I64:
        """One-stage rollouts per prompt (changes nothing): untried prompts get group_size,
        tried ones n_min plus their greedy share of what the budget leaves (if anything).
        ValueError naming an argument that is not one: ids a 1-D array of the pool's task
        ids, group_size in [min_rollouts, max_rollouts], budget a non-negative int."""
        cfg = self.config
        ids = _task_ids(ids, self.inner.num_tasks)
        group_size = bounded_int(group_size, "group_size", lo=cfg.min_rollouts, hi=cfg.max_rollouts)
        budget = bounded_int(budget, "budget")
        tried = self.posteriors.tried(ids)
        counts = np.full(ids.shape[0], int(group_size), dtype=np.int64)
        if not tried.any():
            return counts
        # Below uniform's budget the floor (n untried, n_min tried) may exceed it: it wins.
        floor = int(group_size) * int((~tried).sum()) + cfg.min_rollouts * int(tried.sum())
        extra = max(budget - floor, 0)
        a, b = self.posterior(ids[tried])
        width = cfg.max_rollouts - cfg.min_rollouts
        none = np.zeros(a.shape[0])
        gains = self._gains(a, b, cfg.min_rollouts, cfg.max_rollouts, none, none, None)
        counts[tried] = cfg.min_rollouts + take_greedy(gains, min(extra, width * a.shape[0]))
        return counts

    def _gains(
        self,
        a: F64,
        b: F64,
        start: int,
        stop: int,
        head_s: F64,
        head_n: F64,
        state: NDArray[np.int8] | None,
    ) -> F64:
        """The value table of `value` (allocation_rule): a group with head_n rollouts so far
        (head_s successes; `state` its kind), rollouts start + j + 1 for j < stop - start."""
        if self.config.value == "signal":
            return signal_gains(a, b, start, stop, head_s, head_n)
        weight = knapsack_weight(a, b) if self.config.value == "knapsack" else None
        return marginal_gains(a, b, start, stop, weight, state)

    def _commit(
        self, ids: I64, tried: NDArray[np.bool_], first: Round, extra: int
    ) -> tuple[I64, I64]:
        """Second stage: (rows of `ids` continued, their extra rollouts)."""
        cfg = self.config
        rows = np.flatnonzero(tried)
        if not cfg.pilot or extra <= 0 or rows.size == 0:  # one stage: what is left stays unspent
            return rows[:0], rows[:0]
        off = first.offsets
        lo = np.minimum.reduceat(first.rewards, off[:-1])[rows]
        hi = np.maximum.reduceat(first.rewards, off[:-1])[rows]
        sums = np.add.reduceat(first.rewards, off[:-1])[rows]
        size = first.sizes[rows].astype(np.float64)
        state = np.where(hi > lo, MIXED, np.where(lo >= 0.5, HIGH, LOW)).astype(np.int8)
        a0, b0 = self.posterior(ids[rows])
        a, b = a0 + sums, b0 + size - sums  # the posterior with the pilot
        width = cfg.max_rollouts - cfg.pilot
        gains = self._gains(a, b, 0, width, sums, size, state)
        if cfg.commit == "mixed":
            rate = sums / size
            window = (state == MIXED) & (rate >= cfg.commit_low) & (rate <= cfg.commit_high)
            gains[window] = _COMMIT_FIRST
        more = take_greedy(gains, min(extra, width * rows.size))
        keep = more > 0
        return rows[keep], more[keep]

    # ------------------------------------------------------------------ one step
    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """Step `step`: B prompts from the inner selector, the budget spread over them, one
        round (two with a pilot); every group is trained. `rollout(ids, counts)` returns
        counts[i] rewards in [0, 1] for ids[i], id-major. Invalid arguments change nothing;
        if `rollout` fails or returns bad rewards, the wrapper is unchanged and the inner
        selector keeps the rewards of the rounds already sent."""
        # Every argument is checked before the inner selector proposes anything: a step it
        # would refuse later (Feedback, past MAX_STEP) must not cost a round of its RNG.
        step = bounded_int(step, "step")
        budget = self.config.step_budget(batch_size, group_size)
        check_rollout(rollout)
        cfg, n = self.config, int(group_size)
        start = time.perf_counter()
        ids = self.inner.select(int(batch_size))
        tried = self.posteriors.tried(ids)
        if cfg.pilot:
            counts = np.where(tried, cfg.pilot, n).astype(np.int64)
        else:
            counts = self.allocate(ids, n, budget)
        seconds = time.perf_counter() - start
        first = self._roll(step, ids, counts, rollout, seconds)
        rounds = [first]
        cont_rows, cont_more = self._commit(ids, tried, first, budget - int(counts.sum()))
        if cont_rows.size:
            second = self._roll(step, ids[cont_rows], cont_more, rollout, 0.0)
            rounds.append(second)
        self.inner.flush()  # the step's sampling is over: fold it so metrics describe it
        batch = _step_batch(rounds, cont_rows, step)
        self._record(ids, tried, batch, budget, cont_rows.size)
        return StepSamples(step, tuple(rounds), batch)

    def _roll(self, step: int, ids: I64, counts: I64, rollout: RolloutFn, seconds: float) -> Round:
        """Roll out one round, check its rewards, send them to the inner selector once."""
        why = (
            "allocation reads rewards as success rates in [0, 1] (its Beta model): "
            "rescale the rewards, or train without allocation"
        )
        return roll_unit_round(self.inner, step, ids, counts, rollout, seconds, why)

    def _record(
        self,
        ids: I64,
        tried: NDArray[np.bool_],
        batch: FilteredBatch,
        budget: int,
        committed: int,
    ) -> None:
        """Commit the step: the posteriors learn its groups, the metrics describe it."""
        # What the rule predicted for the tried prompts, before they are updated.
        predicted = 0.0
        if tried.any():
            a, b = self.posterior(ids[tried])
            sizes = batch.counts[tried]
            predicted = float(
                sum(
                    informative_probability(a[sizes == s], b[sizes == s], int(s)).sum()
                    for s in np.unique(sizes)
                )
            )
        mixed = batch.mixed
        grouped = GroupBatch.from_rollouts(
            batch.steps[0] if batch.num_groups else 0,
            batch.rollout_task_ids,
            batch.rewards,
            np.full(batch.rewards.shape[0], -1, dtype=np.int64),
        )
        self.posteriors.advance(ids.shape[0])
        self.posteriors.observe(grouped.task_ids, grouped.sums, grouped.counts.astype(np.float64))
        rollouts = int(batch.counts.sum())
        t = self._totals
        t["steps"] += 1
        t["rollouts"] += rollouts
        t["budget"] += budget
        t["prompts"] += ids.shape[0]
        t["tried"] += int(tried.sum())
        t["committed"] += committed
        t["informative"] += int(mixed.sum())
        n_tried = int(tried.sum())
        self._last = {
            "rollouts": float(rollouts),
            "budget": float(budget),
            "unspent": float(budget - rollouts),
            "tried_share": n_tried / ids.shape[0],
            "rollouts_per_tried": (float(batch.counts[tried].mean()) if n_tried else float("nan")),
            "max_rollouts": float(batch.counts.max()),
            "predicted_informative_tried": predicted if n_tried else float("nan"),
            "informative_tried": float(mixed[tried].sum()) if n_tried else float("nan"),
            "committed_prompts": float(committed),
        }

    # ------------------------------------------------------------------ reporting
    def metrics(self) -> dict[str, float]:
        """The inner selector's metrics unchanged, plus this wrapper's under `alloc/`."""
        t = self._totals
        m, c = self.posteriors.prior()
        own = dict(self._last)
        own.update(
            {
                "informative_per_rollout_cumulative": (
                    t["informative"] / t["rollouts"] if t["rollouts"] else float("nan")
                ),
                "rollouts_cumulative": float(t["rollouts"]),
                "prior_mean": m,
                "prior_strength": c,
            }
        )
        return self._metrics_with("alloc", own)

    # ------------------------------------------------------------------ state
    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        """Everything needed to continue exactly; the inner selector's state is nested
        unless `with_inner=False` (a checkpoint that saves the selector on its own)."""
        return self._state({"posteriors": self.posteriors.state_dict()}, with_inner)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict (its nested inner state too, when it holds one); on any error
        nothing changes."""
        who = _KIND
        state = self._checked_state(state, _STATE_KEYS, _DROPPED_KEYS)
        post = read_keys(state, "posteriors", who, tuple(self.posteriors.state_dict()))
        posteriors = self.posteriors.loaded(post, who)
        totals, last = self._read_counts(state)
        self._load_inner(state)  # atomic; the last step that can fail
        self.posteriors, self._totals, self._last = posteriors, totals, last


def _task_ids(ids: Any, num_tasks: int) -> I64:
    """`ids` as a 1-D int64 array of task ids in [0, num_tasks), else a ValueError."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(
            f"ids must be a 1-D array of task ids (ints), got {arr.dtype} of shape {arr.shape}"
        )
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= num_tasks):
        raise ValueError(
            f"ids must be task ids in [0, {num_tasks - 1}], got one of {int(arr.min())} .. "
            f"{int(arr.max())}"
        )
    return arr.astype(np.int64, copy=False)


def _step_batch(rounds: list[Round], cont_rows: I64, step: int) -> FilteredBatch:
    """Every group of the step, in the first round's order; a continued group's rewards are
    its pilot's, then its commit's."""
    picks = [(0, g) for g in range(rounds[0].task_ids.shape[0])]
    tails = {(0, int(g)): ((1, j),) for j, g in enumerate(cont_rows.tolist())}
    return fresh_batch(tuple(rounds), picks, step, 0, tails)
