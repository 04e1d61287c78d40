"""What a sampler around a built selector (DynamicSampling, Allocation) passes straight to it."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import Selector

__all__ = ["WrapsSelector"]


class WrapsSelector:
    """The pool, the task count, `select`, `update`, `flush` and `refresh_features` of the
    selector inside (`inner`), unchanged: a wrapper's own work is its `sample`."""

    inner: Selector

    @property
    def pool(self) -> Any:
        return self.inner.pool

    @property
    def num_tasks(self) -> int:
        return self.inner.num_tasks

    def select(self, n: int) -> NDArray[np.int64]:
        """Exactly n ids from the inner selector (none of the wrapper's sampling)."""
        return self.inner.select(n)

    def update(self, feedback: Feedback, *, idempotent: bool = False) -> None:
        """Rewards to the inner selector (sample sends its own rounds' already)."""
        self.inner.update(feedback, idempotent=idempotent)

    def flush(self) -> None:
        """Fold the inner selector's buffered feedback now (see Selector.flush)."""
        self.inner.flush()

    def refresh_features(self, features: NDArray[Any]) -> bool:
        """Refreshed features go to the inner selector (False if it reads none)."""
        return self.inner.refresh_features(features)
