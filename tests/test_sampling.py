"""Rollout sampling options: temperature scales the logits, top-p keeps the nucleus, the loss
scores under the sampling temperature; checked by hand on a model whose next-token logits are
fixed (log [0.5, 0.3, 0.15, 0.05] over a 4-token vocabulary)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from frontier_rft.lm.decoding import MIN_TEMPERATURE, Sampling, temperature_problem
from frontier_rft.lm.rollout import (
    _generation_config,
    generate_completions,
    sample_texts,
    score_completions,
)
from frontier_rft.training.config import TrainConfig

pytestmark = pytest.mark.integration

PROBS = [0.5, 0.3, 0.15, 0.05]
"""Next-token distribution of every position (token 3 is EOS, so it stops a sample)."""


class _FixedLogits(torch.nn.Module):
    """An LM head whose logits ignore the hidden state: log PROBS everywhere."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("logits", torch.log(torch.tensor(PROBS)))
        self.weight = torch.nn.Parameter(torch.zeros(len(PROBS), 8))  # what HF expects to find

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.logits.expand(*hidden.shape[:-1], len(PROBS)) + 0.0 * hidden[..., :1]


def _fixed_model() -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=len(PROBS),
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=3,
        pad_token_id=3,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.lm_head = _FixedLogits()
    model.generation_config = GenerationConfig(bos_token_id=0, eos_token_id=3, pad_token_id=3)
    return model.eval()


def _warped(model: LlamaForCausalLM, temperature: float, top_p: float) -> torch.Tensor:
    """The first step's scores after transformers' warpers, for our generation config."""
    cfg = _generation_config(model, 1, temperature, top_p=top_p)
    out = model.generate(
        input_ids=torch.tensor([[0, 1]]),
        attention_mask=torch.ones(1, 2, dtype=torch.long),
        generation_config=cfg,
        output_scores=True,
        return_dict_in_generate=True,
    )
    return out.scores[0][0]


def _softmax(scores: torch.Tensor) -> list[float]:
    return torch.softmax(scores.double(), dim=-1).tolist()


def test_temperature_scales_the_logits() -> None:
    model = _fixed_model()
    scores = _warped(model, 0.5, 1.0)
    # logits / 0.5 = 2 log p: probabilities p^2 / sum p^2 = (0.25, 0.09, 0.0225, 0.0025) / 0.365
    assert scores.tolist() == pytest.approx([2 * math.log(p) for p in PROBS], rel=1e-6)
    assert _softmax(scores) == pytest.approx([0.25 / 0.365, 0.09 / 0.365, 0.0225 / 0.365,
                                              0.0025 / 0.365], rel=1e-6)  # fmt: skip


def test_top_p_keeps_the_smallest_set_reaching_p() -> None:
    model = _fixed_model()
    # Cumulative 0.5, 0.8, 0.95 >= 0.9: tokens 0-2 kept, renormalised by 0.95; token 3 cut.
    probs = _softmax(_warped(model, 1.0, 0.9))
    assert probs == pytest.approx([0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0], abs=1e-6)
    # Temperature first, then top-p: (0.685, 0.247, ...) reaches 0.9 with two tokens.
    probs = _softmax(_warped(model, 0.5, 0.9))
    assert probs == pytest.approx([0.25 / 0.34, 0.09 / 0.34, 0.0, 0.0], abs=1e-6)
    # top_p 1 truncates nothing (the trainer's default: no TopPLogitsWarper at all).
    assert _softmax(_warped(model, 1.0, 1.0)) == pytest.approx(PROBS, rel=1e-6)


def test_sampled_tokens_follow_the_truncated_distribution() -> None:
    model = _fixed_model()
    torch.manual_seed(1)
    outs = generate_completions(model, [[0, 1]], 2000, 1, temperature=1.0, top_p=0.9)
    first = np.array([o[0] for o in outs])
    assert 3 not in first  # outside the nucleus: never sampled
    share = np.bincount(first, minlength=4) / first.size
    # Binomial standard error at n = 2000 is <= 0.012; 4 of them is a loose, deterministic bound.
    assert share[:3] == pytest.approx([0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95], abs=0.045)


def test_the_loss_scores_completions_under_the_sampling_temperature() -> None:
    model = _fixed_model()
    prompts, completions = [[0, 1]], [[0, 2, 3]]
    plain = score_completions(model, prompts, completions).logprobs[0].tolist()
    assert plain == pytest.approx([math.log(p) for p in (0.5, 0.15, 0.05)], rel=1e-6)
    tempered = score_completions(model, prompts, completions, temperature=0.5)
    # log softmax(2 log p)[t] = log(p_t^2 / 0.365)
    expected = [math.log(p * p / 0.365) for p in (0.5, 0.15, 0.05)]
    assert tempered.logprobs[0].tolist() == pytest.approx(expected, rel=1e-6)


