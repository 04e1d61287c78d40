"""The live decoder's settings (torch-free, so the CLI can describe them without torch)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.lm.decoding import temperature_problem

__all__ = ["CHECK_MODES", "POLICIES", "TINY_COUNTDOWN", "UTILITY_NORMS", "DecoderConfig"]

POLICIES = ("none", "prune", "early_stop", "utility")
UTILITY_NORMS = ("prompt", "max_new_tokens")
CHECK_MODES = ("all", "selected", "off")


def _int_at_least(name: str, value: object, low: int) -> None:
    check(
        isinstance(value, int) and not isinstance(value, bool) and value >= low,
        f"{name} must be an int >= {low}, got {value!r}",
    )


def _unit(name: str, value: object) -> None:
    check(
        isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0,
        f"{name} must be a number in [0, 1], got {value!r}",
    )


@dataclass(frozen=True)
class DecoderConfig:
    """The live decoder: K, sampling, the meta-policy and its schedule (paper defaults)."""

    k: int = 8
    """K: parallel samples per prompt."""
    max_new_tokens: int = 1024
    """Longest completion; a sample reaching it stops (and is still a candidate)."""
    temperature: float = 1.0
    """Sampling temperature (pure sampling: no top-k, no top-p)."""
    policy: str = "none"
    """Meta-policy: none (best-of-N), prune, early_stop or utility."""
    warmup: int = 128
    """Decode steps before any policy may act (paper 128; tiny Countdown preset 4)."""
    interval: int = 32
    """prune/utility act at steps warmup, warmup+interval, ... (paper 32; tiny preset 2)."""
    k_min: int = 2
    """prune keeps at least this many samples active (the highest-valued ones)."""
    smoothing: int = 4
    """Policies read each sample's value averaged over its last this-many positions."""
    end_window: int = 16
    """value_end, the selection signal, is the mean value over this many last positions."""
    prune_threshold: float = 0.5
    """prune abandons active samples whose smoothed value is below this."""
    tau: float = 0.8
    """early_stop commits once the best smoothed value reaches this (paper sweeps 0.7-0.95)."""
    beta: float = 0.02
    """utility's price of normalised expected remaining tokens (paper sweeps 0.002-0.1)."""
    utility_norm: str = "prompt"
    """l_max of utility's cost E[l_j]/l_max: prompt = the head's predicted total length at
    the prompt (per-prompt normalisation, as the paper), max_new_tokens = the length cap."""
    stop_ids: tuple[int, ...] = ()
    """Token ids that end a sample besides the model's EOS (e.g. the id of '</answer>')."""
    check_values: str = "all"
    """Compare live values with teacher-forced scoring: all samples, the selected one, off."""
    value_tolerance: float = 1e-4
    """Largest |live - offline| value difference tolerated before decode raises."""

    def __post_init__(self) -> None:
        check_field_types(self)  # types and finiteness first: inf would pass '> 0' below
        _int_at_least("k", self.k, 1)
        _int_at_least("max_new_tokens", self.max_new_tokens, 1)
        problem = temperature_problem(
            self.temperature, zero_refused="pure sampling; K greedy samples would be identical"
        )
        check(problem is None, problem or "")
        check_choice("policy", self.policy, POLICIES)
        _int_at_least("warmup", self.warmup, 1)  # step 0 is the prompt: every sample equal
        _int_at_least("interval", self.interval, 1)
        _int_at_least("k_min", self.k_min, 1)
        check(self.k_min <= self.k, f"k_min ({self.k_min}) must not exceed k ({self.k})")
        _int_at_least("smoothing", self.smoothing, 1)
        _int_at_least("end_window", self.end_window, 1)
        _unit("prune_threshold", self.prune_threshold)
        _unit("tau", self.tau)
        check(
            isinstance(self.beta, (int, float)) and not isinstance(self.beta, bool)
            and self.beta >= 0,
            f"beta must be a number >= 0 (paper sweeps 0.002..0.1), got {self.beta!r}",
        )  # fmt: skip
        check_choice("utility_norm", self.utility_norm, UTILITY_NORMS)
        check(
            isinstance(self.stop_ids, tuple)
            and all(isinstance(s, int) and s >= 0 for s in self.stop_ids),
            f"stop_ids must be a tuple of token ids >= 0, got {self.stop_ids!r}",
        )
        check_choice("check_values", self.check_values, CHECK_MODES)
        check(
            isinstance(self.value_tolerance, (int, float)) and self.value_tolerance > 0,
            f"value_tolerance must be > 0, got {self.value_tolerance!r}",
        )

    @property
    def label(self) -> str:
        """Short name of the operating point, e.g. 'early_stop tau=0.8' or 'prune thr=0.5'."""
        if self.policy == "prune":
            return f"prune thr={self.prune_threshold:g}"
        if self.policy == "early_stop":
            return f"early_stop tau={self.tau:g}"
        if self.policy == "utility":
            return f"utility beta={self.beta:g}"
        return self.policy

    def replace(self, **changes: Any) -> DecoderConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


TINY_COUNTDOWN = DecoderConfig(max_new_tokens=40, warmup=4, interval=2, end_window=4)
"""The paper's decoder scaled to the tiny Countdown policy. The paper's completions are a
few hundred tokens (warmup 128 is about a quarter of one, interval 32 about a sixteenth, the
16-position end window its last few percent); the tiny model's are 10-24 tokens ('<answer>'
alone is 3), so warmup 4 acts right after the first operand, interval 2 every second token,
and value_end averages the last 4 positions: those that have seen the whole expression
('</answer>' and EOS are 4 tokens), where 16 would average the whole completion. 40 is the
policy's training length cap."""
