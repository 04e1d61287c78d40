"""Task-structured Countdown embeddings and canonical keys (frontier replay, paper App. B.2-B.3).

Countdown prompts share one text template, so the paper embeds the arithmetic instance
instead of the wording. Pass the result as `TaskPool(features=..., keys=...)`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "COUNTDOWN_DIM",
    "COUNTDOWN_MAX_NUMBERS",
    "countdown_embedding",
    "countdown_features",
    "countdown_key",
    "countdown_keys",
]

COUNTDOWN_MAX_NUMBERS = 4
"""Slots for the sorted allowed numbers; countdown_tasks_3to4 has at most four."""
COUNTDOWN_DIM = 14
"""Length of the paper's feature vector phi(x)."""


def _padded(numbers: Sequence[ArrayLike] | NDArray[np.float64]) -> NDArray[np.float64]:
    """(P, 4) array of allowed numbers, NaN where a prompt has fewer than four."""
    if isinstance(numbers, np.ndarray) and numbers.ndim == 2:
        arr = np.asarray(numbers, dtype=np.float64)
        if arr.shape[1] > COUNTDOWN_MAX_NUMBERS:
            raise ValueError(
                f"countdown numbers: at most {COUNTDOWN_MAX_NUMBERS} per prompt, "
                f"got {arr.shape[1]} columns"
            )
        out = np.full((arr.shape[0], COUNTDOWN_MAX_NUMBERS), np.nan)
        out[:, : arr.shape[1]] = arr
        return out
    rows = [np.asarray(row, dtype=np.float64).ravel() for row in numbers]
    out = np.full((len(rows), COUNTDOWN_MAX_NUMBERS), np.nan)
    for i, row in enumerate(rows):  # data preparation, once per bank
        if not 1 <= row.size <= COUNTDOWN_MAX_NUMBERS:
            raise ValueError(
                f"countdown numbers: prompt {i} has {row.size} numbers; "
                f"expected 1 to {COUNTDOWN_MAX_NUMBERS}"
            )
        out[i, : row.size] = row
    return out


def countdown_features(
    numbers: Sequence[ArrayLike] | NDArray[np.float64],
    targets: ArrayLike,
    *,
    normalize: bool = True,
) -> NDArray[np.float64]:
    """(P, 14) embeddings of P Countdown prompts, the paper's phi(x) (App. B.2).

    phi = [t/100, n/4, min/100, max/100, mean/100, std/100, S/300, (S-t)/300, |S-t|/300,
    mean parity, a~1/100 .. a~4/100], with S the sum, std the population std (ddof=0),
    parity the share of odd numbers, and a~ the numbers sorted ascending and zero-padded
    at the end to four slots. With `normalize` (default) each row is divided by its L2 norm,
    e = phi / ||phi||, so dot products are cosine similarities.

    `numbers` is a list of 1-4 numbers per prompt, or a (P, k<=4) array with NaN padding.
    """
    vals = _padded(numbers)
    t = np.asarray(targets, dtype=np.float64).ravel()
    if t.shape[0] != vals.shape[0]:
        raise ValueError(f"countdown targets: {t.shape[0]} targets for {vals.shape[0]} prompts")
    present = ~np.isnan(vals)
    n = present.sum(axis=1)
    if np.any(n == 0):
        raise ValueError("countdown numbers: every prompt needs at least one allowed number")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(vals[present]))):
        raise ValueError("countdown numbers and targets must be finite")
    zeros = np.where(present, vals, 0.0)
    total = zeros.sum(axis=1)
    mean = total / n
    var = np.where(present, (vals - mean[:, None]) ** 2, 0.0).sum(axis=1) / n
    odd = np.where(present, np.mod(vals, 2) == 1, False).sum(axis=1) / n
    # NaN sorts last, so the ascending values fill the first n slots; padding is 0.
    sorted_vals = np.nan_to_num(np.sort(vals, axis=1), nan=0.0)
    phi = np.column_stack(
        [
            t / 100,
            n / COUNTDOWN_MAX_NUMBERS,
            np.nanmin(vals, axis=1) / 100,
            np.nanmax(vals, axis=1) / 100,
            mean / 100,
            np.sqrt(var) / 100,
            total / 300,
            (total - t) / 300,
            np.abs(total - t) / 300,
            odd,
            sorted_vals / 100,
        ]
    )
    if normalize:
        norms = np.linalg.norm(phi, axis=1, keepdims=True)
        phi = phi / np.where(norms > 0, norms, 1.0)
    return phi


def countdown_embedding(
    numbers: ArrayLike, target: float, *, normalize: bool = True
) -> NDArray[np.float64]:
    """The 14-d embedding of one Countdown prompt (see `countdown_features`)."""
    row: NDArray[np.float64] = countdown_features([numbers], [target], normalize=normalize)[0]
    return row


def countdown_key(numbers: ArrayLike, target: float) -> str:
    """Canonical key k(x) = (t, sort(a)): same target and multiset of numbers, same key."""
    vals = np.sort(np.asarray(numbers, dtype=np.float64).ravel())
    fmt = [f"{v:g}" for v in vals]
    return f"{float(target):g}|" + ",".join(fmt)


def countdown_keys(numbers: Sequence[ArrayLike], targets: ArrayLike) -> list[str]:
    """`countdown_key` of every prompt, ready for `TaskPool(keys=...)`."""
    t = np.asarray(targets, dtype=np.float64).ravel()
    if t.shape[0] != len(numbers):
        raise ValueError(f"countdown targets: {t.shape[0]} targets for {len(numbers)} prompts")
    return [countdown_key(a, float(x)) for a, x in zip(numbers, t, strict=True)]
