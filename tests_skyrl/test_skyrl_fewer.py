"""`rollouts: kept` on SkyRL: uniform's steps and epochs, only the prompts the selector keeps
among uniform's next batch rolled out (conftest says what is real and what is stood in for).

Here SkyRL's own convert_to_training_input (its padding and mini-batch cut) and its GRPO
advantages run too, and the stood-in policy update applies SkyRL's own per-mini-batch loss
normalisation to what it is given. The stood-in workers report 8 data-parallel ranks: with 4
rollouts a prompt SkyRL's `_remove_tail_data` would cut a batch to an even number of prompts.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from test_skyrl_trainer import _assert_same, _state, generated_rollouts

from conftest import BATCH, N_SAMPLES, SEED, Run, pass_rates, skyrl_config, task_ids
from frontier_rft import make_selector
from frontier_rft.integrations.skyrl.config import OWN_STATE_FILE
from frontier_rft.integrations.skyrl.trainer import kept_mini_batches
from frontier_rft.sampling.fewer_rollouts import FewerRollouts

STEPS = 16  # two epochs of the 32 prompts, 4 a step
MINI = 2  # trainer.policy_mini_batch_size: two mini-batches in uniform's step
DP = 8
KEPT = {"selector": "greso", "seed": 3, "rollouts": "kept"}


def kept_run(make_run: Any, ckpt: Path, frontier: dict[str, Any] = KEPT, **trainer: Any) -> Run:
    cfg = skyrl_config(ckpt, policy_mini_batch_size=MINI, **{"steps": STEPS, **trainer})
    run: Run = make_run(cfg, frontier, real_batches=True, lcm_dp_size=DP)
    return run


def reference_windows(run: Run, steps: int) -> list[list[int]]:
    """The reference trainer's rule on the same pool and rewards: FewerRollouts(greso) with
    the skip; each step's prompts as task ids, as its `sample` rolls them out."""
    wrapper = FewerRollouts(make_selector("greso", run.sampler.selector.pool, seed=3))
    ids, p = task_ids(), pass_rates()
    out: list[list[int]] = []
    for step in range(steps):

        def rollout(pos: np.ndarray, step: int = step) -> np.ndarray:
            out.append([int(ids[i]) for i in pos])
            draws = [  # BernoulliGenerator's seeding: SkyRL's global step is step + 1
                np.random.default_rng([SEED, step + 1, 0, int(ids[i]), rep]).random() < p[i]
                for i in pos
                for rep in range(N_SAMPLES)
            ]
            return np.asarray(draws, dtype=np.float64)

        wrapper.sample(step, BATCH, N_SAMPLES, rollout)
    return out


