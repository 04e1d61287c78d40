"""A GRPO group's prompt is run once: scoring and sampling give what one pass per row gives.

The reference is each row on its own (one row per call packs `prompt + completion`, the
plain path), on a small random Llama whose logits depend on every position.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from frontier_rft.lm.rollout import generate_completions, score_completions

pytestmark = pytest.mark.integration

VOCAB, PAD, EOS = 40, 0, 1


def _model() -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        bos_token_id=2,
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=2, eos_token_id=EOS, pad_token_id=PAD)
    return model


def _groups() -> tuple[list[list[int]], list[list[int]]]:
    """Rows of 4 groups of sizes 3, 1, 4, 2: prompts of different lengths, completions of 0 to
    9 tokens (one empty)."""
    rng = random.Random(0)
    prompts: list[list[int]] = []
    completions: list[list[int]] = []
    for size, length in ((3, 7), (1, 5), (4, 11), (2, 6)):
        prompt = [rng.randrange(3, VOCAB) for _ in range(length)]
        for _ in range(size):
            prompts.append(prompt)
            completions.append([rng.randrange(3, VOCAB) for _ in range(rng.randrange(1, 10))])
    completions[5] = []
    return prompts, completions


def test_a_group_scores_its_prompt_once_with_each_rows_logprobs_and_gradients() -> None:
    model = _model().train()
    prompts, completions = _groups()
    shared = score_completions(model, prompts, completions, with_entropy=True, temperature=0.7)
    assert shared.entropy is not None
    (shared.logprobs.sum() + shared.entropy.sum()).backward()
    grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]

    model.zero_grad()
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        alone = score_completions(model, [p], [c], with_entropy=True, temperature=0.7)
        assert alone.entropy is not None
        width = len(c)
        torch.testing.assert_close(shared.logprobs[i, :width], alone.logprobs[0, :width])
        torch.testing.assert_close(shared.entropy[i, :width], alone.entropy[0, :width])
        assert shared.mask[i].sum() == width
        (alone.logprobs.sum() + alone.entropy.sum()).backward()
    want_grads = [p.grad for p in model.parameters() if p.grad is not None]
    for got, want in zip(grads, want_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_a_group_runs_its_prompt_through_the_model_once() -> None:
    model = _model()
    prompts, completions = _groups()
    seen: list[int] = []
    hook = model.model.embed_tokens.register_forward_hook(
        lambda _m, args, _out: seen.append(args[0].numel())
    )
    score_completions(model, prompts, completions)
    hook.remove()
    longest_prompt, longest = max(len(p) for p in prompts), max(len(c) for c in completions)
    # four distinct prompts once, then every row's completion less its last token
    assert sum(seen) == 4 * longest_prompt + len(prompts) * (longest - 1)
    assert sum(seen) < len(prompts) * (longest_prompt + longest)


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_sampling_a_prompt_n_times_draws_what_n_copies_of_it_draw(temperature: float) -> None:
    model = _model().eval()
    prompts = [[2, 5, 9, 11, 4], [2, 7, 3], [2, 30, 31, 32, 33, 34, 35]]
    torch.manual_seed(5)
    grouped = generate_completions(model, prompts, 4, 8, temperature)
    torch.manual_seed(5)
    copies = generate_completions(model, [p for p in prompts for _ in range(4)], 1, 8, temperature)
    assert grouped == copies
    assert len(grouped) == 12
    if temperature == 0.0:  # greedy: every sample of a prompt is the same
        assert all(grouped[4 * i] == grouped[4 * i + j] for i in range(3) for j in range(4))


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_groups_of_different_sizes_draw_what_copies_of_their_prompts_draw(
    temperature: float,
) -> None:
    """Per-prompt sample counts (a rollout allocation) keep the prompt's single pass: the
    same draws as one copy of the prompt per sample."""
    model = _model().eval()
    prompts = [[2, 5, 9, 11, 4], [2, 7, 3], [2, 30, 31, 32, 33, 34, 35]]
    counts = [3, 1, 5]
    torch.manual_seed(5)
    grouped = generate_completions(model, prompts, counts, 8, temperature)
    torch.manual_seed(5)
    copies = [p for p, c in zip(prompts, counts, strict=True) for _ in range(c)]
    assert grouped == generate_completions(model, copies, 1, 8, temperature)
    assert len(grouped) == 9
    with pytest.raises(ValueError, match="at least one sample"):
        generate_completions(model, prompts, [2, 0, 1], 8, temperature)
    with pytest.raises(ValueError, match="2 sample counts for 3 prompts"):
        generate_completions(model, prompts, [2, 1], 8, temperature)
