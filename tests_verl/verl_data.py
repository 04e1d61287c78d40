"""Data helpers with no verl import: a local tokenizer and verl-format parquet files.

Shared by conftest.py and the script run against an older verl in a subprocess.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

WORDS = [f"w{i}" for i in range(64)]
MAX_PROMPT_TOKENS = 16
SOURCES = ("toy/arith", "toy/logic", "toy/words")


def build_tokenizer() -> Any:
    """A word-level tokenizer with a chat template, built locally (no hub)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate([*WORDS, "<pad>", "<eos>", "user", "assistant", ":"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    hf.chat_template = (
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant : {% endif %}"
    )
    return hf


def write_parquet(
    path: Path,
    num_rows: int,
    *,
    index: Callable[[int], Any] | None = None,
    long_every: int = 7,
    extra_info: bool = True,
) -> Path:
    """A verl-format RL file: every `long_every`-th prompt is too long and gets filtered.

    Row i has data_source SOURCES[i % 3] and, in extra_info, level i % 4 and two reference
    pass rates that fall with the level (the metadata columns the selectors can read)."""
    import pandas as pd

    rows = []
    for i in range(num_rows):
        length = 30 if long_every and i % long_every == long_every - 1 else 3 + i % 4
        text = " ".join(WORDS[(i + j) % 64] for j in range(length))
        row: dict[str, Any] = {
            "data_source": SOURCES[i % 3],
            "prompt": [{"role": "user", "content": text}],
            "reward_model": {"style": "rule", "ground_truth": str(i)},
        }
        if extra_info:
            task_id = 1000 + i if index is None else index(i)
            level = i % 4
            row["extra_info"] = {
                "index": task_id,
                "split": "train",
                "level": level,
                "pass_weak": round(0.6 - 0.15 * level, 2),
                "pass_strong": round(0.9 - 0.15 * level, 2),
            }
        rows.append(row)
    pd.DataFrame(rows).to_parquet(path)
    return path
