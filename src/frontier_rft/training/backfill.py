"""Backfill's importance correction: the trainer's part of `backfill: replay`.

A kept step (`rollouts: kept`, FewerRollouts) trains the G groups it rolled out, G <= B.
With `backfill: replay` the step sampler is wrapped in `Backfill` (sampling/backfill.py): it
fills the B - G freed slots with recent informative groups (mixed rewards) of the run's own
past steps, replayed with their completions and rewards, and the log-probs their behaviour
policy (the one that sampled them) gave each token, as scored at their own step; it holds
those groups, their uses and their log-probs in its state, and decides which a step replays.
This module is what only the trainer can do, since it needs the policy: score the replayed
rows against their behaviour log-probs inside the update (`ReplayRows`), and hand the fresh
rows' log-probs of the first pass back to the sampler (`Backfill.trained`).

The loss on a replayed token, with r = pi_now / pi_behaviour (its importance weight), the
run's clip_eps and the cap c = `backfill_is_cap`, is dual-clip PPO's (Ye et al., arXiv
1912.09729): -min(min(r, c) A, clip(r, 1 - eps, 1 + eps) A). The PPO clip bounds a positive
advantage's weight by 1 + eps; for a negative one the cap c (> 1 + eps) bounds the loss at
c A, and beyond the cap the row's gradient is zero (the min takes the constant c A). That
is a clip, not a truncated importance weight such as IMPALA's rho-bar, which keeps a
gradient at weight rho-bar. Fresh rows are unchanged (their ratio is 1 at the first pass).

Normalisation: a replayed group counts like a fresh one. The step's loss is the trained rows'
aggregate (loss_aggregation) over fresh and replayed rows together, each group one prompt's share
(group_weighting); under `loss_scale: batch` the policy-gradient term is scaled by
(fresh + replayed groups) / B (`StepSamples.loss_scale`), so a step whose freed slots are all
filled has uniform's scale; under 'kept' it is the mean over the groups trained. KL and
entropy terms are the trained rows' means, replayed rows included.

Cost: the forward and backward passes over the replayed rows (and the reference model's forward
with kl_coef > 0); no generation. The bounds (uses, age, capacity) are the sampler's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["ReplayRows", "replay_metrics"]


@dataclass
class ReplayRows:
    """The replayed rows of one update (they follow the `first` fresh rows), and what the
    update hands back: the fresh rows' behaviour log-probs and the replay's metrics."""

    first: int
    """Fresh rows before the replayed ones."""
    behaviour: list[np.ndarray]
    """Each replayed row's stored log-probs."""
    cap: float
    """c of the dual clip: a replayed token's IS weight is truncated at c."""
    clip_eps: float
    fresh_logprobs: np.ndarray | None = None
    """(first, T) log-probs of the fresh rows at the first pass: their behaviour policy's."""
    metrics: dict[str, float] = field(default_factory=dict)

    def fresh_behaviour(self, lengths: Sequence[int]) -> list[np.ndarray]:
        """Each fresh row's log-probs at the first pass, cut to its completion's `lengths`
        (float32): what `Backfill.trained` holds for a later replay."""
        lp = self.fresh_logprobs
        if lp is None:
            raise RuntimeError("the update has not run: no fresh log-probs yet")
        return [lp[i, :n].astype(np.float32) for i, n in enumerate(lengths)]

    def prepare(
        self, old: torch.Tensor, logprobs: torch.Tensor, mask: torch.Tensor, epoch: int
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`old` (the update's pi_old) with the replayed rows' behaviour log-probs in place,
        and the per-row cap (inf on fresh rows; None with no replayed row). At the first pass
        it records the fresh rows' log-probs and the replayed tokens' IS weight metrics."""
        if epoch == 0:
            self.fresh_logprobs = old[: self.first].detach().float().cpu().numpy()
        if not self.behaviour:
            return old, None
        out = old.clone()
        for i, lp in enumerate(self.behaviour):
            out[self.first + i, : lp.shape[0]] = torch.from_numpy(lp).to(out.device, out.dtype)
        caps = torch.full((old.shape[0],), math.inf, dtype=old.dtype, device=old.device)
        caps[self.first :] = self.cap
        if epoch == 0:
            rows = slice(self.first, None)
            m = mask[rows] > 0
            ratio = torch.exp(logprobs.detach()[rows] - out[rows])[m]
            eps = self.clip_eps
            self.metrics = {
                "backfill/is_weight_mean": float(ratio.mean()) if ratio.numel() else 0.0,
                "backfill/clipped_share": (
                    float(((ratio < 1 - eps) | (ratio > 1 + eps)).float().mean())
                    if ratio.numel()
                    else 0.0
                ),
                "backfill/truncated_share": (
                    float((ratio > self.cap).float().mean()) if ratio.numel() else 0.0
                ),
            }
        return out, caps


def replay_metrics(rows: ReplayRows | None, replayed: int) -> dict[str, float]:
    """A step's replayed tokens' mean IS weight, clipped and truncated shares (0 with none
    replayed)."""
    weights = rows.metrics if rows is not None and replayed else {}
    keys = ("is_weight_mean", "clipped_share", "truncated_share")
    return {f"backfill/{k}": weights.get(f"backfill/{k}", 0.0) for k in keys}