def test_kept_keeps_skyrls_schedule_and_rolls_out_fewer(make_run: Any, tmp_path: Path) -> None:
    uniform = kept_run(make_run, tmp_path / "u", {"selector": "uniform", "seed": 3}).train()
    kept = kept_run(make_run, tmp_path / "k").train()

    # SkyRL's schedule: the same steps, epochs and dataloader length as uniform's.
    for run in (uniform, kept):
        assert run.trainer.total_training_steps == STEPS and len(run.generator.calls) == STEPS
        assert len(run.trainer.train_dataloader) == 32 // BATCH
        assert (run.sampler._epoch, run.sampler._in_epoch) == (1, 8)  # two whole epochs
        assert len(run.logged()) == STEPS
    # SkyRL generated exactly the selector's windows, which are the reference trainer's.
    assert (
        [c["tasks"] for c in kept.generator.calls] == kept.picks == reference_windows(kept, STEPS)
    )
    sizes = [len(c["tasks"]) for c in kept.generator.calls]
    assert sizes == [4] * 8 + [3, 4, 2, 2, 4, 1, 4, 2]  # greso skips nothing in epoch 1
    rollouts = [len(c["rollouts"]) for c in kept.generator.calls]
    assert (sum(rollouts), sum(len(c["rollouts"]) for c in uniform.generator.calls)) == (216, 256)
    # Every rollout generated reached the selector once, with its task id and draw step.
    assert Counter(kept.feedback) == generated_rollouts(kept)
    assert kept.sampler.selector.metrics()["feedback/rollouts"] == 216
    assert kept.sampler.metrics()["fewer_rollouts/kept"] == 2  # the last window

    # What SkyRL trains: every kept prompt (its tail removal would cut the 3- and 1-prompt
    # steps to 2 and 0 prompts with 8 ranks), padded with loss-masked rows to 8-row shards.
    for k, batch in zip(sizes, kept.batches, strict=True):
        real = k * N_SAMPLES
        assert batch["rows"] == real + batch["pad_size"] and batch["rows"] % DP == 0
        assert batch["pad_size"] < DP  # padded to the ranks only, not to the full batch
        prompts = [(i * N_SAMPLES, (i + 1) * N_SAMPLES) for i in range(k)]
        assert batch["mini_batches"] == kept_mini_batches(prompts, MINI)
        assert len(batch["mini_batches"]) == -(-k // MINI)  # the last one shorter when k is odd
        assert int(batch["loss_mask"][real:].sum()) == 0
        # SkyRL's token_mean: each mini-batch's advantages over its own loss tokens, times
        # the mini-batch's share of MINI prompts (loss_scale: batch, the default), so a short
        # mini-batch weighs by the groups it trains, as if the left-out ones were all equal.
        for start, end in batch["mini_batches"]:
            tokens = batch["loss_mask"][start:end].sum()
            share = (end - start) / (MINI * N_SAMPLES)
            expected = batch["advantages"][start:end] / tokens * share
            assert torch.allclose(batch["normalized"][start:end], expected)
        assert not batch["normalized"][real:].any()


def test_a_window_that_keeps_none_walks_on_to_one_kept(make_run: Any, tmp_path: Path) -> None:
    # greso skipping nearly every prompt seen all-equal (keep probability 0.001): some
    # windows of the second epoch keep none, and the step walks on to the first one kept.
    frontier = {
        **KEPT,
        "selector_config": {"p_init": 0.001, "p_min": 0.001, "p_max": 0.001, "min_keep": 1e-4},
    }
    run = kept_run(make_run, tmp_path / "k", frontier)
    selector = run.sampler.selector
    walked: list[int] = []
    select_window = selector.select_window

    def counted(n: int) -> np.ndarray:
        before = selector._handed_out
        out = select_window(n)
        walked.append(selector._handed_out - before)
        return out

    selector.select_window = counted  # type: ignore[method-assign]
    run.train()
    sizes = [len(c["tasks"]) for c in run.generator.calls]
    assert len(sizes) == STEPS and min(sizes) >= 1  # every step trains at least one group
    assert any(w > BATCH for w in walked), walked  # a window kept none and walked on
    assert all(s == 1 for s, w in zip(sizes, walked, strict=True) if w > BATCH)
    assert Counter(run.feedback) == generated_rollouts(run)


@pytest.mark.parametrize("keep", ["data.pt", OWN_STATE_FILE])
def test_kept_resumes_mid_epoch_exactly(make_run: Any, tmp_path: Path, keep: str) -> None:
    whole = kept_run(make_run, tmp_path / "whole", steps=13).train()
    ckpt = tmp_path / "resumed"
    first = kept_run(make_run, ckpt, steps=10, ckpt_interval=10).train()
    folder = ckpt / "global_step_10"  # two steps into the second epoch, windows shrinking
    (folder / (OWN_STATE_FILE if keep == "data.pt" else "data.pt")).unlink()
    resumed = kept_run(make_run, ckpt, steps=13, ckpt_interval=10, resume_mode="latest").train()

    assert len(first.generator.calls) == 10 and len(resumed.generator.calls) == 3
    assert first.picks + resumed.picks == whole.picks
    assert any(len(p) < BATCH for p in resumed.picks)  # the resumed steps did shrink
    _assert_same(_state(resumed), _state(whole))
    assert Counter(first.feedback + resumed.feedback) == Counter(whole.feedback)


def test_kept_beside_skyrls_dynamic_sampling_is_refused(make_run: Any, tmp_path: Path) -> None:
    for kind in ("filter", "replace"):
        cfg = skyrl_config(tmp_path / kind, steps=2)
        cfg.trainer.algorithm.dynamic_sampling.type = kind
        with pytest.raises(ValueError, match=r"^rollouts: kept with trainer\.algorithm\.dyn") as e:
            make_run(cfg, KEPT)
        assert "\n" not in str(e.value)


class RecordingDispatch:
    """Stands in for SkyRL's WorkerDispatch over the policy's FSDP workers, from the staging on:
    `stage_data` is SkyRL's own `MeshDispatch.stage_chunks` (each mini-batch padded with
    loss-masked rows to a multiple of the ranks, then one chunk per rank), with the Ray object
    store replaced by the chunks themselves; `forward_backward_from_staged` records what each
    rank receives and SkyRL's policy loss at the step's start (ratio 1): the chunk's sum of
    -advantage x loss_mask, SkyRL's loss reduction being on the advantages already."""

    def __init__(self, dp: int) -> None:
        self.dp = dp
        self.updates: list[list[dict[str, Any]]] = []  # per optimizer step: one entry a rank

    def stage_data(self, model: str, data: Any, boundaries: Any) -> Any:
        from unittest.mock import patch

        from skyrl.backends.skyrl_train.distributed import dispatch as mesh

        assert model == "policy"
        with patch.object(mesh.ray, "put", lambda chunk: chunk):
            return mesh.MeshDispatch.stage_chunks(self.dp, data, boundaries)

    def forward_backward_from_staged(self, model: str, chunks: Any, **_: Any) -> Any:
        from types import SimpleNamespace

        self.updates.append(
            [
                {
                    "rows": len(chunk),
                    "loss_mask": chunk["loss_mask"].clone(),
                    "loss": float(-(chunk["advantages"] * chunk["loss_mask"]).sum()),
                }
                for chunk in chunks
            ]
        )
        return SimpleNamespace(metrics={"policy_loss": 0.0})


@pytest.mark.parametrize("loss_scale", ["batch", "kept"])
def test_the_policy_update_gets_the_kept_rows_and_the_scaled_loss(
    make_run: Any, tmp_path: Path, loss_scale: str
) -> None:
    run = kept_run(make_run, tmp_path / "k", {**KEPT, "loss_scale": loss_scale})
    trainer = run.trainer
    del trainer.train_critic_and_policy  # SkyRL's own, through _execute_training_step
    recorder = RecordingDispatch(DP)
    trainer.dispatch.stage_data = recorder.stage_data
    trainer.dispatch.forward_backward_from_staged = recorder.forward_backward_from_staged
    trainer.dispatch.optim_step = lambda *_a, **_k: None
    raw: list[torch.Tensor] = []
    normalize = trainer._normalize_advantages

    def recorded(data: Any, *args: Any, **kwargs: Any) -> Any:
        raw.append(data["advantages"].clone())  # SkyRL's GRPO advantages, before reduction
        return normalize(data, *args, **kwargs)

    trainer._normalize_advantages = recorded
    run.train()
    sizes = [len(c["tasks"]) for c in run.generator.calls]
    assert sizes == [4] * 8 + [3, 4, 2, 2, 4, 1, 4, 2]
    updates = iter(recorder.updates)
    for k, advantages, logged in zip(sizes, raw, run.logged(), strict=True):
        prompts = [(i * N_SAMPLES, (i + 1) * N_SAMPLES) for i in range(k)]
        factors = []
        for start, end in kept_mini_batches(prompts, MINI):
            ranks = next(updates)
            real = end - start
            rows = sum(r["rows"] for r in ranks)
            # the mini-batch's kept rows reach the workers, padded only to the ranks
            assert len(ranks) == DP and rows == real + (-real % DP)
            mask = torch.cat([r["loss_mask"] for r in ranks])
            assert int(mask[real:].sum()) == 0  # SkyRL's padding rows: loss-masked
            # Hand-computed: SkyRL's token_mean over the mini-batch's loss tokens, times its
            # share of a full mini-batch of MINI prompts with batch (1 with kept).
            tokens = mask[:real].sum()
            base = -float((advantages[start:end] * mask[:real]).sum() / tokens)
            factor = (real // N_SAMPLES) / MINI if loss_scale == "batch" else 1.0
            assert sum(r["loss"] for r in ranks) == pytest.approx(factor * base, abs=1e-6)
            factors.append(factor)
        assert logged["curriculum/fewer_rollouts/loss_scale"] == pytest.approx(
            sum(factors) / len(factors)
        )
        assert logged["curriculum/fewer_rollouts/trained_rows"] == k * N_SAMPLES
    assert next(updates, None) is None  # ceil(K / MINI) optimizer steps a training step
    assert sum(-(-k // MINI) for k in sizes) == len(recorder.updates)