def test_sampling_settings_are_validated() -> None:
    assert (TrainConfig().temperature, TrainConfig().top_p, TrainConfig().precision) == (
        1.0,
        1.0,
        "fp32",
    )
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="top_p must lie in"):
            TrainConfig(top_p=bad)
    with pytest.raises(ValueError, match="precision must be one of"):
        TrainConfig(precision="fp16")


def test_a_sampling_value_refuses_what_cannot_be_sampled() -> None:
    assert Sampling(4, 12) == Sampling(4, 12, temperature=1.0, top_p=1.0)
    Sampling(1, 1, temperature=0.0)  # greedy is a valid sampling
    cases = [
        ({"samples": 0}, "samples and max_new_tokens must be >= 1, got 0, 12"),
        ({"max_new_tokens": 0}, "samples and max_new_tokens must be >= 1, got 4, 0"),
        ({"temperature": -0.5}, "temperature must be 0 (greedy) or a finite number >= 1e-06"),
        ({"temperature": float("nan")}, "temperature must be 0 (greedy) or a finite number"),
        ({"temperature": 1e-300}, "smaller ones overflow logits / temperature), got 1e-300"),
        ({"temperature": float("inf")}, "temperature must be 0 (greedy) or a finite number"),
        ({"top_p": 0.0}, "top_p must lie in"),
        ({"top_p": 1.01}, "top_p must lie in"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            Sampling(**{"samples": 4, "max_new_tokens": 12, **change})


def test_the_temperature_floor_is_the_smallest_value_that_cannot_overflow() -> None:
    """Issue 36: logits / T in float32 stays finite at the floor for any logit an LM makes
    (|logit| < 1e4), and a temperature below the floor is refused (1e-300 reached inf)."""
    Sampling(1, 1, temperature=MIN_TEMPERATURE)
    logits = torch.tensor([-1e4, 0.0, 1e4], dtype=torch.float32)
    assert torch.isfinite(logits / MIN_TEMPERATURE).all()
    assert torch.isfinite(torch.softmax(logits / MIN_TEMPERATURE, dim=0)).all()
    assert not torch.isfinite(logits / 1e-300).all()  # what the floor refuses
    with pytest.raises(ValueError, match="not 0: the loss divides by it"):
        TrainConfig(temperature=0.0)
    with pytest.raises(ValueError, match=r"temperature must be a finite number >= 1e-06"):
        TrainConfig(temperature=1e-300)
    with pytest.raises(ValueError, match=r"judge_temperature must be 0 \(greedy\)"):
        TrainConfig(judge_temperature=1e-300)
    assert temperature_problem(0.0) is None and temperature_problem(0.0, zero_refused="why")


def test_a_run_samples_rollouts_and_held_out_tasks_alike() -> None:
    cfg = TrainConfig(
        group_size=6, eval_samples=3, eval_k=(1,), max_new_tokens=20, temperature=0.7, top_p=0.9
    )
    assert cfg.rollout_sampling() == Sampling(6, 20, 0.7, 0.9)
    assert cfg.rollout_sampling(2) == Sampling(2, 20, 0.7, 0.9)
    assert cfg.eval_sampling() == Sampling(3, 20, 0.7, 0.9)


def test_sample_texts_groups_each_prompts_completions_in_prompt_order() -> None:
    model = _fixed_model()

    class _Tokenizer:  # chat_prompt's contract: a template rendered to ids
        def apply_chat_template(self, messages: object, **kwargs: object) -> list[int]:
            return [0, 1]

        def decode(self, ids: list[int], skip_special_tokens: bool) -> str:
            return "-".join(map(str, ids))

    torch.manual_seed(3)
    prompt_ids, completions, texts = sample_texts(
        model, _Tokenizer(), ["a", "b"], Sampling(3, 4, top_p=0.9)
    )
    assert prompt_ids == [[0, 1], [0, 1]]
    assert [len(row) for row in completions] == [3, 3] and [len(row) for row in texts] == [3, 3]
    assert texts == [["-".join(map(str, c)) for c in row] for row in completions]
    # top_p 0.9 reached the sampler: token 3 (p = 0.05) is outside the nucleus, and it is
    # also EOS, so no completion can end early
    assert all(len(c) == 4 and 3 not in c for row in completions for c in row)
