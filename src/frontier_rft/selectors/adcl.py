"""ADCL, adaptive difficulty curriculum learning, as the METIS paper runs it (metis.txt A.5).

Tasks are sorted easy-to-hard by their offline difficulty and cut into `num_chunks`
sequential chunks. Training walks chunk by chunk, one pass each; just before a chunk is
first drawn from, its difficulty is re-estimated under the current policy (an injected
estimator, `rollouts_per_estimate` rollouts per prompt) and the chunk alone is re-sorted
easy-to-hard, so the curriculum follows the policy without re-sorting the whole set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import SelectorConfig, check, check_choice
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Rollout, Selector
from frontier_rft.core.state_check import (
    read_float,
    read_int,
    read_permutation,
)
from frontier_rft.selectors.offline import (
    DIFFICULTY,
    TIE_BREAKS,
    ReadsObservedDifficulty,
    difficulty_order,
    observed_difficulty,
)

__all__ = ["ADCLConfig", "ADCLSelector", "PassRateEstimator"]

PassRateEstimator = Callable[[NDArray[np.int64]], Any]
"""estimator(task_ids) -> pass rate in [0, 1] per task under the current policy."""

WITHIN_CHUNK = ("sorted", "uniform")


@dataclass(frozen=True)
class ADCLConfig(SelectorConfig):
    """ADCL hyperparameters; defaults are METIS Table 5 (8 chunks, 4 rollouts per prompt)."""

    num_chunks: int = 8
    """Number of sequential difficulty chunks the sorted pool is cut into."""
    rollouts_per_estimate: int = 4
    """Rollouts per prompt the estimator spends re-estimating a chunk (cost metric)."""
    within_chunk: str = "sorted"
    """'sorted': walk each chunk easy-to-hard (paper); 'uniform': one shuffled pass."""
    tie_break: str = "random"
    """Order of tasks of equal offline difficulty: 'random' (seeded) or 'index'."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check(
            self.num_chunks >= 1,
            f"num_chunks must be a positive int, got {self.num_chunks!r} (paper: 8)",
        )
        check(
            self.rollouts_per_estimate >= 1,
            f"rollouts_per_estimate must be a positive int, got {self.rollouts_per_estimate!r}",
        )
        check_choice("within_chunk", self.within_chunk, WITHIN_CHUNK)
        check_choice("tie_break", self.tie_break, TIE_BREAKS)


