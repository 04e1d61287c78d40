"""The reference trainer's loss: the clipped surrogate with its KL and entropy terms, the
token aggregation (token_mean, sequence_mean, constant), and the per-row weights that give a
group of any size one prompt's share."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from frontier_rft.lm.rollout import TokenScores
from frontier_rft.training.config import TrainConfig

__all__ = ["PolicyLoss", "aggregate", "policy_loss", "row_units", "row_weights"]


def aggregate(
    values: torch.Tensor,
    mask: torch.Tensor,
    how: str,
    max_tokens: int,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Reduce per-token values to a scalar: token_mean, sequence_mean or constant (Dr.GRPO).

    `weights` (one per row, mean 1) scale each row's values first: with groups of different
    sizes, `row_weights` gives every group one prompt's share of the loss."""
    if weights is not None:
        values = values * weights.unsqueeze(1)
    if how == "token_mean":
        return (values * mask).sum() / mask.sum().clamp(min=1.0)
    if how == "sequence_mean":
        per_seq = (values * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return per_seq.mean()
    return (values * mask).sum() / (mask.shape[0] * max_tokens)


def row_units(lengths: np.ndarray, how: str, max_tokens: int) -> tuple[np.ndarray, float]:
    """`aggregate` of rows of `lengths` tokens as a sum over rows: sum_r w_r u_r f_r / N, f_r
    row r's token mean; returns (u, N). token_mean: u = the row's tokens, N = all tokens;
    sequence_mean: u = 1, N = rows; constant: u = the row's tokens, N = rows * max_tokens."""
    lengths = np.maximum(np.asarray(lengths, dtype=np.float64), 1.0)  # as mask.sum().clamp(1)
    if how == "sequence_mean":
        return np.ones_like(lengths), float(lengths.size)
    if how == "token_mean":
        return lengths, float(lengths.sum())
    return lengths, float(lengths.size * max_tokens)


class PolicyLoss:
    """Parts of one loss evaluation (tensors keep their graph; floats are for logging)."""

    def __init__(self, total: torch.Tensor, parts: dict[str, float]):
        self.total = total
        self.parts = parts


def policy_loss(
    scores: TokenScores,
    advantages: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    config: TrainConfig,
    weights: torch.Tensor | None = None,
    pg_scale: float = 1.0,
    caps: torch.Tensor | None = None,
) -> PolicyLoss:
    """Clipped surrogate + k3 KL + entropy bonus, aggregated as `config.loss_aggregation`,
    rows scaled by `weights` (None: all 1).

    `pg_scale` multiplies the surrogate's row weights only (FewerRollouts' `loss_scale:
    batch`, groups trained / B: the groups left out count as the zero-advantage groups they
    were predicted to be). The KL and entropy terms are not zero on the groups left out, so
    they stay the trained rows' means: those groups count at the trained ones' mean.

    `caps` (one per row; None: none) truncate a row's ratio in the unclipped branch at its cap
    (dual-clip PPO's c): backfill's replayed rows (training/backfill.py)."""
    mask, logp = scores.mask, scores.logprobs
    how, t_max = config.loss_aggregation, config.max_new_tokens
    ratio = torch.exp(logp - old_logprobs)
    adv = advantages.unsqueeze(1)
    clipped = torch.clamp(ratio, 1.0 - config.clip_eps, 1.0 + config.clip_eps)
    capped = ratio if caps is None else torch.minimum(ratio, caps.unsqueeze(1))
    surrogate = -torch.minimum(capped * adv, clipped * adv)
    pg_weights = weights
    if pg_scale != 1.0:
        ones = torch.ones(mask.shape[0], dtype=mask.dtype, device=mask.device)
        pg_weights = pg_scale * (ones if weights is None else weights)
    pg = aggregate(surrogate, mask, how, t_max, pg_weights)
    total = pg
    parts = {
        "loss/policy": float(pg.detach()),
        "policy/ratio_mean": float(aggregate(ratio.detach(), mask, "token_mean", t_max)),
        "policy/clip_fraction": float(
            aggregate(((ratio - clipped).abs() > 0).float(), mask, "token_mean", t_max)
        ),
    }
    if ref_logprobs is not None:
        delta = ref_logprobs - logp  # k3 = exp(d) - d - 1 >= 0, unbiased for KL(pi || ref)
        kl = aggregate(torch.exp(delta) - delta - 1.0, mask, how, t_max, weights)
        total = total + config.kl_coef * kl
        parts["loss/kl"] = float(kl.detach())
    if scores.entropy is not None:
        entropy = aggregate(scores.entropy, mask, how, t_max, weights)
        if config.entropy_coef > 0:
            total = total - config.entropy_coef * entropy
        parts["policy/entropy"] = float(entropy.detach())
    return PolicyLoss(total, parts)


def row_weights(sizes: Sequence[int], how: str) -> np.ndarray | None:
    """Per-rollout loss weights of groups of these sizes: with `how` 'prompt', R / (G n_g)
    for a rollout of group g (G groups, R rollouts), so each group weighs one prompt's share
    whatever its n and the weights average 1; None (all 1) for 'rollout' or equal sizes."""
    if how == "rollout" or len(set(sizes)) <= 1:
        return None
    n = np.asarray(sizes, dtype=np.float64)
    return np.repeat(n.sum() / (n.shape[0] * n), n.astype(np.int64))
