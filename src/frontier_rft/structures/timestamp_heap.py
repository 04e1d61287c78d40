"""Min-heap of ids keyed by the step of their last test (the paper's solved / unsolved pools).

Entries are `(stamp, id)` ordered by stamp, then id: the oldest-tested problem comes out
first and equal stamps break deterministically by id. Arrays grow by doubling up to
`max_size`. Pools are fed in step order, so a batch of new entries usually has keys no
smaller than any key ever pushed; such a batch is appended sorted in one vectorised
operation (a sorted block after smaller keys keeps the heap property). Other pushes sift
up in Python; arbitrary removal (rare: feedback for a pooled problem that was not
selected) re-sorts the survivors, O(P log P).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frontier_rft.core.state_check import check_keys
from frontier_rft.structures._keys import heap_ok
from frontier_rft.structures._slots import SlotViews, size_arg

__all__ = ["TimestampHeap"]

_MIN_CAPACITY = 16


class TimestampHeap(SlotViews):
    """Binary min-heap of (stamp, id), ids in [0, max_size), with batched push/pop."""

    def __init__(self, max_size: int):
        self._max = size_arg(max_size, "max_size", 0)
        # int32 ids keep a pool entry at 12 bytes (pools hold at most the whole universe).
        self._id_dtype = np.int32 if self._max < 2**31 else np.int64
        self._stamps: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._ids: NDArray[Any] = np.zeros(0, dtype=self._id_dtype)
        self._size = 0
        self._alloc(min(_MIN_CAPACITY, self._max))
        self._size = 0
        self._max_key: tuple[int, int] | None = None  # largest key ever pushed

    def _alloc(self, capacity: int) -> None:
        stamps = np.zeros(capacity, dtype=np.int64)
        ids = np.zeros(capacity, dtype=self._id_dtype)
        stamps[: self._size] = self._stamps[: self._size]
        ids[: self._size] = self._ids[: self._size]
        self._stamps, self._ids = stamps, ids
        self._views()

    _VIEWS = ("_ms", "_mi")

    def _views(self) -> None:
        self._ms: Any = self._stamps.data
        self._mi: Any = self._ids.data

    def __len__(self) -> int:
        return self._size

    @property
    def max_size(self) -> int:
        return self._max

    def peek(self) -> tuple[int, int]:
        """(id, stamp) of the oldest entry."""
        if self._size == 0:
            raise IndexError("peek at an empty heap")
        return int(self._ids[0]), int(self._stamps[0])

    def entries(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Copies of (ids, stamps) in slot order."""
        return self._ids[: self._size].astype(np.int64), self._stamps[: self._size].copy()

    def is_valid(self) -> bool:
        m = self._size
        return heap_ok(self._stamps[:m], self._ids[:m], reverse=True)

    # ------------------------------------------------------------------ updates
    def push_many(self, ids: ArrayLike, stamps: ArrayLike) -> None:
        """Insert entries (ids must not already be present; the caller tracks membership)."""
        ids64 = np.asarray(ids, dtype=np.int64).reshape(-1)
        st = np.broadcast_to(np.asarray(stamps, dtype=np.int64), ids64.shape)
        k = ids64.shape[0]
        if k and (ids64.min() < 0 or ids64.max() >= self._max):
            raise ValueError(f"push_many: ids must lie in [0, {self._max})")
        if self._size + k > self._max:
            raise ValueError(f"timestamp heap holds at most {self._max} entries")
        if k == 0:
            return
        if self._size + k > self._stamps.shape[0]:
            self._alloc(min(self._max, max(2 * self._stamps.shape[0], self._size + k)))
        order = np.lexsort((ids64, st))
        ids64, st = ids64[order], st[order]
        first, last = (int(st[0]), int(ids64[0])), (int(st[-1]), int(ids64[-1]))
        if self._max_key is None or first >= self._max_key:
            m = self._size
            self._stamps[m : m + k] = st
            self._ids[m : m + k] = ids64
            self._size = m + k
        else:
            for stamp, item in zip(st.tolist(), ids64.tolist(), strict=True):
                self._sift_up(self._size, stamp, item)
                self._size += 1
        self._max_key = last if self._max_key is None else max(self._max_key, last)

    def pop_many(self, k: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Remove the k oldest entries; returns (ids, stamps), oldest first."""
        if k < 0 or k > self._size:
            raise ValueError(f"cannot pop {k} entries from a heap of {self._size}")
        ids = np.empty(k, dtype=np.int64)
        stamps = np.empty(k, dtype=np.int64)
        ms, mi = self._ms, self._mi
        for j in range(k):
            ids[j], stamps[j] = mi[0], ms[0]
            last = self._size - 1
            self._size = last
            if last > 0:
                self._sift_down(ms[last], mi[last])
        return ids, stamps

    def remove_many(self, ids: ArrayLike) -> None:
        """Remove present ids by re-sorting the survivors (a sorted array is a valid heap)."""
        drop = np.asarray(ids, dtype=np.int64).reshape(-1)
        m = self._size
        keep = ~np.isin(self._ids[:m], drop)
        if int(m - keep.sum()) != np.unique(drop).size:
            raise ValueError("remove_many: every id must be present")
        st, it = self._stamps[:m][keep], self._ids[:m][keep]
        order = np.lexsort((it, st))
        self._size = st.shape[0]
        self._stamps[: self._size] = st[order]
        self._ids[: self._size] = it[order]

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        ids, stamps = self.entries()
        max_key = [-1, -1] if self._max_key is None else list(self._max_key)
        return {
            "max_size": self._max,
            "ids": ids,
            "stamps": stamps,
            "max_key": max_key,
            "has_max_key": self._max_key is not None,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        keys = ("max_size", "ids", "stamps", "max_key", "has_max_key")
        state = check_keys(state, "timestamp heap state", keys)
        ids = np.asarray(state["ids"], dtype=np.int64)
        stamps = np.asarray(state["stamps"], dtype=np.int64)
        if int(state["max_size"]) != self._max or ids.shape != stamps.shape or ids.ndim != 1:
            raise ValueError("timestamp heap state: shapes do not match")
        if ids.shape[0] > self._max:
            raise ValueError("timestamp heap state: too many entries")
        if ids.size and (ids.min() < 0 or ids.max() >= self._max or np.unique(ids).size < ids.size):
            raise ValueError(
                f"timestamp heap state: ids must be distinct and lie in [0, {self._max})"
            )
        if not heap_ok(stamps, ids, reverse=True):
            raise ValueError("timestamp heap state: arrays violate the heap property")
        max_key = tuple(int(v) for v in state["max_key"])
        self._size = 0
        self._alloc(min(self._max, max(_MIN_CAPACITY, ids.shape[0])))
        self._stamps[: ids.shape[0]] = stamps
        self._ids[: ids.shape[0]] = ids
        self._size = ids.shape[0]
        self._max_key = (max_key[0], max_key[1]) if state["has_max_key"] else None

    # ------------------------------------------------------------------ internals
    def _sift_up(self, hole: int, stamp: int, item: int) -> None:
        ms, mi = self._ms, self._mi
        while hole > 0:
            parent = (hole - 1) >> 1
            ps = ms[parent]
            if ps < stamp or (ps == stamp and mi[parent] <= item):
                break
            ms[hole] = ps
            mi[hole] = mi[parent]
            hole = parent
        ms[hole] = stamp
        mi[hole] = item

    def _sift_down(self, stamp: int, item: int) -> None:
        ms, mi = self._ms, self._mi
        size = self._size
        hole = 0
        child = 1
        while child < size:
            right = child + 1
            if right < size:
                cs, rs = ms[child], ms[right]
                if rs < cs or (rs == cs and mi[right] < mi[child]):
                    child = right
            cs = ms[child]
            if stamp < cs or (stamp == cs and item <= mi[child]):
                break
            ms[hole] = cs
            mi[hole] = mi[child]
            hole = child
            child = 2 * hole + 1
        ms[hole] = stamp
        mi[hole] = item
