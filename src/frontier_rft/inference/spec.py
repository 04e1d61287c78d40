"""Layout of the ZIP-RC-Lite reserved slice and the readouts of its joint distribution.

The head owns R x L contiguous vocabulary rows starting at `start_id`: R reward states and
L remaining-length bins, flattened as `idx = length_bin + reward_state * L` (length varies
fastest; frontier-RLOO/ZIP-RC paper, section 3.2 and appendix B.5). A softmax over the slice
is the joint p(b, l | prefix); marginals give the value `V = sum_b P(b) r_b` and the
expected remaining length `sum_l P(l) * midpoint_l`. numpy only: no torch here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

# numpy's stubs type many ndarray operations as Any; casts keep the declared returns checked
# by mypy without changing runtime values (scalars stay numpy scalars).

__all__ = [
    "BINARY_REWARDS",
    "PAPER_LENGTH_EDGES",
    "STRUCTURED_REWARDS",
    "ZipRCSpec",
    "parse_edges",
]

BINARY_REWARDS = (0.0, 1.0)
"""Binary verifier states: fail, success."""
STRUCTURED_REWARDS = (0.0, 0.1, 1.0)
"""Structured states: incoherent, coherent but wrong (Countdown's format reward), correct."""
PAPER_LENGTH_EDGES = (0, 16, 32, 64, 128, 256, 512, 1024)
"""The paper's remaining-length bin edges (L = 7 bins; the last bin is closed at 1024)."""


@dataclass(frozen=True)
class ZipRCSpec:
    """Where the joint (reward state, remaining-length bin) head lives and what it means."""

    start_id: int
    """First reserved vocabulary id (the tokenizer never emits ids in the slice)."""
    reward_values: tuple[float, ...] = BINARY_REWARDS
    """Reward r_b of each state b, increasing (binary {0,1} or structured {0,0.1,1})."""
    length_edges: tuple[int, ...] = PAPER_LENGTH_EDGES
    """Increasing bin edges of remaining tokens; bin l is [edges[l], edges[l+1]), the last
    bin also takes everything beyond its upper edge."""

    def __post_init__(self) -> None:
        if (
            isinstance(self.start_id, bool)
            or not isinstance(self.start_id, int)
            or self.start_id < 0
        ):
            raise ValueError(f"start_id must be an int >= 0, got {self.start_id!r}")
        r = _numbers(self.reward_values, "reward_values")
        e = _numbers(self.length_edges, "length_edges")
        if len(r) < 2 or any(b <= a for a, b in itertools.pairwise(r)):
            raise ValueError(
                f"reward_values must be >= 2 strictly increasing rewards, e.g. (0.0, 1.0) or "
                f"(0.0, 0.1, 1.0); got {self.reward_values!r}"
            )
        if any(v != int(v) for v in e):
            raise ValueError(f"length_edges must be whole numbers, got {self.length_edges!r}")
        e = tuple(int(v) for v in e)
        if len(e) < 2 or e[0] != 0 or any(b <= a for a, b in itertools.pairwise(e)):
            raise ValueError(
                f"length_edges must start at 0 and increase strictly (>= 2 edges = >= 1 bin), "
                f"e.g. {PAPER_LENGTH_EDGES}; got {self.length_edges!r}"
            )
        object.__setattr__(self, "reward_values", r)
        object.__setattr__(self, "length_edges", e)

    # ------------------------------------------------------------------ layout
    @property
    def num_rewards(self) -> int:
        """R: reward states."""
        return len(self.reward_values)

    @property
    def num_lengths(self) -> int:
        """L: remaining-length bins."""
        return len(self.length_edges) - 1

    @property
    def size(self) -> int:
        """R * L reserved rows."""
        return self.num_rewards * self.num_lengths

    @property
    def end_id(self) -> int:
        """One past the last reserved id."""
        return self.start_id + self.size

    @property
    def midpoints(self) -> NDArray[np.float64]:
        """Bin midpoints (edges[l] + edges[l+1]) / 2, the remaining length a bin stands for."""
        e = np.asarray(self.length_edges, dtype=np.float64)
        return (e[:-1] + e[1:]) / 2.0

    def flat_index(self, reward_state: ArrayLike, length_bin: ArrayLike) -> NDArray[np.int64]:
        """`length_bin + reward_state * L` (offsets inside the slice, not vocabulary ids)."""
        b = np.asarray(reward_state, dtype=np.int64)
        ell = np.asarray(length_bin, dtype=np.int64)
        if np.any((b < 0) | (b >= self.num_rewards)) or np.any(
            (ell < 0) | (ell >= self.num_lengths)
        ):
            raise ValueError("reward_state or length_bin outside the grid")
        return ell + b * self.num_lengths

    # ------------------------------------------------------------------ labels
    def length_bin(self, remaining: ArrayLike) -> NDArray[np.int64]:
        """Bin of each remaining-token count (>= 0; beyond the last edge -> last bin)."""
        rem = np.asarray(remaining)
        if np.any(rem < 0):
            raise ValueError("remaining lengths must be >= 0")
        idx = np.searchsorted(np.asarray(self.length_edges), rem, side="right") - 1
        return np.clip(idx, 0, self.num_lengths - 1).astype(np.int64)

    def reward_state(self, reward: ArrayLike) -> NDArray[np.int64]:
        """State of each verifier reward: the nearest reward value, except that with binary
        states only a full reward (>= the top value) counts as success (0.1 is a fail)."""
        r = np.asarray(reward, dtype=np.float64)
        values = np.asarray(self.reward_values)
        if self.num_rewards == 2:
            return cast(NDArray[np.int64], (r >= values[1] - 1e-9).astype(np.int64))
        return cast(
            NDArray[np.int64], np.abs(r[..., None] - values).argmin(axis=-1).astype(np.int64)
        )

    def sequence_labels(self, reward: float, length: int) -> NDArray[np.int64]:
        """Slice offsets to predict at each of a completion's `length` prefixes.

        Position t (t = 0 is the prompt's last token, which predicts the first completion
        token) sees `length - t` tokens still to come, t = 0 .. length - 1.
        """
        if length < 1:
            raise ValueError(f"a completion needs at least one token, got length {length}")
        remaining = length - np.arange(length)
        state = int(self.reward_state(reward))
        return self.flat_index(np.full(length, state), self.length_bin(remaining))

    # ------------------------------------------------------------------ readouts
    def joint(self, slice_logits: ArrayLike) -> NDArray[np.float64]:
        """(..., R*L) slice logits -> (..., R, L) joint probabilities (softmax over the slice)."""
        z = np.asarray(slice_logits, dtype=np.float64)
        if z.shape[-1] != self.size:
            raise ValueError(f"expected {self.size} slice logits, got {z.shape[-1]}")
        z = z - z.max(axis=-1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=-1, keepdims=True)
        return cast(
            NDArray[np.float64], p.reshape(*p.shape[:-1], self.num_rewards, self.num_lengths)
        )

    def value(self, joint: ArrayLike) -> NDArray[np.float64]:
        """V = sum_b (sum_l p(b, l)) r_b for (..., R, L) joints."""
        return cast(
            NDArray[np.float64], np.asarray(joint).sum(axis=-1) @ np.asarray(self.reward_values)
        )

    def expected_remaining(self, joint: ArrayLike) -> NDArray[np.float64]:
        """E[remaining] = sum_l (sum_b p(b, l)) * midpoint_l for (..., R, L) joints."""
        return cast(NDArray[np.float64], np.asarray(joint).sum(axis=-2) @ self.midpoints)

    def reward_marginal(self, joint: ArrayLike) -> NDArray[np.float64]:
        """(..., R) marginal over reward states."""
        return cast(NDArray[np.float64], np.asarray(joint).sum(axis=-1))

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (stored as ziprc.json next to a head checkpoint)."""
        return {
            "start_id": self.start_id,
            "reward_values": list(self.reward_values),
            "length_edges": list(self.length_edges),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ZipRCSpec:
        """Inverse of to_dict; unknown keys are an error (a typo must not pass silently)."""
        known = {"start_id", "reward_values", "length_edges"}
        if not isinstance(data, dict):
            raise ValueError(f"a ZipRCSpec is a JSON object of {sorted(known)}, got {data!r:.60}")
        if "start_id" not in data:
            raise ValueError("the ZipRCSpec has no start_id")
        extra = set(data) - known
        if extra:
            raise ValueError(f"unknown ZipRCSpec keys {sorted(extra)}; expected {sorted(known)}")
        return cls(
            start_id=data["start_id"],
            reward_values=data.get("reward_values", BINARY_REWARDS),  # checked on creation
            length_edges=data.get("length_edges", PAPER_LENGTH_EDGES),
        )


def _numbers(values: Any, name: str) -> tuple[float, ...]:
    """`values` as finite floats, or a ValueError naming the field."""
    try:
        out = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of numbers, got {values!r:.60}") from None
    if not all(math.isfinite(v) for v in out):
        raise ValueError(f"{name} must be finite numbers, got {values!r:.60}")
    return out


def parse_edges(text: str | Sequence[int]) -> tuple[int, ...]:
    """'0,4,8,16' -> (0, 4, 8, 16) (CLI helper)."""
    if isinstance(text, str):
        try:
            return tuple(int(v) for v in text.split(",") if v.strip())
        except ValueError as exc:
            raise ValueError(f"length edges must be comma-separated ints, got {text!r}") from exc
    return tuple(int(v) for v in text)
