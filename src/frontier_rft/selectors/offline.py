"""Offline difficulty curricula: easy-to-hard (or hard-to-easy) by TaskPool.difficulty.

The non-adaptive baseline of the SEC paper ("Difficulty-Ordered Curriculum", and the
"reverse curriculum" of its Figure 1): the order is fixed before training and feedback
is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import SelectorConfig, check, check_choice
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import (
    check_keys,
    read_array,
    read_float,
    read_int,
    read_permutation,
)
from frontier_rft.features.derive import announce, task_features
from frontier_rft.selectors._difficulty import ObservedDifficulty

__all__ = ["OfflineConfig", "OfflineSelector", "ReadsObservedDifficulty", "difficulty_order"]

MODES = ("sequential", "windowed", "reverse")
TIE_BREAKS = ("random", "index")
_EMPTY = np.zeros(0)


DIFFICULTY = Requires(
    ("difficulty", "features", "prompts"),
    "tasks are ordered by difficulty, else by pass rates observed in training and predicted "
    "from task features",
)
"""What the difficulty curricula (offline, adcl) cannot run without."""


def observed_difficulty(selector: Selector) -> ObservedDifficulty | None:
    """None when the pool gives difficulty; else a difficulty estimated during training.

    Reported as `evidence/difficulty/observed` (plus the features' source) and announced,
    since the curriculum then starts in random order and sharpens as pass rates come in.
    """
    pool, name = selector.pool, selector.name
    if pool.difficulty is not None:
        selector.evidence["difficulty"] = "given"
        return None
    if pool.features is None and pool.prompts is None:
        pool.require("difficulty", name, "tasks are ordered by difficulty; or pass prompts")
    features, selector.evidence["features"] = task_features(pool, name)
    selector.evidence["difficulty"] = "observed"
    announce(
        f"{name}: no TaskPool.difficulty, so difficulty is the first pass rate observed per "
        "task, predicted from features for tasks not yet rolled out (pass difficulty=... "
        "with offline pass rates or levels for a true offline curriculum)"
    )
    return ObservedDifficulty(features)


class ReadsObservedDifficulty:
    """Selector hooks of an easy-to-hard curriculum whose difficulty may be estimated during
    training (`observed_difficulty`): features are read, refreshed and fed first pass rates
    only while `_estimated` is set; given difficulty reads none of them."""

    _estimated: ObservedDifficulty | None
    _difficulty: NDArray[np.float64]
    """The difficulty the order follows (estimated, or given)."""

    @classmethod
    def reads_features(cls, config: SelectorConfig, given: frozenset[str]) -> bool:
        """Without a difficulty it is estimated from pass rates, predicted from features."""
        return "difficulty" not in given

    @classmethod
    def reward_bounds_for(
        cls, config: SelectorConfig, given: frozenset[str]
    ) -> tuple[float, float] | None:
        """Given a difficulty, rewards are never read: any scale (|reward| <= 1e100). With the
        difficulty observed in training they are pass rates, so they must lie in [0, 1]."""
        return None if "difficulty" in given else (0.0, 1.0)

    @property
    def _features(self) -> NDArray[np.float64] | None:
        return None if self._estimated is None else self._estimated.features

    def _refresh_features(self, features: NDArray[np.float64]) -> bool:
        if self._estimated is None:
            return False  # given difficulty: features are not read
        self._estimated.refresh_features(features)
        return True

    def _observe(self, batch: GroupBatch) -> None:
        # Given difficulty: not adaptive. Estimated: only first pass rates are recorded.
        if self._estimated is not None:
            self._estimated.observe(batch.task_ids, batch.means)

    def _difficulty_state(self) -> dict[str, Any]:
        """The estimate's part of the state (empty when difficulty is given)."""
        return {
            "difficulty": self._difficulty if self._estimated is not None else _EMPTY,
            "estimated": {} if self._estimated is None else self._estimated.state_dict(),
        }

    def _load_difficulty_state(self, state: dict[str, Any], who: str, n: int) -> None:
        """Inverse of `_difficulty_state`; call it after every other read of a state, since
        it changes the estimate."""
        if self._estimated is not None:
            difficulty = read_array(state, "difficulty", who, np.float64, shape=(n,), finite=True)
            self._estimated.load_state_dict(state["estimated"], who)
            self._difficulty = difficulty
        else:  # saved empty: nothing in them may be ignored
            check_keys(state["estimated"], f"{who} state: estimated", ())
            read_array(state, "difficulty", who, np.float64, shape=(0,))


def difficulty_order(
    difficulty: NDArray[np.float64], rng: np.random.Generator, *, descending: bool, tie_break: str
) -> NDArray[np.int64]:
    """Task ids sorted by difficulty; equal difficulties in random or index order.

    Random tie-breaking matters for level-valued difficulty (e.g. MATH levels 1-5): the
    authors' released SEC code also shuffles within a level before sorting.
    """
    key = -difficulty if descending else difficulty
    if tie_break == "random":
        noise: NDArray[np.float64] = rng.random(size=(key.shape[0],))
        order = np.lexsort((noise, key))
    else:
        order = np.argsort(key, kind="stable")
    return np.asarray(order, dtype=np.int64)


@dataclass(frozen=True)
class OfflineConfig(SelectorConfig):
    """Offline curriculum settings (no paper defaults exist beyond 'easy to hard')."""

    mode: str = "sequential"
    """'sequential' (easy-to-hard walk), 'windowed' (uniform in a sliding window), 'reverse'."""
    window_fraction: float = 0.1
    """Windowed mode: the window covers this fraction of the pool (at least one batch)."""
    window_stride: int = 0
    """Windowed mode: tasks the window advances per select; 0 means the batch size."""
    tie_break: str = "random"
    """Order of tasks of equal difficulty: 'random' (seeded) or 'index'."""
    resort_fraction: float = 0.01
    """Without TaskPool.difficulty: re-sort once new first observations reach this fraction
    of the pool, or 10% of those at the last re-sort if fewer (0: after every new one)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("mode", self.mode, MODES)
        check_choice("tie_break", self.tie_break, TIE_BREAKS)
        check(
            0.0 < self.window_fraction <= 1.0,
            f"window_fraction must lie in (0, 1], got {self.window_fraction!r}",
        )
        check(
            0.0 <= self.resort_fraction <= 1.0,
            f"resort_fraction must lie in [0, 1], got {self.resort_fraction!r}",
        )
        check(
            self.window_stride >= 0,
            f"window_stride must be a non-negative int (0 = batch size), "
            f"got {self.window_stride!r}",
        )


class OfflineSelector(ReadsObservedDifficulty, Selector):
    """Difficulty-ordered curriculum; deterministic given the seed.

    With `TaskPool.difficulty` the order is fixed and feedback is ignored. Without it, the
    difficulty is estimated during training (`observed_difficulty`): before each select
    that follows new first observations, the tasks not yet walked this epoch are re-sorted
    by the current estimate.

    - sequential: walk the easy-to-hard order in consecutive batches, wrapping around
      (a new epoch repeats the same order);
    - reverse: the same walk over the hard-to-easy order;
    - windowed: a window of the next W = ceil(window_fraction * N) tasks in easy-to-hard
      order (at least the batch size); each batch is drawn uniformly without replacement
      from the window, then the window slides forward by `window_stride` tasks. The last
      window is flush with the hardest task; after it the walk restarts from the easiest.
    """

    name = "offline"
    needs = Needs(
        "a difficulty per task (easy to hard)",
        "difficulty = first observed pass rate, predicted from prompt-text features until seen",
        "difficulty=(N,) e.g. 1 - offline pass rate, or a level column",
        ("evidence/difficulty/observed", "evidence/features/text"),
    )
    requires = DIFFICULTY
    cost = Cost("sublinear", "O(B)", "walks a precomputed difficulty order")
    color = "#8c564b"  # brown: the difficulty curricula are brown (offline) and olive (adcl)
    config_class = OfflineConfig
    config: OfflineConfig

    def __init__(self, pool: TaskPool, config: OfflineConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        self._estimated = observed_difficulty(self)
        difficulty = (
            self._estimated.difficulty(np.arange(self.num_tasks))
            if self._estimated is not None
            else np.asarray(pool.difficulty, dtype=np.float64)
        )
        self._difficulty: NDArray[np.float64] = difficulty
        self._order = difficulty_order(
            self._difficulty,
            self.rng,
            descending=self.config.mode == "reverse",
            tie_break=self.config.tie_break,
        )
        self._cursor = 0  # next position (sequential/reverse) or window start (windowed)
        self.epoch = 0
        self._last_difficulty = float("nan")
        self._window = max(1, int(np.ceil(self.config.window_fraction * self.num_tasks)))

    def _select(self, n: int) -> NDArray[np.int64]:
        est = self._estimated
        # at an epoch's start whatever the schedule: the whole order is ahead of the walk
        most = self.config.resort_fraction * self.num_tasks
        if est is not None and est.changed and (self._cursor == 0 or est.due(most)):
            self._resort_rest()
        if self.config.mode == "windowed":
            pos = self._windowed_positions(n)
        else:
            pos = (self._cursor + np.arange(n)) % self.num_tasks
            self.epoch += (self._cursor + n) // self.num_tasks
            self._cursor = (self._cursor + n) % self.num_tasks
        ids = self._order[pos]
        self._last_difficulty = float(self._difficulty[ids].mean())
        return ids

    def _windowed_positions(self, n: int) -> NDArray[np.int64]:
        size = min(self.num_tasks, max(self._window, n))
        last_start = self.num_tasks - size
        start = min(self._cursor, last_start)
        pos = start + self.rng.choice(size, size=n, replace=False).astype(np.int64)
        if start >= last_start:
            self._cursor = 0
            self.epoch += 1
        else:
            stride = self.config.window_stride or n
            self._cursor = min(start + stride, self.num_tasks - 1)
        return pos

    def _resort_rest(self) -> None:
        """Order the tasks not yet walked this epoch by the current difficulty estimate."""
        assert self._estimated is not None
        rest = self._order[self._cursor :]
        self._difficulty[rest] = self._estimated.difficulty(rest)
        key = self._difficulty[rest]
        order = np.argsort(-key if self.config.mode == "reverse" else key, kind="stable")
        self._order[self._cursor :] = rest[order]
        self._estimated.mark_sorted()

    def _state_dict(self) -> dict[str, Any]:
        return {
            "order": self._order,
            "cursor": self._cursor,
            "epoch": self.epoch,
            "last_difficulty": self._last_difficulty,
            **self._difficulty_state(),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n, who = self.num_tasks, self.name
        order = read_permutation(state, "order", who, n)
        cursor = read_int(state, "cursor", who, hi=n - 1)
        epoch = read_int(state, "epoch", who)
        last_difficulty = read_float(state, "last_difficulty", who)
        self._load_difficulty_state(state, who, n)
        self._order, self._cursor, self.epoch = order, cursor, epoch
        self._last_difficulty = last_difficulty

    def _metrics(self) -> dict[str, float]:
        return {
            "epoch": float(self.epoch),
            "progress": self._cursor / self.num_tasks,
            "batch_difficulty": self._last_difficulty,
        }
