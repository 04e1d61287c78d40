"""The reference trainer's two ways in and its step's one batch (issue 61 item 6): a fresh
run goes through `_start` only, a resumed one through `_resume` only, and each trained step
hands the policy update one `StepBatch` holding the step's rows (as CleanRL's loop holds its
rollout storage). That resume stays exact is tests/test_training_grpo.py's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.training import grpo
from frontier_rft.training.grpo import StepBatch, Trainer
from test_training_model import TEST_TRAIN

CONFIG = dataclasses.replace(
    TEST_TRAIN,
    selector="greso",
    sampler="fewer_rollouts",
    train_size=12,
    steps=8,
    eval_every=0,
    checkpoint_every=100,
    kl_coef=0.1,
    threads=1,
)
"""`rollouts: kept` with a KL term: the batch carries a loss scale and reference log-probs."""


def _paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    taken: list[str] = []
    for name in ("_start", "_resume"):
        real = getattr(Trainer, name)

        def spy(self: Trainer, *args: object, _real=real, _name=name) -> None:
            taken.append(_name)
            _real(self, *args)

        monkeypatch.setattr(Trainer, name, spy)
    return taken


def test_a_fresh_run_and_a_resumed_one_take_their_own_path(
    sft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _paths(monkeypatch)
    first = Trainer(CONFIG, sft_dir, tmp_path, log=lambda _: None)
    first.step()
    first.save()
    assert taken == ["_start"]
    again = Trainer(CONFIG, sft_dir, tmp_path, resume=True, log=lambda _: None)
    assert taken == ["_start", "_resume"]
    assert again.step_count == 1 and again.pool is None  # the pool is the selector's own
    assert again.selector.pool.num_tasks == first.selector.pool.num_tasks


def test_each_trained_step_hands_the_update_one_batch_of_its_rows(
    sft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[StepBatch] = []
    real = Trainer._update

    def spy(self: Trainer, batch: StepBatch) -> dict[str, float]:
        batches.append(batch)
        return real(self, batch)

    monkeypatch.setattr(grpo.Trainer, "_update", spy)
    trainer = Trainer(CONFIG, sft_dir, tmp_path, log=lambda _: None)
    trained = [m for m in (trainer.step() for _ in range(8)) if m["train/groups_trained"] > 0]
    assert len(batches) == len(trained) > 0
    for batch, m in zip(batches, trained, strict=True):
        rows = len(batch.completions)
        assert rows == len(batch.prompts) == m["train/trained_rows"]
        assert batch.advantages.shape == (rows,) and batch.advantages.dtype == torch.float32
        assert batch.loss_scale == m["train/loss_scale"]
        assert batch.old_logprobs is None  # ppo_epochs 1: the sampling policy is the policy
        assert batch.ref_logprobs is not None and batch.ref_logprobs.shape[0] == rows


def test_two_runs_in_one_process_end_with_the_same_weights(sft_dir: Path, tmp_path: Path) -> None:
    """Nothing of one run leaks into the next (a module-level cache, a shared RNG): with one
    thread two identical runs in one process are bit-identical, step by step. With more
    threads they may differ by float32 rounding (a multi-threaded reduction's order), which
    is why the resume tests and this one pin `threads=1`."""

    def run(where: Path) -> tuple[torch.Tensor, list[dict[str, float]]]:
        trainer = Trainer(CONFIG, sft_dir, where, log=lambda _: None)
        logs = [trainer.step() for _ in range(4)]
        weights = torch.cat([p.detach().flatten() for p in trainer.model.parameters()])
        return weights, [{k: v for k, v in m.items() if not k.startswith("perf/")} for m in logs]

    first, second = run(tmp_path / "a"), run(tmp_path / "b")
    assert torch.equal(first[0], second[0])
    for a, b in zip(first[1], second[1], strict=True):
        assert {k: v for k, v in a.items() if not k.endswith("_ms")} == {
            k: v for k, v in b.items() if not k.endswith("_ms")
        }
