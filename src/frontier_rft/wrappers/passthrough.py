"""What a sampler around a built selector (DynamicSampling, Allocation) passes straight to it."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import MAX_SEED, Selector

__all__ = ["WrapsSelector", "checked_wrapper_args"]


def checked_wrapper_args(
    wrapper: str, example: str, selector: Any, config: Any, config_type: type, seed: Any
) -> tuple[Any, int]:
    """A seeded wrapper's arguments checked: `selector` built, `config` of `config_type`
    (None: its defaults), `seed` an int in [0, 2**256) (None: the selector's). Returns
    (config, seed); a ValueError naming the problem otherwise."""
    if not isinstance(selector, Selector):
        raise ValueError(
            f"{wrapper} wraps a built selector, e.g. "
            f"{wrapper}(make_selector('{example}', pool)); got {type(selector).__name__}"
        )
    config = config_type() if config is None else config
    if not isinstance(config, config_type):
        article = "an" if config_type.__name__[0] in "AEIOU" else "a"
        raise ValueError(
            f"config must be {article} {config_type.__name__}, got {type(config).__name__}"
        )
    seed = selector.seed if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be an int in [0, 2**256) or None, got {seed!r}")
    return config, int(seed)


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
