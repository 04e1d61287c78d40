"""Sampling with the HF generate API and per-token log-probabilities of completions.

Generation left-pads prompts (decoder-only batching); scoring re-packs every sequence as
`prompt + completion` right-padded, so positions are natural and no position-id bookkeeping
for left padding is needed. Completions are cut after their first EOS (kept: the model
learns to stop).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from frontier_rft.lm.decoding import Sampling
from frontier_rft.lm.device import model_device
from frontier_rft.lm.tokenizer import chat_prompt

__all__ = [
    "TokenScores",
    "encode_prompts",
    "generate_completions",
    "generate_shared_prefix",
    "right_padded",
    "sample_texts",
    "score_completions",
]


def encode_prompts(tokenizer: Any, prompts: Sequence[str]) -> list[list[int]]:
    """Chat-templated token ids of user prompts, ending with the assistant marker."""
    return [chat_prompt(tokenizer, p) for p in prompts]


def _left_padded(seqs: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
            mask[i, width - len(s) :] = 1
    return ids, mask


def right_padded(seqs: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention mask) of sequences right-padded to the longest: positions stay natural,
    as teacher-forced scoring wants."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
        mask[i, : len(s)] = 1
    return ids, mask


def _cut(rows: torch.Tensor, eos: int) -> list[list[int]]:
    """Generated rows -> token lists ending at (and including) the first EOS, pad dropped."""
    out = []
    for row in rows.tolist():
        if eos in row:
            row = row[: row.index(eos) + 1]
        out.append(row)
    return out


def _generation_config(
    model: Any, max_new_tokens: int, temperature: float, num_samples: int = 1, top_p: float = 1.0
) -> Any:
    """Sampling at `temperature` over the nucleus `top_p` (1.0: the full vocabulary; never
    top-k), or greedy for temperature 0. transformers' own warpers apply them, temperature
    first (`TemperatureLogitsWarper`, then `TopPLogitsWarper` when top_p < 1)."""
    from transformers import GenerationConfig

    make: Any = GenerationConfig  # untyped upstream
    base = model.generation_config
    common = {
        "max_new_tokens": max_new_tokens,
        "num_return_sequences": num_samples,
        "pad_token_id": base.pad_token_id,
        "eos_token_id": base.eos_token_id,
        "bos_token_id": base.bos_token_id,
    }
    if temperature > 0:
        return make(
            do_sample=True, temperature=float(temperature), top_k=0, top_p=float(top_p), **common
        )
    return make(do_sample=False, **common)


@torch.no_grad()
def generate_completions(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    num_samples: int | Sequence[int],
    max_new_tokens: int,
    temperature: float = 1.0,
    logits_processor: Sequence[Any] = (),
    top_p: float = 1.0,
) -> list[list[int]]:
    """`num_samples` completions per prompt (one int, or a count per prompt), prompt-major:
    prompt i's samples are consecutive rows, in prompt order.

    temperature 0 is greedy (then every sample of a prompt is the same); top_p < 1 samples
    from the nucleus only. `logits_processor` (HF LogitsProcessors) run before sampling, e.g.
    ZIP-RC's SuppressReservedLogits. With several samples a prompt's tokens before its last
    are run once and their KV cache is repeated for each sample (`_prefilled_cache`): the
    same distribution, without n copies of the prompt's forward pass, for groups of any size.
    """
    from transformers import LogitsProcessorList

    counts = _sample_counts(num_samples, len(prompt_ids))
    was_training = model.training
    model.eval()
    cfg = model.generation_config
    device = model_device(model)
    ids, mask = _left_padded(prompt_ids, cfg.pad_token_id)
    ids, mask = ids.to(device), mask.to(device)
    cache = None
    per_call = counts[0] if len(set(counts)) == 1 else 1  # generate's own repeat: one n only
    if max(counts) > 1 and ids.shape[1] > 1:
        repeats: int | torch.Tensor = per_call
        if per_call == 1:
            repeats = torch.tensor(counts, device=device)
        cache = _prefilled_cache(model, ids[:, :-1], mask[:, :-1], repeats)
        ids = ids.repeat_interleave(repeats, dim=0)
        mask = mask.repeat_interleave(repeats, dim=0)
        per_call = 1
    elif per_call == 1 and max(counts) > 1:  # one-token prompts of different group sizes
        index = torch.tensor(counts, device=device)
        ids, mask = ids.repeat_interleave(index, dim=0), mask.repeat_interleave(index, dim=0)
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        past_key_values=cache,
        generation_config=_generation_config(model, max_new_tokens, temperature, per_call, top_p),
        logits_processor=LogitsProcessorList(logits_processor),
    )
    model.train(was_training)
    return _cut(out[:, ids.shape[1] :], cfg.eos_token_id)


def _sample_counts(num_samples: int | Sequence[int], prompts: int) -> list[int]:
    """Samples per prompt as a list, each >= 1, or a ValueError naming the problem."""
    if isinstance(num_samples, int):
        counts = [num_samples] * prompts
    else:
        counts = [int(c) for c in num_samples]
        if len(counts) != prompts:
            raise ValueError(f"{len(counts)} sample counts for {prompts} prompts: give one each")
    if prompts == 0 or min(counts) < 1:
        raise ValueError(f"every prompt needs at least one sample, got counts {counts[:8]}")
    return counts


def _prefilled_cache(
    model: Any, ids: torch.Tensor, mask: torch.Tensor, repeats: int | torch.Tensor
) -> Any:
    """The KV cache of left-padded `ids`, row i repeated `repeats` (or repeats[i]) times,
    row-major, at the positions `generate` gives left-padded rows (the attention mask's
    running count)."""
    from transformers import DynamicCache

    cache = DynamicCache()
    positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
    model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache)
    if isinstance(repeats, int):
        cache.batch_repeat_interleave(repeats)
    else:  # groups of different sizes: pick each row as often as its prompt is sampled
        rows = torch.arange(ids.shape[0], device=ids.device).repeat_interleave(repeats)
        cache.batch_select_indices(rows)
    return cache


def sample_texts(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    sampling: Sampling,
    logits_processor: Sequence[Any] = (),
) -> tuple[list[list[int]], list[list[list[int]]], list[list[str]]]:
    """Chat-encode `prompts` and sample each `sampling.samples` times: the prompts' token ids,
    each prompt's completion ids and each prompt's decoded completions (special tokens
    dropped), in prompt order. Seeding is the caller's (torch's global RNG)."""
    n = sampling.samples
    prompt_ids = encode_prompts(tokenizer, prompts)
    outs = generate_completions(
        model,
        prompt_ids,
        n,
        sampling.max_new_tokens,
        sampling.temperature,
        logits_processor,
        top_p=sampling.top_p,
    )
    completions = [outs[i * n : (i + 1) * n] for i in range(len(prompt_ids))]
    texts = [[tokenizer.decode(c, skip_special_tokens=True) for c in row] for row in completions]
    return prompt_ids, completions, texts


@torch.no_grad()
def generate_shared_prefix(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    max_new_tokens: int,
    temperature: float,
    top_p: float = 1.0,
    logits_processor: Sequence[Any] = (),
) -> list[list[int]]:
    """One completion per prompt, computing the prompts' common token prefix once.

    METIS judge prompts of one select call share the system message, instructions and
    exemplars (~85% of their tokens); the prefix's KV cache is computed for one row and
    repeated, the differing suffixes are padded on their left, between prefix and suffix.
    `logits_processor` (HF LogitsProcessors) run before sampling, e.g. AnswerConstraint.
    """
    from transformers import LogitsProcessorList

    first = prompt_ids[0]
    common = min(len(p) for p in prompt_ids) - 1  # every row keeps >= 1 token of its own
    for p in prompt_ids[1:]:
        k = 0
        while k < common and p[k] == first[k]:
            k += 1
        common = k
    if common < 16 or len(prompt_ids) == 1:
        return generate_completions(
            model, prompt_ids, 1, max_new_tokens, temperature, logits_processor, top_p=top_p
        )
    from transformers import DynamicCache

    was_training = model.training
    model.eval()
    cfg = model.generation_config
    device = model_device(model)
    cache = DynamicCache()
    prefix = torch.tensor([first[:common]], device=device)
    model(input_ids=prefix, past_key_values=cache, use_cache=True)
    cache.batch_repeat_interleave(len(prompt_ids))
    suffixes = [p[common:] for p in prompt_ids]
    tail, tail_mask = _left_padded(suffixes, cfg.pad_token_id)
    tail, tail_mask = tail.to(device), tail_mask.to(device)
    head = prefix.expand(len(prompt_ids), -1)
    ids = torch.cat([head, tail], dim=1)
    mask = torch.cat([torch.ones_like(head), tail_mask], dim=1)
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        past_key_values=cache,
        generation_config=_generation_config(model, max_new_tokens, temperature, top_p=top_p),
        logits_processor=LogitsProcessorList(logits_processor),
    )
    model.train(was_training)
    return _cut(out[:, ids.shape[1] :], cfg.eos_token_id)


@dataclass
class TokenScores:
    """Per-token quantities of completions, right-padded to (N, T) with `mask`."""

    logprobs: torch.Tensor
    """log pi(token | prefix) of every completion token."""
    mask: torch.Tensor
    """1.0 on completion tokens, 0.0 on padding."""
    entropy: torch.Tensor | None
    """Entropy of the next-token distribution at each completion token (when asked)."""


def score_completions(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    *,
    with_entropy: bool = False,
    temperature: float = 1.0,
) -> TokenScores:
    """Log-probs (with grad) of each completion given its prompt.

    `temperature` != 1 scores under the tempered distribution softmax(logits / T) the
    completions were sampled from (as TRL and verl score); a top-p truncation is not part of
    the scored distribution (nor is it in either). Rows that repeat the previous row's
    prompt (a GRPO group) share one forward pass over it (`_shared_prompt_logits`); rows
    with prompts of their own are packed as `prompt + completion`.
    """
    t_max = max(max(len(c) for c in completion_ids), 1)
    device = model_device(model)
    mask = torch.zeros((len(completion_ids), t_max))
    targets = torch.zeros((len(completion_ids), t_max), dtype=torch.long)
    for i, c in enumerate(completion_ids):
        mask[i, : len(c)] = 1.0
        targets[i, : len(c)] = torch.tensor(list(c), dtype=torch.long)
    starts = [i for i in range(len(prompt_ids)) if i == 0 or prompt_ids[i] != prompt_ids[i - 1]]
    if len(starts) < len(prompt_ids):
        picked = _shared_prompt_logits(model, prompt_ids, completion_ids, starts, t_max)
    else:
        picked = _packed_logits(model, prompt_ids, completion_ids, t_max)
    picked = picked.float()
    if temperature != 1.0:
        picked = picked / temperature
    logp_all = torch.log_softmax(picked, dim=-1)
    mask, targets = mask.to(device), targets.to(device)
    logprobs = torch.gather(logp_all, 2, targets.unsqueeze(-1)).squeeze(-1) * mask
    entropy = None
    if with_entropy:
        entropy = -(logp_all.exp() * logp_all).sum(-1) * mask
    return TokenScores(logprobs=logprobs, mask=mask, entropy=entropy)


def _packed_logits(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    t_max: int,
) -> torch.Tensor:
    """(N, t_max, V) logits predicting each completion token, from one forward pass over
    every row's `prompt + completion`, right-padded (positions stay natural)."""
    seqs = [list(p) + list(c) for p, c in zip(prompt_ids, completion_ids, strict=True)]
    ids, attn = right_padded(seqs, model.generation_config.pad_token_id)
    # Row i's completion token k sits at position len(prompt_i) + k; its logits at one less.
    pos = torch.zeros((len(seqs), t_max), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
        pos[i, : len(c)] = torch.arange(len(p) - 1, len(p) - 1 + len(c))
    device = model_device(model)
    ids, attn, pos = ids.to(device), attn.to(device), pos.to(device)
    logits = model(input_ids=ids, attention_mask=attn).logits
    # Gather the completion positions before any float32 cast: under bf16 autocast the
    # full (n, width, vocab) logits are never copied to float32 (the same values either way).
    return torch.gather(logits, 1, pos.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))


