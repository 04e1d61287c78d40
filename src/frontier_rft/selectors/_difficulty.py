"""Difficulty estimated during training, for curricula given no offline difficulty.

Offline curricula order tasks by the base policy's difficulty. Without an offline score,
the nearest thing is the pass rate the policy showed the first time a task was rolled
out, early in training; tasks not yet rolled out get the pass rate an online ridge
regression predicts from their features (given, or derived from the prompt text), fitted
on those first observations. Before any feedback every task ties at 0.5.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.state_check import check_keys, read_array, read_int
from frontier_rft.selectors._ridge import OnlineRidge

__all__ = ["ObservedDifficulty"]

RESORT_GROWTH = 0.1
"""Early re-sorts: once first observations grew by this fraction (see `due`)."""


class ObservedDifficulty:
    """1 - (first observed pass rate, else the features' predicted pass rate), per task."""

    def __init__(self, features: F64):
        self.features = features
        self.first = np.full(features.shape[0], np.nan)
        self.model = OnlineRidge(features.shape[1], ridge=1.0, forgetting=1.0)
        self.changed = False
        """Set when an observation arrived since the last `difficulty` call that cleared it."""
        self.sorted_at = 0
        """First observations when the estimate was last used to re-sort (`mark_sorted`);
        -1: re-sort at the next check (new features)."""

    def refresh_features(self, features: F64) -> None:
        """Predict from new features of the same dimension (the regression is kept)."""
        if features.shape[1] != self.features.shape[1]:
            raise ValueError(
                f"refreshed features have {features.shape[1]} columns, the difficulty "
                f"regression {self.features.shape[1]}; keep the dimension"
            )
        self.features = features
        self.changed = True
        self.sorted_at = -1  # new features: the next `due` check re-sorts

    @property
    def observed(self) -> int:
        return int(np.count_nonzero(~np.isnan(self.first)))

    def due(self, most: float) -> bool:
        """Whether to re-sort: something changed, and the new first observations since the
        last re-sort reach `most` or, if fewer, RESORT_GROWTH of those at the last re-sort,
        or every task has now been observed (the final estimate).

        Early in training the estimate changes fast and is re-sorted often (geometrically
        growing gaps); later at most every `most` observations, so a pool of N tasks is
        re-sorted O(log(most) + N / most) times per epoch instead of at every step."""
        if not self.changed:
            return False
        if self.sorted_at < 0 or self.observed == self.first.shape[0]:
            return True
        return self.observed - self.sorted_at >= min(most, RESORT_GROWTH * self.sorted_at)

    def mark_sorted(self) -> None:
        """The estimate has just been used to re-sort."""
        self.changed = False
        self.sorted_at = self.observed

    def observe(self, ids: I64, rates: F64) -> None:
        """Record the first pass rate of tasks seen for the first time."""
        new = np.isnan(self.first[ids])
        if not new.any():
            return
        ids, rates = ids[new], rates[new]
        ids, at = np.unique(ids, return_index=True)
        self.first[ids] = np.clip(rates[at], 0.0, 1.0)
        self.model.observe(self.features[ids], self.first[ids])
        self.changed = True

    def difficulty(self, ids: I64) -> F64:
        """Estimated difficulty in [0, 1] of `ids` (larger = harder)."""
        rate = self.first[ids]
        unseen = np.isnan(rate)
        if unseen.any():
            guess = self.model.predict(self.features[ids[unseen]]) if self.model.batches else 0.5
            rate[unseen] = np.clip(guess, 0.0, 1.0)
        out: F64 = 1.0 - rate
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "model": self.model.state_dict(),
            "changed": self.changed,
            "sorted_at": self.sorted_at,
        }

    def load_state_dict(self, state: dict[str, Any], who: str) -> None:
        keys = ("first", "model", "changed")
        state = check_keys(state, f"{who} state: estimated", keys, optional=("sorted_at",))
        first = read_array(state, "first", who, np.float64, shape=self.first.shape, lo=0, hi=1)
        changed = state["changed"]
        if not isinstance(changed, bool):
            raise ValueError(f"{who} state: changed must be true or false")
        # Saves from before the re-sort schedule lack it: re-sort at the next change.
        n = self.first.shape[0]
        sorted_at = read_int(state, "sorted_at", who, lo=-1, hi=n) if "sorted_at" in state else -1
        self.model.load_state_dict(state["model"], who)
        self.first, self.changed, self.sorted_at = first, changed, sorted_at
