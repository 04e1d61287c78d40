"""Fewer rollouts inside FrontierGRPOTrainer (rollouts: kept, screen: k): the real
GRPOTrainer on the tiny local model (tiny_lm.py), on CPU.

The pool: task t is always solved (t % 3 == 0), never solved (t % 3 == 1) or mixed
(t % 3 == 2: 1 on every other completion of that task in a reward call, so its group is
mixed whatever the text, and so are a screen's k = 2 and its continuation's n - k = 2).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

import torch
from datasets import Dataset
from forward_rows import ForwardRows
from tiny_lm import char_tokenizer, planted_rewards, task_dataset, tiny_grpo_args, tiny_llama
from trl import GRPOConfig
from trl.trainer.grpo_trainer import GRPOTrainer
from two_ranks import leave_process_group

from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
from frontier_rft.integrations.trl.state import state_digest

N = 24
N_GEN = 4
PROMPTS = 4  # B: distinct prompts of a generation batch
STEPS_PER_EPOCH = N // PROMPTS


class Keyed:
    """Solved, unsolved or mixed by the prompt (see module); counts what it scores."""

    __name__ = "keyed"

    def __init__(self) -> None:
        self.scored = 0

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        self.scored += len(completions)
        return planted_rewards(task_id)


def dataset() -> Dataset:
    return task_dataset(range(N))


def args(out: Path, **kw: Any) -> GRPOConfig:
    return tiny_grpo_args(out, prompts=PROMPTS, n=N_GEN, **{"num_train_epochs": 2, **kw})


class Recording(FrontierGRPOTrainer):
    """Records each batch TRL trains on, each step's samples, the rows reaching the policy's
    forward pass in training (forward_rows.py), and each micro-batch's loss beside the loss
    TRL gives its trained rows alone (no filler rows, no factor), with their rows and tokens."""

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.batches: list[dict[str, torch.Tensor]] = []
        self.samples: list[Any] = []
        self.losses: list[tuple[float, float, int, int, float]] = []
        """Every micro-batch with a trained row: (loss, alone, its rows, its tokens, alone's
        entropy bonus)."""
        self.micro: list[tuple[int, float, float, int]] = []
        """Every micro-batch: (generation step, loss, alone x its trained rows, ... tokens)."""
        self.forward = ForwardRows(self.model, self.processing_class)
        if self.frontier_driver is not None:
            wrapper = self.frontier_driver.sampler
            sample = wrapper.sample

            def spy(*args: Any, **kwargs: Any) -> Any:
                self.samples.append(sample(*args, **kwargs))
                return self.samples[-1]

            wrapper.sample = spy  # type: ignore[method-assign]

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.batches.append({k: v.detach().clone() for k, v in out.items()})
            self.forward.new_step()
        return out

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        loss = super()._compute_loss(model, inputs)
        keep = inputs["completion_mask"].sum(dim=1) > 0
        if bool(keep.any()):
            alone = {k: v[keep] if k != "num_items_in_batch" else v for k, v in inputs.items()}
            alone["num_items_in_batch"] = inputs["completion_mask"][keep].sum()
            with torch.no_grad():
                trained = GRPOTrainer._compute_loss(self, model, alone)
                bonus = 0.0
                if getattr(self, "_entropy_bonus_enabled", False):  # alone's, without it
                    self._entropy_bonus_enabled = False
                    try:
                        bonus = float(trained - GRPOTrainer._compute_loss(self, model, alone))
                    finally:
                        self._entropy_bonus_enabled = True
            tokens = int(inputs["completion_mask"][keep].sum())
            row = (float(loss.detach()), float(trained), int(keep.sum()), tokens, bonus)
            self.losses.append(row)
            per_row, per_token = float(trained) * int(keep.sum()), float(trained) * tokens
        else:
            per_row = per_token = 0.0
        self.micro.append((len(self.batches) - 1, float(loss.detach()), per_row, per_token))
        return loss


def trainer(out: Path, frontier: FrontierConfig | None, **kw: Any) -> Any:
    tok = char_tokenizer()
    return Recording(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[Keyed()],
        args=args(out, **kw),
        train_dataset=dataset(),
        processing_class=tok,
        frontier=frontier,
    )


def scored(t: Any) -> int:
    return int(t.reward_funcs[0].__wrapped__.scored)  # the tap wraps the user's function


def learning_rates(t: Any) -> list[float]:
    return [h["learning_rate"] for h in t.state.log_history if "loss" in h]


def trl_advantages(rewards: np.ndarray, n: int) -> np.ndarray:
    grid = rewards.reshape(-1, n).astype(np.float32)
    std = grid.std(axis=1, ddof=1, keepdims=True)
    return ((grid - grid.mean(axis=1, keepdims=True)) / (std + 1e-4)).ravel()


# ---------------------------------------------------------------------- the schedule is kept
@pytest.fixture(scope="module")
def uniform(tmp_path_factory: pytest.TempPathFactory) -> Any:
    t = trainer(tmp_path_factory.mktemp("uniform"), FrontierConfig(selector="uniform"))
    t.train()
    return t


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Any:
    t = trainer(tmp_path_factory.mktemp("kept"), FrontierConfig(selector="greso", rollouts="kept"))
    t.train()
    return t


def test_greso_kept_generates_fewer_completions_on_uniforms_schedule(
    uniform: Any, kept: Any
) -> None:
    steps = 2 * STEPS_PER_EPOCH
    assert uniform.state.global_step == kept.state.global_step == steps == kept.state.max_steps
    assert learning_rates(kept) == learning_rates(uniform)  # the same LR schedule, step by step
    assert kept.lr_scheduler.get_last_lr()[0] == 0.0  # ... and it reached its end
    assert scored(uniform) == steps * PROMPTS * N_GEN
    generated = scored(kept)
    assert generated < scored(uniform)
    first_epoch = sum(s.rollouts for s in kept.samples[:STEPS_PER_EPOCH])
    assert first_epoch == STEPS_PER_EPOCH * PROMPTS * N_GEN  # greso skips nothing at first
    metrics = kept.frontier_metrics()
    assert metrics["trl/rollouts_delivered"] == generated  # the saving, in the counter
    assert metrics["fewer_rollouts/rollouts"] == generated
    assert uniform.frontier_metrics()["trl/rollouts_delivered"] == scored(uniform)
    print(f"greso, rollouts kept: {generated} completions, uniform {scored(uniform)}")


def test_the_default_trains_uniforms_whole_batches_and_follows_skip_as_a_shadow(
    tmp_path: Path, uniform: Any
) -> None:
    """Issue 70: the default (FrontierConfig()) trains TRL's whole batches, as uniform does,
    and follows skip beside them: its figures in the logs and its table at the end."""
    t = trainer(tmp_path, None)
    assert (t.frontier_config.selector, t.frontier_config.rollouts) == ("uniform", "full")
    assert [s.config.name for s in t.frontier_shadows.shadows] == ["skip"]
    t.train()
    assert scored(t) == scored(uniform) and learning_rates(t) == learning_rates(uniform)
    logged = {k for h in t.state.log_history for k in h}
    assert any(k.startswith("curriculum/shadow/skip/") for k in logged), sorted(logged)
    summary = (tmp_path / "frontier_metrics.jsonl").read_text().splitlines()[-1]
    assert "shadow_passes" in summary


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_a_selector_measured_level_with_kept_is_kept_and_a_smaller_bill(
    tmp_path: Path, uniform: Any
) -> None:
    """auto's kept, on skip planted as measured free of loss up to 2 epochs (conftest)."""
    t = trainer(tmp_path, FrontierConfig(selector="skip"))
    assert t.frontier_config.selector == "skip" and t.frontier_config.rollouts == "kept"
    t.train()
    steps = 2 * STEPS_PER_EPOCH
    assert t.state.global_step == steps == t.state.max_steps  # uniform's schedule
    assert learning_rates(t) == learning_rates(uniform)
    assert scored(t) < scored(uniform) == steps * PROMPTS * N_GEN
    assert t.frontier_metrics()["fewer_rollouts/rollouts"] == scored(t)
    print(f"skip, rollouts auto (kept): {scored(t)} completions, uniform {scored(uniform)}")


