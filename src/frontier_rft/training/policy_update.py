"""The policy update of one training step: `ppo_epochs` passes of loss, backward, clip, AdamW.

Each pass scores the step's rows under the policy, computes the loss (training/policy_loss.py:
clipped surrogate + KL - entropy, and METIS's judge loss on the first pass), backward into
`.grad`, clips the gradient norm and takes the optimizer step. pi_old (frozen across the
epochs) and the KL's reference log-probs are scored first, without a graph. With
`update_rows` below the step's rows, each pass runs in micro-batches of rows
(training/micro_update.py): the same gradient, in bounded memory. The noise meter reads the
first pass's gradients at the step's own parameters, before clipping and the step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from frontier_rft.lm.rollout import score_completions
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.metis_judge_training import PolicyJudge, weighted_judge_loss
from frontier_rft.training.micro_update import chunked_backward, chunked_logprobs
from frontier_rft.training.noise_meter import NoiseMeter
from frontier_rft.training.policy_loss import policy_loss
from frontier_rft.training.step_batch import StepBatch

__all__ = ["PolicyUpdate"]

Pass = tuple[float, dict[str, float], torch.Tensor, dict[str, torch.Tensor]]
"""One pass's loss value, logged parts, the pi_old it used and backfill's caps (if any)."""


@dataclass
class PolicyUpdate:
    """What one step's update runs on: the trainer's policy, optimizer and collaborators."""

    model: Any
    """The policy being trained."""
    optimizer: torch.optim.Optimizer
    """Its optimizer (AdamW)."""
    ref_model: Any
    """The frozen start model of the KL term, or None without one."""
    config: TrainConfig
    """The run's configuration."""
    noise: NoiseMeter
    """The gradient-noise meter, read on the first pass when due."""
    amp: Callable[[], Any]
    """The forward-pass context of config.precision."""
    judge: PolicyJudge | None = None
    """METIS's policy judge, whose records add a loss on the first pass."""
    lam: float = 0.0
    """The judge loss's weight."""

    def run(self, batch: StepBatch, step_count: int) -> dict[str, float]:
        """The update on one step's batch (ppo_epochs passes); its loss and noise metrics."""
        cfg = self.config
        prompts, completions = batch.prompts, batch.completions
        temp = cfg.temperature  # the sampling distribution's log-probs (logits / T)
        micro = 0 < cfg.update_rows < len(completions)
        for field, scorer, due in (
            ("old_logprobs", self.model, cfg.ppo_epochs > 1),  # pi_old, frozen across epochs
            ("ref_logprobs", self.ref_model, self.ref_model is not None),
        ):
            if not due:
                continue
            with torch.no_grad(), self.amp():
                if micro:
                    got = chunked_logprobs(scorer, prompts, completions, cfg.update_rows, temp)
                else:
                    got = score_completions(scorer, prompts, completions, temperature=temp).logprobs
            setattr(batch, field, got)
        parts: dict[str, float] = {}
        noise: dict[str, float] = {}
        for epoch in range(cfg.ppo_epochs):
            self.optimizer.zero_grad(set_to_none=True)
            backward = self._backward_in_chunks if micro else self._backward_whole
            total, loss_parts, old_lp, capped = backward(batch, epoch)
            if epoch == 0 and self.noise.due(step_count, len(batch.group_sizes)):
                # at the step's own parameters, before clipping and the optimizer step
                judged = bool(batch.judge_records) and self.lam != 0.0
                noise = self.noise.measure_rows(
                    self.model,
                    cfg,
                    batch,
                    {
                        "advantages": batch.advantages,
                        "weights": batch.row_weights,
                        "old": old_lp.detach(),
                        "ref": batch.ref_logprobs,
                        "caps": capped.get("caps"),
                    },
                    self.amp,
                    judged,
                    self.optimizer,
                )
            grad_norm = torch.nn.utils.clip_grad_norm_(
                self.model.parameters(), cfg.max_grad_norm if cfg.max_grad_norm > 0 else 1e12
            )
            if not (math.isfinite(total) and torch.isfinite(grad_norm)):
                # Stop before the update: NaN weights would be saved and resumed from.
                raise ValueError(
                    f"step {step_count + 1}: non-finite loss ({total:.3g}) "
                    f"or gradient norm ({float(grad_norm):.3g}), the model is not updated; "
                    f"lower lr (now {cfg.lr:g}) or kl_coef and resume: frontier train --resume"
                )
            self.optimizer.step()
            if epoch == 0:
                parts = dict(loss_parts)
                parts["loss/total"] = total
                parts["policy/grad_norm"] = float(grad_norm)
            elif epoch == cfg.ppo_epochs - 1:  # clipping only acts after the first pass
                parts["policy/ratio_mean_last_epoch"] = loss_parts["policy/ratio_mean"]
                parts["policy/clip_fraction_last_epoch"] = loss_parts["policy/clip_fraction"]
        return {**parts, **noise}

    def _judge_loss(self, batch: StepBatch) -> tuple[Any, dict[str, float]]:
        """METIS's judge loss, weighted by lam, and its logged parts (inside autocast)."""
        j_loss, j_parts = weighted_judge_loss(self.model, self.judge, batch.judge_records, self.lam)
        return self.lam * j_loss, j_parts

    def _backward_whole(self, batch: StepBatch, epoch: int) -> Pass:
        """One pass's loss over every row of the step at once, backward into `.grad`."""
        cfg = self.config
        old = batch.old_logprobs
        with self.amp():  # forward passes only: backward runs outside autocast
            scores = score_completions(
                self.model,
                batch.prompts,
                batch.completions,
                with_entropy=True,
                temperature=cfg.temperature,
            )
            old_lp = scores.logprobs.detach() if old is None else old
            capped: dict[str, torch.Tensor] = {}
            if batch.replay is not None:  # backfill: replayed rows against their behaviour
                old_lp, caps = batch.replay.prepare(old_lp, scores.logprobs, scores.mask, epoch)
                capped = {} if caps is None else {"caps": caps}
            loss = policy_loss(
                scores,
                batch.advantages,
                old_lp,
                batch.ref_logprobs,
                cfg,
                batch.row_weights,
                batch.loss_scale,
                **capped,
            )
            total: Any = loss.total
            # REINFORCE is on-policy: judge tokens once a batch
            if epoch == 0 and batch.judge_records:
                judge, j_parts = self._judge_loss(batch)
                total = total + judge
                loss.parts.update(j_parts)
        total.backward()
        return float(total.detach()), loss.parts, old_lp, capped

    def _backward_in_chunks(self, batch: StepBatch, epoch: int) -> Pass:
        """`_backward_whole` in micro-batches of update_rows rows (training/micro_update.py);
        METIS's judge loss, not a sum over rows, backward once on its own."""
        inputs = {
            "advantages": batch.advantages,
            "weights": batch.row_weights,
            "old": batch.old_logprobs,
            "ref": batch.ref_logprobs,
            "pg_scale": batch.loss_scale,
        }
        total, parts, old_lp = chunked_backward(
            self.model, self.config, batch.prompts, batch.completions, inputs, self.amp
        )
        if epoch == 0 and batch.judge_records:
            with self.amp():
                judge, j_parts = self._judge_loss(batch)
            if judge.requires_grad:  # lam = 0, the ablation, reports the loss and trains nothing
                judge.backward()
            total += float(judge.detach())
            parts.update(j_parts)
        return total, parts, old_lp, {}
