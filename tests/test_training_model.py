"""Tiny model and tokenizer round trips, SFT, evaluation maths and split hygiene.

`tiny_models(tmp_path_factory)` (used by the other test_training_* files) builds one really
tiny model per test session: a locally trained BPE tokenizer, a 2-layer Llama and a short
SFT, so RL steps see mixed rewards. Nothing is downloaded.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

from frontier_rft.lm.model_io import load_lm, save_lm
from frontier_rft.lm.tokenizer import BOS, EOS, SPECIAL_TOKENS
from frontier_rft.selectors.metis.judge import (
    render_judge_prompt,
    system_message,
    user_message,
)
from frontier_rft.tasks.suite import (
    build_pool,
    heldout_split,
    is_heldout,
    load_task,
    task_key,
    train_split,
)
from frontier_rft.training.config import ModelConfig, SFTConfig, TrainConfig
from frontier_rft.training.evaluate import outcome_histogram, pass_at_k
from frontier_rft.training.sft import run_sft
from frontier_rft.training.tiny_model import build_tiny_lm

pytestmark = pytest.mark.integration

TINY = ModelConfig(
    vocab_size=400,
    hidden_size=32,
    num_layers=2,
    num_heads=2,
    intermediate_size=64,
    max_positions=1024,
    corpus_tasks=200,
)
TINY_SFT = SFTConfig(
    levels="2x20",
    num_examples=200,
    steps=100,
    batch_size=12,
    lr=1e-2,
    warmup_steps=5,
    judge_format_share=0.25,
)
TEST_TRAIN = TrainConfig(
    levels="2x20,3x20",
    train_size=24,
    eval_size=4,
    eval_samples=2,
    eval_k=(1, 2),
    batch_size=3,
    group_size=4,
    max_new_tokens=12,
    steps=2,
    checkpoint_every=1,
    tensorboard=False,
    judge_max_new_tokens=6,
    lr=3e-3,
)
"""Trainer settings small enough for a test step in well under a second."""


def tiny_models(factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, float]]:
    """(init model dir, SFT model dir, SFT stats), built once per session."""
    root = factory.getbasetemp() / "tiny_lm"
    init, sft = root / "init", root / "sft"
    if not (sft / "config.json").exists():
        build_tiny_lm(TINY, init)
        stats = run_sft(TINY_SFT, init, sft, log=lambda _: None)
        (root / "stats.txt").write_text(f"{stats['first_loss']} {stats['final_loss']}")
    first, final = (float(v) for v in (root / "stats.txt").read_text().split())
    return init, sft, {"first_loss": first, "final_loss": final}


def straight_and_resumed(
    config: TrainConfig,
    sft_dir: Path,
    root: Path,
    steps: int,
    save_after: int,
    before_save: Callable[[Any], None] | None = None,
) -> tuple[list[Any], list[Any], Any, Any]:
    """Each step's (ids, rewards) of a straight run of `steps` steps and of one saved after
    `save_after` and resumed; and the two runs' last trainers (their last steps' advantages).
    `before_save` is handed the trainer about to be saved (to check what crosses the save)."""
    from frontier_rft.training.grpo import Trainer

    def record(trainer: Any) -> tuple[list[int], list[float]]:
        trainer.step()
        return trainer.last["ids"].tolist(), trainer.last["rewards"].tolist()

    straight = Trainer(config, sft_dir, root / "straight", log=lambda _: None)
    expected = [record(straight) for _ in range(steps)]
    first = Trainer(config, sft_dir, root / "resumed", log=lambda _: None)
    got = [record(first) for _ in range(save_after)]
    if before_save is not None:
        before_save(first)
    first.save()
    del first
    resumed = Trainer(config, sft_dir, root / "resumed", resume=True, log=lambda _: None)
    got += [record(resumed) for _ in range(steps - save_after)]
    return expected, got, straight, resumed


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, float]]:
    return tiny_models(tmp_path_factory)


# ----------------------------------------------------------------------------- tokenizer/model


def test_tokenizer_round_trip_and_chat_template(
    models: tuple[Path, Path, dict[str, float]],
) -> None:
    init, _, _ = models
    tok = AutoTokenizer.from_pretrained(init)
    assert type(tok).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")
    assert len(tok) <= TINY.vocab_size
    for special in SPECIAL_TOKENS:  # each is one token, ids 0..5 in order
        assert tok.convert_tokens_to_ids(special) == SPECIAL_TOKENS.index(special)
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == (BOS, EOS, "<|pad|>")
    text = "Using the numbers [12, 7], create an equation that equals 19. <answer>12 + 7</answer>"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    digits = [t for t in tok.convert_ids_to_tokens(ids) if any(c.isdigit() for c in t)]
    assert all(sum(c.isdigit() for c in t) == 1 for t in digits), digits  # one digit per token
    # The chat template renders [system, user] exactly as METIS's flat judge prompt.
    sys_msg, user = system_message(), user_message([("a prompt", 0.1)], "the candidate")
    messages = [{"role": "system", "content": sys_msg}, {"role": "user", "content": user}]
    rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == BOS + render_judge_prompt(sys_msg, user)
    chat_ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    chat_ids = chat_ids["input_ids"] if isinstance(chat_ids, Mapping) else chat_ids
    flat_ids = tok(BOS + render_judge_prompt(sys_msg, user), add_special_tokens=False)
    assert list(chat_ids) == flat_ids["input_ids"]
    turn = tok.apply_chat_template(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], tokenize=False
    )
    assert turn == f"{BOS}<|user|>\nq\n<|assistant|>\na{EOS}"


def test_model_round_trip(models: tuple[Path, Path, dict[str, float]], tmp_path: Path) -> None:
    init, _, _ = models
    model = AutoModelForCausalLM.from_pretrained(init)
    assert isinstance(model, LlamaForCausalLM)
    assert model.config.model_type == "llama"
    assert model.config.hidden_size == TINY.hidden_size
    head = model.get_output_embeddings()  # type: ignore[no-untyped-call]
    assert head.weight is model.get_input_embeddings().weight  # tied
    x = torch.tensor([[1, 4, 10, 11, 12, 5]])
    with torch.no_grad():
        before = model(x).logits
    model.save_pretrained(tmp_path)
    again = AutoModelForCausalLM.from_pretrained(tmp_path)
    with torch.no_grad():
        assert torch.equal(again(x).logits, before)


def test_saved_model_files_follow_the_umask(
    models: tuple[Path, Path, dict[str, float]], tmp_path: Path
) -> None:
    model, tokenizer = load_lm(models[0])
    old = os.umask(0o027)
    try:
        save_lm(model, tokenizer, tmp_path / "m", stage="test")
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "m").iterdir()}
    assert "model.safetensors" in modes
    assert set(modes.values()) == {0o640}, modes  # as open() makes them; not safetensors' 0600


@pytest.mark.parametrize("task", ["countdown", "arithmetic"])
def test_evaluate_models_with_the_default_levels(
    task: str,
    models: tuple[Path, Path, dict[str, float]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without --levels, the held-out split takes the task's own levels (not countdown's)."""
    from frontier_rft.cli.main import main

    argv = ["evaluate", "--model", str(models[1]), "--task", task, "--eval-size", "4"]
    argv += ["--samples", "2"]
    assert main([*argv, "--k", "1,2", "--max-new-tokens", "12", "--out", str(tmp_path)]) == 0
    assert "eval/pass@2" in capsys.readouterr().out
    summary = json.loads((tmp_path / models[1].name / "eval.json").read_text())
    assert set(summary) >= {"eval/pass@1", "eval/pass@2", "model"}


