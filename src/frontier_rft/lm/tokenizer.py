"""A byte-level BPE tokenizer trained locally on the task corpus, with a chat template.

The chat template renders `[system, user]` exactly as METIS's flat judge prompt
(`frontier_rft.selectors.metis.judge.render_judge_prompt`) preceded by the BOS token, so a
judge prompt tokenises the same whether it comes as chat messages or as the flat string:

    <|bos|><|system|>\\n{system}\\n<|user|>\\n{user}\\n<|assistant|>\\n{answer}<|eos|>

The result is a plain `PreTrainedTokenizerFast`: `save_pretrained` writes `tokenizer.json`
and `AutoTokenizer.from_pretrained` loads it unchanged (no hub access, no conversion).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "ASSISTANT",
    "BOS",
    "CHAT_TEMPLATE",
    "EOS",
    "PAD",
    "ROLE_TOKENS",
    "SPECIAL_TOKENS",
    "SYSTEM",
    "USER",
    "chat_prompt",
    "train_tokenizer",
]

PAD, BOS, EOS = "<|pad|>", "<|bos|>", "<|eos|>"
SYSTEM, USER, ASSISTANT = "<|system|>", "<|user|>", "<|assistant|>"
ROLE_TOKENS = (SYSTEM, USER, ASSISTANT)
SPECIAL_TOKENS = (PAD, BOS, EOS, *ROLE_TOKENS)
"""Ids 0..5 in this order: pad, bos, eos, then the three role markers."""

# HF compiles chat templates with trim_blocks, so literal newlines after block tags vanish:
# every newline is emitted from an expression instead.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + '\\n' + message['content'] }}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% else %}{{ '\\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' + '\\n' }}{% endif %}"
)


def train_tokenizer(texts: Iterable[str], vocab_size: int = 1024) -> Any:
    """Train a byte-level BPE on `texts` and wrap it as a `PreTrainedTokenizerFast`.

    Digits are split one per token before the byte-level split, so numbers are spelled
    digit by digit: arithmetic then generalises across numbers instead of memorising
    multi-digit tokens seen in the corpus.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer=trainer)
    fast: Any = PreTrainedTokenizerFast  # untyped upstream
    return fast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        extra_special_tokens=list(ROLE_TOKENS),
        chat_template=CHAT_TEMPLATE,
        padding_side="left",
        model_max_length=1_000_000,
    )


def chat_prompt(tokenizer: Any, user: str, system: str | None = None) -> list[int]:
    """Token ids of a chat turn ready for generation (ends with the assistant marker)."""
    messages = [] if system is None else [{"role": "system", "content": system}]
    messages.append({"role": "user", "content": user})
    ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding
        ids = ids["input_ids"]
    return [int(i) for i in ids]
