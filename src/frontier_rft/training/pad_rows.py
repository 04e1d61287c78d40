"""A kept step's generation padded up to a few batch shapes (`TrainConfig.pad_rows`).

With `rollouts: kept` (or screening) each step rolls out the prompts the selector keeps, so
`model.generate` meets a new number of rows on many steps; on a CUDA GPU an independent
check measured about 1 s more on each step whose row count had not been seen before (issue
71, item 2). Padded, each rollout call of such a step generates its P prompts padded up to
the smallest bucket that holds them, ceil(k B / 4) prompts for k = 1, 2, 3, 4 (B the batch
size): at most four row counts for each count of rollouts a prompt, each met once.

- **Padding prompts**: the call's own prompts again, from the first, each sampled as often as
  the one it repeats: the prompts' padded width is the call's own.
- **Padding rows end at once**: a logits processor (`EndRows`) makes every padding row emit
  EOS as its first token, so the decoding loop lasts as long as the real rows need, as it
  would unpadded, while every pass runs over the bucket's rows.
- **Dropped on return**: the trainer keeps the real rows of `generate`'s output and no
  other; the padding rows are never scored, so they never reach the selector's feedback, the
  rollouts, tokens and reward metrics, the loss, the reward log, the shadows, the backfill
  buffer, Pilot-Commit's pilots or the distinct prompts trained. `train/padded_rows` counts
  them.
- **Not in the update**: the update runs over the trained rows only. Its shapes change every
  step with the completions' width, under uniform too, so padding its rows would not make its
  shapes repeat; unpadded, its loss and gradient are bitwise the unpadded step's.

What changes is the random stream: the padding rows draw their tokens from the same torch
generator as the real rows, so a padded step's completions are other draws from the same
distribution than the unpadded step's. Padding is a function of the call's prompts and B, so
a resumed run pads as the straight run did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["BUCKETS", "EndRows", "bucket", "padding"]

BUCKETS = 4
"""Bucket sizes are ceil(k B / BUCKETS) prompts, k = 1..BUCKETS."""


def bucket(prompts: int, batch_size: int) -> int:
    """The smallest of ceil(k B / 4), k = 1..4, that holds `prompts` (B = `batch_size`); the
    prompts themselves when they are more than B."""
    for k in range(1, BUCKETS + 1):
        size = -(-k * batch_size // BUCKETS)
        if size >= prompts:
            return size
    return prompts


def padding(counts: Sequence[int], batch_size: int) -> list[int]:
    """The rollouts of each padding prompt of a call that samples counts[i] of prompt i: the
    call's counts from the first, cyclically, up to the bucket's prompts ([] for none)."""
    extra = bucket(len(counts), batch_size) - len(counts)
    return [int(counts[j % len(counts)]) for j in range(extra)] if counts else []


class EndRows:
    """HF LogitsProcessor: rows from `first` on (the padding rows) emit `eos` and nothing
    else, so each ends at its first token."""

    def __init__(self, first: int, eos: int):
        self.first = first
        self.eos = eos

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        scores = scores.clone()  # (rows, vocab) logits; the real rows' untouched
        scores[self.first :] = -math.inf
        scores[self.first :, self.eos] = 0.0
        return scores
