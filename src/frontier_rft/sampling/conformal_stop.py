"""ConformalStop: C-GRPO's stop rule (trl-cgrpo 0.2, Fayyazi; proposed for TRL in its issue
#7402) as a step sampler, kind 'cgrpo'.

Each of the step's B prompts is rolled out in increments along a grid of budgets
k_1 < ... < k_m = n (the group size) and stops at the first budget whose split-conformal
prediction set over its answers so far is a singleton; it trains on the k rollouts it got.
One threshold per budget, q_k, is calibrated with the current policy on a fixed set of
calibration prompts rolled out n times each, at the first step and every
`recalibrate_every` steps:

    s_i(k) = the nonconformity score of calibration prompt i after its first k rollouts
    delta  = clip((1 - solve rate within n) + delta_margin, 0.05, 0.95)   (delta None)
    q_k    = the ceil((m + 1)(1 - delta))-th smallest of s_1(k), ..., s_m(k)  (1.0 if m = 0)

    stop prompt x at k  <=>  its APS set at q_k is one answer of mass >= q_k    (score aps)
                        <=>  a pass among its k and score(k) <= q_k              (the others)

Answers are the rollouts' rewards: a reward >= solved_at is the gold answer (a pass), any
other reward value an answer of its own. The rule needs nothing but rewards; the package's
answer strings are not in the rollout protocol (docs/selectors/cgrpo.md lists every
deviation). Every rollout is billed in the step that generated it (calibration included) and
reaches the selector once; calibration groups are not trained.

    cs = ConformalStop(make_selector("uniform", pool, seed=0))
    samples = cs.sample(step, B, n, rollout)   # rollout(ids, counts) -> rewards, id-major
    train(samples.train)                       # B groups of k_1 .. n rollouts
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frontier_rft.core.bounds import MAX_STEP, bounded_int
from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import MAX_SEED, Selector
from frontier_rft.core.state_check import read_array, read_float, read_int, read_keys
from frontier_rft.sampling.base import WrapsSelector, checked_seed, checked_wrapper_args
from frontier_rft.sampling.step import (
    MAX_GROUP_SIZE,
    RolloutFn,
    Round,
    StepSamples,
    check_rollout,
    fresh_batch,
    rolled_counts,
)

__all__ = [
    "SCORES",
    "ConformalStop",
    "ConformalStopConfig",
    "aps_score",
    "auto_delta",
    "conformal_quantile",
    "first_success_score",
    "pass_rate_score",
    "prediction_set",
    "resolves_singleton",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
SCORES = ("aps", "first_success", "pass_rate")
"""ConformalStopConfig.score: the nonconformity score (the package's three)."""
DELTA_BOUNDS = (0.05, 0.95)
"""delta None: the automatic delta is clipped to these (the package's select_delta_auto)."""
_KIND = "cgrpo"
_STATE_KEYS = ("kind", "config", "seed", "calibration", "totals", "last", "inner")
_CAL_KEYS = ("budgets", "qhats", "delta", "solve_rate", "step")


# ---------------------------------------------------------------- the equations (numpy only)
def conformal_quantile(scores: ArrayLike, delta: float) -> float:
    """Split-conformal quantile: the ceil((m + 1)(1 - delta))-th smallest of m scores (the
    largest when the index passes m; 1.0 when there are none)."""
    s = np.sort(np.asarray(scores, dtype=np.float64).ravel())
    m = s.shape[0]
    if m == 0:
        return 1.0
    index = math.ceil((m + 1) * (1.0 - delta))
    return float(s[min(max(index, 1), m) - 1])


def _ranked(answers: ArrayLike, k: int, keys: ArrayLike) -> tuple[F64, F64]:
    """The distinct answers among the first k (NaN: no answer, no mass) by decreasing mass
    count / k, ties ordered by `keys` (one random key per distinct answer, in the order each
    first appears); returns (answers, masses) in that order."""
    a = np.asarray(answers, dtype=np.float64)[:k]
    a = a[~np.isnan(a)]
    values, first, counts = np.unique(a, return_index=True, return_counts=True)
    seen = np.argsort(first)  # first-appearance order: the order the keys are drawn in
    values, counts = values[seen], counts[seen]
    tie = np.asarray(keys, dtype=np.float64)[: values.shape[0]]
    if tie.shape[0] < values.shape[0]:
        raise ValueError(f"{values.shape[0]} distinct answers need as many keys, got {tie.shape}")
    mass = counts / k
    order = np.lexsort((tie, -mass))  # stable: the mass first, then the key
    return values[order], mass[order]


def aps_score(gold: float, answers: ArrayLike, k: int, keys: ArrayLike, u: float) -> float:
    """Randomised APS score of `gold` under the first k answers: the mass ranked ahead of it
    plus u x its own mass (u ~ U(0, 1)), at most 1; 1.0 when gold is not among them."""
    values, mass = _ranked(answers, k, keys)
    hit = np.flatnonzero(values == gold)
    if hit.size == 0:
        return 1.0
    j = int(hit[0])
    ahead = float(np.cumsum(mass)[j - 1]) if j else 0.0
    return min(ahead + u * float(mass[j]), 1.0)


def prediction_set(answers: ArrayLike, k: int, qhat: float, keys: ArrayLike) -> F64:
    """APS set: answers by decreasing mass until their cumulative mass reaches qhat (the one
    that crosses it included)."""
    values, mass = _ranked(answers, k, keys)
    reach = np.flatnonzero(np.cumsum(mass) >= qhat)
    return values if reach.size == 0 else values[: int(reach[0]) + 1]


def resolves_singleton(answers: ArrayLike, k: int, qhat: float, keys: ArrayLike) -> bool:
    """Whether the APS set after k answers is one answer whose own mass reaches qhat (a lone
    answer among no-answers, below qhat, does not stop)."""
    pset = prediction_set(answers, k, qhat, keys)
    if pset.shape[0] != 1:
        return False
    a = np.asarray(answers, dtype=np.float64)[:k]
    return bool(np.count_nonzero(a == pset[0]) / k >= qhat)


def first_success_score(passes: ArrayLike, k: int) -> float:
    """j / k, j the 1-based position of the first pass among the first k (1.0 if none)."""
    hit = np.flatnonzero(np.asarray(passes, dtype=np.bool_)[:k])
    return float((int(hit[0]) + 1) / k) if hit.size else 1.0


def pass_rate_score(passes: ArrayLike, k: int) -> float:
    """1 - (passes among the first k) / k."""
    return float(1.0 - np.count_nonzero(np.asarray(passes, dtype=np.bool_)[:k]) / k)


def auto_delta(scores_at_n: ArrayLike, margin: float) -> tuple[float, float]:
    """(delta, solve rate): delta = (1 - solve rate) + margin clipped to DELTA_BOUNDS, the
    solve rate the share of calibration prompts scored below 1 at the largest budget."""
    s = np.asarray(scores_at_n, dtype=np.float64)
    solve = float((s < 1.0 - 1e-9).mean()) if s.size else 0.0
    return float(np.clip(1.0 - solve + margin, *DELTA_BOUNDS)), solve


# ---------------------------------------------------------------- the settings
@dataclass(frozen=True)
class ConformalStopConfig:
    """C-GRPO's stop rule at trl-cgrpo 0.2's defaults (deviations: docs/selectors/cgrpo.md)."""

    budget_grid: tuple[int, ...] = ()
    """Ascending budgets, the last = group_size (() = 2, 4, 8, ... up to group_size: the
    package's 2, 4, 8, 16, 32 at group_size 32)."""
    delta: float | None = None
    """Miscoverage level in (0, 1); None: (1 - solve rate within group_size) + delta_margin,
    clipped to [0.05, 0.95], at every calibration."""
    delta_margin: float = 0.05
    """Added to the calibration miss rate when delta is None."""
    split_delta: bool = False
    """delta None: choose delta on the first half of the calibration prompts and the
    thresholds on the second (split-conformal exactness, at half the calibration size)."""
    score: Literal["aps", "first_success", "pass_rate"] = "aps"
    """Nonconformity score: aps (randomised APS of the gold answer, here the solved reward
    class), first_success (j*/k) or pass_rate (1 - passes/k)."""
    recalibrate_every: int = 50
    """Refit the thresholds every this many steps (0 = once, before the first step)."""
    calibration_prompts: int = 200
    """Calibration prompts, drawn once from the pool with the sampler's seed (at most the
    pool), each rolled out group_size times per calibration (the package: a held-out set;
    its README holds out 200)."""
    solved_at: float = 1.0
    """A reward at or above this is a pass: the gold answer (the reference trainer's
    SUCCESS; Countdown's 0.1 is format only)."""

    def __post_init__(self) -> None:
        check_field_types(self)
        grid = self.budget_grid
        check(
            all(k >= 2 for k in grid) and len(set(grid)) == len(grid),
            f"budget_grid must be distinct ints >= 2 (a group of one reward has no spread, "
            f"and one answer is always a singleton set), got {grid!r}",
        )
        object.__setattr__(self, "budget_grid", tuple(sorted(grid)))  # the package sorts it
        check(
            self.delta is None or 0.0 < self.delta < 1.0,
            f"delta must be in (0, 1) or None (from the solve rate), got {self.delta!r}",
        )
        check(
            0.0 <= self.delta_margin < 1.0,
            f"delta_margin must be in [0, 1) (C-GRPO: 0.05), got {self.delta_margin!r}",
        )
        check_choice("score", self.score, SCORES)
        check(
            0 <= self.recalibrate_every <= MAX_STEP,
            f"recalibrate_every must be an int >= 0 (0 = calibrate once; C-GRPO: 50), got "
            f"{self.recalibrate_every!r}",
        )
        check(
            1 <= self.calibration_prompts <= 1 << 30,
            f"calibration_prompts must be an int >= 1 (e.g. 200), got {self.calibration_prompts!r}",
        )
        check(
            0.0 < self.solved_at <= 1e12,
            f"solved_at must be a reward > 0 (a pass; e.g. 1.0), got {self.solved_at!r}",
        )

    def budgets(self, group_size: int) -> tuple[int, ...]:
        """The grid for groups of `group_size`; ValueError unless it ends at group_size."""
        if not self.budget_grid:
            grid = [2]
            while grid[-1] * 2 < group_size:
                grid.append(grid[-1] * 2)
            return (*(k for k in grid if k < group_size), group_size)
        if self.budget_grid[-1] != group_size:
            raise ValueError(
                f"budget_grid {list(self.budget_grid)} must end at group_size {group_size}: a "
                "prompt that never stops gets group_size rollouts (C-GRPO: num_generations = "
                "max(budget_grid)); set one to the other, or budget_grid () for 2, 4, ..."
            )
        return self.budget_grid


# ---------------------------------------------------------------- the sampler
@dataclass(frozen=True)
class _Calibration:
    """The thresholds in force: the budgets, q_k per budget, delta, the solve rate within the
    largest budget, and the step they were fitted at (-1: never)."""

    budgets: I64
    qhats: F64
    delta: float
    solve_rate: float
    step: int

    @staticmethod
    def none() -> _Calibration:
        return _Calibration(np.zeros(0, np.int64), np.zeros(0), math.nan, math.nan, -1)


class ConformalStop(WrapsSelector):
    """C-GRPO's stop rule around a built selector (see the module docstring). Not a Selector:
    it asks the selector for B prompts a step and sends it every rollout's rewards once."""

    uneven_groups: ClassVar[bool] = True

    kind: ClassVar[str] = _KIND
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = (
        {"recalibrate_every": 3},
        {"score": "first_success", "calibration_prompts": 8, "split_delta": True},
        {"score": "pass_rate", "delta": 0.2},
    )

    @classmethod
    def _check_sizes(cls, config: Any, batch_size: int, group_size: int) -> None:
        """Its budget grid for groups of this size."""
        config.budgets(group_size)

    TOTALS = ("calibrations", "calibration_rollouts", "train_rollouts", "stopped_early")
    LAST = ("mean_k", "rollout_savings", "calibration_rollouts", "stopped_early")

    def __init__(
        self,
        selector: Selector,
        config: ConformalStopConfig | None = None,
        *,
        seed: int | None = None,
    ):
        config = checked_wrapper_args(
            "ConformalStop", "uniform", selector, config, ConformalStopConfig
        )
        self.inner = selector
        self.config = config
        self.seed = checked_seed(selector, seed)
        self.calibration = _Calibration.none()
        self._start_counts()

    @property
    def calibration_ids(self) -> I64:
        """The calibration prompts: drawn once from the pool by the seed (nothing to save)."""
        n = self.inner.num_tasks
        rng = np.random.default_rng([self.seed, 0xC6])
        m = min(self.config.calibration_prompts, n)
        return np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)

    # ------------------------------------------------------------------ one step
    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """Step `step`: a calibration when due, then batch_size prompts rolled out along the
        grid, each stopped at its first singleton budget. `rollout(ids, counts)` returns
        counts[i] rewards for ids[i], id-major. Invalid arguments change nothing; if
        `rollout` fails, the wrapper is unchanged and the selector keeps the rounds sent."""
        step = bounded_int(step, "step")
        batch_size = bounded_int(batch_size, "batch_size", lo=1, hi=self.inner.num_tasks)
        n = bounded_int(group_size, "group_size", lo=2, hi=MAX_GROUP_SIZE)
        grid = self.config.budgets(n)
        check_rollout(rollout)
        cal = self.calibration
        if cal.step >= 0 and tuple(cal.budgets.tolist()) != grid:
            raise ValueError(
                f"the thresholds were calibrated for budgets {cal.budgets.tolist()}, but "
                f"group_size {n} asks for {list(grid)}: keep group_size as it was in this run"
            )
        rounds: list[Round] = []
        cal_rollouts = 0
        if self._due(step):
            ids = self.calibration_ids
            rnd = self._roll(step, ids, np.full(ids.shape[0], n, np.int64), rollout, 0.0)
            rounds.append(rnd)
            cal = self._fit(step, rnd.rewards.reshape(ids.shape[0], n), grid)
            cal_rollouts = ids.shape[0] * n
        start = time.perf_counter()
        ids = self.inner.select(batch_size)
        seconds = time.perf_counter() - start
        b = ids.shape[0]
        rewards = np.zeros((b, n))
        used = np.full(b, n, dtype=np.int64)
        parts: list[list[tuple[int, int]]] = [[] for _ in range(b)]
        active, drawn = np.arange(b), 0
        for k, qhat in zip(grid, cal.qhats.tolist(), strict=True):
            need = k - drawn
            rnd = self._roll(
                step, ids[active], np.full(active.size, need, np.int64), rollout, seconds
            )
            seconds = 0.0
            rounds.append(rnd)
            rewards[active, drawn:k] = rnd.rewards.reshape(active.size, need)
            for j, g in enumerate(active.tolist()):
                parts[g].append((len(rounds) - 1, j))
            drawn = k
            if k == n:
                break
            rng = np.random.default_rng([self.seed, step, 1, k])
            done = np.array([self._stops(rewards[g, :k], k, qhat, rng) for g in active.tolist()])
            used[active[done]] = k
            active = active[~done]
            if active.size == 0:
                break
        self.inner.flush()  # the step's sampling is over: fold it so metrics describe it
        picks = [p[0] for p in parts]
        tails = {p[0]: tuple(p[1:]) for p in parts if len(p) > 1}
        batch = fresh_batch(tuple(rounds), picks, step, 0, tails)
        # The step is done: only now does the wrapper change.
        self.calibration = cal
        early = int((used < n).sum())
        t = self._totals
        t["calibrations"] += int(cal_rollouts > 0)
        t["calibration_rollouts"] += cal_rollouts
        t["train_rollouts"] += int(used.sum())
        t["stopped_early"] += early
        self._last = {
            "mean_k": float(used.mean()),
            "rollout_savings": 1.0 - float(used.sum()) / (b * n),
            "calibration_rollouts": float(cal_rollouts),
            "stopped_early": float(early),
        }
        return StepSamples(step, tuple(rounds), batch)

    def _due(self, step: int) -> bool:
        """Whether this step calibrates: never calibrated, or recalibrate_every steps since."""
        every, last = self.config.recalibrate_every, self.calibration.step
        return last < 0 or (every > 0 and step - last >= every)

    def _answers(self, rewards: F64) -> F64:
        """Rewards as answers: a pass (>= solved_at) is the gold answer, +inf."""
        return np.where(rewards >= self.config.solved_at, np.inf, rewards)

    def _score(self, rewards: F64, k: int, rng: np.random.Generator) -> float:
        """The nonconformity score of a calibration prompt after its first k rewards."""
        cfg = self.config
        if cfg.score == "aps":
            keys, u = rng.random(k), float(rng.random())
            return aps_score(np.inf, self._answers(rewards), k, keys, u)
        passes = rewards >= cfg.solved_at
        return (
            first_success_score(passes, k)
            if cfg.score == "first_success"
            else (pass_rate_score(passes, k))
        )

    def _stops(self, rewards: F64, k: int, qhat: float, rng: np.random.Generator) -> bool:
        """Whether a prompt with these first k rewards stops at budget k."""
        if self.config.score == "aps":
            return resolves_singleton(self._answers(rewards), k, qhat, rng.random(k))
        if not np.any(rewards[:k] >= self.config.solved_at):
            return False  # the set is {pass} only once a pass is seen
        return self._score(rewards, k, rng) <= qhat

    def _fit(self, step: int, rewards: F64, grid: tuple[int, ...]) -> _Calibration:
        """The thresholds of this step's calibration rollouts (m prompts x group_size)."""
        cfg, m = self.config, rewards.shape[0]
        rng = np.random.default_rng([self.seed, step, 0])
        scores = np.array([[self._score(rewards[i], k, rng) for k in grid] for i in range(m)])
        scores = scores.reshape(m, len(grid))
        for_delta = for_q = np.arange(m)
        if cfg.delta is None and cfg.split_delta:
            for_delta, for_q = for_delta[: m // 2], for_q[m // 2 :]
        if cfg.delta is None:
            delta, solve = auto_delta(scores[for_delta, -1], cfg.delta_margin)
        else:
            delta, solve = cfg.delta, auto_delta(scores[:, -1], 0.0)[1]
        qhats = np.array([conformal_quantile(scores[for_q, j], delta) for j in range(len(grid))])
        return _Calibration(np.array(grid, dtype=np.int64), qhats, delta, solve, step)

    def _roll(self, step: int, ids: I64, counts: I64, rollout: RolloutFn, seconds: float) -> Round:
        """counts[i] rollouts of each of `ids`, every reward sent to the selector once."""
        rewards, payloads = rolled_counts(rollout, ids, counts)
        if not np.all(np.isfinite(rewards)):
            raise ValueError("rollout returned NaN or inf rewards: C-GRPO reads every reward")
        start = time.perf_counter()
        self.inner.update(Feedback(task_ids=np.repeat(ids, counts), rewards=rewards, step=step))
        return Round(ids, rewards, seconds + time.perf_counter() - start, counts, payloads)

    # ------------------------------------------------------------------ reporting
    def metrics(self) -> dict[str, float]:
        """The selector's metrics and this step's under `cgrpo/` (the package's names, and
        totals): mean_k, rollout_savings, delta, qhat_<k>, calibration_solve_rate, ..."""
        cal = self.calibration
        own = dict(self._last)
        own.update({f"{k}_total": float(v) for k, v in self._totals.items()})
        own["delta"] = cal.delta
        own["calibration_solve_rate"] = cal.solve_rate
        pairs = zip(cal.budgets.tolist(), cal.qhats.tolist(), strict=True)
        own.update({f"qhat_{k}": q for k, q in pairs})
        return self._metrics_with("cgrpo", own)

    # ------------------------------------------------------------------ state
    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        """Everything needed to continue exactly: the thresholds in force and when they were
        fitted (the calibration prompts and every draw are re-derived from the seed)."""
        cal = self.calibration
        calibration = {
            "budgets": cal.budgets.copy(),
            "qhats": cal.qhats.copy(),
            "delta": cal.delta,
            "solve_rate": cal.solve_rate,
            "step": cal.step,
        }
        return self._state({"seed": self.seed, "calibration": calibration}, with_inner)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict (its nested selector state too, when it holds one); on any
        error nothing changes."""
        who = _KIND
        state = self._checked_state(state, _STATE_KEYS)
        raw = read_keys(state, "calibration", who, _CAL_KEYS)
        budgets = read_array(raw, "budgets", who, np.int64, lo=2, hi=MAX_GROUP_SIZE)
        qhats = read_array(raw, "qhats", who, np.float64, lo=0.0, hi=1.0, finite=True)
        step = read_int(raw, "step", who, lo=-1)
        fitted = step >= 0
        if qhats.shape != budgets.shape or fitted != bool(budgets.size):
            raise ValueError(f"{who} state: the calibration's budgets and thresholds disagree")
        if budgets.size and np.any(np.diff(budgets) <= 0):
            raise ValueError(f"{who} state: the calibration's budgets are not ascending")
        delta = read_float(raw, "delta", who, lo=0.0, hi=1.0, nan=not fitted)
        solve = read_float(raw, "solve_rate", who, lo=0.0, hi=1.0)
        totals, last = self._read_counts(state)
        seed = read_int(state, "seed", who, hi=MAX_SEED - 1)
        self._load_inner(state)  # atomic; the last step that can fail
        self.calibration = _Calibration(budgets, qhats, delta, solve, step)
        self._totals, self._last, self.seed = totals, last, seed
