"""Load and save a causal LM with its tokenizer: a directory, a named model, a GGUF file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from frontier_rft.core.persistence import set_new_file_mode
from frontier_rft.lm.pretrained import is_gguf_file, is_pretrained_name, load_gguf, load_pretrained

__all__ = ["load_lm", "save_lm"]


def save_lm(model: Any, tokenizer: Any, out_dir: str | os.PathLike[str], **info: Any) -> None:
    """save_pretrained both into `out_dir` (plus `frontier_rft.json` describing its origin)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    set_new_file_mode(out.glob("*.safetensors"))  # safetensors writes them 0600
    if info:
        (out / "frontier_rft.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")


def load_lm(path: str | os.PathLike[str]) -> tuple[Any, Any]:
    """(model, tokenizer) from a directory written by save_lm (or any Hugging Face model
    directory), via the Auto classes; a named pretrained model
    (`frontier_rft.lm.pretrained.PRETRAINED`); or a GGUF file."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if is_pretrained_name(path):
        return load_pretrained(str(path))
    if is_gguf_file(path):
        return load_gguf(path)

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path))
    return model, tokenizer
