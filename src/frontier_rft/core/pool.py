"""TaskPool: the tasks a selector chooses from, with the metadata each method needs."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["TaskPool"]


def _as_array(name: str, value: ArrayLike, dtype: Any, num_tasks: int, ndim: int) -> NDArray[Any]:
    try:
        arr = np.array(value, dtype=dtype, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"TaskPool.{name} could not be converted to {np.dtype(dtype)}: {exc}"
        ) from exc
    if arr.ndim != ndim or arr.shape[0] != num_tasks:
        want = f"({num_tasks},)" if ndim == 1 else f"({num_tasks}, k)"
        raise ValueError(f"TaskPool.{name} must have shape {want}, got {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"TaskPool.{name} contains NaN or inf; replace them with finite values")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class TaskPool:
    """A fixed set of `num_tasks` tasks, addressed by index, plus optional metadata.

    Each selector reads only the fields it needs and names the missing field in a
    `ValueError` when one is absent. Arrays are copied and made read-only.
    """

    num_tasks: int
    """Number of tasks; selectors return indices in [0, num_tasks)."""
    categories: NDArray[np.int64] | None = None
    """Integer category per task, shape (N,) or (N, k) for joint categories (SEC arms)."""
    difficulty: NDArray[np.float64] | None = None
    """Offline difficulty per task, larger = harder (offline, ADCL)."""
    features: NDArray[np.float64] | None = None
    """(N, d) task embeddings (BOTS kernel plug-in, frontier replay, PCL)."""
    reference_pass_rates: NDArray[np.float64] | None = None
    """(N, 2) pass rates of a weak and a strong reference model (BOTS interpolation)."""
    prompts: tuple[str, ...] | None = None
    """Prompt text per task (METIS judge prompts)."""
    keys: tuple[str, ...] | None = None
    """Canonical key per task for de-duplication (frontier replay); defaults to the index."""
    _fingerprint: str = field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        n = self.num_tasks
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
            raise ValueError(f"TaskPool.num_tasks must be a positive int, got {n!r}")
        set_ = object.__setattr__
        set_(self, "num_tasks", int(n))
        if self.categories is not None:
            cats = np.asarray(self.categories)
            arr = _as_array("categories", cats, np.int64, n, max(cats.ndim, 1))
            if arr.ndim not in (1, 2):
                raise ValueError("TaskPool.categories must have shape (N,) or (N, k)")
            if np.any(arr < 0):
                raise ValueError("TaskPool.categories must be non-negative integer labels")
            set_(self, "categories", arr)
        if self.difficulty is not None:
            set_(self, "difficulty", _as_array("difficulty", self.difficulty, np.float64, n, 1))
        if self.features is not None:
            set_(self, "features", _as_array("features", self.features, np.float64, n, 2))
        if self.reference_pass_rates is not None:
            ref = _as_array("reference_pass_rates", self.reference_pass_rates, np.float64, n, 2)
            if ref.shape[1] != 2:
                raise ValueError(
                    "TaskPool.reference_pass_rates must have shape (N, 2): "
                    "column 0 the weak model's pass rate, column 1 the strong model's"
                )
            if np.any((ref < 0) | (ref > 1)):
                raise ValueError("TaskPool.reference_pass_rates must lie in [0, 1]")
            set_(self, "reference_pass_rates", ref)
        for name in ("prompts", "keys"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
                raise ValueError(f"TaskPool.{name} must be a sequence of {n} strings")
            items = tuple(str(v) for v in value)
            if len(items) != n:
                raise ValueError(f"TaskPool.{name} has {len(items)} entries, expected {n}")
            set_(self, name, items)
        set_(self, "_fingerprint", self._compute_fingerprint())

    def require(self, name: str, selector: str, why: str = "") -> Any:
        """Return metadata field `name` or raise a ValueError telling the user to provide it."""
        value = getattr(self, name)
        if value is None:
            hint = f" ({why})" if why else ""
            raise ValueError(
                f"selector {selector!r} needs TaskPool.{name}{hint}; "
                f"construct the pool as TaskPool(num_tasks=..., {name}=...)"
            )
        return value

    @property
    def fingerprint(self) -> str:
        """A short hash of the pool's size and metadata, stored with saved selectors."""
        return self._fingerprint

    def _compute_fingerprint(self) -> str:
        h = hashlib.sha256(str(self.num_tasks).encode())
        for name in ("categories", "difficulty", "features", "reference_pass_rates"):
            arr = getattr(self, name)
            h.update(name.encode())
            if arr is not None:
                h.update(str(arr.shape).encode())
                h.update(np.ascontiguousarray(arr).tobytes())
        for name in ("prompts", "keys"):
            items = getattr(self, name)
            h.update(name.encode())
            if items is not None:
                for s in items:
                    h.update(s.encode("utf-8", "surrogatepass"))
                    h.update(b"\0")
        return h.hexdigest()[:16]

    def to_state(self) -> dict[str, Any]:
        """Arrays and strings that reconstruct this pool (used by save_selector)."""
        state: dict[str, Any] = {"num_tasks": self.num_tasks}
        for name in ("categories", "difficulty", "features", "reference_pass_rates"):
            arr = getattr(self, name)
            if arr is not None:
                state[name] = np.array(arr)
        for name in ("prompts", "keys"):
            items = getattr(self, name)
            if items is not None:
                state[name] = np.array(items, dtype=np.str_)
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TaskPool:
        """Inverse of `to_state`."""
        kwargs = dict(state)
        for name in ("prompts", "keys"):
            if name in kwargs:
                kwargs[name] = [str(s) for s in kwargs[name]]
        return cls(**kwargs)
