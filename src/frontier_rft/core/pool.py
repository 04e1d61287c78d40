"""TaskPool: the tasks a selector chooses from, with the metadata each method needs."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frontier_rft.core.bounds import MAX_STEP, check_magnitude
from frontier_rft.core.state_check import decode_texts, encode_texts

__all__ = ["TaskPool"]


_ARRAY_FIELDS = ("categories", "difficulty", "features", "reference_pass_rates")
_TEXT_FIELDS = ("prompts", "keys")
_LABEL_HINT = "; map labels to ints first, e.g. np.unique(labels, return_inverse=True)[1]"


def _as_array(
    name: str, value: ArrayLike, num_tasks: int, ndims: tuple[int, ...], *, labels: bool = False
) -> NDArray[Any]:
    """A read-only int64 (labels) or float64 copy of `value`, or a ValueError naming the field.

    Only real numbers are accepted (no strings, objects or complex numbers, whose silent
    conversion would drop information); labels must be whole non-negative numbers.
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:  # e.g. ragged nested lists
        raise ValueError(f"TaskPool.{name} is not a rectangular array: {exc}") from exc
    if raw.dtype.kind not in "biuf":
        hint = _LABEL_HINT if labels and raw.dtype.kind in "USO" else ""
        raise ValueError(f"TaskPool.{name} must hold real numbers, got dtype {raw.dtype}{hint}")
    if raw.ndim not in ndims or raw.shape[0] != num_tasks or 0 in raw.shape[1:]:
        want = " or ".join(f"({num_tasks},)" if d == 1 else f"({num_tasks}, k>=1)" for d in ndims)
        raise ValueError(f"TaskPool.{name} must have shape {want}, got {raw.shape}")
    if raw.dtype.kind == "f" and not np.all(np.isfinite(raw)):
        raise ValueError(f"TaskPool.{name} contains NaN or inf; replace them with finite values")
    if labels:
        if raw.dtype.kind == "b":  # True/False are the labels 1/0, as before 2**63 was checked
            raw = raw.astype(np.int64)
        if raw.dtype.kind == "f" and np.any(raw != np.round(raw)):
            bad = float(raw[raw != np.round(raw)].flat[0])
            raise ValueError(f"TaskPool.{name} must be integer labels, got {bad!r}{_LABEL_HINT}")
        # Compare floats against the float 2**63 itself: `max > iinfo(int64).max` rounds the
        # bound up to 2.0**63 and lets exactly 2.0**63 through, which int64 stores as -2**63.
        top = 2.0**63 if raw.dtype.kind == "f" else np.iinfo(np.int64).max + 1
        if raw.size and (raw.min() < 0 or raw.max() >= top):
            raise ValueError(f"TaskPool.{name} must be non-negative integer labels below 2**63")
        arr = np.array(raw, dtype=np.int64)
    else:
        check_magnitude(raw.astype(np.float64), f"TaskPool.{name}", "rescale it (standardise)")
        arr = np.array(raw, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def _as_strings(name: str, value: Any, num_tasks: int) -> tuple[str, ...]:
    # Anything ordered with a length (list, tuple, numpy array, pandas Series, a datasets
    # column); not a string, bytes, mapping or set, whose items are not one per task in order.
    ordered = isinstance(value, Sequence | np.ndarray) or (
        hasattr(value, "__len__")
        and hasattr(value, "__iter__")
        and not isinstance(value, Mapping | Set)
    )
    if isinstance(value, str | bytes) or not ordered:
        raise ValueError(
            f"TaskPool.{name} must be a sequence of {num_tasks} strings (a list, for "
            f"example), got {type(value).__name__}"
        )
    items = tuple(value)
    if len(items) != num_tasks:
        raise ValueError(f"TaskPool.{name} has {len(items)} entries, expected {num_tasks}")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise ValueError(
                f"TaskPool.{name}[{i}] is {item!r} ({type(item).__name__}), not a string; "
                f"pass one string per task"
            )
    return tuple(str(v) for v in items)


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
    _summary: dict[str, Any] | None = field(init=False, repr=False, compare=False, default=None)

    def given(self) -> frozenset[str]:
        """The names of the metadata fields this pool holds ('prompts', 'features', ...)."""
        return frozenset(f for f in (*_ARRAY_FIELDS, *_TEXT_FIELDS) if getattr(self, f) is not None)

    def __post_init__(self) -> None:
        n = self.num_tasks
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 0 < n <= MAX_STEP:
            raise ValueError(f"TaskPool.num_tasks must be a positive int, got {n!r}")
        set_ = object.__setattr__
        set_(self, "num_tasks", int(n))
        n = int(n)
        if self.categories is not None:
            cats = _as_array("categories", self.categories, n, (1, 2), labels=True)
            set_(self, "categories", cats)
        if self.difficulty is not None:
            set_(self, "difficulty", _as_array("difficulty", self.difficulty, n, (1,)))
        if self.features is not None:
            set_(self, "features", _as_array("features", self.features, n, (2,)))
        if self.reference_pass_rates is not None:
            ref = _as_array("reference_pass_rates", self.reference_pass_rates, n, (2,))
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
            if value is not None:
                set_(self, name, _as_strings(name, value, n))
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
        for name in _ARRAY_FIELDS:
            arr = getattr(self, name)
            h.update(name.encode())
            if arr is not None:
                h.update(str(arr.shape).encode())
                h.update(np.ascontiguousarray(arr).tobytes())
        for name in _TEXT_FIELDS:
            items = getattr(self, name)
            h.update(name.encode())
            if items is not None:
                for s in items:
                    h.update(s.encode("utf-8", "surrogatepass"))
                    h.update(b"\0")
        return h.hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        """Size and a digest per metadata field (None when absent), saved with a selector's
        state so that a refusal to load it on another pool can say what differs
        (core.pool_diff). Text fields also get an order-free digest: the same prompts in
        another order (a reshuffled dataset) are told apart from other prompts."""
        if self._summary is None:
            fields: dict[str, Any] = {}
            for name in _ARRAY_FIELDS:
                arr = getattr(self, name)
                fields[name] = (
                    None
                    if arr is None
                    else {
                        "shape": list(arr.shape),
                        "digest": _digest([np.ascontiguousarray(arr)]),  # no copy
                    }
                )
            for name in _TEXT_FIELDS:
                items = getattr(self, name)
                if items is None:
                    fields[name] = None
                    continue
                raw = [s.encode("utf-8", "surrogatepass") for s in items]
                fields[name] = {
                    "digest": _digest(b + b"\0" for b in raw),
                    "unordered": _unordered_digest(raw),
                }
            summary = {"num_tasks": self.num_tasks, "fields": fields}
            object.__setattr__(self, "_summary", summary)
        assert self._summary is not None
        return copy.deepcopy(self._summary)

    def to_state(self) -> dict[str, Any]:
        """Arrays and strings that reconstruct this pool (used by save_selector)."""
        state: dict[str, Any] = {"num_tasks": self.num_tasks}
        for name in ("categories", "difficulty", "features", "reference_pass_rates"):
            arr = getattr(self, name)
            if arr is not None:
                state[name] = np.array(arr)
        for name in _TEXT_FIELDS:
            items = getattr(self, name)
            if items is not None:
                state[name] = encode_texts(items)
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TaskPool:
        """Inverse of `to_state`; every field is validated as in the constructor."""
        allowed = {"num_tasks", *_ARRAY_FIELDS, *_TEXT_FIELDS}
        unknown = sorted(set(state) - allowed)
        if unknown or "num_tasks" not in state:
            raise ValueError(f"malformed TaskPool state (fields {sorted(state)})")
        fields = {k: _decode_text(k, v) if k in _TEXT_FIELDS else v for k, v in state.items()}
        return cls(**fields)


def _digest(chunks: Iterable[Any]) -> str:
    """16 hex digits of the SHA-256 of the chunks (bytes, or C-contiguous arrays, read in
    place)."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()[:16]


def _unordered_digest(items: Sequence[bytes]) -> str:
    """The same for any order of the items: the sum of their 64-bit hashes, mod 2**64."""
    total = 0
    for item in items:
        total += int.from_bytes(hashlib.blake2b(item, digest_size=8).digest(), "little")
    return f"{total % 2**64:016x}"


def _decode_text(name: str, value: Any) -> Any:
    if not isinstance(value, dict):
        return value  # files written before the UTF-8 layout: an array of str
    return decode_texts(value, f"TaskPool.{name}")
