"""Plumbing the array-backed structures share: their size argument, and the memoryviews
their hot loops index (faster than numpy scalars), which pickling must leave out."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

__all__ = ["SlotViews", "size_arg"]


def size_arg(value: Any, name: str, lo: int) -> int:
    """`value` as an int >= lo, or a ValueError naming `name` (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        kind = "non-negative" if lo == 0 else "positive"
        raise ValueError(f"{name} must be a {kind} int, got {value!r}")
    return int(value)


class SlotViews:
    """Memoryviews of a structure's arrays, named in _VIEWS and rebuilt by `_views()`:
    memoryviews cannot be pickled, so a pickle holds the arrays and unpickling rebuilds them."""

    _VIEWS: ClassVar[tuple[str, ...]] = ()

    def _views(self) -> None:
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views()
