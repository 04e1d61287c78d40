"""Problem-level prioritized replay (Fatemi 2026, arXiv:2601.02648).

Each problem keeps an EMA success rate p and the priority `w = p(1-p) (+ eps if p >= 0.5)`.
Each step the C highest-priority problems are taken out of a max-heap; they are *in
flight* until their rollouts come back, then re-enter with their new priority. Problems
whose group is all-correct / all-wrong leave the heap for a solved / unsolved pool
(min-heaps by last-test step) and are retested a few at a time every R steps. A share of
batches is drawn uniformly from the heap (exploration), or every batch is sampled in
proportion to w (sum-tree mode). With coverage="epoch" none of that machinery is used:
each step takes the C highest priorities among the problems this epoch has not handed
out yet (one walk over a fresh permutation per epoch), so each problem is selected once
per epoch; priorities still follow the feedback.

Lifecycle of a problem (`_where`): HEAP -> FLIGHT -> HEAP | SOLVED | UNSOLVED, and a pooled
problem -> FLIGHT when retested. Every problem is in exactly one place, so nothing leaks:
results that never arrive send the problem home after `inflight_timeout` select calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import SelectorConfig, check, check_choice, check_least
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import (
    check_keys,
    read_array,
    read_counts,
    read_float,
    read_int,
)
from frontier_rft.structures import IndexedMaxHeap, SumTree, TimestampHeap, TournamentTree
from frontier_rft.structures.epoch_walk import COVERAGE_MODES, Coverage, EpochWalk

__all__ = ["PrioritizedReplayConfig", "PrioritizedReplaySelector", "priority"]

HEAP, FLIGHT, SOLVED, UNSOLVED = 0, 1, 2, 3
AUTO_HEAP_MAX_TASKS = 65_536
"""structure='auto' uses the binary heap up to this many tasks, the tournament tree above."""
_SPARSE_HEAP = 1 / 16
"""Below this heap share, uniform exploration lists members instead of rejection sampling."""


@dataclass(frozen=True)
class PrioritizedReplayConfig(SelectorConfig):
    """Hyperparameters of prioritized replay; defaults are the paper's section 5 values."""

    ema_alpha: float = 0.8
    """Weight a of the newest group success rate: p <- a*p_group + (1-a)*p (1 = no smoothing)."""
    success_bias: float = 1e-4
    """eps added to the priority when p >= 0.5 (breaks k vs N-k ties toward the easier side)."""
    init_priority: float = 0.2
    """Priority of never-observed problems; float('inf') forces one visit each first."""
    sampling: str = "top"
    """'top': take the C highest priorities (max-heap); 'proportional': sample ~ w (sum-tree)."""
    structure: str = "auto"
    """Index for sampling='top': 'heap', 'tournament' (vectorised), or 'auto' (by pool size)."""
    use_pools: bool = True
    """Move all-correct / all-wrong problems out of the heap into solved / unsolved pools."""
    pool_tolerance: float = 0.0
    """Band: p >= 1 - tol enters the solved pool, p <= tol the unsolved pool."""
    pool_statistic: str = "group"
    """p judged for the pools: 'group' (this step's success rate) or 'ema'."""
    retest_every: int = 10
    """Every R-th select call retests pooled problems as part of the batch (0 = never)."""
    retest_solved: int = 1
    """Problems retested from the solved pool per retest step, oldest-tested first."""
    retest_unsolved: int = 3
    """Problems retested from the unsolved pool per retest step, oldest-tested first."""
    exploration_fraction: float = 0.125
    """Share of batches drawn uniformly from the heap instead of by priority."""
    inflight_timeout: int = 16
    """Select calls after which a problem whose results never arrived returns home."""
    shuffle_unseen: bool = True
    """Visit never-observed problems of equal priority in a seeded random order (else by id)."""
    coverage: Coverage = "pool"
    """'pool': the heap, pools and retests (the paper); 'epoch': each problem once per epoch."""

    infinite_ok: ClassVar[frozenset[str]] = frozenset({"init_priority"})

    def __post_init__(self) -> None:
        super().__post_init__()
        check(
            0.0 < self.ema_alpha <= 1.0,
            f"ema_alpha must be in (0, 1] (1 = no smoothing), got {self.ema_alpha!r}",
        )
        check(
            0.0 <= self.success_bias < 0.25,
            f"success_bias must be in [0, 0.25), got {self.success_bias!r}",
        )
        check(
            self.init_priority >= 0.0,
            f"init_priority must be >= 0 (float('inf') allowed), got {self.init_priority!r}",
        )
        check_choice("sampling", self.sampling, ("top", "proportional"))
        check_choice("structure", self.structure, ("auto", "heap", "tournament"))
        check_choice("pool_statistic", self.pool_statistic, ("group", "ema"))
        check_choice("coverage", self.coverage, COVERAGE_MODES)
        check(
            self.sampling == "top" or np.isfinite(self.init_priority),
            "sampling='proportional' needs a finite init_priority (use e.g. 0.2)",
        )
        check(
            0.0 <= self.pool_tolerance < 0.5,
            f"pool_tolerance must be in [0, 0.5), got {self.pool_tolerance!r}",
        )
        check_least(self, ("retest_every", "retest_solved", "retest_unsolved"), 0)
        check(
            0.0 <= self.exploration_fraction <= 1.0,
            f"exploration_fraction must be in [0, 1], got {self.exploration_fraction!r}",
        )
        check(
            self.inflight_timeout >= 1,
            f"inflight_timeout must be a positive int (in select calls), "
            f"got {self.inflight_timeout!r}",
        )


