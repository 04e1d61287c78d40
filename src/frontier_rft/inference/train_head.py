"""Train the ZIP-RC-Lite head: per-position cross-entropy of the reserved slice, backbone frozen.

Only the R x L reserved output rows train (`head.slice_parameter`); every other weight of
the policy is frozen, so its hidden states never change. The loss at position t of a
completion is `CE(h_t @ W.T, label_t)`, with `h_t` the last hidden state (after the final
norm) and `label_t = spec.sequence_labels(reward, T)[t]`. Because `h_t` does not depend on
W, we run the backbone once per rollout, keep every `h_t`, and train W on the cached
features: the same gradients as a teacher-forced forward pass per step (the paper's manual
F.linear over output_hidden_states[-1]), at a tiny fraction of the cost.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from frontier_rft.core.config import check, check_least
from frontier_rft.inference.rollouts import RolloutSet
from frontier_rft.inference.spec import BINARY_REWARDS, PAPER_LENGTH_EDGES, ZipRCSpec
from frontier_rft.progress import progress_bar

__all__ = [
    "HeadTrainConfig",
    "completion_features",
    "rollout_slice_logits",
    "train_head",
]


@dataclass(frozen=True)
class HeadTrainConfig:
    """Head-only training of the reserved slice (paper table 7 defaults)."""

    lr: float = 1e-3
    """AdamW peak learning rate."""
    beta1: float = 0.9
    """AdamW beta1."""
    beta2: float = 0.95
    """AdamW beta2."""
    weight_decay: float = 0.0
    """AdamW weight decay (applies to the slice rows only)."""
    warmup_ratio: float = 0.05
    """Share of optimizer steps with a linear warmup; cosine decay to 0 after it."""
    batch_size: int = 8
    """Sequences per micro-batch."""
    grad_accum: int = 4
    """Micro-batches per optimizer step (effective batch = batch_size * grad_accum)."""
    epochs: int = 2
    """Passes over the rollouts."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm (0 disables)."""
    reward_values: tuple[float, ...] = BINARY_REWARDS
    """Reward states: binary (0, 1) or structured (0, 0.1, 1)."""
    length_edges: tuple[int, ...] = PAPER_LENGTH_EDGES
    """Remaining-length bin edges; the paper's suit ~300-token answers, so pass task-scaled
    edges (e.g. 0,4,8,12,16,24,32,48) for short completions."""
    start_id: int | None = None
    """First reserved id (None: right after the tokenizer's and the model's ids)."""
    feature_batch: int = 32
    """Sequences per frozen-backbone forward pass when caching hidden states."""
    seed: int = 42
    """Seed of the shuffling."""

    def __post_init__(self) -> None:
        for name in ("lr", "beta1", "beta2"):
            value = getattr(self, name)
            check(
                isinstance(value, (int, float)) and value > 0 and (name == "lr" or value < 1),
                f"{name} must be in (0, 1) (lr > 0), got {value!r}",
            )
        check(self.weight_decay >= 0, f"weight_decay must be >= 0, got {self.weight_decay}")
        check(
            0 <= self.warmup_ratio < 1, f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}"
        )
        check_least(self, ("batch_size", "grad_accum", "epochs", "feature_batch"), 1)
        check(self.max_grad_norm >= 0, f"max_grad_norm must be >= 0, got {self.max_grad_norm}")
        # The spec validates rewards/edges with messages that show a correct example.
        ZipRCSpec(0, tuple(self.reward_values), tuple(self.length_edges))
        check(
            self.start_id is None or (isinstance(self.start_id, int) and self.start_id >= 0),
            f"start_id must be None or an int >= 0, got {self.start_id!r}",
        )


def completion_features(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    batch_size: int = 32,
    progress: bool = False,
) -> list[Any]:
    """Last hidden state (after the final norm) at completion positions t = 0 .. T-1: (T, H).

    Position t is the pass that predicts completion token t (t = 0: the prompt's last token),
    exactly where `scoring.score_sequences` reads the head. Right-padded batches, no grad.
    """
    import torch

    from frontier_rft.lm.rollout import right_padded

    if len(prompt_ids) != len(completion_ids):
        raise ValueError(
            f"{len(prompt_ids)} prompts but {len(completion_ids)} completions: pass one prompt "
            "per completion"
        )
    was_training = model.training
    model.eval()
    pad = int(model.generation_config.pad_token_id or 0)
    body = model.base_model  # the decoder stack without the output head (LlamaModel)
    out: list[Any] = []
    bar = progress_bar(len(prompt_ids), "features", unit="seq", enabled=progress)
    with torch.no_grad(), bar:
        for lo in range(0, len(prompt_ids), batch_size):
            prompts = prompt_ids[lo : lo + batch_size]
            comps = completion_ids[lo : lo + batch_size]
            seqs = [list(p) + list(c) for p, c in zip(prompts, comps, strict=True)]
            ids, attn = right_padded(seqs, pad)
            hidden = body(input_ids=ids, attention_mask=attn).last_hidden_state.float()
            for i, (p, c) in enumerate(zip(prompts, comps, strict=True)):
                if not c:
                    raise ValueError(f"completion {lo + i} is empty: nothing to label")
                out.append(hidden[i, len(p) - 1 : len(p) - 1 + len(c)].clone())
            bar.update(len(seqs))
    model.train(was_training)
    return out