class ADCLSelector(ReadsObservedDifficulty, Selector):
    """Chunked easy-to-hard curriculum with between-chunk difficulty re-estimation.

    Collaborator `estimator(task_ids) -> pass_rates` (optional): called with the ids of
    the next chunk, in its current order, right before that chunk is first drawn from;
    the chunk is then stably re-sorted by descending pass rate (difficulty = 1 - pass
    rate; ties keep the offline order). It is not serialisable: pass the same estimator
    again to `load_selector(path, estimator=...)`. Without one, every chunk keeps its
    offline order. For continuous rewards (METIS's extension ranks by reward variance,
    low variance = easy) return e.g. `1 - 4 * variance` from the estimator.

    The first chunk of the first epoch is already ordered by the offline difficulty of
    the base policy, so it is not re-estimated. After the last chunk the walk restarts at
    the first chunk (a new epoch; chunks keep their membership and are re-estimated
    again when reached). Training feedback is ignored: ADCL as described re-estimates
    with extra rollouts only. Without `TaskPool.difficulty` and without an estimator,
    difficulty is instead estimated from training feedback (`_select_observed`). In
    'uniform' mode each chunk is shuffled instead and the estimator is never called (the
    order within a chunk would be discarded anyway).
    """

    name = "adcl"
    needs = Needs(
        "a difficulty per task, re-estimated between chunks",
        "difficulty = first observed pass rate, predicted from prompt-text features until seen",
        "difficulty=(N,); estimator= a pass-rate estimator (4 rollouts per prompt in METIS)",
        ("evidence/difficulty/observed", "evidence/features/text"),
    )
    requires = DIFFICULTY
    cost = Cost("sublinear", "O(B)", "sorted chunks, re-estimated between chunks")
    color = "#bcbd22"  # olive: apart from offline's brown, the other difficulty curriculum
    linestyle = "-."  # next to offline, and can trace the same curve
    config_class = ADCLConfig
    config: ADCLConfig
    collaborators = ("estimator",)

    @classmethod
    def default_collaborators(cls, rollout: Rollout | None = None) -> dict[str, Any]:
        """With `rollout`, an estimator from a few real rollouts of the current policy (as ADCL
        re-estimates the next chunk); without, none (the offline order is kept)."""
        if rollout is None:
            return {}
        per = ADCLConfig.rollouts_per_estimate  # 4 rollouts per prompt (METIS Table 5)

        def estimate(task_ids: NDArray[np.int64]) -> NDArray[np.float64]:
            rewards = rollout(np.asarray(task_ids, dtype=np.int64), per)
            rates: NDArray[np.float64] = rewards.reshape(-1, per).mean(axis=1)
            return rates

        return {"estimator": estimate}

    def __init__(
        self,
        pool: TaskPool,
        config: ADCLConfig | None = None,
        *,
        seed: int = 0,
        estimator: PassRateEstimator | None = None,
    ):
        super().__init__(pool, config, seed=seed)
        if estimator is not None and not callable(estimator):
            raise ValueError("adcl estimator must be callable: estimator(task_ids) -> pass_rates")
        self.estimator = estimator
        self._estimated = observed_difficulty(self)
        self._difficulty: NDArray[np.float64] = (
            self._estimated.difficulty(np.arange(self.num_tasks))
            if self._estimated is not None
            else np.asarray(pool.difficulty, dtype=np.float64)
        )
        self._order = difficulty_order(
            self._difficulty, self.rng, descending=False, tie_break=self.config.tie_break
        )
        chunks = min(self.config.num_chunks, self.num_tasks)
        self._bounds = (np.arange(chunks + 1, dtype=np.int64) * self.num_tasks) // chunks
        self._pos = 0
        self._prepared = -1  # last chunk whose order is final in this epoch
        self.epoch = 0
        self._estimate_calls = 0
        self._estimate_rollouts = 0
        self._last_pass_rate = float("nan")
        self._last_difficulty = float("nan")

    @property
    def num_chunks(self) -> int:
        return int(self._bounds.shape[0] - 1)

    def _chunk_of(self, pos: int) -> int:
        return int(np.searchsorted(self._bounds, pos, side="right") - 1)

    # ------------------------------------------------------------------ select
    def _select(self, n: int) -> NDArray[np.int64]:
        if self._estimated is not None and self.estimator is None:
            return self._select_observed(n)
        # Plan the whole batch first: the estimator (user code) may raise, and nothing
        # may change before it has answered for every chunk this batch enters.
        pos, epoch, prepared = self._pos, self.epoch, self._prepared
        new_orders: dict[int, NDArray[np.int64]] = {}
        taken: list[NDArray[np.int64]] = []
        calls = rollouts = 0
        rates_seen: list[NDArray[np.float64]] = []
        need = n
        while need:
            c = self._chunk_of(pos)
            lo, hi = int(self._bounds[c]), int(self._bounds[c + 1])
            if c > prepared:
                current = new_orders.get(c, self._order[lo:hi])
                order, rates = self._prepare(c, epoch, current, taken)
                new_orders[c] = order
                if rates is not None:
                    calls, rollouts = calls + 1, rollouts + rates.shape[0]
                    rates_seen.append(rates)
                prepared = c
            k = min(need, hi - pos)
            segment = new_orders.get(c, self._order[lo:hi])
            taken.append(segment[pos - lo : pos - lo + k])
            pos, need = pos + k, need - k
            if pos == self.num_tasks:
                pos, epoch, prepared = 0, epoch + 1, -1
        for c, order in new_orders.items():
            self._order[self._bounds[c] : self._bounds[c + 1]] = order
        self._pos, self.epoch, self._prepared = pos, epoch, prepared
        if calls:
            self._estimate_calls += calls
            self._estimate_rollouts += rollouts * self.config.rollouts_per_estimate
            self._last_pass_rate = float(np.concatenate(rates_seen).mean())
        ids = np.concatenate(taken)
        self._last_difficulty = float(self._difficulty[ids].mean())
        return ids

    def _select_observed(self, n: int) -> NDArray[np.int64]:
        """Without offline difficulty or estimator: each chunk is the easiest remaining tasks.

        When the walk enters a chunk, the tasks not yet walked this epoch are re-sorted by
        the difficulty estimated from training feedback, so the chunk takes the easiest
        of them in easy-to-hard order (the re-estimation step, with training rollouts
        instead of extra ones). No user code runs here, so the order is updated in place.
        """
        assert self._estimated is not None
        taken: list[NDArray[np.int64]] = []
        need = n
        while need:
            c = self._chunk_of(self._pos)
            if c > self._prepared:
                rest = self._order[self._pos :]
                self._difficulty[rest] = self._estimated.difficulty(rest)
                rest = rest[np.argsort(self._difficulty[rest], kind="stable")]
                if taken:  # an epoch wrap inside this batch: its ids go last
                    again = np.isin(rest, np.concatenate(taken))
                    rest = np.concatenate([rest[~again], rest[again]])
                self._order[self._pos :] = rest
                self._prepared = c
            k = min(need, int(self._bounds[c + 1]) - self._pos)
            taken.append(self._order[self._pos : self._pos + k].copy())
            self._pos, need = self._pos + k, need - k
            if self._pos == self.num_tasks:
                self._pos, self.epoch, self._prepared = 0, self.epoch + 1, -1
        ids = np.concatenate(taken)
        self._last_difficulty = float(self._difficulty[ids].mean())
        return ids

    def _prepare(
        self,
        chunk: int,
        epoch: int,
        current: NDArray[np.int64],
        taken: list[NDArray[np.int64]],
    ) -> tuple[NDArray[np.int64], NDArray[np.float64] | None]:
        """The chunk's order for this pass, and the estimated pass rates if estimated."""
        rates: NDArray[np.float64] | None = None
        if self.config.within_chunk == "uniform":
            order = current[self.rng.permutation(current.shape[0])]
        elif self.estimator is not None and (epoch, chunk) != (0, 0):
            rates = self._estimate(current)
            order = current[np.argsort(-rates, kind="stable")]
        else:
            order = current.copy()
        if taken:  # only at an epoch wrap: ids this batch already took go last
            again = np.isin(order, np.concatenate(taken))
            if again.any():
                order = np.concatenate([order[~again], order[again]])
        return order, rates

    def _estimate(self, ids: NDArray[np.int64]) -> NDArray[np.float64]:
        assert self.estimator is not None
        raw = self.estimator(ids.copy())
        try:
            rates = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"adcl estimator must return numbers, got {type(raw)}") from exc
        if rates.shape != ids.shape:
            raise ValueError(
                f"adcl estimator returned shape {rates.shape} for {ids.shape[0]} task ids; "
                "return one pass rate per task id"
            )
        if not np.all(np.isfinite(rates)) or np.any((rates < 0) | (rates > 1)):
            raise ValueError("adcl estimator must return finite pass rates in [0, 1]")
        return rates

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            "order": self._order,
            "pos": self._pos,
            "prepared": self._prepared,
            "epoch": self.epoch,
            "estimate_calls": self._estimate_calls,
            "estimate_rollouts": self._estimate_rollouts,
            "last_pass_rate": self._last_pass_rate,
            "last_difficulty": self._last_difficulty,
            **self._difficulty_state(),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n, who = self.num_tasks, self.name
        order = read_permutation(state, "order", who, n)
        bounds = self._bounds
        if self._estimated is None:  # given difficulty: chunks never change membership
            chunk_of_task = np.empty(self.num_tasks, dtype=np.int64)
            chunk_of_task[self._order] = np.repeat(np.arange(self.num_chunks), np.diff(bounds))
            if np.any(chunk_of_task[order] != chunk_of_task[self._order]):
                raise ValueError("adcl state: tasks were moved between difficulty chunks")
        pos = read_int(state, "pos", who, hi=n - 1)
        prepared = read_int(state, "prepared", who, lo=-1, hi=self.num_chunks - 1)
        epoch = read_int(state, "epoch", who)
        calls = read_int(state, "estimate_calls", who)
        rollouts = read_int(state, "estimate_rollouts", who)
        last_pass_rate = read_float(state, "last_pass_rate", who, 0.0, 1.0)
        last_difficulty = read_float(state, "last_difficulty", who)
        self._load_difficulty_state(state, who, n)
        self._last_pass_rate, self._last_difficulty = last_pass_rate, last_difficulty
        self._order, self._pos, self._prepared = order, pos, prepared
        self.epoch, self._estimate_calls, self._estimate_rollouts = epoch, calls, rollouts

    def _metrics(self) -> dict[str, float]:
        return {
            "epoch": float(self.epoch),
            "chunk": float(self._chunk_of(self._pos)),
            "progress": self._pos / self.num_tasks,
            "estimate_calls": float(self._estimate_calls),
            "estimate_rollouts": float(self._estimate_rollouts),
            "estimate_pass_rate": self._last_pass_rate,
            "batch_difficulty": self._last_difficulty,
        }
