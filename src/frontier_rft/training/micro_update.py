"""The update in micro-batches of rows (`TrainConfig.update_rows`): gradient accumulation.

A step's update holds every row's activations for its backward: about 72 MiB a row for
SmolLM2-135M at 24 tokens (benchmarks/results/step_memory_cpu.md), so a 1,024-row step needs
tens of GiB. With `update_rows` R > 0, the rows are cut into contiguous runs of at most R
(`row_chunks`; a group's rows stay together wherever R allows, which keeps its prompt's shared
forward pass), and each run's loss is scaled by its share of the step's normaliser before its
own backward, so the `.grad`s add up to the whole step's gradient (the same sum, up to float
rounding):

    token_mean       sum over tokens / all tokens    chunk share: its tokens / all tokens
    sequence_mean    mean over rows                  chunk share: its rows / all rows
    constant         sum / (rows x max_new_tokens)   chunk share: its rows / all rows

(`policy_loss.aggregate`; the row weights and the surrogate's scale are per row, so they cut
with the rows.) The logged parts combine the same way: the loss terms by the aggregation's
shares, the ratio's mean and the clip fraction (token means always) by the tokens' shares.
pi_old over several PPO epochs and the KL's reference log-probs are scored in the same runs,
without a graph. The peak memory is then about R rows' (benchmarks/step_memory.py
--update-rows). Backfill's replay reads its importance weights over the whole step and is
refused with `update_rows` (TrainConfig).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from frontier_rft.lm.rollout import score_completions
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.policy_loss import PolicyLoss, policy_loss

__all__ = [
    "TOKEN_MEAN_PARTS",
    "chunked_backward",
    "chunked_logprobs",
    "row_chunks",
    "rows_policy_loss",
]

TOKEN_MEAN_PARTS = ("policy/ratio_mean", "policy/clip_fraction")
"""policy_loss parts that are token means whatever the loss's aggregation."""


def row_chunks(rows: int, most: int) -> list[NDArray[np.int64]]:
    """Contiguous runs of at most `most` of `rows` row indices, in order (`most` 0: one run)."""
    if most <= 0 or rows <= most:
        return [np.arange(rows, dtype=np.int64)]
    return [np.arange(i, min(i + most, rows), dtype=np.int64) for i in range(0, rows, most)]


def _rows(t: torch.Tensor | None, sel: torch.Tensor, width: int = 0) -> torch.Tensor | None:
    """Rows `sel` of a per-row tensor (None stays None), cut to `width` tokens where given."""
    if t is None:
        return None
    return t[sel, :width] if width else t[sel]


def rows_policy_loss(
    model: Any,
    config: TrainConfig,
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    inputs: dict[str, Any],
    rows: NDArray[np.int64],
    *,
    with_entropy: bool,
) -> tuple[PolicyLoss, torch.Tensor]:
    """`policy_loss` over `rows` of the step alone (normalised over them), and the pi_old it
    used. `inputs`: the step's per-row advantages, weights (None: all 1), old (None: on-policy,
    these rows' own log-probs), ref (None: no KL), caps (absent or None: none) and pg_scale.
    Run under the caller's autocast."""
    index = rows.tolist()
    width = max(max(len(completions[i]) for i in index), 1)  # score_completions' own width
    sel = torch.as_tensor(rows, device=inputs["advantages"].device)
    scores = score_completions(
        model,
        [prompts[i] for i in index],
        [completions[i] for i in index],
        with_entropy=with_entropy,
        temperature=config.temperature,
    )
    old = _rows(inputs["old"], sel, width)
    old = scores.logprobs.detach() if old is None else old
    caps = _rows(inputs.get("caps"), sel)
    loss = policy_loss(
        scores,
        inputs["advantages"][sel],
        old,
        _rows(inputs["ref"], sel, width),
        config,
        _rows(inputs["weights"], sel),
        inputs["pg_scale"],
        **({} if caps is None else {"caps": caps}),
    )
    return loss, old


def _shares(lengths: NDArray[np.int64], chunk: NDArray[np.int64], how: str) -> tuple[float, float]:
    """A chunk's share of the step's loss normaliser under `how`, and of its tokens (the
    token means' normaliser); each as `aggregate` clamps its own denominator."""
    tokens = max(float(lengths[chunk].sum()), 1.0) / max(float(lengths.sum()), 1.0)
    rows = chunk.size / lengths.size
    return (tokens if how == "token_mean" else rows), tokens


def chunked_logprobs(
    model: Any,
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    most: int,
    temperature: float,
) -> torch.Tensor:
    """The completions' log-probs (rows x the longest completion), scored `most` rows at a
    time without a graph: pi_old or the reference, as one `score_completions` pass gives them."""
    width = max(max((len(c) for c in completions), default=1), 1)
    parts = []
    with torch.no_grad():
        for chunk in row_chunks(len(completions), most):
            index = chunk.tolist()
            got = score_completions(
                model,
                [prompts[i] for i in index],
                [completions[i] for i in index],
                temperature=temperature,
            ).logprobs
            parts.append(torch.nn.functional.pad(got, (0, width - got.shape[1])))
    return torch.cat(parts)


def chunked_backward(
    model: Any,
    config: TrainConfig,
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    inputs: dict[str, Any],
    amp: Callable[[], Any],
) -> tuple[float, dict[str, float], torch.Tensor]:
    """Backward of the step's policy loss in runs of `config.update_rows` rows, into `.grad`
    (zeroed by the caller); returns the step's loss and its logged parts, as one pass over
    every row would have them (module docstring), and the pi_old it used (rows x the longest
    completion, detached). `inputs`: advantages, weights (None: all 1), old (None: on-policy,
    each run's own log-probs), ref (None: no KL), pg_scale."""
    lengths = np.array([len(c) for c in completions], dtype=np.int64)
    how = config.loss_aggregation
    step_width = max(int(lengths.max(initial=0)), 1)
    total = 0.0
    parts: dict[str, float] = {}
    olds: list[torch.Tensor] = []
    for chunk in row_chunks(len(completions), config.update_rows):
        with amp():
            loss, old = rows_policy_loss(
                model, config, prompts, completions, inputs, chunk, with_entropy=True
            )
        olds.append(torch.nn.functional.pad(old, (0, step_width - old.shape[1])))
        share, token_share = _shares(lengths, chunk, how)
        scaled: Any = loss.total * share
        scaled.backward()
        total += float(scaled.detach())
        for key, value in loss.parts.items():
            weight = token_share if key in TOKEN_MEAN_PARTS else share
            parts[key] = parts.get(key, 0.0) + weight * value
    return total, parts, torch.cat(olds)
