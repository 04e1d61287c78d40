"""`Sampling`: how completions are drawn, as one value the trainer, evaluation and
inference pass around; free of torch, so a configuration can be checked before any model
library loads."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MIN_TEMPERATURE", "Sampling", "temperature_problem"]

MIN_TEMPERATURE = 1e-6
"""Smallest positive temperature. Sampling and the loss divide float32 logits by it: a
language model's logits stay far below 1e4 in magnitude, so logits / T stays below 1e10
and its gradient's 1/T factor below 1e6, both far from float32's 3.4e38. Below it (1e-300
reaches inf) the quotient overflows and sampling fails after the model has loaded; for
(near-)greedy decoding use 0."""


def temperature_problem(value: object, *, zero_refused: str = "") -> str | None:
    """Why `value` is no sampling temperature, in the one wording every command uses, or
    None when it is one: a finite number >= MIN_TEMPERATURE, or 0 (greedy) unless
    `zero_refused` says why a caller cannot decode greedily (training divides by it)."""
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value >= MIN_TEMPERATURE or (not zero_refused and value == 0))
    ):
        return None
    zero = "" if zero_refused else "0 (greedy) or "
    why = f"; not 0: {zero_refused}" if zero_refused and value == 0 else ""
    return (
        f"temperature must be {zero}a finite number >= {MIN_TEMPERATURE:g} (smaller ones "
        f"overflow logits / temperature), got {value!r}{why}"
    )


@dataclass(frozen=True)
class Sampling:
    """How completions are drawn: how many per prompt, how long, from which distribution."""

    samples: int
    """Completions per prompt."""
    max_new_tokens: int
    """Longest completion, in tokens (a completion also ends at its first EOS)."""
    temperature: float = 1.0
    """Softmax temperature, at least MIN_TEMPERATURE; 0 is greedy (every sample of a prompt
    is then the same)."""
    top_p: float = 1.0
    """Nucleus mass sampled from; 1.0 is the full vocabulary."""

    def __post_init__(self) -> None:
        if self.samples < 1 or self.max_new_tokens < 1:
            raise ValueError(
                f"samples and max_new_tokens must be >= 1, got {self.samples}, "
                f"{self.max_new_tokens}"
            )
        problem = temperature_problem(self.temperature)
        if problem is not None:  # before any model loads: a CLI builds Sampling first
            raise ValueError(problem)
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must lie in (0, 1] (1.0 = no truncation), got {self.top_p!r}")
