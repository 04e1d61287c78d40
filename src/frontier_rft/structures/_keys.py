"""Shared ordering of priority entries: larger priority first, then smaller tie-breaker.

Every priority structure orders entries by the key `(priority, -tie)`: ties are unique
integers (an insertion counter, or a seeded permutation), so two entries never compare
equal and payload ids are never compared.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["better", "check_entries", "heap_ok", "key_order"]


def better(
    pa: NDArray[np.float64], ta: NDArray[np.int64], pb: NDArray[np.float64], tb: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """Elementwise: entry a = (pa, ta) comes strictly before entry b = (pb, tb)."""
    return np.asarray((pa > pb) | ((pa == pb) & (ta < tb)))


def key_order(priorities: NDArray[np.float64], ties: NDArray[np.int64]) -> NDArray[np.intp]:
    """Indices sorting entries best first (priority descending, then tie ascending)."""
    return np.lexsort((ties, -priorities))


def heap_ok(priorities: NDArray[Any], ties: NDArray[Any], *, reverse: bool = False) -> bool:
    """Whether slot arrays satisfy the binary heap property (parent before each child).

    With `reverse=True` the order is ascending by (priority, tie): a min-heap.
    """
    m = priorities.shape[0]
    if m < 2:
        return True
    child = np.arange(1, m)
    parent = (child - 1) >> 1
    pp, pc, tp, tc = priorities[parent], priorities[child], ties[parent], ties[child]
    if reverse:
        return bool(np.all((pp < pc) | ((pp == pc) & (tp <= tc))))
    return bool(np.all((pp > pc) | ((pp == pc) & (tp <= tc))))


def check_entries(
    ids: ArrayLike, priorities: ArrayLike, ties: ArrayLike | None, universe: int | None, what: str
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64] | None]:
    """Validate a batch of entries; returns int64/float64 copies or raises ValueError."""
    ids_a = np.asarray(ids)
    pr_a = np.asarray(priorities)
    if ids_a.ndim != 1 or pr_a.ndim != 1 or ids_a.shape != pr_a.shape:
        raise ValueError(f"{what}: ids and priorities must be 1-D arrays of equal length")
    if ids_a.size and ids_a.dtype.kind not in "iu":
        raise ValueError(f"{what}: ids must be integers, got dtype {ids_a.dtype}")
    ids64 = ids_a.astype(np.int64)
    pr64 = pr_a.astype(np.float64)
    if np.any(np.isnan(pr64)):
        raise ValueError(f"{what}: priorities contain NaN")
    if universe is not None and ids64.size and (ids64.min() < 0 or ids64.max() >= universe):
        raise ValueError(f"{what}: ids must lie in [0, {universe})")
    ties64: NDArray[np.int64] | None = None
    if ties is not None:
        t: Any = np.asarray(ties)
        if t.shape != ids64.shape or (t.size and t.dtype.kind not in "iu"):
            raise ValueError(f"{what}: ties must be integers, one per id")
        ties64 = t.astype(np.int64)
    return ids64, pr64, ties64