def test_a_prompt_no_reward_function_scores_does_not_stop_a_kept_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Under rollouts kept, a group every function returned None for is all equal to TRL: a
    zero-variance group at the lowest reward to the sampler and the selector, counted
    unscorable; the run goes on to its end."""

    class Unscored(Keyed):
        def __call__(self, completions: list[Any], task_id: list[int], **kw: Any) -> list[Any]:
            out = super().__call__(completions, task_id, **kw)
            return [None if t % 3 == 1 else r for t, r in zip(task_id, out, strict=True)]

    tok = char_tokenizer()
    with caplog.at_level("INFO", logger="frontier_rft.integrations.trl.trainer"):
        t = Recording(
            model=tiny_llama(tok, seed=0), reward_funcs=[Unscored()], args=args(tmp_path),
            train_dataset=dataset(), processing_class=tok,
            frontier=FrontierConfig(selector="skip", rollouts="kept"),
        )  # fmt: skip
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("frontier-rft: rollouts: kept (set): ") for m in said), said
    t.train()
    assert t.frontier_config.rollouts == "kept" and t.state.global_step == 2 * STEPS_PER_EPOCH
    unscored = sum(int((s.train.task_ids % 3 == 1).sum()) for s in t.samples)
    first = [s for s in t.samples[:STEPS_PER_EPOCH]]  # the first epoch walks every prompt
    assert sum(int((s.train.task_ids % 3 == 1).sum()) for s in first) == N // 3
    assert t.frontier_metrics()["trl/unscorable_dropped"] >= unscored * N_GEN


@pytest.mark.parametrize(
    ("frontier", "settings", "why"),
    [
        (FrontierConfig(selector="uniform"), {}, "passes over no prompt"),
        (FrontierConfig(selector="prioritized"), {}, "does not walk the data"),
        (FrontierConfig(selector="skip"), {"loss_type": "bnpo"}, "loss_type: bnpo"),
        (FrontierConfig(selector="skip"), {"scale_rewards": "batch"}, "scale_rewards: batch"),
        (FrontierConfig(selector="skip", dynamic_sampling="adaptive"), {},
         "dynamic_sampling: adaptive"),
        (FrontierConfig(selector="skip", shadows=["greso"]), {}, "shadows follow uniform"),
    ],
)  # fmt: skip
@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_rollouts_auto_is_full_where_kept_cannot_run_and_says_why(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    frontier: FrontierConfig,
    settings: dict[str, Any],
    why: str,
) -> None:
    with caplog.at_level("INFO", logger="frontier_rft.integrations.trl.trainer"):
        t = trainer(tmp_path, frontier, **settings)
    assert t.frontier_config.rollouts == "full"
    said = [r for r in caplog.records if "rollouts: auto" in r.getMessage()]
    assert len(said) == 1 and why in said[0].getMessage(), [r.getMessage() for r in said]
    # a setting that keeps a skipping selector from kept is a warning; a selector's own
    # nature (uniform, or no walk) is not
    assert (said[0].levelname == "WARNING") == (frontier.selector == "skip")


@pytest.mark.parametrize(
    ("settings", "mode", "said"),
    [
        ({"num_train_epochs": 2}, "kept", "the run is 2 epochs, within the 2 epochs"),
        ({"num_train_epochs": 3}, "full", "the run is 3 epochs, longer than the 2 epochs"),
        ({"max_steps": STEPS_PER_EPOCH}, "kept", "the run is 1 epoch, within"),
        ({"max_steps": 3 * STEPS_PER_EPOCH}, "full", "the run is 3 epochs, longer than"),
    ],
    ids=["2-epochs", "3-epochs", "max-steps-1-epoch", "max-steps-3-epochs"],
)
@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_rollouts_auto_keeps_the_default_to_the_length_kept_was_measured_level_at(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    settings: dict[str, Any],
    mode: str,
    said: str,
) -> None:
    """A selector measured level with uniform under kept over 2 epochs and below beyond
    (planted): auto saves on a run of up to 2 passes over the prompts (num_train_epochs, or
    max_steps over the dataset's rows) and keeps uniform's batches on a longer one, at INFO."""
    with caplog.at_level("INFO", logger="frontier_rft.integrations.trl.trainer"):
        t = trainer(tmp_path, FrontierConfig(selector="skip"), **settings)
    assert t.frontier_config.rollouts == mode
    (line,) = [r for r in caplog.records if "rollouts: auto" in r.getMessage()]
    assert said in line.getMessage() and line.levelname == "INFO", line.getMessage()


def test_every_batch_holds_only_the_trained_groups_rows(kept: Any) -> None:
    """One process, steps_per_generation 1: the batch TRL trains on is the trained groups'
    rows and nothing else (no filler row), with TRL's advantages."""
    assert len(kept.batches) == len(kept.samples) == 2 * STEPS_PER_EPOCH
    for batch, samples in zip(kept.batches, kept.samples, strict=True):
        trained = samples.train.num_groups
        assert batch["advantages"].shape[0] == trained * N_GEN
        assert bool((batch["completion_mask"].sum(dim=1) > 0).all())
        np.testing.assert_allclose(
            batch["advantages"].numpy(),
            trl_advantages(samples.train.rewards, N_GEN),
            atol=1e-5,
        )
    skipped = [PROMPTS - s.train.num_groups for s in kept.samples]
    assert sum(skipped) > 0 and sum(skipped[:STEPS_PER_EPOCH]) == 0


def test_the_policys_forward_pass_sees_only_the_kept_groups_rows(uniform: Any, kept: Any) -> None:
    """Counted in the model's own forward calls with gradients on (forward_rows.py): uniform
    trains B x n rows a step; kept trains the rows of the groups it rolled out, each n
    times, and nothing of the prompts it skipped."""
    steps = 2 * STEPS_PER_EPOCH
    assert len(uniform.forward.steps) == len(kept.forward.steps) == steps
    assert all(len(rows) == PROMPTS * N_GEN for rows in uniform.forward.steps)
    for rows, samples in zip(kept.forward.steps, kept.samples, strict=True):
        assert sorted(rows) == sorted(samples.train.task_ids.tolist() * N_GEN)
    trained = sum(len(rows) for rows in kept.forward.steps)
    assert trained == scored(kept) < steps * PROMPTS * N_GEN  # kept trains what it generated
    print(f"rows through the policy's forward pass: kept {trained}, uniform {steps * 16}")


@pytest.mark.parametrize("loss_scale", ["batch", "kept"])
@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
def test_micro_batches_pad_only_to_trls_split_and_the_loss_is_uniforms(
    tmp_path: Path, loss_type: str, loss_scale: str
) -> None:
    """steps_per_generation 8 (2 rows a micro-batch under uniform): a step training G
    mixed groups lays out 8 x ceil(4G / 8) rows (fillers only to fill the last
    micro-batch), and the step's loss is the one uniform's layout gives: the sum over its
    trained rows (grpo) or tokens (dapo) over B x n rows or tokens ('batch': the missing
    ones at the trained ones' mean) or over the trained ones ('kept')."""
    frontier = FrontierConfig(selector="uniform", screen=2, loss_scale=loss_scale)
    t = trainer(tmp_path, frontier, loss_type=loss_type, num_train_epochs=1,
                per_device_train_batch_size=2, gradient_accumulation_steps=8)  # fmt: skip
    assert t.args.steps_per_generation == 8
    t.train()
    steps = zip(t.forward.steps, t.samples, t.batches, strict=True)
    for step, (rows, samples, batch) in enumerate(steps):
        g = samples.train.num_groups
        assert len(rows) == batch["advantages"].shape[0] == 8 * max(1, -(-g * N_GEN // 8))
        live = batch["completion_mask"].sum(dim=1) > 0
        assert int(live.sum()) == g * N_GEN
        parts = [m for m in t.micro if m[0] == step]
        assert len(parts) == 8  # TRL's micro-batches, every one run
        if not g:
            continue
        total = sum(p[1] for p in parts)
        summed = sum(p[2] if loss_type == "grpo" else p[3] for p in parts)
        count = g * N_GEN if loss_type == "grpo" else int(batch["completion_mask"].sum())
        want = summed / count * (g / PROMPTS if loss_scale == "batch" else 1.0)
        assert total == pytest.approx(want, rel=1e-4, abs=1e-7), (total, want, g)


# ---------------------------------------------------------------------- screening, loss scale
@pytest.mark.parametrize(
    ("loss_type", "loss_scale", "entropy_coef"),
    [
        ("dapo", "batch", 0.0),
        ("dapo", "kept", 0.0),
        ("grpo", "batch", 0.0),
        ("grpo", "kept", 0.0),
        ("dapo", "batch", 0.5),  # TRL's entropy bonus stays the trained rows' (not G / B)
        ("grpo", "kept", 0.5),
    ],
)
def test_screening_and_the_loss_of_a_step_training_fewer_groups(
    tmp_path: Path, loss_type: str, loss_scale: str, entropy_coef: float
) -> None:
    frontier = FrontierConfig(selector="uniform", screen=2, loss_scale=loss_scale)
    t = trainer(
        tmp_path, frontier, loss_type=loss_type, num_train_epochs=1, entropy_coef=entropy_coef
    )
    t.train()
    assert t.state.global_step == STEPS_PER_EPOCH
    spent = 0
    for batch, samples in zip(t.batches, t.samples, strict=True):
        first = samples.rounds[0]
        assert first.task_ids.shape[0] == PROMPTS and first.rewards.shape[0] == PROMPTS * 2
        mixed = [int(x) for x in first.task_ids if x % 3 == 2]
        assert samples.train.task_ids.tolist() == mixed  # only mixed groups are trained
        spent += PROMPTS * 2 + len(mixed) * (N_GEN - 2)
        trained = len(mixed)
        # A screened group's advantages are TRL's over its 4 rewards, not over its parts.
        for g in range(trained):
            assert samples.train.rewards[g * N_GEN : (g + 1) * N_GEN].tolist() == [1, 0, 1, 0]
        np.testing.assert_allclose(
            batch["advantages"][: trained * N_GEN].numpy(),
            trl_advantages(np.array([1.0, 0.0] * 2 * trained), N_GEN),
            atol=1e-5,
        )
        # Only the trained rows; a step training none runs one masked row (the micro-batch).
        assert batch["advantages"].shape[0] == max(trained * N_GEN, 1)
        assert int((batch["completion_mask"].sum(dim=1) > 0).sum()) == trained * N_GEN
    for rows, samples in zip(t.forward.steps, t.samples, strict=True):
        mixed = sorted(int(x) for x in samples.rounds[0].task_ids if x % 3 == 2)
        assert sorted(rows) == sorted(mixed * N_GEN) or (not mixed and len(rows) == 1)
    assert scored(t) == spent == t.frontier_metrics()["trl/rollouts_delivered"]
    assert spent < STEPS_PER_EPOCH * PROMPTS * N_GEN
    trained_per_step = [s.train.num_groups for s in t.samples if s.train.num_groups]
    assert len(t.losses) == len(trained_per_step) and min(trained_per_step) < PROMPTS
    for (loss, alone, _, _, bonus), g in zip(t.losses, trained_per_step, strict=True):
        # 'batch' weighs the policy gradient G / B, not the entropy bonus (nor the KL)
        want = (alone - bonus) * (g / PROMPTS if loss_scale == "batch" else 1.0) + bonus
        assert loss == pytest.approx(want, rel=1e-4, abs=1e-7), (loss, alone, g)
    if entropy_coef:  # the bonus was on (alone holds it) and TRL logged the user's coefficient
        assert any(h["entropy"] > 0 for h in t.state.log_history if "loss" in h)
        logged = {h["entropy_coef"] for h in t.state.log_history if "entropy_coef" in h}
        assert logged == {entropy_coef}


class ByHand(FrontierGRPOTrainer):
    """Each training micro-batch: the adapter's loss and its gradient, beside the loss of
    its trained rows computed by hand from the model's log-probabilities (`hand`: G / B x policy
    gradient + beta x KL - entropy_coef x entropy, over the step's trained rows or tokens)
    and `scaled` (G / B on all three, as the adapter had it), with their gradients."""

    def __init__(self, *a: Any, beta: float, coef: float, **kw: Any):
        super().__init__(*a, **kw)
        self.weights = beta, coef
        self.parts: list[dict[str, Any]] = []
        self.step_rows = self.step_tokens = 0

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:  # the step's trained rows and tokens (fillers: mask 0)
            self.step_rows = int((out["completion_mask"].sum(dim=1) > 0).sum())
            self.step_tokens = int(out["completion_mask"].sum())
        return out

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        loss = super()._compute_loss(model, inputs)
        params = [p for p in model.parameters() if p.requires_grad]

        def grad(x: torch.Tensor) -> torch.Tensor:
            return torch.cat(
                [g.flatten() for g in torch.autograd.grad(x, params, retain_graph=True)]
            )

        keep = inputs["completion_mask"].sum(dim=1) > 0
        live, rows = int(keep.sum()), self.step_rows
        part = {"step": self.state.global_step, "loss": float(loss.detach()), "live": live}
        part.update(grad=grad(loss), share=rows / N_GEN / PROMPTS)
        if live:
            assert inputs.get("old_per_token_logps") is None  # one iteration: the ratio is 1
            prompt, completion = inputs["prompt_ids"][keep], inputs["completion_ids"][keep]
            # the model's log-probabilities and entropies as TRL's loss reads them (its fused
            # head: the plain logits' autograd gradient differs from it by ~0.3%)
            logps, entropy, _ = self._get_per_token_logps_and_entropies(
                model,
                torch.cat([prompt, completion], dim=1),
                torch.cat([inputs["prompt_mask"][keep], inputs["completion_mask"][keep]], dim=1),
                completion.size(1),
                compute_entropy=True,
            )
            m = inputs["completion_mask"][keep].to(logps.dtype)
            ratio = torch.exp(logps - logps.detach())  # 1, with the policy gradient's gradient
            pg = -ratio * inputs["advantages"][keep].unsqueeze(1)  # unclipped at ratio 1
            d = inputs["ref_per_token_logps"][keep] - logps
            kl = torch.exp(d) - d - 1  # TRL's k3 estimator
            if self.args.use_bias_correction_kl:  # TRL's default: times the ratio (1)
                kl = kl * ratio
            if self.loss_type == "grpo":  # each row's token mean, over the step's G n rows
                length = m.sum(dim=1).clamp(min=1.0)
                pg_mean = ((pg * m).sum(dim=1) / length).sum() / rows
                kl_mean = ((kl * m).sum(dim=1) / length).sum() / rows
            else:  # dapo: over the step's trained tokens
                pg_mean = (pg * m).sum() / self.step_tokens
                kl_mean = (kl * m).sum() / self.step_tokens
            # TRL's bonus: the micro-batch's token mean, weighted by its share of the rows
            entropy_mean = (entropy * m).sum() / m.sum() * live / rows
            beta, coef = self.weights
            s = part["share"]
            hand = s * pg_mean + beta * kl_mean - coef * entropy_mean
            scaled = s * (pg_mean + beta * kl_mean - coef * entropy_mean)
            part.update(hand=float(hand.detach()), hand_grad=grad(hand))
            part.update(scaled=float(scaled.detach()), scaled_grad=grad(scaled))
        self.parts.append(part)
        return loss


@pytest.mark.parametrize(("loss_type", "entropy_coef"), [("grpo", 0.0), ("dapo", 0.3)])
def test_a_kept_steps_kl_is_the_trained_rows_mean_and_only_its_policy_gradient_weighs_g_over_b(
    tmp_path: Path, loss_type: str, entropy_coef: float
) -> None:
    """loss_scale batch, beta 0.5 against a reference model other than the start (a KL term
    from the first step), screen 2 (the G mixed groups of B = 4 trained), 8 micro-batches a
    generation (fillers among them): summed over a step's micro-batches, the loss and its
    gradient are, by hand over the step's trained rows (grpo: each row's token mean, over
    the G n rows; dapo: over the trained tokens),
        G / B x policy gradient + beta x KL - entropy_coef x entropy,
    KL and entropy the trained rows' means, not G / B of them (TRL's entropy bonus is a mean
    over each micro-batch's trained tokens, weighted by its trained rows / (G n))."""
    tok = char_tokenizer()
    tiny_llama(tok, seed=1).save_pretrained(tmp_path / "ref")
    model = tiny_llama(tok, seed=0)
    model.config._name_or_path = str(tmp_path / "ref")  # TRL loads the reference from here
    beta = 0.5
    t = ByHand(
        model=model, reward_funcs=[Keyed()], train_dataset=dataset(), processing_class=tok,
        args=args(tmp_path / "out", loss_type=loss_type, num_train_epochs=1, beta=beta,
                  entropy_coef=entropy_coef, per_device_train_batch_size=2,
                  gradient_accumulation_steps=8),
        frontier=FrontierConfig(selector="uniform", screen=2, loss_scale="batch"),
        beta=beta, coef=entropy_coef,
    )  # fmt: skip
    assert t.args.steps_per_generation == 8
    t.train()
    shares, apart = [], []
    for step in range(STEPS_PER_EPOCH):
        parts = [p for p in t.parts if p["step"] == step]
        assert len(parts) == 8
        live = [p for p in parts if p["live"]]
        if not live:
            continue
        shares.append(parts[0]["share"])
        assert sum(p["loss"] for p in parts) == pytest.approx(
            sum(p["hand"] for p in live), rel=1e-4, abs=1e-6
        )
        got = sum(p["grad"] for p in parts)
        hand = sum(p["hand_grad"] for p in live)
        scale = float(hand.norm())
        # to float noise (TRL's fused head's backward, several calls on one graph), 20x below
        # how far off G / B on the KL and entropy as well would be
        assert float((got - hand).norm()) < 1e-3 * scale, float((got - hand).norm()) / scale
        apart.append(float((sum(p["scaled_grad"] for p in live) - hand).norm()) / scale)
    assert min(shares) < 1 and min(apart) > 0.02, (shares, apart)


def test_a_step_that_trains_no_group_changes_no_weight(tmp_path: Path) -> None:
    """Every prompt solved or never: screening trains nothing, every optimizer step is
    skipped, and the schedule still runs to its end."""

    def never_mixed(completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        return [float(t % 2) for t in task_id]

    tok = char_tokenizer()
    t = Recording(
        model=tiny_llama(tok, seed=0), reward_funcs=[never_mixed],
        args=args(tmp_path, num_train_epochs=1), train_dataset=dataset(),
        processing_class=tok, frontier=FrontierConfig(selector="uniform", screen=2),
    )  # fmt: skip
    before = [p.detach().clone() for p in t.model.parameters()]
    t.train()
    assert t.state.global_step == STEPS_PER_EPOCH and t.frontier_stop_reason is None
    for a, b in zip(before, t.model.parameters(), strict=True):
        assert torch.equal(a, b.detach())
    metrics = t.frontier_metrics()
    assert metrics["fewer_rollouts/empty_steps"] == STEPS_PER_EPOCH
    assert metrics["trl/rollouts_delivered"] == STEPS_PER_EPOCH * PROMPTS * 2  # k each only


# ---------------------------------------------------------------------- resume
def test_resume_mid_second_epoch_continues_identically(tmp_path: Path) -> None:
    frontier = FrontierConfig(selector="greso", rollouts="kept")
    saves = {"save_strategy": "steps", "save_steps": 8}  # in the epoch where greso skips
    full = trainer(tmp_path / "full", frontier, **saves)
    full.train()
    ckpt = tmp_path / "full" / "checkpoint-8"
    assert (ckpt / "frontier_selector.npz").is_file()  # the walk and the streaks travel
    resumed = trainer(tmp_path / "resumed", frontier)
    resumed.train(resume_from_checkpoint=str(ckpt))
    assert resumed.state.global_step == full.state.global_step
    digests = [state_digest(t.frontier_selector.state_dict()) for t in (full, resumed)]
    assert digests[0] == digests[1]
    assert (
        full.frontier_metrics()["trl/rollouts_delivered"]
        == (resumed.frontier_metrics()["trl/rollouts_delivered"])
    )
    tail = [[s.train.task_ids.tolist() for s in t.samples][-4:] for t in (full, resumed)]
    assert tail[0] == tail[1]
    for a, b in zip(full.batches[8:], resumed.batches, strict=True):
        torch.testing.assert_close(a["completion_ids"], b["completion_ids"])
        torch.testing.assert_close(a["completion_mask"], b["completion_mask"])


def test_a_checkpoint_with_other_fewer_rollouts_settings_is_refused(tmp_path: Path) -> None:
    """The settings travel with the selector state, in the step sampler's file (the one
    record); a resume with others is one line naming the saved ones and changes nothing. A
    checkpoint from before that file: its frontier_fewer_rollouts.json, else the defaults."""
    saved = {"rollouts": "kept", "screen": 0, "loss_scale": "batch"}
    ckpt = tmp_path / "ckpt"
    trainer(tmp_path / "a", FrontierConfig(selector="greso", **saved)).save_frontier_state(ckpt)
    assert not (ckpt / "frontier_fewer_rollouts.json").exists()  # no second record
    want = "resume with the saved settings (rollouts: kept, screen: 0, loss_scale: batch)"
    for other in ({"screen": 2}, {"rollouts": "kept", "screen": 2},
                  {"rollouts": "kept", "loss_scale": "kept"}, {"rollouts": "full"}):  # fmt: skip
        t = trainer(tmp_path / "b", FrontierConfig(selector="greso", **other))
        before = state_digest(t.frontier_selector.state_dict())
        with pytest.raises(ValueError) as info:
            t.train(resume_from_checkpoint=str(ckpt))  # refused before TRL reads a file
        assert want in str(info.value) and "\n" not in str(info.value), other
        assert state_digest(t.frontier_selector.state_dict()) == before
    trainer(tmp_path / "c", FrontierConfig(selector="greso", **saved)).load_frontier_state(ckpt)

    (ckpt / "frontier_step_sampler.npz").unlink()  # as written before the step sampler's file
    legacy = ckpt / "frontier_fewer_rollouts.json"  # ... and with the settings' old record
    legacy.write_text(json.dumps(saved))
    trainer(tmp_path / "f", FrontierConfig(selector="greso", **saved)).load_frontier_state(ckpt)
    with pytest.raises(ValueError, match=r"resume with the saved settings \(rollouts: kept"):
        trainer(
            tmp_path / "g", FrontierConfig(selector="greso", rollouts="full")
        ).load_frontier_state(ckpt)
    legacy.write_text("{not json")
    with pytest.raises(ValueError, match=r"not readable as a .*resume from an earlier checkpoint"):
        trainer(tmp_path / "h", FrontierConfig(selector="greso", **saved)).load_frontier_state(ckpt)
    legacy.unlink()  # before either record: the defaults
    # off, as saved: loss_scale changes nothing; rollouts: auto would be kept here
    for ok in ({"rollouts": "full"}, {"rollouts": "full", "loss_scale": "kept"}):
        trainer(tmp_path / "d", FrontierConfig(selector="greso", **ok)).load_frontier_state(ckpt)
    with pytest.raises(ValueError, match=r"saved settings \(rollouts: full, screen: 0, loss"):
        trainer(tmp_path / "e", FrontierConfig(selector="greso", **saved)).load_frontier_state(ckpt)


# ---------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    ("settings", "frontier", "phrase"),
    [
        ({"loss_type": "bnpo"}, {"rollouts": "kept"}, "loss_type: bnpo"),
        ({}, {"screen": 4}, "screen 4 must be below num_generations 4"),
        ({"scale_rewards": "batch"}, {"screen": 2}, "screen: 2 with scale_rewards: batch"),
        ({"use_adaptive_entropy": True}, {"screen": 2}, "screen: 2 with use_adaptive_entropy"),
    ],
)
def test_settings_it_cannot_run_with_are_one_line_before_the_model_loads(
    tmp_path: Path, settings: dict, frontier: dict, phrase: str
) -> None:
    config = args(tmp_path, **settings)
    with pytest.raises(ValueError) as info:
        FrontierGRPOTrainer(model="no/such-model-is-loaded", reward_funcs=[Keyed()],
                            args=config, train_dataset=dataset(),
                            frontier=FrontierConfig(**frontier))  # fmt: skip
    assert phrase in str(info.value) and "\n" not in str(info.value)


def test_a_ready_selector_that_does_not_walk_the_data_is_refused_by_name(tmp_path: Path) -> None:
    from frontier_rft import TaskPool, make_selector

    selector = make_selector("prioritized", TaskPool(num_tasks=N), seed=0)
    with pytest.raises(ValueError, match="selector 'prioritized' does not walk the data"):
        FrontierGRPOTrainer(model="no/such-model-is-loaded", reward_funcs=[Keyed()],
                            args=args(tmp_path), train_dataset=dataset(), selector=selector,
                            frontier=FrontierConfig(rollouts="kept"))  # fmt: skip


# ---------------------------------------------------------------------- two processes
DISTRIBUTED_ARMS = {
    "kept": {"selector": "greso", "rollouts": "kept"},
    "screen": {"selector": "greso", "screen": 2, "rollouts": "full"},  # screening alone
}
"""name: FrontierConfig of a 2-process run (2 epochs, B = 4 prompts of n = 4 a step over
both processes, 8 rows each)."""
DISTRIBUTED_STEPS = 2 * STEPS_PER_EPOCH
UNIFORM_COMPLETIONS = DISTRIBUTED_STEPS * PROMPTS * N_GEN
"""What uniform generates in the same run (every step B x n)."""
TIMEOUT_S = 600
"""A hang (ranks waiting on different collectives) fails the test here instead of blocking."""


class CrcKeyed:
    """Always 1 (t % 3 == 0), never (t % 3 == 1), else the parity of a checksum of the
    completion: a rank's rewards depend on the text it generated, so a rank cannot decide
    a group from its own rows alone. Counts the completions this process scores."""

    __name__ = "crc_keyed"

    def __init__(self) -> None:
        self.scored = 0

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        import zlib

        self.scored += len(completions)
        return [
            1.0 if t % 3 == 0 else 0.0 if t % 3 == 1 else float(zlib.crc32(str(c).encode()) & 1)
            for t, c in zip(task_id, completions, strict=True)
        ]


class ShapeRecording(FrontierGRPOTrainer):
    """Records per step, on this process: the prompts of each round and the trained ones,
    the shape of every tensor of the batch TRL trains on, and the rows of each micro-batch
    reaching the loss (no extra forward pass: under FSDP that would be a collective)."""

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.steps: list[dict[str, Any]] = []
        self.loss_rows: list[list[int]] = []
        self.forward = ForwardRows(self.model, self.processing_class)
        wrapper = self.frontier_driver.sampler
        sample = wrapper.sample

        def spy(*args: Any, **kwargs: Any) -> Any:
            samples = sample(*args, **kwargs)
            self.steps.append(
                {
                    "rounds": [r.task_ids.tolist() for r in samples.rounds],
                    "trained": samples.train.task_ids.tolist(),
                }
            )
            return samples

        wrapper.sample = spy  # type: ignore[method-assign]

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            step = self.steps[-1]
            step["shapes"] = {k: list(v.shape) for k, v in out.items() if getattr(v, "ndim", 0)}
            step["live_rows"] = int((out["completion_mask"].sum(dim=1) > 0).sum())
            step["skip_update"] = bool(self.frontier_driver.skip_update)
            self.loss_rows.append([])
            self.forward.new_step()
        return out

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        self.loss_rows[-1].append(int(inputs["completion_mask"].shape[0]))
        return super()._compute_loss(model, inputs)


def _fewer_distributed_worker(out: Path) -> None:
    """One rank of a 2-process CPU (gloo) run per DISTRIBUTED_ARMS entry: writes what it
    saw, step by step, for the test to compare across ranks."""
    import time

    for name, settings in DISTRIBUTED_ARMS.items():
        tok = char_tokenizer()
        reward = CrcKeyed()
        t = ShapeRecording(
            model=tiny_llama(tok, seed=0), reward_funcs=[reward],
            args=args(out / name, per_device_train_batch_size=PROMPTS * N_GEN // 2,
                      save_strategy="steps", save_steps=STEPS_PER_EPOCH),
            train_dataset=dataset(), processing_class=tok,
            frontier=FrontierConfig(check_sync=True, **settings),
        )  # fmt: skip
        start = time.perf_counter()
        t.train()
        from torch.distributed.fsdp import FSDPModule

        record = {
            "num_processes": t.accelerator.num_processes,
            "distributed_type": str(t.accelerator.distributed_type),
            "sharded": sum(isinstance(m, FSDPModule) for m in t.model.modules()),
            "seconds": time.perf_counter() - start,
            "global_step": int(t.state.global_step),
            "digest": state_digest(t.frontier_selector.state_dict()),
            "metrics": {
                k: v for k, v in t.frontier_metrics().items() if np.isfinite(v) and "_ms" not in k
            },
            "steps": t.steps,
            "loss_rows": t.loss_rows,
            "forward_rows": t.forward.steps,
            "learning_rates": learning_rates(t),
            "scored": reward.scored,
        }
        rank = t.accelerator.process_index
        (out / f"{name}-rank{rank}.json").write_text(json.dumps(record))
    leave_process_group()


_LOOPBACK_UP = """
import fcntl, os, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))
if len(sys.argv) > 1:
    os.execvp(sys.argv[1], sys.argv[1:])
"""
"""Brings the loopback interface of a fresh network namespace up, then runs argv[1:]."""


def _loopback_only(command: list[str]) -> tuple[list[str], bool]:
    """`command` in a network namespace of its own, where loopback is the only interface
    (`unshare -rn`, where user namespaces are allowed), so nothing the run starts can listen
    beyond this machine: torch's rendezvous store listens on every interface whatever
    MASTER_ADDR says. Else `command` itself (MASTER_ADDR and gloo still on 127.0.0.1)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return command, False
    prelude = [unshare, "-rn", sys.executable, "-c", _LOOPBACK_UP]
    probe = subprocess.run(prelude, capture_output=True, timeout=30)
    return ([*prelude, *command], True) if probe.returncode == 0 else (command, False)


def _launch(
    out: Path, extra: list[str], env_extra: dict[str, str] | None = None, script: str = __file__
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`accelerate launch` `script` (this file) on 2 local CPU processes, on loopback only;
    the whole process group is killed at TIMEOUT_S (a hang fails the test, not blocks it)."""
    import frontier_rft

    # The processes import the package this test imports (a worktree's, not the installed one).
    paths = [str(Path(__file__).parent), str(Path(frontier_rft.__file__).parents[1])]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(paths),
        "MASTER_ADDR": "127.0.0.1",
        "GLOO_SOCKET_IFNAME": "lo",
        **(env_extra or {}),
    }
    launcher = [sys.executable, "-m", "accelerate.commands.launch", *extra]
    launcher += ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    launcher += ["--dynamo_backend", "no", "--main_process_ip", "127.0.0.1"]
    launcher += ["--main_process_port", "0"]
    command, isolated = _loopback_only([*launcher, script, str(out)])
    print(f"network namespace of its own: {isolated}")
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"2-process run still going after {TIMEOUT_S} s (a hang?): {stderr[-2000:]}")
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return done, time.perf_counter() - start


def _check_ranks_agree(out: Path, kind: str) -> dict[str, int]:
    """Both ranks saw the same prompts, batch shapes (rows), micro-batches and selector at
    every step; fewer completions than uniform. Returns completions per arm."""
    generated = {}
    for name in DISTRIBUTED_ARMS:
        ranks = [json.loads((out / f"{name}-rank{r}.json").read_text()) for r in (0, 1)]
        assert all(r["num_processes"] == 2 for r in ranks), name
        assert all(kind in r["distributed_type"] for r in ranks), ranks[0]["distributed_type"]
        assert ranks[0]["global_step"] == ranks[1]["global_step"] == DISTRIBUTED_STEPS, name
        assert ranks[0]["digest"] == ranks[1]["digest"], name  # the same walk and streaks
        for key in ("metrics", "loss_rows", "learning_rates"):
            assert ranks[0][key] == ranks[1][key], (name, key)
        steps = [r["steps"] for r in ranks]
        assert len(steps[0]) == len(steps[1]) == DISTRIBUTED_STEPS, name
        for t, (a, b) in enumerate(zip(*steps, strict=True)):
            assert a["rounds"] == b["rounds"] and a["trained"] == b["trained"], (name, t)
            assert a["skip_update"] == b["skip_update"], (name, t)
            assert a["shapes"].keys() == b["shapes"].keys(), (name, t)
            trained = len(a["trained"]) * N_GEN
            share = max(1, -(-trained // 2))  # balanced; one masked row a rank when none
            for key, shape in a["shapes"].items():  # rows agree; widths are each rank's
                assert shape[0] == b["shapes"][key][0] == share, (name, t, key)
            assert a["live_rows"] + b["live_rows"] == trained, (name, t)
            # The policy's forward pass (its own calls) saw the trained groups' rows only.
            seen = ranks[0]["forward_rows"][t] + ranks[1]["forward_rows"][t]
            if trained:
                assert sorted(seen) == sorted(a["trained"] * N_GEN), (name, t)
            else:
                assert len(ranks[0]["forward_rows"][t]) == len(ranks[1]["forward_rows"][t]) == 1
        metrics = ranks[0]["metrics"]
        spent = ranks[0]["scored"] + ranks[1]["scored"]
        assert metrics["fewer_rollouts/rollouts"] == spent  # every completion generated
        assert spent < UNIFORM_COMPLETIONS, (name, spent)
        generated[name] = spent
    return generated


def test_two_processes_agree_on_every_step_and_generate_fewer(tmp_path: Path) -> None:
    """`accelerate launch` with 2 CPU processes (gloo, DDP): greso with rollouts: kept, and
    screening with k = 2, for 2 epochs on a pool with always- and never-solved prompts.
    Every rank trains the same prompts with the same batch and micro-batch rows at every
    step, the run ends (no hang), and it generates fewer completions than uniform."""
    done, seconds = _launch(tmp_path, ["--multi_gpu"])
    assert done.returncode == 0, done.stderr[-3000:]
    generated = _check_ranks_agree(tmp_path, "MULTI")
    record = json.loads((tmp_path / "kept-rank0.json").read_text())
    assert record["sharded"] == 0  # DDP: whole copies of the model
    print(
        f"2 processes (DDP): {generated} completions, uniform {UNIFORM_COMPLETIONS}; "
        f"{seconds:.0f} s for both runs"
    )


FSDP_ON_CPU = "FRONTIER_TEST_FSDP_ON_CPU"
"""Set for the FSDP test's ranks: accelerate 1.15 turns a run into DistributedType.FSDP only
when its type is a GPU-like one (MULTI_GPU, MULTI_NPU, ...); on CPU it stays MULTI_CPU and
wraps the model in DDP, ignoring `--use_fsdp`. `_take_accelerates_fsdp_branch_on_cpu` makes
it take the branch it takes on GPUs (the one stand-in); the wrapping (FSDP2's
`fully_shard`), the sharded parameters and every collective are torch's own, over gloo."""


def _take_accelerates_fsdp_branch_on_cpu() -> None:
    """After AcceleratorState's own init, what its GPU branch does when given an FSDP plugin:
    distributed_type FSDP and the plugin, also in PartialState's shared state (which every
    later AcceleratorState() copies)."""
    from accelerate import state
    from accelerate.utils import DistributedType

    init = state.AcceleratorState.__init__

    def fsdp_on_cpu(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        plugin = kwargs.get("fsdp_plugin")
        if self.distributed_type == DistributedType.MULTI_CPU and plugin is not None:
            self.distributed_type = DistributedType.FSDP
            self.fsdp_plugin = plugin
            state.PartialState._shared_state["distributed_type"] = DistributedType.FSDP

    state.AcceleratorState.__init__ = fsdp_on_cpu  # type: ignore[method-assign]


def test_two_processes_under_fsdp_agree_on_every_step(tmp_path: Path) -> None:
    """The same two runs under FSDP2 (`accelerate launch --use_fsdp --fsdp_version 2`) on
    CPU (gloo): the model's layers are sharded across the ranks (FSDPModule), and every
    rank agrees on each step's prompts, shapes and micro-batches; no hang. See FSDP_ON_CPU
    for the one line of accelerate this test changes."""
    done, seconds = _launch(tmp_path, ["--use_fsdp", "--fsdp_version", "2"], {FSDP_ON_CPU: "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    generated = _check_ranks_agree(tmp_path, "FSDP")
    for name in DISTRIBUTED_ARMS:
        ranks = [json.loads((tmp_path / f"{name}-rank{r}.json").read_text()) for r in (0, 1)]
        assert all(r["sharded"] > 1 for r in ranks), (name, [r["sharded"] for r in ranks])
    print(
        f"2 processes (FSDP2): {generated} completions, uniform {UNIFORM_COMPLETIONS}; "
        f"{seconds:.0f} s for both runs"
    )


if __name__ == "__main__":  # a rank of the two-process tests, started by accelerate launch
    if os.environ.get(FSDP_ON_CPU) == "1":
        _take_accelerates_fsdp_branch_on_cpu()
    _fewer_distributed_worker(Path(sys.argv[1]))


def test_skip_audit_with_kept_logs_its_run_summary_at_the_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 70, item 2: the audited skip's own estimate of what its passing over lost, in its
    metrics and in one line at the end of a TRL run."""
    t = trainer(tmp_path, FrontierConfig(selector="skip-audit", rollouts="kept"))
    with caplog.at_level(logging.INFO, logger="frontier_rft"):
        t.train()
    lines = [r.getMessage() for r in caplog.records if "skip-audit: passed over" in r.getMessage()]
    assert len(lines) == 1 and "of the run's (upper bound" in lines[0]
    assert "target 5%" in lines[0]
    metrics = t.frontier_selector.metrics()
    assert metrics["skip-audit/audit/walked_total"] == 2 * STEPS_PER_EPOCH * PROMPTS
