"""How a kept step's loss is normalised (issue 60, item 4): under FewerRollouts'
`loss_scale: batch` only the policy-gradient term is scaled by groups trained / B; the KL and
entropy terms stay the trained rows' means (benchmarks/results/kept_kl.md). Gradients checked
against hand-computed ones; a `rollouts: full` run trains bit for bit as before."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.lm.rollout import TokenScores
from frontier_rft.training import policy_update
from frontier_rft.training.grpo import Trainer
from frontier_rft.training.policy_loss import PolicyLoss, aggregate, policy_loss
from test_training_model import TEST_TRAIN

LN2 = math.log(2.0)
MASK = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
"""Two trained rows (one group of 2), three tokens; row 1's second slot is padding."""
ADV = torch.tensor([1.0, -1.0])
LOGP = [[-1.0, -1.0], [-2.0, -2.0]]
DELTA = [[LN2, 0.0], [-LN2, 0.0]]
"""ref - logp per token: exp(delta) = 2, 1, 1/2, so d k3 / d logp = 1 - exp(delta) = -1, 0, 1/2."""
CFG = dataclasses.replace(TEST_TRAIN, loss_aggregation="token_mean", clip_eps=0.2)


def _loss(pg_scale: float, kl_coef: float, entropy_coef: float = 0.0):
    """The loss of the two rows at ratio 1 (old = logp): its value parts and the gradients
    with respect to the log-probs and the entropies."""
    logp = torch.tensor(LOGP, requires_grad=True)
    entropy = torch.tensor([[0.5, 0.5], [0.5, 0.0]], requires_grad=True)
    ref = (torch.tensor(LOGP) + torch.tensor(DELTA)) if kl_coef > 0 else None
    cfg = dataclasses.replace(CFG, kl_coef=kl_coef, entropy_coef=entropy_coef)
    loss = policy_loss(
        TokenScores(logp, MASK, entropy), ADV, logp.detach(), ref, cfg, pg_scale=pg_scale
    )
    loss.total.backward()
    assert logp.grad is not None
    return loss.parts, logp.grad, entropy.grad


def test_without_kl_the_policy_gradient_is_scaled_by_groups_trained_over_b() -> None:
    # d/d logp_it of pg_scale * sum_it m_it (-A_i) / 3 at ratio 1: -pg_scale A_i m_it / 3.
    # One kept group of B = 4 (pg_scale 1/4): -1/12 on row 0, +1/12 on row 1, 0 on padding.
    parts, grad, _ = _loss(pg_scale=0.25, kl_coef=0.0)
    expected = torch.tensor([[-1 / 12, -1 / 12], [1 / 12, 0.0]])
    torch.testing.assert_close(grad, expected, rtol=0, atol=1e-7)
    assert parts["loss/policy"] == pytest.approx(0.25 * (-1 - 1 + 1) / 3)
    assert "loss/kl" not in parts


def test_with_kl_the_kl_term_is_the_trained_rows_mean_not_scaled() -> None:
    # + kl_coef * m_it (1 - exp(delta_it)) / 3 with kl_coef 1/2, unscaled by pg_scale:
    # row 0: (-1/4 - 1/2) / 3 = -1/4, (-1/4 + 0) / 3 = -1/12; row 1: (1/4 + 1/4) / 3 = 1/6.
    # (Scaled by 1/4 as well, row 0's first token would be (-1/4 - 1/8) / 3 = -1/8.)
    parts, grad, _ = _loss(pg_scale=0.25, kl_coef=0.5)
    expected = torch.tensor([[-1 / 4, -1 / 12], [1 / 6, 0.0]])
    torch.testing.assert_close(grad, expected, rtol=0, atol=1e-7)
    # k3 = exp(d) - d - 1: 1 - ln 2, 0, ln 2 - 1/2; their token mean is 1/6, logged unscaled.
    assert parts["loss/kl"] == pytest.approx(1 / 6)


def test_entropy_term_is_the_trained_rows_mean_not_scaled() -> None:
    # - entropy_coef * sum m_it H_it / 3: d/dH = -0.1 / 3 on every trained token.
    parts, _, grad_h = _loss(pg_scale=0.25, kl_coef=0.0, entropy_coef=0.1)
    torch.testing.assert_close(grad_h, -0.1 / 3 * MASK, rtol=0, atol=1e-7)
    assert parts["policy/entropy"] == pytest.approx(0.5)


# ------------------------------------------------------------------------------ in the trainer

