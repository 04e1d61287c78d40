"""A tiny causal LM and a character-level tokenizer built locally: no hub access, CPU-fast.

Used by the trainer integration tests; the model is random (hidden 32, 2 layers), which is
all a test of the selection plumbing needs: completions vary, so rewards can too.
"""

from __future__ import annotations

import string
from typing import Any

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
CHARS = list(string.ascii_letters + string.digits + string.punctuation + " ")


def char_tokenizer() -> Any:
    """A PreTrainedTokenizerFast with one token per printable ASCII character."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIALS + CHARS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
    )
    tok.padding_side = "left"
    return tok


def _tiny_config(tokenizer: Any, layers: int, **extra: Any) -> Any:
    """A Llama config with hidden size 32 over the tokenizer's vocabulary."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id,
        **extra,
    )


def tiny_llama(tokenizer: Any, seed: int = 0) -> Any:
    """A randomly initialised 2-layer Llama with hidden size 32 over the tokenizer's vocabulary."""
    import torch
    from transformers import LlamaForCausalLM

    config = _tiny_config(
        tokenizer,
        2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def tiny_reward_model(tokenizer: Any, seed: int = 1) -> Any:
    """A randomly initialised 1-layer Llama sequence classifier with one output (a reward)."""
    import torch
    from transformers import LlamaForSequenceClassification

    config = _tiny_config(tokenizer, 1, num_labels=1)
    torch.manual_seed(seed)
    return LlamaForSequenceClassification(config)
