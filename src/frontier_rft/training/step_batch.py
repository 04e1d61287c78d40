"""One step's training rows, as the reference trainer's policy update reads them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from frontier_rft.training.backfill import ReplayRows

__all__ = ["StepBatch"]


@dataclass
class StepBatch:
    """One step's training rows as the policy update reads them, in one object as CleanRL's
    loop holds its rollout storage: row i is `completions[i]` after `prompts[i]`."""

    prompts: list[list[int]]
    completions: list[list[int]]
    advantages: torch.Tensor
    """One float32 advantage per row, on the policy's device."""
    row_weights: torch.Tensor | None
    """Per-row loss weights (group_weighting), or None: every row alike."""
    loss_scale: float
    """The surrogate's scale (FewerRollouts: normalised by uniform's batch)."""
    judge_records: Sequence[Any]
    """METIS: this step's scored judgments, for the judge loss."""
    old_logprobs: torch.Tensor | None = None
    """pi_old, the sampling policy's log-probs frozen across PPO epochs (ppo_epochs > 1)."""
    ref_logprobs: torch.Tensor | None = None
    """The frozen reference model's log-probs (the KL term)."""
    replay: ReplayRows | None = None
    """backfill: the replayed rows (after the fresh ones) and what the update hands back."""
    group_sizes: Sequence[int] = ()
    """Rows of each group, in row order (the noise meter's halves)."""
