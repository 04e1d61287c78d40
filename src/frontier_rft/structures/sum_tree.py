"""Sum-tree over ids [0, n): priority-proportional sampling (the paper's section 4.2 alternative).

Layout as in `TournamentTree`: node 1 is the root, node i has children 2i and 2i+1, leaves
are nodes n..2n-1 (leaf n+id holds the weight of id). Internal nodes hold the sum of
their children and are *recomputed* from them on every update (never adjusted by deltas),
so they never drift and an all-zero subtree sums to exactly 0. Sampling descends all k
draws together, one vectorised step per level. 16 bytes per id.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frontier_rft.core.state_check import check_keys
from frontier_rft.structures._slots import size_arg

__all__ = ["SumTree"]


class SumTree:
    """Non-negative weights per id with O(log n) batched update and proportional sampling."""

    def __init__(self, universe: int):
        self._n = size_arg(universe, "universe", 1)
        self._tree = np.zeros(2 * self._n, dtype=np.float64)

    @property
    def universe(self) -> int:
        return self._n

    def total(self) -> float:
        """Sum of all weights (the root)."""
        return float(self._tree[1])  # node 1 is the root, or the only leaf when n == 1

    def values(self, ids: ArrayLike | None = None) -> NDArray[np.float64]:
        """Copies of the weights of `ids` (all ids when None)."""
        leaves = self._tree[self._n :]
        return np.array(leaves if ids is None else leaves[np.asarray(ids, dtype=np.int64)])

    def is_valid(self) -> bool:
        """Every internal node equals the sum of its two children."""
        nodes = np.arange(1, self._n)
        t = self._tree
        return bool(np.array_equal(t[nodes], t[2 * nodes] + t[2 * nodes + 1]))

    def update(self, ids: ArrayLike, values: ArrayLike) -> None:
        """Set the weights of distinct ids (finite, >= 0) and recompute their ancestors."""
        ids64 = np.asarray(ids, dtype=np.int64).reshape(-1)
        vals = np.asarray(values, dtype=np.float64).reshape(-1)
        if ids64.shape != vals.shape:
            raise ValueError("update: ids and values must have equal length")
        if ids64.size and (ids64.min() < 0 or ids64.max() >= self._n):
            raise ValueError(f"update: ids must lie in [0, {self._n})")
        if not np.all(np.isfinite(vals)) or np.any(vals < 0):
            raise ValueError("update: weights must be finite and non-negative")
        if np.unique(ids64).size != ids64.size:
            raise ValueError("update: ids must be distinct")
        self._set(ids64, vals)

    def sample(self, k: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """k ids drawn independently (with replacement), P(id) = weight / total."""
        if self.total() <= 0:
            raise ValueError("sample: all weights are zero")
        return self._descend(rng.random(k) * self.total())

    def take(self, k: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """Successive sampling without replacement; the taken ids' weights are set to 0.

        Equivalent to drawing one id proportionally, removing it, and repeating: each
        round draws the missing number of ids independently and keeps first occurrences
        in draw order (duplicates and repeats are rejections), then zeroes the kept ones.
        """
        if k < 0:
            raise ValueError(f"take: k must be non-negative, got {k}")
        chosen: list[NDArray[np.int64]] = []
        weights = np.zeros(0, dtype=np.float64)
        got = 0
        while got < k:
            if self.total() <= 0:  # fewer than k positive weights: undo, then refuse
                done = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
                self._set(done, weights[: done.shape[0]])
                raise ValueError(f"take: asked for {k} ids but only {got} have positive weight")
            draw = self._descend(rng.random(k - got) * self.total())
            _, first = np.unique(draw, return_index=True)
            fresh = draw[np.sort(first)]
            chosen.append(fresh)
            weights = np.concatenate((weights, self._tree[fresh + self._n]))
            got += fresh.shape[0]
            self._set(fresh, np.zeros(fresh.shape[0]))
        return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)

    def state_dict(self) -> dict[str, Any]:
        """Leaf weights; internal sums are rebuilt on load."""
        return {"universe": self._n, "weights": self._tree[self._n :].copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = check_keys(state, "sum-tree state", ("universe", "weights"))
        w = np.asarray(state["weights"], dtype=np.float64)
        if int(state["universe"]) != self._n or w.shape != (self._n,):
            raise ValueError("sum-tree state: weights do not match the universe")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("sum-tree state: weights must be finite and non-negative")
        tree = np.zeros(2 * self._n, dtype=np.float64)
        tree[self._n :] = w
        self._tree = tree
        self._rebuild()

    # ------------------------------------------------------------------ internals
    def _descend(self, u: NDArray[np.float64]) -> NDArray[np.int64]:
        n, t = self._n, self._tree
        node = np.ones(u.shape[0], dtype=np.int64)
        inner = node < n
        while inner.any():
            idx = np.flatnonzero(inner)
            left = 2 * node[idx]
            lv, rv = t[left], t[left + 1]
            uu = u[idx]
            # Go right when u falls past the left mass and the right side has weight, or
            # when the left side is empty: a draw never ends on a zero-weight leaf.
            right = ((uu >= lv) & (rv > 0)) | (lv <= 0)
            u[idx] = np.where(right, uu - lv, uu)
            node[idx] = left + right
            inner[idx] = node[idx] < n
        return node - n

    def _set(self, ids: NDArray[np.int64], vals: NDArray[np.float64]) -> None:
        if ids.shape[0] == 0:
            return
        n, t = self._n, self._tree
        t[ids + n] = vals
        nodes = np.unique((ids + n) >> 1)
        while nodes.shape[0] and nodes[-1] > 0:
            if nodes[0] == 0:
                nodes = nodes[1:]
            t[nodes] = t[2 * nodes] + t[2 * nodes + 1]
            nodes = nodes >> 1
            keep = np.empty(nodes.shape[0], dtype=np.bool_)
            keep[0] = True
            np.not_equal(nodes[1:], nodes[:-1], out=keep[1:])
            nodes = nodes[keep]

    def _rebuild(self) -> None:
        """Internal sums level by level; a level's children are one contiguous slice."""
        n, t = self._n, self._tree
        for level in range((n - 1).bit_length(), 0, -1):
            lo, hi = 1 << (level - 1), min(1 << level, n)
            if lo < hi:
                np.add(t[2 * lo : 2 * hi : 2], t[2 * lo + 1 : 2 * hi + 1 : 2], out=t[lo:hi])

    def fill(self, value: float) -> None:
        """Give every id the same weight."""
        if not np.isfinite(value) or value < 0:
            raise ValueError("fill: weight must be finite and non-negative")
        self._tree[self._n :] = value
        self._rebuild()
