"""A kept step's loss against uniform's, through verl 0.9.1's own policy losses and agg_loss
(issue 72, item 1): for every policy loss linear in the advantages and every loss_agg_mode the
adapter does not refuse, the gradient of a kept step of G of B groups equals uniform's step
holding the B - G left-out groups as all-equal (advantage 0) rows under `loss_scale: batch`,
and uniform's / c (c = G / B) under `kept`. verl's engine is stood in for by what its
`forward_backward_batch` does: one backward a micro-batch, with `ppo_loss`'s global batch
info (dp size, the mini-batch's loss tokens, global_batch_size, loss_scale_factor)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from frontier_rft.integrations.verl.kept_step import (
    AGG_MODES,
    LINEAR_LOSS_MODES,
    kept_layout,
    kept_loss,
    kept_loss_problems,
)

G, B, N, WIDTH, MICRO = 3, 8, 2, 6, 2
"""Kept groups, uniform's groups, rollouts a group, response width, micro-batch rows."""
M = B * N  # one update a step: ppo_mini_batch_size = train_batch_size
SHIFT = 0.03 * torch.linspace(-1, 1, M * WIDTH).view(M, WIDTH)
"""log_prob - old_log_prob of each row (the kept step's are the first G x N rows')."""


def actor_config(loss_mode: str, agg: str, scale_factor: float | None) -> Any:
    from verl.workers.config import FSDPActorConfig, PolicyLossConfig

    return FSDPActorConfig(
        strategy="fsdp",
        ppo_mini_batch_size=B,
        ppo_micro_batch_size_per_gpu=MICRO,
        rollout_n=N,
        loss_agg_mode=agg,
        loss_scale_factor=scale_factor,
        policy_loss=PolicyLossConfig(loss_mode=loss_mode),
    )


def gradient(
    config: Any, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, gbs: float
) -> torch.Tensor:
    """d(loss)/d(log_prob) over `old`'s rows (log_prob a little off old: ratios not 1), one
    backward a micro-batch of MICRO rows."""
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    loss_fn = get_policy_loss_fn(config.policy_loss.loss_mode)
    logp = (old + SHIFT[: old.shape[0]]).requires_grad_(True)
    config.global_batch_info.update(
        dp_size=1,
        batch_num_tokens=int(mask.sum()),
        global_batch_size=gbs,
        loss_scale_factor=config.loss_scale_factor,
    )
    for start in range(0, old.shape[0], MICRO):
        rows = slice(start, start + MICRO)
        loss, _ = loss_fn(
            old_log_prob=old[rows],
            log_prob=logp[rows],
            advantages=adv[rows],
            response_mask=mask[rows].bool(),
            loss_agg_mode=config.loss_agg_mode,
            config=config,
        )
        loss.backward()
    assert logp.grad is not None
    return logp.grad


CASES = [
    (loss, agg, scale)
    for loss in sorted(LINEAR_LOSS_MODES)
    for agg in AGG_MODES
    for scale in ("batch", "kept")
]


@pytest.mark.parametrize(("loss_mode", "agg", "loss_scale"), CASES)
def test_a_kept_step_is_uniforms_gradient_by_verls_own_losses(
    loss_mode: str, agg: str, loss_scale: str
) -> None:
    factor = 2048.0 if agg == "seq-mean-token-sum-norm" else None
    config = {"actor_rollout_ref": {"actor": {
        "loss_agg_mode": agg, "policy_loss": {"loss_mode": loss_mode}, "loss_scale_factor": factor,
    }}}  # fmt: skip
    if kept_loss_problems(config, loss_scale):
        pytest.skip("refused in one line (tests/test_verl_kept_step.py)")
    gen = torch.Generator().manual_seed(0)
    lengths = [2, 6, 4, 4, 3, 5]  # the kept rows' response lengths: mean 4
    kept_mask = torch.tensor([[1.0] * k + [0.0] * (WIDTH - k) for k in lengths])
    adv = torch.randn(G * N, 1, generator=gen).expand(-1, WIDTH) * kept_mask
    rest = torch.tensor([[1.0] * 4 + [0.0] * 2] * (M - G * N))  # left out: the mean length
    full_mask = torch.cat([kept_mask, rest])
    full_adv = torch.cat([adv, torch.zeros(M - G * N, WIDTH)])
    old = -torch.rand(M, WIDTH, generator=gen) - 0.5
    uniform = gradient(actor_config(loss_mode, agg, factor), old, full_adv, full_mask, M)

    layout = kept_layout(G * N, (M,), MICRO)
    step = kept_loss(loss_scale, agg, layout, M, loss_mode)
    pad = layout.padded - layout.rows  # loss-masked rows, advantage 0
    kept_old = torch.cat([old[: G * N], old[:pad]])
    mask = torch.cat([kept_mask, torch.zeros(pad, WIDTH)])
    scaled = torch.cat([adv * step.advantage_factor, torch.zeros(pad, WIDTH)])
    gbs = step.global_batch_size or M  # verl's own: ppo_mini_batch_size x n
    kept = gradient(actor_config(loss_mode, agg, factor), kept_old, scaled, mask, gbs)

    target = uniform[: G * N] * (1.0 if loss_scale == "batch" else M / (G * N))
    assert float(target.abs().sum()) > 0
    assert torch.allclose(kept[: G * N], target, rtol=1e-4, atol=1e-7), float(
        (kept[: G * N] / target.masked_fill(target == 0, 1)).max()
    )


def test_norm_without_a_fixed_factor_divides_by_the_micro_batchs_padded_width() -> None:
    # Why seq-mean-token-sum-norm needs loss_scale_factor under kept: with verl's default
    # (null) agg_loss divides by loss_mask.shape[-1], which depends on which rows a
    # micro-batch holds, and a kept step holds other rows than uniform's.
    from verl.trainer.ppo.core_algos import agg_loss

    mat, mask = torch.ones(2, 4), torch.ones(2, 4)
    wide = torch.cat([mask, torch.zeros(2, 2)], dim=1)
    info = {"dp_size": 1, "batch_num_tokens": None, "global_batch_size": 2}
    narrow_loss = agg_loss(mat, mask, "seq-mean-token-sum-norm", **info)
    wide_loss = agg_loss(torch.ones(2, 6), wide, "seq-mean-token-sum-norm", **info)
    assert float(narrow_loss) == pytest.approx(1.0) and float(wide_loss) == pytest.approx(4 / 6)
    fixed = {**info, "loss_scale_factor": 8}
    assert float(agg_loss(mat, mask, "seq-mean-token-sum-norm", **fixed)) == float(
        agg_loss(torch.ones(2, 6), wide, "seq-mean-token-sum-norm", **fixed)
    )
