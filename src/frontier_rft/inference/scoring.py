"""Teacher-forced (offline) readout of the ZIP-RC-Lite head along given completions.

Position t of a completion (t = 0 .. T-1) is the forward pass on the prompt plus the first t
completion tokens: the one that sampled token t. The live decoder reads the head at exactly
these passes, so offline and live values of one sequence must agree (an invariant the
decoder checks on every run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from frontier_rft.inference.head import readout
from frontier_rft.inference.spec import ZipRCSpec
from frontier_rft.lm.rollout import right_padded

__all__ = ["END_WINDOW", "SequenceReadout", "score_sequences", "value_end"]

END_WINDOW = 16
"""value_end averages the value over this many last response positions (paper: 16)."""


@dataclass
class SequenceReadout:
    """Head readouts at every position of one completion."""

    values: np.ndarray
    """(T,) V at positions 0..T-1 (position 0 = the prompt itself)."""
    remaining: np.ndarray
    """(T,) expected remaining tokens at the same positions."""

    @property
    def prompt_value(self) -> float:
        """V before any completion token: the head's per-prompt difficulty estimate."""
        return float(self.values[0])


def value_end(values: np.ndarray, window: int = END_WINDOW) -> float:
    """Mean value over the last `window` positions (all of them when shorter)."""
    if len(values) == 0:
        raise ValueError("value_end of an empty completion")
    return float(np.mean(values[-window:]))


@torch.no_grad()
def score_sequences(
    model: Any,
    spec: ZipRCSpec,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    batch_size: int = 32,
) -> list[SequenceReadout]:
    """Readouts along each (prompt, completion) pair, right-padded batches, no grad."""
    if len(prompt_ids) != len(completion_ids):
        raise ValueError("prompt_ids and completion_ids must have the same length")
    was_training = model.training
    model.eval()
    pad = int(model.generation_config.pad_token_id or 0)
    out: list[SequenceReadout] = []
    for lo in range(0, len(prompt_ids), batch_size):
        prompts = prompt_ids[lo : lo + batch_size]
        comps = completion_ids[lo : lo + batch_size]
        seqs = [list(p) + list(c) for p, c in zip(prompts, comps, strict=True)]
        ids, attn = right_padded(seqs, pad)
        values, remaining = readout(model(input_ids=ids, attention_mask=attn).logits, spec)
        for i, (p, c) in enumerate(zip(prompts, comps, strict=True)):
            if not c:
                raise ValueError(f"completion {lo + i} is empty")
            sl = slice(len(p) - 1, len(p) - 1 + len(c))
            out.append(SequenceReadout(values[i, sl].numpy(), remaining[i, sl].numpy()))
    model.train(was_training)
    return out
