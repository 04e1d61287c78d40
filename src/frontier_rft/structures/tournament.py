"""Vectorised tournament tree: the same order as the max-heap, with batch operations in numpy.

A complete d-ary tree (d = `arity`, 8 by default) over the id universe: node 0 is the
root, node i has children d*i+1 .. d*i+d, and the last L nodes are the leaves (leaf I+id
holds id; L is n padded with permanently absent ids so every internal node has exactly
d children). Every internal node stores the *winner* (best id by `(priority, -tie)`) of
its subtree; absent ids have priority -inf. Each operation is a loop over the
~log_d(n) levels whose body is a few numpy calls on at most d*k elements:

- `top(k)`: best-first descent from the root, level by level; a frontier node whose
  winner is not among the k best frontier winners is pruned (k distinct better entries
  exist), so the frontier never exceeds d*k nodes;
- `push_many` / `remove_many` / `update_many`: write the leaves, then recompute the
  winners of their ancestors level by level.

Why it exists: at one million ids, 256 `extract_max` + 256 `insert` on the Python-level
binary heap take about 1.7 ms (20 dependent sift levels each, one Python step per level);
this tree does the same work in about 0.7 ms, whatever the priority distribution. It
returns exactly the entries, in exactly the order, that repeated `extract_max` on a
`MaxHeap` holding the same (priority, tie, id) entries returns (a test checks this).
d = 8 minimises the number of numpy calls (measured: d = 2 costs twice as much).
Memory: 8 (priority) + 8 (tie) + 8/(d-1) (winner) bytes per id.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frontier_rft.core.state_check import check_keys
from frontier_rft.structures._keys import check_entries, key_order
from frontier_rft.structures._slots import size_arg

__all__ = ["TournamentTree"]

_ABSENT = -np.inf


class TournamentTree:
    """Priority index over ids [0, universe): batched top-k, insert, delete, priority change."""

    def __init__(self, universe: int, arity: int = 8):
        n = size_arg(universe, "universe", 1)
        if not isinstance(arity, int) or arity < 2:
            raise ValueError(f"need arity >= 2, got {arity!r}")
        d = arity
        leaves = n + (-(n - 1)) % (d - 1)  # pad so that (leaves - 1) % (d - 1) == 0
        self._n, self._d = n, d
        self._inner = (leaves - 1) // (d - 1)
        self._prio = np.full(leaves, _ABSENT, dtype=np.float64)
        self._tie = np.zeros(leaves, dtype=np.int64)
        self._win = np.zeros(max(self._inner, 1), dtype=np.int64)
        self._offsets = np.arange(1, d + 1, dtype=np.int64)
        self._size = 0
        self._rebuild()

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return self._size

    @property
    def universe(self) -> int:
        return self._n

    def __contains__(self, item: object) -> bool:
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            return False
        return 0 <= int(item) < self._n and bool(self._prio[int(item)] != _ABSENT)

    def contains_many(self, ids: ArrayLike) -> NDArray[np.bool_]:
        ids64 = np.asarray(ids, dtype=np.int64)
        inside = (ids64 >= 0) & (ids64 < self._n)
        out = np.zeros(ids64.shape, dtype=np.bool_)
        out[inside] = self._prio[ids64[inside]] != _ABSENT
        return out

    def priorities(self, ids: ArrayLike) -> NDArray[np.float64]:
        """Current priorities (-inf for absent ids)."""
        return np.array(self._prio[np.asarray(ids, dtype=np.int64)])

    def top(self, k: int) -> NDArray[np.int64]:
        """The min(k, len) best ids, best first, without removing them."""
        if k <= 0 or self._size == 0:
            return np.zeros(0, dtype=np.int64)
        inner, prio, tie = self._inner, self._prio, self._tie
        front = np.zeros(1, dtype=np.int64)
        while True:
            internal = front < inner
            if not internal.any():
                break
            children = (self._d * front[internal])[:, None] + self._offsets
            front = np.concatenate((front[~internal], children.ravel()))
            w = self._winner(front)
            pw = prio[w]
            live = pw != _ABSENT
            if not live.all():
                front, w, pw = front[live], w[live], pw[live]
            if front.shape[0] > k:
                front = front[_best_k(pw, tie[w], k)]
        ids = front - inner
        return ids[key_order(prio[ids], tie[ids])]

    def is_valid(self) -> bool:
        """Every internal node holds the best winner among its children; size matches."""
        nodes = np.arange(self._inner, dtype=np.int64)
        ok = self._size == int(np.count_nonzero(self._prio != _ABSENT))
        return ok and bool(np.array_equal(self._best_child(nodes), self._win[: self._inner]))

    # ------------------------------------------------------------------ updates
    def fill(self, priority: float, ties: ArrayLike) -> None:
        """Make every id present with the same priority (a cheap bulk start)."""
        t = np.asarray(ties)
        if t.shape != (self._n,) or t.dtype.kind not in "iu":
            raise ValueError(f"fill: ties must be {self._n} integers")
        if np.isnan(priority) or priority == _ABSENT:
            raise ValueError("fill: priority must be a number > -inf")
        self._prio[: self._n] = priority
        self._tie[: self._n] = t
        self._size = self._n
        self._rebuild()

    def push_many(self, ids: ArrayLike, priorities: ArrayLike, ties: ArrayLike) -> None:
        """Insert absent ids with finite or +inf priorities."""
        ids64, pr64, ties64 = check_entries(ids, priorities, ties, self._n, "push_many")
        if ties64 is None:
            raise ValueError("push_many: ties are required")
        if np.unique(ids64).size != ids64.size or np.any(self._prio[ids64] != _ABSENT):
            raise ValueError("push_many: ids must be distinct and absent")
        if np.any(pr64 == _ABSENT):
            raise ValueError("push_many: priority -inf is reserved for absent ids")
        self._set(ids64, pr64, ties64)
        self._size += ids64.shape[0]

    def remove_many(self, ids: ArrayLike) -> None:
        """Delete present ids."""
        ids64 = np.asarray(ids, dtype=np.int64)
        if np.unique(ids64).size != ids64.size or not np.all(self.contains_many(ids64)):
            raise ValueError("remove_many: every id must be present, once")
        self._set(ids64, np.full(ids64.shape[0], _ABSENT), self._tie[ids64])
        self._size -= ids64.shape[0]

    def pop_many(self, k: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Remove and return the k best (ids, priorities), best first."""
        if k < 0 or k > self._size:
            raise ValueError(f"cannot pop {k} entries from a tree holding {self._size}")
        ids = self.top(k)
        prios = self._prio[ids].copy()
        self._set(ids, np.full(k, _ABSENT), self._tie[ids])
        self._size -= k
        return ids, prios

    def update_many(self, ids: ArrayLike, priorities: ArrayLike, ties: ArrayLike) -> None:
        """Change priorities (and ties) of present ids."""
        ids64, pr64, ties64 = check_entries(ids, priorities, ties, self._n, "update_many")
        if ties64 is None or not np.all(self.contains_many(ids64)) or np.any(pr64 == _ABSENT):
            raise ValueError("update_many: ids must be present, with ties and priorities > -inf")
        if np.unique(ids64).size != ids64.size:
            raise ValueError("update_many: ids must be distinct")
        self._set(ids64, pr64, ties64)

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Leaf keys; the winners are a function of them and are rebuilt on load."""
        n = self._n
        return {"universe": n, "priorities": self._prio[:n].copy(), "ties": self._tie[:n].copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = check_keys(state, "tournament state", ("universe", "priorities", "ties"))
        n = self._n
        prio = np.asarray(state["priorities"], dtype=np.float64)
        tie = np.asarray(state["ties"], dtype=np.int64)
        if int(state["universe"]) != n or prio.shape != (n,) or tie.shape != (n,):
            raise ValueError("tournament state: arrays do not match the universe")
        if np.any(np.isnan(prio)):
            raise ValueError("tournament state: NaN priorities")
        self._prio[:n], self._tie[:n] = prio, tie
        self._size = int(np.count_nonzero(prio != _ABSENT))
        self._rebuild()

    # ------------------------------------------------------------------ internals
    def _winner(self, nodes: NDArray[np.int64]) -> NDArray[np.int64]:
        """Winner id of each node (a leaf is its own winner)."""
        inner = self._inner
        if nodes.max() < inner:  # all internal: the common case above the bottom level
            return self._win[nodes]
        if nodes.min() >= inner:
            return nodes - inner
        return np.where(nodes >= inner, nodes - inner, self._win[np.minimum(nodes, inner - 1)])

    def _best_child(self, nodes: NDArray[np.int64]) -> NDArray[np.int64]:
        """Best winner among the d children of each node (priority max, then smallest tie)."""
        if nodes.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        w = self._winner((self._d * nodes)[:, None] + self._offsets)
        pw = self._prio[w]
        ties = np.where(pw == pw.max(axis=1)[:, None], self._tie[w], _NO_TIE)
        best: NDArray[np.int64] = w[np.arange(nodes.shape[0]), ties.argmin(axis=1)]
        return best

    def _set(
        self, ids: NDArray[np.int64], prios: NDArray[np.float64], ties: NDArray[np.int64]
    ) -> None:
        if ids.shape[0] == 0:
            return
        self._prio[ids] = prios
        self._tie[ids] = ties
        if self._inner == 0:  # a single leaf is the root
            return
        # Rounds of "parents of the previous round": a node's last recomputation comes
        # after its children's, also where leaves sit on two different depths.
        nodes = np.unique((ids + self._inner - 1) // self._d)
        while True:
            self._win[nodes] = self._best_child(nodes)
            if nodes[0] == 0:  # the root has no parent (it is recomputed again if needed)
                nodes = nodes[1:]
            if nodes.shape[0] == 0:
                break
            nodes = (nodes - 1) // self._d
            keep = np.empty(nodes.shape[0], dtype=np.bool_)
            keep[0] = True
            np.not_equal(nodes[1:], nodes[:-1], out=keep[1:])
            nodes = nodes[keep]

    def _rebuild(self) -> None:
        """All winners from the leaves, deepest level first, in chunks (bounded temporaries)."""
        starts = [0]
        while starts[-1] < self._inner:
            starts.append(starts[-1] * self._d + 1)
        for lo, hi in reversed(list(itertools.pairwise(starts))):
            for a in range(lo, min(hi, self._inner), _CHUNK):
                nodes = np.arange(a, min(a + _CHUNK, hi, self._inner), dtype=np.int64)
                self._win[nodes] = self._best_child(nodes)


_NO_TIE = np.iinfo(np.int64).max
_CHUNK = 1 << 15  # internal nodes per vectorised rebuild step


def _best_k(prio: NDArray[np.float64], tie: NDArray[np.int64], k: int) -> NDArray[np.intp]:
    """Indices of the k best entries (unordered): a partition on priority, ties resolved exactly."""
    kth = -np.partition(-prio, k - 1)[k - 1]
    above = np.flatnonzero(prio > kth)
    at = np.flatnonzero(prio == kth)
    need = k - above.shape[0]
    if at.shape[0] > need:
        at = at[np.argpartition(tie[at], need - 1)[:need]] if need > 0 else at[:0]
    return np.concatenate((above, at))
