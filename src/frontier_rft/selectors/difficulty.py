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
from numpy.typing import NDArray

from frontier_rft.core.state_check import read_array
from frontier_rft.selectors.ridge import OnlineRidge

__all__ = ["ObservedDifficulty"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


class ObservedDifficulty:
    """1 - (first observed pass rate, else the features' predicted pass rate), per task."""

    def __init__(self, features: F64):
        self.features = features
        self.first = np.full(features.shape[0], np.nan)
        self.model = OnlineRidge(features.shape[1], ridge=1.0, forgetting=1.0)
        self.changed = False
        """Set when an observation arrived since the last `difficulty` call that cleared it."""

    def refresh_features(self, features: F64) -> None:
        """Predict from new features of the same dimension (the regression is kept)."""
        if features.shape[1] != self.features.shape[1]:
            raise ValueError(
                f"refreshed features have {features.shape[1]} columns, the difficulty "
                f"regression {self.features.shape[1]}; keep the dimension"
            )
        self.features = features
        self.changed = True

    @property
    def observed(self) -> int:
        return int(np.count_nonzero(~np.isnan(self.first)))

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
        return {"first": self.first, "model": self.model.state_dict(), "changed": self.changed}

    def load_state_dict(self, state: dict[str, Any], who: str) -> None:
        first = read_array(state, "first", who, np.float64, shape=self.first.shape, lo=0, hi=1)
        changed = state["changed"]
        if not isinstance(changed, bool):
            raise ValueError(f"{who} state: changed must be true or false")
        self.model.load_state_dict(state["model"], who)
        self.first, self.changed = first, changed
