"""DAPO's filter in one generation call (bench entry dapo-onecall) in the reference trainer:
each step calls generate once, for the candidates GRESO's rule sizes from the measured
zero-variance share, and trains only the mixed groups among them (at most the batch); a
larger step of uniform makes one call of its rows; resume is exact."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.training import grpo
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN, straight_and_resumed

pytestmark = pytest.mark.integration

BASE = dataclasses.replace(TEST_TRAIN, train_size=24, steps=6, eval_every=0, checkpoint_every=100)
ONE_CALL = {
    "sampler": "dynamic_sampling",
    "sampler_config": {"adaptive": True, "max_rounds": 1},
}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows of every call to generate, in order."""
    seen: list[int] = []
    real = grpo.generate_completions

    def counting(model: Any, prompts: list[Any], n: Any, *args: Any, **kw: Any) -> Any:
        seen.append(sum(n) if isinstance(n, list) else n * len(prompts))
        return real(model, prompts, n, *args, **kw)

    monkeypatch.setattr(grpo, "generate_completions", counting)
    return seen


def run(config: TrainConfig, sft_dir: Path, out: Path, n: int) -> tuple[Trainer, list[dict]]:
    trainer = Trainer(config, sft_dir, out, log=lambda _: None)
    return trainer, [trainer.step() for _ in range(n)]


def test_one_call_a_step_sized_by_the_zero_variance_share(
    sft_dir: Path, tmp_path: Path, calls: list[int]
) -> None:
    config = dataclasses.replace(BASE, **ONE_CALL)
    _, metrics = run(config, sft_dir, tmp_path / "a", 6)
    b, n = config.batch_size, config.group_size
    assert len(calls) == 6  # one call to generate a step
    z_prev = None
    for rows, m in zip(calls, metrics, strict=True):
        assert m["train/sampling_rounds"] == 1
        candidates = rows // n
        # GRESO's rule: ceil(B / (1 - z) x 1.25) clamped to [1, 3] x B; 3 x B before any z
        if z_prev is None or z_prev >= 1.0:
            want = 3 * b
        else:
            want = min(3 * b, max(b, math.ceil(b / (1 - z_prev) * 1.25)))
        assert candidates == want and m["train/rollouts"] == rows
        trained = m["train/groups_trained"]
        assert trained == min(b, m["train/informative_groups"])  # mixed groups only
        assert m["train/trained_rows"] == trained * n
        flat = candidates - m["train/informative_groups"]
        z_prev = flat / candidates


def test_a_larger_uniform_step_is_one_call_of_its_rows(
    sft_dir: Path, tmp_path: Path, calls: list[int]
) -> None:
    config = dataclasses.replace(BASE, batch_size=12)
    _, metrics = run(config, sft_dir, tmp_path / "b", 2)
    assert calls == [12 * config.group_size] * 2
    assert all(m["train/trained_rows"] == 12 * config.group_size for m in metrics)


def test_resume_is_exact(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(BASE, **ONE_CALL, checkpoint_every=3)
    expected, got, _, _ = straight_and_resumed(config, sft_dir, tmp_path, 6, 3)
    assert got == expected
