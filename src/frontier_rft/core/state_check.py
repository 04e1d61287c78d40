"""Readers for the leaves of a state_dict that may come from an untrusted file.

Each returns a private, correctly typed copy or raises ValueError naming the field, so a
selector's `_load_state_dict` rejects a tampered state at load instead of failing later.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import MAX_STEP, bounded_int

__all__ = [
    "AttributeState",
    "check_keys",
    "decode_texts",
    "encode_texts",
    "read_array",
    "read_counts",
    "read_float",
    "read_int",
    "read_keys",
    "read_permutation",
]

_KINDS = {"b": "b", "i": "iu", "u": "iu", "f": "iuf"}  # target kind -> accepted source kinds


def read_int(state: Mapping[str, Any], key: str, who: str, lo: int = 0, hi: int = MAX_STEP) -> int:
    """state[key] as an int in [lo, hi]."""
    return bounded_int(state[key], f"{who} state: {key}", lo, hi)


def read_float(
    state: Mapping[str, Any],
    key: str,
    who: str,
    lo: float = -math.inf,
    hi: float = math.inf,
    nan: bool = True,
) -> float:
    """state[key] as a float in [lo, hi] (NaN allowed when `nan`)."""
    value = state[key]
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, int | float | np.integer | np.floating
    ):
        raise ValueError(f"{who} state: {key} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError as exc:
        raise ValueError(f"{who} state: {key} is out of range") from exc
    if math.isnan(number):
        if not nan:
            raise ValueError(f"{who} state: {key} is NaN")
    elif not lo <= number <= hi:
        raise ValueError(f"{who} state: {key} = {number} outside [{lo}, {hi}]")
    return number


class AttributeState:
    """A part whose saved state is the attributes its STATE_KEYS name: the keys are written
    once, and `state_dict` and the load's `check_keys` both read them there."""

    STATE_KEYS: ClassVar[tuple[str, ...]] = ()
    """The keys of `state_dict()`, each the name of the attribute it saves."""

    def state_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.STATE_KEYS}


def check_keys(
    value: Any, where: str, keys: Collection[str], optional: Collection[str] = ()
) -> dict[str, Any]:
    """`value` as a dict holding all of `keys`, perhaps some of `optional`, nothing else.

    For a part of a state whose keys are field names (not data): a field this version does
    not know is refused, never silently ignored. The ValueError names `where` and the
    unknown or missing keys."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be an object with keys {sorted(keys)}")
    unknown = sorted(str(k) for k in value if k not in keys and k not in optional)
    missing = sorted(k for k in keys if k not in value)
    if unknown or missing:
        problems = "; ".join(
            f"{what} {', '.join(map(repr, names))}"
            for what, names in (("unknown field(s)", unknown), ("missing", missing))
            if names
        )
        raise ValueError(
            f"{where}: {problems}; a state saved by another frontier_rft version or selector "
            "loads only with the one that saved it"
        )
    return dict(value)


def read_keys(
    state: Mapping[str, Any], key: str, who: str, keys: tuple[str, ...]
) -> dict[str, Any]:
    """state[key] as a dict holding exactly `keys`."""
    return check_keys(state[key], f"{who} state: {key}", keys)


def read_counts(
    state: Mapping[str, Any], key: str, who: str, keys: Collection[str], hi: int = MAX_STEP
) -> dict[str, int]:
    """state[key] as a dict of counters holding exactly `keys`, each an int in [0, hi]."""
    counts = check_keys(state[key], f"{who} state: {key}", keys)
    return {k: read_int(counts, k, who, hi=hi) for k in keys}


def read_array(
    state: Mapping[str, Any],
    key: str,
    who: str,
    dtype: Any,
    *,
    shape: tuple[int | None, ...] = (None,),
    lo: float | None = None,
    hi: float | None = None,
    finite: bool = False,
) -> NDArray[Any]:
    """state[key] as a fresh array of `dtype`, `shape` (None = any length), values in [lo, hi].

    The source dtype must convert without loss of meaning (ints to floats, not floats to
    ints), and range checks run before the cast so nothing wraps around; `finite` forbids
    NaN and inf.
    """
    target = np.dtype(dtype)
    arr = np.asarray(state[key])
    if arr.dtype.kind not in _KINDS[target.kind]:
        raise ValueError(f"{who} state: {key} must be {target} values, got dtype {arr.dtype}")
    if arr.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(arr.shape, shape, strict=True)
    ):
        raise ValueError(f"{who} state: {key} has shape {arr.shape}, expected {shape}")
    if arr.size and arr.dtype.kind in "iuf":
        if finite and not np.all(np.isfinite(arr)):
            raise ValueError(f"{who} state: {key} holds NaN or inf")
        real = arr[~np.isnan(arr)] if arr.dtype.kind == "f" else arr
        floor = -math.inf if lo is None else lo
        ceil = math.inf if hi is None else hi
        if target.kind in "iu":
            info = np.iinfo(target)
            floor, ceil = max(floor, info.min), min(ceil, info.max)
        if real.size and (real.min() < floor or real.max() > ceil):
            raise ValueError(f"{who} state: {key} holds values outside [{floor}, {ceil}]")
    return np.array(arr, dtype=target)


def read_permutation(
    state: Mapping[str, Any], key: str, who: str, n: int, *, allow_empty: bool = False
) -> NDArray[np.int64]:
    """state[key] as a permutation of range(n) (or an empty array when `allow_empty`)."""
    order = read_array(state, key, who, np.int64, lo=0, hi=n - 1)
    if allow_empty and order.shape == (0,):
        return order
    if order.shape != (n,) or np.any(np.bincount(order, minlength=n) != 1):
        raise ValueError(f"{who} state: {key} is not a permutation of the pool's {n} tasks")
    return order


def encode_texts(items: Sequence[str]) -> dict[str, NDArray[Any]]:
    """Strings as UTF-8 bytes plus per-item byte lengths: exact for any text (numpy's str
    arrays drop trailing NUL characters), and saved as arrays, not in the JSON header."""
    data = [item.encode("utf-8", "surrogatepass") for item in items]
    return {
        "utf8": np.frombuffer(b"".join(data), dtype=np.uint8).copy(),
        "lengths": np.array([len(d) for d in data], dtype=np.int64),
    }


def decode_texts(value: Mapping[str, Any], who: str) -> list[str]:
    """Inverse of `encode_texts`, checked; ValueError naming `who` when malformed."""
    value = check_keys(value, who, ("utf8", "lengths"))
    utf8 = read_array(value, "utf8", who, np.uint8)
    lengths = read_array(value, "lengths", who, np.int64, lo=0)
    if lengths.ndim != 1 or int(lengths.sum()) != utf8.size:
        raise ValueError(f"malformed {who}: lengths do not add up to the text")
    raw, ends = utf8.tobytes(), np.cumsum(lengths).tolist()
    try:
        return [
            raw[end - k : end].decode("utf-8", "surrogatepass")
            for end, k in zip(ends, lengths.tolist(), strict=True)
        ]
    except UnicodeDecodeError as exc:
        raise ValueError(f"malformed {who}: not UTF-8 text ({exc.reason})") from None
