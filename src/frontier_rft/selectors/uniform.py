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
from frontier_rft.structures.epoch_walk import EpochWalk

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
    passes_over = False  # its window is uniform's step, whole

    def __init__(self, pool: TaskPool, config: UniformConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        self._walk = EpochWalk(pool.num_tasks)

    @property
    def epoch(self) -> int:
        """Permutations started so far (the first epoch is 1)."""
        return self._walk.epoch

    def _select(self, n: int) -> NDArray[np.int64]:
        return self._walk.take(n, self.rng)

    def _select_window(self, positions: int) -> NDArray[np.int64]:
        return self._walk.take(positions, self.rng)  # uniform passes over nothing

    def _passes_walked(self) -> float:
        return self._walk.progress

    def _keeps(self, ids: NDArray[np.int64]) -> NDArray[np.bool_]:
        return self._walk.walk_beside(ids, self.rng, _take_all)  # passes over nothing

    def _observe(self, batch: GroupBatch) -> None:
        pass

    def _state_dict(self) -> dict[str, Any]:
        return self._walk.state_dict()  # flat: "order", "cursor", "epoch"

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        walk = EpochWalk(self.num_tasks)
        walk.load_state_dict(state, self.name)
        self._walk = walk

    def _metrics(self) -> dict[str, float]:
        return {"epoch": float(self.epoch)}


def _take_all(ids: NDArray[np.int64]) -> NDArray[np.bool_]:
    return np.ones(ids.shape[0], dtype=np.bool_)
