"""Uniform sampling without replacement within an epoch: the baseline every paper compares to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import SelectorConfig
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_int, read_permutation

__all__ = ["UniformConfig", "UniformSelector"]


@dataclass(frozen=True)
class UniformConfig(SelectorConfig):
    """Uniform has no hyperparameters beyond the shared ones."""


class UniformSelector(Selector):
    """Walks a fresh random permutation of the pool each epoch; ignores feedback.

    A batch that straddles an epoch boundary takes the rest of the old permutation and
    tops up from the new one, skipping ids already in the batch.
    """

    name = "uniform"
    needs = Needs("nothing", "nothing to derive", "nothing")
    cost = Cost("sublinear", "O(B)", "walks a permutation; an O(N) reshuffle once per epoch")
    color = "#3a3a3a"  # dark grey: the usual baseline (reporting's BASELINE_COLOR)
    config_class = UniformConfig

    def __init__(self, pool: TaskPool, config: UniformConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        self._order = np.zeros(0, dtype=np.int64)
        self._cursor = 0
        self.epoch = 0

    def _select(self, n: int) -> NDArray[np.int64]:
        head = self._order[self._cursor : self._cursor + n]
        self._cursor += head.shape[0]
        if head.shape[0] == n:
            return head
        self._order = self.rng.permutation(self.num_tasks).astype(np.int64)
        self.epoch += 1
        fresh = self._order[~np.isin(self._order, head)][: n - head.shape[0]]
        # Ids taken early from the new permutation are moved to its front so they are
        # not handed out twice in this epoch.
        rest = self._order[~np.isin(self._order, fresh)]
        self._order = np.concatenate([fresh, rest])
        self._cursor = fresh.shape[0]
        return np.concatenate([head, fresh])

    def _observe(self, batch: GroupBatch) -> None:
        pass

    def _state_dict(self) -> dict[str, Any]:
        return {"order": self._order, "cursor": self._cursor, "epoch": self.epoch}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        who = self.name
        order = read_permutation(state, "order", who, self.num_tasks, allow_empty=True)
        cursor = read_int(state, "cursor", who, hi=order.shape[0])
        self._order, self._cursor, self.epoch = order, cursor, read_int(state, "epoch", who)

    def _metrics(self) -> dict[str, float]:
        return {"epoch": float(self.epoch)}
