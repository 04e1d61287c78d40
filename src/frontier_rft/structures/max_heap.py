"""Binary max-heap of problem ids (the paper's section 3) and its indexed variant (section 4.2).

Entries are `(priority, tie, id)`, ordered by larger priority first and then smaller tie
(see `_keys`), stored as three numpy arrays in heap (slot) order: the children of slot i
are 2i+1 and 2i+2, the best entry sits in slot 0. The sift loops run in Python on
memoryviews of those arrays (scalar access through a memoryview is several times cheaper
than through numpy) and use Floyd's bottom-up sift-down: walk the hole to a leaf along
the better child, one comparison per level, then sift the moved entry up a level or two.

`IndexedMaxHeap` adds a position map id -> slot, which gives `contains`, arbitrary
deletion and priority change, at 4 more bytes per id of the universe (int32 slots
and positions keep the whole indexed heap at 24 bytes per id).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frontier_rft.core.state_check import check_keys
from frontier_rft.structures._keys import check_entries, heap_ok, key_order
from frontier_rft.structures._slots import SlotViews, size_arg

__all__ = ["IndexedMaxHeap", "MaxHeap"]


class MaxHeap(SlotViews):
    """Fixed-capacity binary max-heap with `extract_max`, `insert` and batched versions.

    Ties default to an internal insertion counter (first in, first out among equal
    priorities); callers that coordinate several structures may pass their own.
    """

    def __init__(self, capacity: int, *, id_dtype: type[np.integer[Any]] = np.int64):
        self._capacity = size_arg(capacity, "capacity", 0)
        self._prio = np.zeros(self._capacity, dtype=np.float64)
        self._tie = np.zeros(self._capacity, dtype=np.int64)
        self._ids: NDArray[Any] = np.zeros(self._capacity, dtype=id_dtype)
        self._size = 0
        self._counter = 0
        self._pos: NDArray[Any] | None = None
        self._views()

    _VIEWS = ("_mp", "_mt", "_mi", "_mpos")

    def _views(self) -> None:
        self._mp: Any = self._prio.data
        self._mt: Any = self._tie.data
        self._mi: Any = self._ids.data
        self._mpos: Any = None if self._pos is None else self._pos.data

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return self._size

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def counter(self) -> int:
        """Next automatic tie-breaker value."""
        return self._counter

    def peek(self) -> tuple[int, float]:
        """(id, priority) of the best entry without removing it."""
        if self._size == 0:
            raise IndexError("peek at an empty heap")
        return int(self._ids[0]), float(self._prio[0])

    def entries(self) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
        """Copies of (ids, priorities, ties) in slot order."""
        m = self._size
        return self._ids[:m].astype(np.int64), self._prio[:m].copy(), self._tie[:m].copy()

    def is_valid(self) -> bool:
        """Heap property holds on every parent/child pair (vectorised check)."""
        m = self._size
        return heap_ok(self._prio[:m], self._tie[:m])

    # ------------------------------------------------------------------ updates
    def insert(self, item: int, priority: float, tie: int | None = None) -> None:
        """Add one entry (O(log M))."""
        self.push_many(np.array([item]), np.array([priority]), None if tie is None else [tie])

    def extract_max(self) -> tuple[int, float]:
        """Remove and return (id, priority) of the best entry (O(log M))."""
        if self._size == 0:
            raise IndexError("extract_max from an empty heap")
        item, prio = int(self._ids[0]), float(self._prio[0])
        self._delete_slot(0)
        return item, prio

    def pop_many(self, k: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Remove the k best entries, best first (k repeated `extract_max`)."""
        if k < 0 or k > self._size:
            raise ValueError(f"cannot pop {k} entries from a heap of {self._size}")
        ids = np.empty(k, dtype=np.int64)
        prios = np.empty(k, dtype=np.float64)
        mi, mp = self._mi, self._mp
        for j in range(k):
            ids[j] = mi[0]
            prios[j] = mp[0]
            self._delete_slot(0)
        return ids, prios

    def push_many(
        self, ids: ArrayLike, priorities: ArrayLike, ties: ArrayLike | None = None
    ) -> None:
        """Insert many entries; into an empty heap this is one vectorised sort."""
        ids64, pr64, ties64 = self._checked(ids, priorities, ties, "push_many")
        k = ids64.shape[0]
        if self._size + k > self._capacity:
            raise ValueError(f"heap capacity {self._capacity} exceeded")
        if ties64 is None:
            ties64 = np.arange(self._counter, self._counter + k, dtype=np.int64)
        if k:
            self._counter = max(self._counter, int(ties64.max()) + 1)
        if self._size == 0 and k > 1:
            self._assign(ids64, pr64, ties64)
            return
        for item, prio, tie in zip(ids64.tolist(), pr64.tolist(), ties64.tolist(), strict=True):
            hole = self._size
            self._size += 1
            self._sift_up(hole, prio, tie, item)

    def fill(self, priority: float, ties: ArrayLike) -> None:
        """Hold ids 0..capacity-1, all with one priority (sorted by tie: a valid heap)."""
        t = np.asarray(ties)
        if t.shape != (self._capacity,) or t.dtype.kind not in "iu":
            raise ValueError(f"fill: ties must be {self._capacity} integers")
        if np.isnan(priority):
            raise ValueError("fill: priority is NaN")
        self._clear()
        order = np.argsort(t, kind="stable")
        self._ids[:] = order
        np.take(t, order, out=self._tie)
        self._prio[:] = priority
        self._size = self._capacity
        del order
        self._index_slots(0, self._capacity)
        self._counter = int(t.max()) + 1 if t.size else 0

    def heapify(self, ids: ArrayLike, priorities: ArrayLike, ties: ArrayLike | None = None) -> None:
        """Replace the contents; a sorted array is a valid heap, so this is one lexsort."""
        ids64, pr64, ties64 = self._checked(ids, priorities, ties, "heapify", replace=True)
        if ids64.shape[0] > self._capacity:
            raise ValueError(f"heap capacity {self._capacity} exceeded")
        if ties64 is None:
            ties64 = np.arange(ids64.shape[0], dtype=np.int64)
        self._clear()
        self._assign(ids64, pr64, ties64)
        self._counter = int(ties64.max()) + 1 if ties64.size else 0

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Exact slot layout and counter (restoring them continues bit-identically)."""
        ids, prios, ties = self.entries()
        return {
            "capacity": self._capacity,
            "ids": ids,
            "priorities": prios,
            "ties": ties,
            "counter": self._counter,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Inverse of state_dict; validates everything before changing self."""
        state = check_keys(
            state, "heap state", ("capacity", "ids", "priorities", "ties", "counter")
        )
        if int(state["capacity"]) != self._capacity:
            raise ValueError("heap state: capacity does not match")
        ids = np.asarray(state["ids"], dtype=np.int64)
        prios = np.asarray(state["priorities"], dtype=np.float64)
        ties = np.asarray(state["ties"], dtype=np.int64)
        if not (ids.shape == prios.shape == ties.shape) or ids.ndim != 1:
            raise ValueError("heap state: ids, priorities and ties must be 1-D of equal length")
        if ids.shape[0] > self._capacity or np.any(np.isnan(prios)):
            raise ValueError("heap state: too many entries or NaN priorities")
        if not heap_ok(prios, ties):
            raise ValueError("heap state: arrays violate the heap property")
        counter = int(state["counter"])
        self._validate_ids(ids, "heap state")
        self._clear()
        m = ids.shape[0]
        self._ids[:m], self._prio[:m], self._tie[:m] = ids, prios, ties
        self._size = m
        self._index_slots(0, m)
        self._counter = counter

    # ------------------------------------------------------------------ internals
    def _checked(
        self,
        ids: ArrayLike,
        priorities: ArrayLike,
        ties: ArrayLike | None,
        what: str,
        replace: bool = False,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64] | None]:
        ids64, pr64, ties64 = check_entries(ids, priorities, ties, None, what)
        self._validate_ids(ids64, what, replace=replace)
        return ids64, pr64, ties64

    def _validate_ids(self, ids: NDArray[np.int64], what: str, replace: bool = True) -> None:
        """Hook for the indexed variant (range, uniqueness, not already present)."""

    def _clear(self) -> None:
        self._size = 0

    def _index_slots(self, start: int, stop: int) -> None:
        """Hook: refresh the position map for slots [start, stop)."""

    def _assign(
        self, ids: NDArray[np.int64], prios: NDArray[np.float64], ties: NDArray[np.int64]
    ) -> None:
        order = key_order(prios, ties)
        m = ids.shape[0]
        self._ids[:m], self._prio[:m], self._tie[:m] = ids[order], prios[order], ties[order]
        self._size = m
        self._index_slots(0, m)

    def _sift_up(self, hole: int, prio: float, tie: int, item: int, top: int = 0) -> None:
        """Place (prio, tie, item) at `hole` or higher, but not above `top`."""
        mp, mt, mi, pos = self._mp, self._mt, self._mi, self._mpos
        while hole > top:
            parent = (hole - 1) >> 1
            pp = mp[parent]
            if pp > prio or (pp == prio and mt[parent] <= tie):
                break
            mp[hole] = pp
            mt[hole] = mt[parent]
            moved = mi[parent]
            mi[hole] = moved
            if pos is not None:
                pos[moved] = hole
            hole = parent
        mp[hole] = prio
        mt[hole] = tie
        mi[hole] = item
        if pos is not None:
            pos[item] = hole

    def _sift_down(self, start: int, prio: float, tie: int, item: int) -> None:
        """Floyd: walk the hole at `start` to a leaf along better children, then sift up."""
        mp, mt, mi, pos = self._mp, self._mt, self._mi, self._mpos
        size = self._size
        hole = start
        child = 2 * hole + 1
        while child < size:
            right = child + 1
            if right < size:
                pc, pr = mp[child], mp[right]
                if pr > pc or (pr == pc and mt[right] < mt[child]):
                    child = right
            mp[hole] = mp[child]
            mt[hole] = mt[child]
            moved = mi[child]
            mi[hole] = moved
            if pos is not None:
                pos[moved] = hole
            hole = child
            child = 2 * hole + 1
        self._sift_up(hole, prio, tie, item, top=start)

    def _delete_slot(self, slot: int) -> None:
        """Remove the entry at `slot`, refilling it with the last entry."""
        mp, mt, mi = self._mp, self._mt, self._mi
        if self._mpos is not None:
            self._mpos[mi[slot]] = -1
        last = self._size - 1
        self._size = last
        if slot == last:
            return
        prio, tie, item = mp[last], mt[last], mi[last]
        if slot > 0:
            parent = (slot - 1) >> 1
            pp = mp[parent]
            if prio > pp or (prio == pp and tie < mt[parent]):
                self._sift_up(slot, prio, tie, item)
                return
        self._sift_down(slot, prio, tie, item)


