"""Build a tiny Llama-architecture causal LM and its tokenizer from scratch, with no hub access.

`build_tiny_lm(config, out_dir)` trains the byte-level BPE on the task corpus (prompts,
solver demonstrations and the METIS judge template text), initialises `LlamaForCausalLM`
from a `LlamaConfig` and saves both as an ordinary Hugging Face directory:
`AutoTokenizer.from_pretrained(out_dir)` and `AutoModelForCausalLM.from_pretrained(out_dir)`
load it unchanged. (A Qwen2 config would make transformers swap in its own tokenizer class;
a Llama config with a `PreTrainedTokenizerFast` keeps ours.)
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

from frontier_rft.lm.model_io import save_lm
from frontier_rft.lm.tokenizer import train_tokenizer
from frontier_rft.selectors.metis.judge import (
    ALLOWED_VALUES,
    exemplar_block,
    render_judge_prompt,
    system_message,
    user_header,
)
from frontier_rft.tasks.suite import load_task
from frontier_rft.training.config import ModelConfig

__all__ = ["build_model", "build_tiny_lm", "tokenizer_corpus"]

CORPUS_LEVELS = {"countdown": "2x20,3x20,4x20,3,4", "arithmetic": "2,3,4,5,6,7,8"}
"""Levels whose prompts and demonstrations form the tokenizer corpus (wide number range)."""


def tokenizer_corpus(config: ModelConfig) -> Iterator[str]:
    """Task prompts and demonstrations (with and without steps) plus METIS judge text."""
    suite = load_task(config.task)
    items = suite.generate(config.corpus_tasks, config.seed, CORPUS_LEVELS[config.task])
    rng = random.Random(config.seed)
    for item in items:
        yield item.prompt
        yield suite.demonstration(item)
    for calibration in (True, False):
        sys_msg = system_message(ALLOWED_VALUES, calibration)
        for _ in range(50):
            exemplars = [(rng.choice(items).prompt, rng.choice(ALLOWED_VALUES)) for _ in range(3)]
            user = user_header(calibration) + exemplar_block(exemplars)
            yield render_judge_prompt(sys_msg, user)
    for value in ALLOWED_VALUES:
        yield f"\\boxed{{{value:.2f}}}"


def build_model(config: ModelConfig, tokenizer: Any) -> Any:
    """A freshly initialised LlamaForCausalLM sized by `config` (seeded)."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    llama = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads,
        max_position_embeddings=config.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(config.seed)
    model = LlamaForCausalLM(llama)
    # Plain sampling unless a caller asks otherwise: no top-k, no top-p.
    gen_config: Any = GenerationConfig  # untyped upstream
    model.generation_config = gen_config(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=True,
        top_k=0,
        top_p=1.0,
        temperature=1.0,
    )
    return model


def build_tiny_lm(config: ModelConfig, out_dir: str | os.PathLike[str]) -> tuple[Any, Any]:
    """Train the tokenizer, initialise the model, save both to `out_dir`; returns them."""
    tokenizer = train_tokenizer(tokenizer_corpus(config), config.vocab_size)
    model = build_model(config, tokenizer)
    from dataclasses import asdict

    save_lm(model, tokenizer, out_dir, stage="init", model_config=asdict(config))
    return model, tokenizer