def priority(
    p: NDArray[np.float64], success_bias: float, init_priority: float
) -> NDArray[np.float64]:
    """w = p(1-p) + eps*[p >= 0.5]; never-observed problems (p = NaN) get init_priority."""
    w = p * (1.0 - p) + np.where(p >= 0.5, success_bias, 0.0)
    return np.where(np.isnan(p), init_priority, w)


class _TopIndex(Protocol):
    def __len__(self) -> int: ...
    def fill(self, priority: float, ties: Any) -> None: ...
    def push_many(self, ids: Any, priorities: Any, ties: Any) -> None: ...
    def remove_many(self, ids: Any) -> None: ...
    def contains_many(self, ids: Any) -> NDArray[np.bool_]: ...
    def pop_many(self, k: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class _ProportionalIndex:
    """SumTree with a member count: the heap of sampling='proportional'."""

    def __init__(self, universe: int):
        self.tree = SumTree(universe)
        self.size = 0
        self.positive = 0  # members with weight > 0 (the ones sampling can reach)

    def __len__(self) -> int:
        return self.size

    def fill(self, priority: float, ties: Any) -> None:
        self.tree.fill(priority)
        self.size = self.tree.universe
        self.positive = self.size if priority > 0 else 0

    def push_many(self, ids: Any, priorities: Any, ties: Any) -> None:
        self.tree.update(ids, priorities)
        self.size += len(ids)
        self.positive += int(np.count_nonzero(np.asarray(priorities) > 0))

    def remove_many(self, ids: Any) -> None:
        self.positive -= int(np.count_nonzero(self.tree.values(ids) > 0))
        self.tree.update(ids, np.zeros(len(ids)))
        self.size -= len(ids)

    def take(self, k: int, rng: np.random.Generator) -> NDArray[np.int64]:
        ids = self.tree.take(k, rng)
        self.size -= k
        self.positive -= k
        return ids

    def state_dict(self) -> dict[str, Any]:
        return {"tree": self.tree.state_dict(), "size": self.size, "positive": self.positive}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = check_keys(state, "prioritized state: index", ("tree", "size", "positive"))
        self.tree.load_state_dict(state["tree"])
        self.size = int(state["size"])
        self.positive = int(state["positive"])
        if self.positive != int(np.count_nonzero(self.tree.values() > 0)):
            raise ValueError("prioritized state: sum-tree member counts are inconsistent")


class PrioritizedReplaySelector(Selector):
    """Max-heap prioritized replay of problems with solved/unsolved pools and retests.

    Select order within a batch: retests (on retest steps), then the heap (top priority,
    or uniform on exploration batches, or proportional), then -- only when the heap has
    too few problems -- the oldest-tested unsolved, then solved problems, then the
    problems longest in flight (selected again; they stay in flight).
    """

    name = "prioritized"
    needs = Needs.rewards_only("its own running success rates")
    cost = Cost("absolute", "O(B log N)", "heap extract/insert of B problems")
    color = "#ff7f0e"  # orange
    test_configs = (
        {"sampling": "proportional"},
        {"structure": "tournament"},
        {"coverage": "epoch"},
    )
    config_class = PrioritizedReplayConfig

    def __init__(
        self, pool: TaskPool, config: PrioritizedReplayConfig | None = None, *, seed: int = 0
    ):
        super().__init__(pool, config, seed=seed)
        cfg: PrioritizedReplayConfig = self.config  # type: ignore[assignment]
        self.cfg = cfg
        n = self.num_tasks
        if cfg.sampling == "proportional":
            self._structure = "sumtree"
        elif cfg.structure == "auto":
            self._structure = "heap" if n <= AUTO_HEAP_MAX_TASKS else "tournament"
        else:
            self._structure = cfg.structure
        self._index: _TopIndex | _ProportionalIndex = self._new_index()
        self._p = np.full(n, np.nan)  # EMA success rate; NaN = never observed
        self._where = np.zeros(n, dtype=np.int8)
        self._solved = TimestampHeap(n)
        self._unsolved = TimestampHeap(n)
        # In flight: sorted ids, the select call that sent them, where they came from and
        # (for pooled problems) their last-test stamp, so a timeout can send them home.
        self._fl_ids = np.zeros(0, dtype=np.int64)
        self._fl_since = np.zeros(0, dtype=np.int64)
        self._fl_origin = np.zeros(0, dtype=np.int8)
        self._fl_stamp = np.zeros(0, dtype=np.int64)
        ties = self.rng.permutation(n) if cfg.shuffle_unseen else np.arange(n)
        self._index.fill(float(cfg.init_priority), ties)
        del ties
        self._next_tie = n
        self._counts = {
            "timed_out_returns": 0,
            "exploration_batches": 0,
            "retests": 0,
            "retest_returns_to_heap": 0,
            "fallback_picks": 0,
            "late_observations": 0,
            "observed_problems": 0,
            "selected_problems": 0,
            "moved_to_solved": 0,
            "moved_to_unsolved": 0,
        }
        self._batch_mean_priority = float("nan")
        self._batch_unseen_share = float("nan")
        # coverage="epoch": this epoch's walk; the heap, pools and flight stay untouched.
        self._walk = EpochWalk(n) if cfg.coverage == "epoch" else None

    def _new_index(self) -> _TopIndex | _ProportionalIndex:
        if self._structure == "sumtree":
            return _ProportionalIndex(self.num_tasks)
        if self._structure == "heap":
            return IndexedMaxHeap(self.num_tasks)
        return TournamentTree(self.num_tasks)

    # ------------------------------------------------------------------ inspection
    def success_rates(self, ids: NDArray[np.int64] | None = None) -> NDArray[np.float64]:
        """EMA success rate p per task (NaN where never observed); a copy."""
        return np.array(self._p if ids is None else self._p[np.asarray(ids, dtype=np.int64)])

    def priorities(self, ids: NDArray[np.int64] | None = None) -> NDArray[np.float64]:
        """Priority w per task, from p (init_priority where never observed)."""
        cfg = self.cfg
        return priority(self.success_rates(ids), cfg.success_bias, cfg.init_priority)

    def locations(self) -> dict[str, int]:
        """How many tasks sit in the heap, in flight, and in each pool (always sums to N)."""
        counts = np.bincount(self._where, minlength=4)
        return {
            "heap": int(counts[HEAP]),
            "in_flight": int(counts[FLIGHT]),
            "solved": int(counts[SOLVED]),
            "unsolved": int(counts[UNSOLVED]),
        }

    # ------------------------------------------------------------------ select
    def _select(self, n: int) -> NDArray[np.int64]:
        if self._walk is not None:
            return self._select_epoch(n)
        cfg = self.cfg
        call = self.select_calls
        self._expire(call)
        explore = bool(self.rng.random() < cfg.exploration_fraction)
        parts: list[NDArray[np.int64]] = []
        origins: list[NDArray[np.int8]] = []
        stamps: list[NDArray[np.int64]] = []
        retest = cfg.use_pools and cfg.retest_every > 0 and (call + 1) % cfg.retest_every == 0
        taken = 0
        if retest:
            for pool, want, code in (
                (self._solved, cfg.retest_solved, SOLVED),
                (self._unsolved, cfg.retest_unsolved, UNSOLVED),
            ):
                ids, st = pool.pop_many(min(want, len(pool), n - taken))
                taken += ids.shape[0]
                parts.append(ids)
                origins.append(np.full(ids.shape[0], code, np.int8))
                stamps.append(st)
            self._counts["retests"] += taken
        m = n - taken
        from_heap = self._take_from_heap(min(m, len(self._index)), explore)
        self._note_batch_priority(from_heap)
        parts.append(from_heap)
        origins.append(np.full(from_heap.shape[0], HEAP, np.int8))
        stamps.append(np.zeros(from_heap.shape[0], np.int64))
        short = m - from_heap.shape[0]
        if short:
            self._counts["fallback_picks"] += short
            for pool, code in ((self._unsolved, UNSOLVED), (self._solved, SOLVED)):
                ids, st = pool.pop_many(min(short, len(pool)))
                short -= ids.shape[0]
                parts.append(ids)
                origins.append(np.full(ids.shape[0], code, np.int8))
                stamps.append(st)
        chosen = np.concatenate(parts)
        self._where[chosen] = FLIGHT
        if short:  # everything else is in flight: resend the longest-waiting ones
            again = np.lexsort((self._fl_ids, self._fl_since))[:short]
            self._fl_since[again] = call
            chosen = np.concatenate((chosen, self._fl_ids[again]))
        self._add_flight(
            np.concatenate(parts), call, np.concatenate(origins), np.concatenate(stamps)
        )
        self._counts["exploration_batches"] += int(explore and from_heap.shape[0] > 0)
        newly = self._times_selected[chosen] == 0
        self._counts["selected_problems"] += int(newly.sum())
        return chosen

    def _select_epoch(self, n: int) -> NDArray[np.int64]:
        """coverage="epoch": the n highest priorities w among this epoch's remainder."""
        assert self._walk is not None
        cfg = self.cfg
        chosen = self._walk.take_best(
            n, self.rng, lambda ids: priority(self._p[ids], cfg.success_bias, cfg.init_priority)
        )
        self._note_batch_priority(chosen)
        self._counts["selected_problems"] += int((self._times_selected[chosen] == 0).sum())
        return chosen

    def _take_from_heap(self, k: int, explore: bool) -> NDArray[np.int64]:
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        if explore:
            ids = self._uniform_heap_members(k)
            self._index.remove_many(ids)
            return ids
        if isinstance(self._index, _ProportionalIndex):
            if self._index.positive >= k:
                return self._index.take(k, self.rng)
            ids = self._uniform_heap_members(k)  # too few positive weights: fill uniformly
            self._index.remove_many(ids)
            return ids
        return self._index.pop_many(k)[0]

    def _uniform_heap_members(self, k: int) -> NDArray[np.int64]:
        """k distinct heap members uniformly at random (rejection sampling on _where)."""
        n, size = self.num_tasks, len(self._index)
        if size < _SPARSE_HEAP * n or k > size // 2:
            members = np.flatnonzero(self._where == HEAP)
            return members[self.rng.choice(members.shape[0], size=k, replace=False)]
        got = np.zeros(0, dtype=np.int64)
        while got.shape[0] < k:
            draw = self.rng.integers(0, n, size=2 * (k - got.shape[0]) * n // size + 8)
            draw = draw[self._where[draw] == HEAP]
            merged = np.concatenate((got, draw))
            _, first = np.unique(merged, return_index=True)
            got = merged[np.sort(first)]
        return got[:k]

    def _note_batch_priority(self, ids: NDArray[np.int64]) -> None:
        if ids.shape[0] == 0:
            return
        p = self._p[ids]
        seen = ~np.isnan(p)
        self._batch_unseen_share = float(1.0 - seen.mean())
        w = priority(p[seen], self.cfg.success_bias, self.cfg.init_priority)
        if not np.isfinite(self.cfg.init_priority):
            self._batch_mean_priority = float(w.mean()) if w.size else float("nan")
        else:
            self._batch_mean_priority = float(
                (w.sum() + self.cfg.init_priority * (~seen).sum()) / ids.shape[0]
            )

    # ------------------------------------------------------------------ in flight
    def _add_flight(
        self, ids: NDArray[np.int64], call: int, origin: NDArray[np.int8], stamp: NDArray[np.int64]
    ) -> None:
        all_ids = np.concatenate((self._fl_ids, ids))
        order = np.argsort(all_ids, kind="stable")
        self._fl_ids = all_ids[order]
        self._fl_since = np.concatenate((self._fl_since, np.full(ids.shape[0], call)))[order]
        self._fl_origin = np.concatenate((self._fl_origin, origin))[order]
        self._fl_stamp = np.concatenate((self._fl_stamp, stamp))[order]

    def _drop_flight(self, keep: NDArray[np.bool_]) -> None:
        self._fl_ids, self._fl_since = self._fl_ids[keep], self._fl_since[keep]
        self._fl_origin, self._fl_stamp = self._fl_origin[keep], self._fl_stamp[keep]

    def _expire(self, call: int) -> None:
        """Problems in flight for inflight_timeout select calls go back where they came from."""
        late = self._fl_since <= call - self.cfg.inflight_timeout
        if not late.any():
            return
        ids, origin, stamp = self._fl_ids[late], self._fl_origin[late], self._fl_stamp[late]
        self._drop_flight(~late)
        self._counts["timed_out_returns"] += int(ids.shape[0])
        home = origin == HEAP
        self._push_heap(ids[home])
        for pool, code in ((self._solved, SOLVED), (self._unsolved, UNSOLVED)):
            sel = origin == code
            pool.push_many(ids[sel], stamp[sel])
            self._where[ids[sel]] = code

    def _push_heap(self, ids: NDArray[np.int64]) -> None:
        k = ids.shape[0]
        w = priority(self._p[ids], self.cfg.success_bias, self.cfg.init_priority)
        self._index.push_many(ids, w, np.arange(self._next_tie, self._next_tie + k))
        self._next_tie += k
        self._where[ids] = HEAP

    # ------------------------------------------------------------------ observe
    def _observe(self, batch: GroupBatch) -> None:
        cfg = self.cfg
        ids, pg = batch.task_ids, np.clip(batch.means, 0.0, 1.0)
        old = self._p[ids]
        first = np.isnan(old)
        if cfg.ema_alpha == 1.0:
            new = pg.copy()
        else:
            new = np.where(first, pg, cfg.ema_alpha * pg + (1.0 - cfg.ema_alpha) * old)
        self._counts["observed_problems"] += int(first.sum())
        if self._walk is not None:  # coverage="epoch": p is all that selection reads
            self._p[ids] = new
            return
        where = self._where[ids]
        # Detach every observed problem from where it is now.
        in_flight = where == FLIGHT
        came_from = np.full(ids.shape[0], HEAP, dtype=np.int8)
        if in_flight.any():
            pos = np.searchsorted(self._fl_ids, ids[in_flight])
            came_from[in_flight] = self._fl_origin[pos]
            keep = np.ones(self._fl_ids.shape[0], dtype=np.bool_)
            keep[pos] = False
            self._drop_flight(keep)
        self._counts["late_observations"] += int((~in_flight).sum())
        if (where == HEAP).any():
            self._index.remove_many(ids[where == HEAP])
        for pool, code in ((self._solved, SOLVED), (self._unsolved, UNSOLVED)):
            if (where == code).any():
                pool.remove_many(ids[where == code])
                came_from[where == code] = code
        # Place by the new result.
        self._p[ids] = new
        stat = pg if cfg.pool_statistic == "group" else new
        tol = cfg.pool_tolerance
        solved = cfg.use_pools & (stat >= 1.0 - tol)
        unsolved = cfg.use_pools & (stat <= tol) & ~solved
        heap = ~(solved | unsolved)
        self._push_heap(ids[heap])
        self._counts["retest_returns_to_heap"] += int((heap & (came_from != HEAP)).sum())
        for pool, mask, code, key in (
            (self._solved, solved, SOLVED, "moved_to_solved"),
            (self._unsolved, unsolved, UNSOLVED, "moved_to_unsolved"),
        ):
            pool.push_many(ids[mask], batch.step)
            self._where[ids[mask]] = code
            self._counts[key] += int((mask & (came_from != code)).sum())

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            "structure": self._structure,
            "p": self._p,
            "where": self._where,
            "index": self._index.state_dict(),
            "solved": self._solved.state_dict(),
            "unsolved": self._unsolved.state_dict(),
            "flight_ids": self._fl_ids,
            "flight_since": self._fl_since,
            "flight_origin": self._fl_origin,
            "flight_stamp": self._fl_stamp,
            "next_tie": self._next_tie,
            "counts": dict(self._counts),
            "batch_mean_priority": self._batch_mean_priority,
            "batch_unseen_share": self._batch_unseen_share,
            **({"walk": self._walk.state_dict()} if self._walk is not None else {}),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n, who = self.num_tasks, self.name
        if state["structure"] != self._structure:
            raise ValueError(
                f"prioritized state uses structure {state['structure']!r}, "
                f"this selector {self._structure!r}"
            )
        p = read_array(state, "p", who, np.float64, shape=(n,), lo=0.0, hi=1.0)
        where = read_array(state, "where", who, np.int8, shape=(n,), lo=HEAP, hi=UNSOLVED)
        fl_ids = read_array(state, "flight_ids", who, np.int64, lo=0, hi=n - 1)
        size = fl_ids.shape
        fl_since = read_array(state, "flight_since", who, np.int64, shape=size, lo=0)
        fl_origin = read_array(state, "flight_origin", who, np.int8, shape=size, lo=HEAP)
        fl_stamp = read_array(state, "flight_stamp", who, np.int64, shape=size, lo=0)
        index = self._new_index()
        index.load_state_dict(state["index"])
        solved, unsolved = TimestampHeap(n), TimestampHeap(n)
        solved.load_state_dict(state["solved"])
        unsolved.load_state_dict(state["unsolved"])
        # Every task sits in exactly the place `where` says (the lifecycle invariant).
        if isinstance(index, _ProportionalIndex):
            members_ok = len(index) == int((where == HEAP).sum()) and not np.any(
                index.tree.values()[where != HEAP]
            )
        else:
            members_ok = np.array_equal(index.contains_many(np.arange(n)), where == HEAP)
        if not (
            members_ok
            and np.array_equal(fl_ids, np.flatnonzero(where == FLIGHT))
            and np.all(fl_origin != FLIGHT)
            and np.array_equal(np.sort(solved.entries()[0]), np.flatnonzero(where == SOLVED))
            and np.array_equal(np.sort(unsolved.entries()[0]), np.flatnonzero(where == UNSOLVED))
        ):
            raise ValueError("prioritized state: structures disagree with task locations")
        counts = read_counts(state, "counts", who, tuple(self._counts))
        next_tie = read_int(state, "next_tie", who)
        mean_priority = read_float(state, "batch_mean_priority", who)
        unseen_share = read_float(state, "batch_unseen_share", who, 0.0, 1.0)
        walk = EpochWalk.optional_from_state(state, n, who, expected=self._walk is not None)
        self._walk = walk
        self._p, self._where, self._index = p, where, index
        self._solved, self._unsolved = solved, unsolved
        self._fl_ids, self._fl_since, self._fl_origin, self._fl_stamp = (
            fl_ids,
            fl_since,
            fl_origin,
            fl_stamp,
        )
        self._next_tie = next_tie
        self._counts = counts
        self._batch_mean_priority = mean_priority
        self._batch_unseen_share = unseen_share

    def _metrics(self) -> dict[str, float]:
        c = self._counts
        if self._walk is not None:  # coverage="epoch": no heap, pools or flight in use
            return {
                "epoch": float(self._walk.epoch),
                "never_selected": float(self.num_tasks - c["selected_problems"]),
                "distinct_observed": float(c["observed_problems"]),
                "batch_mean_priority": self._batch_mean_priority,
                "batch_unseen_share": self._batch_unseen_share,
            }
        out = {
            "heap_size": float(len(self._index)),
            "solved_pool": float(len(self._solved)),
            "unsolved_pool": float(len(self._unsolved)),
            "in_flight": float(self._fl_ids.shape[0]),
            "never_selected": float(self.num_tasks - c["selected_problems"]),
            "distinct_observed": float(c["observed_problems"]),
            "batch_mean_priority": self._batch_mean_priority,
            "batch_unseen_share": self._batch_unseen_share,
        }
        for key in (
            "timed_out_returns",
            "exploration_batches",
            "retests",
            "retest_returns_to_heap",
            "fallback_picks",
            "late_observations",
            "moved_to_solved",
            "moved_to_unsolved",
        ):
            out[key] = float(c[key])
        return out