BASE = dataclasses.replace(
    TEST_TRAIN, train_size=12, steps=12, eval_every=0, checkpoint_every=100, kl_coef=0.1, threads=1
)
"""Twelve prompts of batch 3 (greso skips from the second epoch, step 5), a KL term; one
torch thread, so that two runs of one configuration train bit for bit alike."""
KEPT = {"selector": "greso", "sampler": "fewer_rollouts"}
"""`rollouts: kept` (FewerRollouts' defaults: the skip in uniform's window, loss_scale batch)."""


def _spy(monkeypatch: pytest.MonkeyPatch, calls: list[dict]) -> None:
    real = policy_update.policy_loss

    def spying(*args, **kwargs):
        loss = real(*args, **kwargs)
        pg_scale = args[6] if len(args) > 6 else kwargs.get("pg_scale", 1.0)
        calls.append({"pg_scale": pg_scale, "rows": int(args[0].mask.shape[0])})
        return loss

    monkeypatch.setattr(policy_update, "policy_loss", spying)


@pytest.mark.integration
def test_a_kept_step_scales_only_the_policy_gradient(
    sft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict] = []
    _spy(monkeypatch, calls)
    config = dataclasses.replace(BASE, **KEPT)
    trainer = Trainer(config, sft_dir, tmp_path / "kept", log=lambda _: None)
    rows = [trainer.step() for _ in range(12)]
    trained = [m for m in rows if m["train/groups_trained"] > 0]
    assert len(calls) == len(trained)  # ppo_epochs 1: one loss a trained step
    assert any(m["train/loss_scale"] < 1 for m in trained), "no step skipped a prompt"
    for m, call in zip(trained, calls, strict=True):
        assert call["pg_scale"] == m["train/loss_scale"]
        assert call["rows"] == m["train/trained_rows"]  # only the kept rows reach the loss


def _policy_loss_before(scores, advantages, old_logprobs, ref_logprobs, config, weights=None):
    """policy_loss as it was before pg_scale (commit b6f0f17), verbatim: every term of the
    loss took the same row weights."""
    mask, logp = scores.mask, scores.logprobs
    how, t_max = config.loss_aggregation, config.max_new_tokens
    ratio = torch.exp(logp - old_logprobs)
    adv = advantages.unsqueeze(1)
    clipped = torch.clamp(ratio, 1.0 - config.clip_eps, 1.0 + config.clip_eps)
    surrogate = -torch.minimum(ratio * adv, clipped * adv)
    pg = aggregate(surrogate, mask, how, t_max, weights)
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


def _as_before(scores, advantages, old, ref, cfg, weights=None, pg_scale=1.0):
    """The loss as the trainer computed it before: a step's scale (FewerRollouts' groups
    trained / B) folded into every row's weight, in float64, then cast."""
    if pg_scale != 1.0:
        rows = scores.mask.shape[0]
        base = np.ones(rows) if weights is None else weights.cpu().numpy().astype(np.float64)
        weights = torch.tensor(pg_scale * base, dtype=torch.float32)
    return _policy_loss_before(scores, advantages, old, ref, cfg, weights)


def _train(config, sft_dir: Path, out: Path, steps: int) -> Trainer:
    trainer = Trainer(config, sft_dir, out, log=lambda _: None)
    for _ in range(steps):
        trainer.step()
    return trainer


def _same_parameters(a: Trainer, b: Trainer) -> bool:
    pairs = zip(a.model.state_dict().values(), b.model.state_dict().values(), strict=True)
    return all(torch.equal(x, y) for x, y in pairs)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("fields", "steps", "unchanged"),
    [
        ({"entropy_coef": 0.01}, 3, True),  # rollouts: full, KL and entropy on
        ({**KEPT, "kl_coef": 0.0}, 8, True),  # kept without KL
        (KEPT, 8, False),  # kept with a KL term: the change
    ],
)
def test_what_trains_as_before(
    fields: dict,
    steps: int,
    unchanged: bool,
    sft_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A `rollouts: full` run (KL and entropy on) and a kept run without KL train bit for bit
    as before; a kept run with a KL term does not (its KL is no longer scaled by G/B)."""
    config = dataclasses.replace(BASE, **fields)
    now = _train(config, sft_dir, tmp_path / "now", steps)
    monkeypatch.setattr(policy_update, "policy_loss", _as_before)
    before = _train(config, sft_dir, tmp_path / "before", steps)
    assert _same_parameters(now, before) == unchanged
    if unchanged:  # and so every step sampled the same completions
        np.testing.assert_array_equal(now.last["rewards"], before.last["rewards"])
