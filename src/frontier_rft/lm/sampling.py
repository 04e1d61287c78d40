"""`Sampling`: how completions are drawn, as one value the trainer, evaluation and
inference pass around; free of torch, so a configuration can be checked before any model
library loads."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Sampling"]


@dataclass(frozen=True)
class Sampling:
    """How completions are drawn: how many per prompt, how long, from which distribution."""

    samples: int
    """Completions per prompt."""
    max_new_tokens: int
    """Longest completion, in tokens (a completion also ends at its first EOS)."""
    temperature: float = 1.0
    """Softmax temperature; 0 is greedy (every sample of a prompt is then the same)."""
    top_p: float = 1.0
    """Nucleus mass sampled from; 1.0 is the full vocabulary."""

    def __post_init__(self) -> None:
        if self.samples < 1 or self.max_new_tokens < 1:
            raise ValueError(
                f"samples and max_new_tokens must be >= 1, got {self.samples}, "
                f"{self.max_new_tokens}"
            )
        if not self.temperature >= 0.0:  # also refuses NaN
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must lie in (0, 1] (1.0 = no truncation), got {self.top_p!r}")