class IndexedMaxHeap(MaxHeap):
    """MaxHeap over ids in [0, universe) with a position map: contains, delete, priority change."""

    def __init__(self, universe: int):
        # int32 slots and positions keep the heap at 24 bytes per id (ids < 2**31).
        small = 0 <= universe < 2**31 - 1
        super().__init__(universe, id_dtype=np.int32 if small else np.int64)
        self._pos: NDArray[Any] = np.full(self._capacity, -1, dtype=self._ids.dtype)
        self._views()

    def __contains__(self, item: object) -> bool:
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            return False
        return 0 <= int(item) < self._capacity and bool(self._pos[int(item)] >= 0)

    def contains_many(self, ids: ArrayLike) -> NDArray[np.bool_]:
        """Vectorised membership test."""
        ids64 = np.asarray(ids, dtype=np.int64)
        inside = (ids64 >= 0) & (ids64 < self._capacity)
        out = np.zeros(ids64.shape, dtype=np.bool_)
        out[inside] = self._pos[ids64[inside]] >= 0
        return out

    def priority_of(self, item: int) -> float:
        slot = self._slot(item)
        return float(self._prio[slot])

    def delete(self, item: int) -> float:
        """Remove `item` wherever it sits (O(log M)); returns its priority."""
        slot = self._slot(item)
        prio = float(self._prio[slot])
        self._delete_slot(slot)
        return prio

    def remove_many(self, ids: ArrayLike) -> None:
        """Delete several ids; all must be present (checked before any change)."""
        ids64 = np.asarray(ids, dtype=np.int64)
        if not np.all(self.contains_many(ids64)) or np.unique(ids64).size != ids64.size:
            raise ValueError("remove_many: every id must be present, once")
        mpos = self._mpos
        for item in ids64.tolist():
            self._delete_slot(mpos[item])

    def update(self, item: int, priority: float, tie: int | None = None) -> None:
        """Change the priority (and optionally the tie) of a present id (delete + insert)."""
        slot = self._slot(item)
        if np.isnan(priority):
            raise ValueError("update: priority is NaN")
        new_tie = int(self._tie[slot]) if tie is None else int(tie)
        self._counter = max(self._counter, new_tie + 1)
        self._delete_slot(slot)
        hole = self._size
        self._size += 1
        self._sift_up(hole, float(priority), new_tie, int(item))

    def _slot(self, item: int) -> int:
        if item not in self:
            raise KeyError(f"id {item} is not in the heap")
        return int(self._pos[int(item)])

    def _validate_ids(self, ids: NDArray[np.int64], what: str, replace: bool = True) -> None:
        if ids.size and (ids.min() < 0 or ids.max() >= self._capacity):
            raise ValueError(f"{what}: ids must lie in [0, {self._capacity})")
        if np.unique(ids).size != ids.size:
            raise ValueError(f"{what}: ids must be distinct")
        if not replace and self._pos is not None and np.any(self._pos[ids] >= 0):
            raise ValueError(f"{what}: some ids are already in the heap")

    def _clear(self) -> None:
        if self._pos is not None:
            self._pos[self._ids[: self._size]] = -1
        self._size = 0

    def _index_slots(self, start: int, stop: int) -> None:
        if self._pos is not None:
            self._pos[self._ids[start:stop]] = np.arange(start, stop)
