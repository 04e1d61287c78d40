"""EpochWalk: a walk over a fresh random permutation of the pool each epoch.

One walk serves every selector that keeps coverage: uniform takes the next ids, the
frontier-replay selector takes the next ids not already chosen, the skip selectors
(greso, skip) take the next ids a keep rule accepts and pass over the rest until the next
epoch, and coverage mode lets a scoring selector pick the best of what this epoch has
left. Every prompt is handed out at most once per epoch.

A batch that straddles an epoch boundary takes what is left of the old permutation and
tops up from a new one; ids already in the batch are moved to the new permutation's
front (they count as visited in the new epoch too), so one batch never repeats an id.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.state_check import check_keys, read_int, read_permutation

__all__ = ["COVERAGE_MODES", "Coverage", "EpochWalk"]

Coverage = Literal["pool", "epoch"]
"""A scoring selector's coverage: 'pool' re-draws from the whole pool each step (the
papers), 'epoch' hands each prompt out once per epoch, best-scored first (take_best)."""
COVERAGE_MODES: tuple[Coverage, ...] = ("pool", "epoch")

KeepRule = Callable[[I64], NDArray[np.bool_]]
"""ids -> mask of those to take; it may draw random numbers (one call per scanned chunk)."""
_EMPTY_I = np.zeros(0, dtype=np.int64)
_STATE_KEYS = ("order", "cursor", "epoch")
_MIN_CHUNK = 64


class EpochWalk:
    """Position in the current epoch's permutation of range(num_tasks)."""

    def __init__(self, num_tasks: int):
        self.num_tasks = int(num_tasks)
        self.order: I64 = _EMPTY_I  # the current epoch's permutation (empty before the first)
        self.cursor = 0  # ids before it were handed out (or passed over) in this epoch
        self.epoch = 0  # permutations started so far; the first epoch is 1

    @property
    def left(self) -> int:
        """Ids not yet handed out or passed over in the current epoch."""
        return int(self.order.shape[0]) - self.cursor

    @property
    def progress(self) -> float:
        """Epochs walked, fractional: epoch - 1 + share of the current one walked (0 at start)."""
        if self.epoch == 0:
            return 0.0
        return self.epoch - 1 + self.cursor / max(1, self.num_tasks)

    def remaining(self) -> I64:
        """A view of this epoch's ids not handed out yet, in walk order."""
        return self.order[self.cursor :]

    def take(self, k: int, rng: np.random.Generator, exclude: I64 = _EMPTY_I) -> I64:
        """The next k ids not in `exclude` (distinct ids; k + |exclude| <= num_tasks).

        Excluded ids stay in the epoch: the window is permuted in place, chosen ids first.
        When the epoch runs out, a fresh permutation continues the walk.
        """
        if k == 0:
            return _EMPTY_I
        c = self.cursor
        if exclude.size == 0 and c + k <= self.order.size:  # the common case: a plain slice
            self.cursor = c + k
            head: I64 = self.order[c : c + k].copy()
            return head
        window: I64 = self.order[c : c + k + exclude.size]
        ok = np.flatnonzero(~np.isin(window, exclude)) if exclude.size else np.arange(window.size)
        chosen_pos = ok[:k]
        chosen: I64 = window[chosen_pos]
        if chosen.size == k:
            rest = np.delete(window, chosen_pos)
            self.order[c : c + window.size] = np.concatenate([chosen, rest])
            self.cursor = c + k
            return chosen
        self._new_epoch(rng)
        return np.concatenate(
            [chosen, self.take(k - chosen.size, rng, np.concatenate([exclude, chosen]))]
        )

    @staticmethod
    def run_epoch(handed_out: int, num_tasks: int) -> int:
        """The run's epoch by uniform's count: prompts handed out / pool size, rounded up
        (uniform's `epoch` after as many prompts). A skip selector's walk passes over
        prompts too, so its own `epoch` (passes started) runs ahead of this."""
        return -(-int(handed_out) // max(1, int(num_tasks)))

    @staticmethod
    def epochs_bound(min_keep: float) -> int:
        """New epochs one `take_where` may start when `keep` accepts every id with
        probability >= min_keep: reached with probability below e^-10 even for a batch the
        size of the pool, so the bound only ever stops a walk that could not end."""
        return 2 + math.ceil(10.0 / min_keep)

    def take_where(
        self, k: int, rng: np.random.Generator, keep: KeepRule, max_epochs: int
    ) -> tuple[I64, int]:
        """(the next k ids that `keep` accepts, how many it passed over); the ids it
        rejects are passed over until the next epoch (GRESO's walk). Chunks of the
        permutation are scanned in order, each chunk's decisions made in one call, and the
        walk stops right after the k-th taken id.

        `keep` should accept any id with positive probability. After `max_epochs` new epochs
        within this call the rest is taken without asking (a named bound, never a stuck walk).
        """
        taken: list[I64] = []
        need, started, passed = k, 0, 0
        in_batch = _EMPTY_I
        chunk_size = max(_MIN_CHUNK, 2 * k)
        while need > 0:
            if self.left == 0:
                if started >= max_epochs:
                    taken.append(self.take(need, rng, in_batch))
                    break
                self._new_epoch(rng)
                started += 1
                if in_batch.size:  # ids of this batch count as visited in the new epoch
                    self._move_to_front(in_batch)
            chunk = self.order[self.cursor : self.cursor + chunk_size]
            ok = keep(chunk)
            pos = np.flatnonzero(ok)[:need]
            walked = int(pos[-1]) + 1 if pos.size == need else chunk.size
            self.cursor += walked
            passed += walked - pos.size
            got = chunk[pos].copy()
            taken.append(got)
            in_batch = np.concatenate([in_batch, got])
            need -= got.size
            chunk_size *= 2  # a pool that keeps few ids is scanned in O(log) calls
        return (np.concatenate(taken) if taken else _EMPTY_I), passed

    def take_window(
        self, positions: int, rng: np.random.Generator, keep: KeepRule
    ) -> tuple[I64, int]:
        """(the ids `keep` accepts among the walk's next `positions` ids, how many it passed
        over): uniform's step of `positions` prompts with the rejected ones left out, so the
        walk moves `positions` places per step, as uniform's does, and the step rolls out
        fewer prompts (possibly none). A window that crosses the epoch boundary continues in
        a fresh permutation, the ids already taken moved to its front as in `take_where`
        (never twice in one window; they count as visited in the new epoch too, so such an
        epoch is that many positions shorter than uniform's); `positions` <= num_tasks."""
        taken: list[I64] = []
        in_batch = _EMPTY_I
        left, passed = int(positions), 0
        while left > 0:
            if self.left == 0:
                self._new_epoch(rng)
                if in_batch.size:  # visited in the new epoch too: never twice in one window
                    self._move_to_front(in_batch)
            chunk = self.order[self.cursor : self.cursor + left]
            ok = np.asarray(keep(chunk), dtype=np.bool_)
            self.cursor += chunk.size
            got = chunk[ok].copy()
            passed += chunk.size - got.size
            taken.append(got)
            in_batch = np.concatenate([in_batch, got])
            left -= chunk.size
        return in_batch, passed

    def walk_beside(self, ids: I64, rng: np.random.Generator, keep: KeepRule) -> NDArray[np.bool_]:
        """`keep`'s decisions on `ids`, a window of len(ids) positions that another walk
        walked (a shadow's view of a run's batch), with this walk moved len(ids) places as
        `take_window` moves it: a new epoch is drawn where it would draw one, and `keep` is
        called on the same chunk sizes, so the RNG is used in the same order. Nothing is
        taken: the ids are the other walk's, so none is moved to a new epoch's front."""
        out: list[NDArray[np.bool_]] = []
        start = 0
        while start < ids.shape[0]:
            if self.left == 0:
                self._new_epoch(rng)
            size = min(ids.shape[0] - start, self.left)
            out.append(np.asarray(keep(ids[start : start + size]), dtype=np.bool_))
            self.cursor += size
            start += size
        return np.concatenate(out) if out else np.zeros(0, dtype=np.bool_)

    def take_best(
        self,
        k: int,
        rng: np.random.Generator,
        score: Callable[[I64], F64],
        window: int | None = None,
    ) -> I64:
        """The k ids with the highest `score` among the first `window` ids of this epoch's
        remainder (all of it when None), best first (ties: walk order). A batch that
        straddles the boundary takes the whole remainder and the best of the next epoch's
        window. Each id is handed out once per epoch (coverage mode).

        The window's unchosen ids go back to uniformly random positions of the remainder (a
        partial Fisher-Yates with `rng`, one draw per unchosen id), so the remainder stays in
        uniformly random order and the next window is again a uniform sample of it. Left at
        the front, the rejects would fill every later window (a window of earlier rejects
        plus k new ids). A window of the whole remainder draws nothing: there the order only
        breaks ties.
        """
        first = _EMPTY_I
        if self.left < k:  # (== k: this epoch's last batch, the next one is not opened yet)
            first = self.remaining().copy()
            self._new_epoch(rng)
            if first.size:
                self._move_to_front(first)
            k -= first.size
        rest = self.remaining()
        w = rest.shape[0] if window is None else min(max(int(window), k), rest.shape[0])
        s = np.asarray(score(rest[:w]), dtype=np.float64)
        best = np.argsort(-s, kind="stable")[:k]
        chosen = rest[best].copy()
        others = np.delete(rest[:w], best)
        rest[:w] = np.concatenate([chosen, others])  # a view: writes self.order
        self.cursor += k
        if w < rest.shape[0] and others.size:
            self._scatter_front(others.size, rng)
        return np.concatenate([first, chosen])

    def _scatter_front(self, d: int, rng: np.random.Generator) -> None:
        """The first d steps of a Fisher-Yates shuffle of the remainder: position i swaps
        with a uniform position in [i, left). The rest of the remainder was already in
        uniform order, so the whole remainder is again (O(d), whatever the pool size)."""
        rest = self.remaining()  # a view
        size = rest.shape[0]
        targets = rng.integers(np.arange(d), size)  # one draw per position, vectorised
        for i, j in enumerate(targets.tolist()):
            rest[i], rest[j] = rest[j], rest[i]

    def _new_epoch(self, rng: np.random.Generator) -> None:
        self.order = rng.permutation(self.num_tasks).astype(np.int64)
        self.cursor = 0
        self.epoch += 1

    def _move_to_front(self, ids: I64) -> None:
        """Mark `ids` visited at the start of a new epoch (they were handed out just now)."""
        rest = self.order[~np.isin(self.order, ids)]
        self.order = np.concatenate([ids, rest]).astype(np.int64)
        self.cursor = int(ids.size)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {"order": self.order, "cursor": self.cursor, "epoch": self.epoch}

    @classmethod
    def optional_from_state(
        cls, state: dict[str, Any], num_tasks: int, who: str, *, expected: bool
    ) -> EpochWalk | None:
        """The walk saved under state["walk"] by a selector in coverage mode (None for one
        that keeps none); a ValueError when what was saved and the config disagree."""
        if expected != ("walk" in state):
            raise ValueError(f"{who} state: coverage mode does not match the config")
        if not expected:
            return None
        walk = cls(num_tasks)
        walk.load_state_dict(state["walk"], who)
        return walk

    def load_state_dict(self, state: dict[str, Any], who: str) -> None:
        """Restore; a ValueError naming `who` leaves the walk unchanged."""
        state = check_keys(state, f"{who} state: walk", _STATE_KEYS)
        order = read_permutation(state, "order", who, self.num_tasks, allow_empty=True)
        cursor = read_int(state, "cursor", who, hi=order.shape[0])
        epoch = read_int(state, "epoch", who)
        self.order, self.cursor, self.epoch = order, cursor, epoch
