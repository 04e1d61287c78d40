"""METIS's judge measured on a policy (frontier_rft.bench.real_rl.finished.judge_check): Spearman
by hand, and the whole check (rollouts, judge prompts, format warm-up, again) on a tiny model."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.bench.metrics import spearman
from frontier_rft.bench.real_rl.finished.judge_check import (
    JudgeCheckConfig,
    _exemplars,
    judge_check,
    spearman_or_none,
)
from frontier_rft.lm.model_io import load_lm
from frontier_rft.tasks.suite import heldout_split, load_task, train_split
from test_training_model import tiny_models

pytestmark = pytest.mark.integration


def test_spearman_by_hand() -> None:
    assert spearman_or_none([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman_or_none([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Ranks (1, 2, 3.5, 3.5) against (1, 3, 2, 4): deviations from 2.5 are (-1.5, -0.5, 1, 1)
    # and (-1.5, 0.5, -0.5, 1.5); Pearson = 3 / sqrt(4.5 * 5).
    assert spearman_or_none([0.0, 0.1, 0.2, 0.2], [5, 7, 6, 8]) == pytest.approx(
        3 / (4.5 * 5) ** 0.5
    )
    assert spearman_or_none([0.1, 0.1, 0.1], [1, 2, 3]) is None  # a constant side has no ranking
    assert spearman_or_none([1, 2], [1, 2]) is None
    assert spearman([1, 2], [1, 2]) == pytest.approx(1.0)  # bench.metrics: any 2 pairs
    assert math.isnan(spearman([0.1, 0.1, 0.1], [1, 2, 3]))


def test_exemplars_span_the_realised_range() -> None:
    import numpy as np

    picks = _exemplars(["a", "b", "c", "d", "e"], np.array([0.1, 0.0, 0.25, 0.0, 0.04]))
    assert picks == [("b", 0.0), ("e", 0.04), ("c", 0.25)]


def test_config_refuses_what_cannot_be_measured() -> None:
    with pytest.raises(ValueError, match="samples must be >= 2"):
        JudgeCheckConfig(samples=1)
    with pytest.raises(ValueError, match="exemplar_pool must be >= 3"):
        JudgeCheckConfig(exemplar_pool=2)
    with pytest.raises(ValueError, match="top_p must lie in"):
        JudgeCheckConfig(top_p=0.0)


@pytest.fixture(scope="module")
def init_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models(tmp_path_factory)[0]  # untrained: it never writes \boxed{}


def test_judge_check_measures_warms_up_and_measures_again(init_dir: Path) -> None:
    model, tokenizer = load_lm(init_dir)
    suite = load_task("countdown", format_reward=0.0)
    config = JudgeCheckConfig(
        prompts=6,
        exemplar_pool=3,
        samples=2,
        max_new_tokens=8,
        judge_max_new_tokens=6,
        batch_size=4,
        warmup_steps=3,
        warmup_batch=2,
        warmup_lr=1e-3,
    )
    items = heldout_split(suite, 9, 2, "2x20")
    warm = train_split(suite, 16, 5, "2x20")
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    lines: list[str] = []
    out = judge_check(
        model, tokenizer, items, suite.verifier, config, contextlib.nullcontext, warm, lines.append
    )
    assert out["before"]["parse_rate"] == 0.0  # below 0.9: the warm-up runs
    for when in ("before", "after"):
        m = out[when]
        assert 0.0 <= m["parse_rate"] <= 1.0 and m["parsed"] == round(6 * m["parse_rate"])
        assert len(m["exemplar_variances"]) == 3 and len(m["answers_sample"]) == 6
        assert m["exemplar_variances"] == sorted(m["exemplar_variances"])
        assert 0.0 <= m["realised_variance_mean"] <= 0.25
    assert out["warmup"]["steps"] == 3 and out["warmup"]["first_loss"] > 0
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    assert lines[0].startswith("judge before warm-up: parse rate")
    # Too few items for prompts + exemplars is refused before any sampling.
    with pytest.raises(ValueError, match="needs 9 items"):
        judge_check(model, tokenizer, items[:8], suite.verifier, config, contextlib.nullcontext)


def test_the_check_runs_end_to_end_on_a_model_dir(tmp_path: Path) -> None:
    """What benchmarks/metis_judge_check.py runs, on a tiny arithmetic model, tiny budget."""
    from frontier_rft.bench.real_rl.finished.judge_check import judge_check_model
    from frontier_rft.bench.real_rl.testbed import SMOLLM2_LEVELS
    from frontier_rft.training.config import ModelConfig
    from frontier_rft.training.tiny_model import build_tiny_lm

    model_dir = tmp_path / "m"
    build_tiny_lm(
        ModelConfig(task="arithmetic", vocab_size=300, hidden_size=16, num_layers=1,
                    num_heads=2, intermediate_size=32, corpus_tasks=100),
        model_dir,
    )  # fmt: skip
    config = JudgeCheckConfig(prompts=4, exemplar_pool=3, samples=2, max_new_tokens=4,
                              judge_max_new_tokens=4, warmup_steps=1, warmup_batch=2)  # fmt: skip
    result = judge_check_model(str(model_dir), SMOLLM2_LEVELS, config)
    assert result["before"]["parse_rate"] == 0.0  # an untrained model never writes \boxed{}
    assert result["warmup"]["steps"] == 1 and "after" in result
    assert (
        result["model"] == str(model_dir) and result["load_s"] > 0 and "CPUs" in result["machine"]
    )