def test_sft_loss_decreases_and_model_learns_the_format(
    models: tuple[Path, Path, dict[str, float]],
) -> None:
    _, sft, stats = models
    assert stats["final_loss"] < 0.6 * stats["first_loss"]
    model, _ = load_lm(sft)
    assert isinstance(model, LlamaForCausalLM)


# ----------------------------------------------------------------------------- data and maths


def test_splits_are_disjoint_and_levels_follow_the_list() -> None:
    suite = load_task("countdown")
    train = train_split(suite, 60, 1, "2x20,3x20,4x20")
    held = heldout_split(suite, 20, 2, "2x20,3x20,4x20")
    assert [it.task_id for it in train] == list(range(60))
    assert not {task_key(t) for t in train} & {task_key(t) for t in held}
    assert not any(is_heldout(t) for t in train) and all(is_heldout(t) for t in held)
    assert {it.level for it in train} == {0, 1, 2}
    assert all(len(it.reference["numbers"]) == it.level + 2 for it in train)
    pool = build_pool(suite, train)
    assert pool.features is not None and pool.features.shape == (60, 14)
    assert pool.categories is not None and set(np.unique(pool.categories)) == {0, 1, 2}
    assert suite.verifier.score(train[0], suite.demonstration(train[0])) == 1.0


def _pass_at_k_brute(n: int, c: int, k: int) -> float:
    """Share of k-subsets of n samples (c correct) holding at least one correct sample."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_pass_at_k_is_the_unbiased_estimator(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            exact = 1.0 - math.comb(n - c, k) / math.comb(n, k)
            assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)
            assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_brute(n, c, k), abs=1e-12)
    with pytest.raises(ValueError, match="pass@k"):
        pass_at_k(4, 5, 1)


def test_outcome_histogram_counts_always_never_mixed() -> None:
    scores = np.array([[1.0, 1.0], [0.0, 0.1], [1.0, 0.0], [0.1, 0.1]])
    h = outcome_histogram(scores)
    assert h["always_solved"] == 0.25 and h["never_solved"] == 0.5 and h["mixed"] == 0.25
    assert h["successes_histogram"] == [2, 1, 1]
    assert h["nonzero_variance"] == 0.5


def test_configs_reject_bad_values_with_fixes() -> None:
    with pytest.raises(ValueError, match="group_size must be >= 2"):
        TrainConfig(group_size=1)
    with pytest.raises(ValueError, match="estimator must be one of"):
        TrainConfig(estimator="ppo")
    with pytest.raises(ValueError, match="eval_seed must differ"):
        TrainConfig(train_seed=3, eval_seed=3)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        ModelConfig(hidden_size=30, num_heads=4)
    with pytest.raises(ValueError, match="bad countdown level"):
        train_split(load_task("countdown"), 4, 0, "2y20")