def rollout_slice_logits(
    model: Any,
    spec: ZipRCSpec,
    rollouts: RolloutSet,
    batch_size: int = 32,
    progress: bool = False,
) -> list[list[np.ndarray]]:
    """[task][sample] (T, R*L) slice logits of a head model along every rollout."""
    import torch

    prompts, comps, _ = rollouts.flat()
    feats = completion_features(model, prompts, comps, batch_size, progress)
    weight = model.get_output_embeddings().weight[spec.start_id : spec.end_id].detach().float()
    with torch.no_grad():
        flat = [torch.nn.functional.linear(f, weight).numpy() for f in feats]
    k = rollouts.samples
    return [flat[i * k : (i + 1) * k] for i in range(rollouts.num_tasks)]


def _lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warmup over `warmup` steps, then cosine to 0 at `total` (HF's cosine schedule)."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def train_head(
    policy: str | os.PathLike[str] | Any,
    tokenizer: Any,
    rollouts: RolloutSet,
    config: HeadTrainConfig | None = None,
    progress: bool = True,
) -> tuple[Any, ZipRCSpec, dict[str, Any]]:
    """Attach a head to `policy` (a model directory or a model, changed in place), train it
    on `rollouts` (sampled from that same policy) and return (model, spec, stats).

    stats holds the loss and lr per optimizer step, the cross-entropy over every position
    before and after training, and sizes and timings.
    """
    import torch
    import torch.nn.functional as F

    from frontier_rft.inference.head import attach_head, slice_parameter, write_slice
    from frontier_rft.lm.model_io import load_lm

    cfg = config or HeadTrainConfig()
    if rollouts.num_tasks == 0 or rollouts.samples == 0:
        raise ValueError("no rollouts to train on: collect some with collect_rollouts first")
    if isinstance(policy, (str, os.PathLike)):
        model, tokenizer = load_lm(policy)
    else:
        model = policy
    vocab = int(model.get_input_embeddings().weight.shape[0])
    rollouts.check_tokens(vocab=vocab)
    t0 = time.perf_counter()
    spec = attach_head(model, tokenizer, cfg.reward_values, cfg.length_edges, cfg.start_id)
    weight = slice_parameter(model, spec)
    prompts, comps, rewards = rollouts.flat()
    feats = completion_features(model, prompts, comps, cfg.feature_batch, progress)
    labels = [
        torch.from_numpy(spec.sequence_labels(float(r), len(c)))
        for r, c in zip(rewards, comps, strict=True)
    ]
    t_feat = time.perf_counter() - t0

    def full_loss() -> float:
        with torch.no_grad():
            x, y = torch.cat(feats), torch.cat(labels)
            return float(F.cross_entropy(F.linear(x, weight), y))

    initial = full_loss()
    n = len(feats)
    effective = cfg.batch_size * cfg.grad_accum
    steps_per_epoch = math.ceil(n / effective)
    total = steps_per_epoch * cfg.epochs
    warmup = math.ceil(cfg.warmup_ratio * total)
    opt = torch.optim.AdamW(
        [weight], lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), weight_decay=cfg.weight_decay
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, warmup, total))
    gen = torch.Generator().manual_seed(cfg.seed)
    losses: list[float] = []
    lrs: list[float] = []
    with progress_bar(total, "head steps", unit="step", enabled=progress) as bar:
        for _ in range(cfg.epochs):
            order = torch.randperm(n, generator=gen).tolist()
            for lo in range(0, n, effective):
                step_seqs = order[lo : lo + effective]
                lrs.append(opt.param_groups[0]["lr"])
                step_loss = 0.0
                micro = [
                    step_seqs[m : m + cfg.batch_size]
                    for m in range(0, len(step_seqs), cfg.batch_size)
                ]
                for mb in micro:
                    # Token-mean CE per micro-batch, averaged over the accumulated micro-batches
                    # (what HF Trainer does with gradient accumulation).
                    x = torch.cat([feats[i] for i in mb])
                    y = torch.cat([labels[i] for i in mb])
                    loss: Any = F.cross_entropy(F.linear(x, weight), y) / len(micro)
                    loss.backward()
                    step_loss += float(loss.detach())
                if cfg.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_([weight], cfg.max_grad_norm)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                losses.append(step_loss)
                bar.set_postfix_str(f"loss {step_loss:.3f}", refresh=False)
                bar.update(1)
    write_slice(model, spec, weight)
    stats: dict[str, Any] = {
        "loss": losses,
        "lr": lrs,
        "initial_loss": initial,
        "final_loss": full_loss(),
        "uniform_loss": math.log(spec.size),
        "steps": total,
        "warmup_steps": warmup,
        "sequences": n,
        "positions": int(sum(len(c) for c in comps)),
        "prompts": rollouts.num_tasks,
        "samples": rollouts.samples,
        "success_rate": float(rollouts.successes.mean()),
        "feature_seconds": t_feat,
        "seconds": time.perf_counter() - t0,
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.__dict__.items()},
    }
    return model, spec, stats