def _shared_prompt_logits(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    starts: Sequence[int],
    t_max: int,
) -> torch.Tensor:
    """(N, t_max, V) logits predicting each completion token, each distinct prompt run once.

    The prompts (one per run of equal rows, `starts`) go through the model right-padded; their
    KV cache is repeated for each row of the run (gradients of the repeats add up in the
    prompt's activations) and the completions, all but their last token, attend to it at
    positions len(prompt) + k. Completion token 0 is predicted by the prompt's last logits,
    token k by the completion pass at k - 1: the same function as `_packed_logits`, with the
    prompt's share of the work divided by the group size.
    """
    from transformers import DynamicCache

    device = model_device(model)
    pad = model.generation_config.pad_token_id
    prompts = [prompt_ids[i] for i in starts]
    ends = [*starts[1:], len(prompt_ids)]
    group = torch.tensor(
        [j for j, (lo, hi) in enumerate(zip(starts, ends, strict=True)) for _ in range(lo, hi)],
        device=device,
    )
    p_ids, p_mask = right_padded(prompts, pad)
    p_ids, p_mask = p_ids.to(device), p_mask.to(device)
    cache = DynamicCache()
    p_logits: torch.Tensor = model(
        input_ids=p_ids, attention_mask=p_mask, past_key_values=cache
    ).logits
    lengths = p_mask.sum(1)
    last = p_logits[torch.arange(len(prompts), device=device), lengths - 1][group]
    if t_max == 1:
        return last.unsqueeze(1)
    cache.batch_select_indices(group)
    c_ids, c_mask = right_padded([list(c)[: t_max - 1] or [pad] for c in completion_ids], pad)
    c_ids, c_mask = c_ids.to(device), c_mask.to(device)  # width t_max - 1: the longest, cut
    width = p_ids.shape[1]
    positions = lengths[group].unsqueeze(1) + torch.arange(t_max - 1, device=device)
    out = model(
        input_ids=c_ids,
        attention_mask=torch.cat([p_mask[group], c_mask], dim=1),
        position_ids=positions,
        past_key_values=cache,
        cache_position=torch.arange(width, width + t_max - 1, device=device),
    ).logits
    return torch.cat([last.unsqueeze(1), out], dim=1)
