"""benchmarks/kept_kl.py's measurement (frontier_rft.bench.real_rl.finished.kept_kl) on the tiny
model: a kept step's gradients against uniform's, its summary and its page."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.bench.real_rl.finished.kept_kl import (
    AGGREGATIONS,
    markdown,
    measure,
    summarise,
    watch,
)
from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN, tiny_models

CONFIG = dataclasses.replace(TEST_TRAIN, kl_coef=0.04, given="prompts", eval_every=0)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> Trainer:
    """The tiny SFT model's trainer, its policy moved off the reference (a KL to pull back)."""
    import torch

    _, sft, _ = tiny_models(tmp_path_factory)
    out = Trainer(CONFIG, sft, tmp_path_factory.mktemp("kept_kl"), log=lambda _: None)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in out.model.parameters():
            param.add_(0.05 * torch.randn(param.shape, generator=generator).to(param))
    return out


def test_a_kept_steps_policy_gradient_is_uniforms_where_the_skipped_group_is_flat(
    trainer: Trainer,
) -> None:
    """Two groups of 4 rows: one mixed (kept), one all-equal (skipped, advantage 0). Scaled by
    G/B, the kept group's policy gradient is uniform's under sequence_mean and constant."""
    rng = np.random.default_rng(0)
    prompts = [[5, 6, 7]] * 8
    completions = [rng.integers(10, 40, size=int(rng.integers(2, 6))).tolist() for _ in range(8)]
    advantages = np.array([1.0, -1.0, 0.5, -0.5, 0.0, 0.0, 0.0, 0.0])
    point, grads = measure(trainer, prompts, completions, advantages)
    assert point["groups"] == 2 and point["kept_groups"] == 1
    assert set(grads) == set(AGGREGATIONS)
    for how in ("sequence_mean", "constant"):
        pg = point[how]["pg"]
        assert pg["cosine"] == pytest.approx(1.0, abs=1e-6)
        assert pg["rel_error"] == pytest.approx(0.0, abs=1e-6)
    for how in AGGREGATIONS:  # (b) is (a) times G/B: one direction
        kl = point[how]["kl"]
        assert kl["a"]["cosine"] == pytest.approx(kl["b"]["cosine"], abs=1e-9)
        assert kl["b"]["norm_ratio"] == pytest.approx(0.5 * kl["a"]["norm_ratio"], rel=1e-6)
    point.update(seed=0, step=1)
    report = {how: point[how] for how in AGGREGATIONS}
    summary = summarise([point], [report])
    assert summary["batches"] == 1 and summary["kept_share_mean"] == 0.5
    page = markdown(
        {
            "command": "python benchmarks/kept_kl.py --seeds 0",
            "machine": "test",
            "seconds": 1.0,
            "cpu_seconds": 1.0,
            "start_weights": "tiny",
            "kl_coef": CONFIG.kl_coef,
            "seeds": [0],
            "measured_steps": [1],
            "summary": summary,
        }
    )
    assert "`python benchmarks/kept_kl.py --seeds 0`" in page
    assert page.count("| policy gradient | both |") == 2 * len(AGGREGATIONS)


def test_a_watched_trainer_measures_the_batch_of_each_step_asked_for(
    trainer: Trainer, tmp_path: Path
) -> None:
    """The hook reads the reference trainer's update as it is (one StepBatch) and still trains."""
    points: list[dict] = []
    lines: list[str] = []
    watched = Trainer(CONFIG, trainer.model_dir, tmp_path / "run", log=lambda _: None)
    watch(watched, [1], 3, points, {}, lines.append, 0.0)
    watched.step()
    watched.step()
    assert [(p["seed"], p["step"]) for p in points] == [(3, 1)]
    assert json.loads(lines[0])["step"] == 1 and watched.step_count == 2
