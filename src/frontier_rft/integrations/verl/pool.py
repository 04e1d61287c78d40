"""The selector of a FrontierSampler, built from verl's training dataset and the sampler config.

Task i is dataset position i. The pool holds the prompt text (verl's `prompt_key` column,
chat messages joined as `role: content`) and whatever metadata columns the config names;
with `self_embeddings_model` the features are that model's mean-pooled hidden states of
each prompt as verl renders it (the tokenizer's chat template).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.selector import Selector
from frontier_rft.features.derive import relabel_evidence
from frontier_rft.integrations.pool import (
    PoolColumns,
    build_pool,
    evidence_summary,
    make_pool_selector,
    prompt_text,
)

if TYPE_CHECKING:
    from frontier_rft.integrations.verl.config import VerlSamplerConfig

__all__ = ["dataset_selector", "verl_self_embeddings"]

_log = logging.getLogger(__name__)


def _reader(dataset: Any) -> tuple[Any, list[str]]:
    """(column reader, column names) of an RLHFDataset, a datasets.Dataset or a list of dicts."""
    frame = getattr(dataset, "dataframe", None)
    if frame is None and hasattr(dataset, "column_names"):
        frame = dataset
    if frame is not None and hasattr(frame, "column_names"):
        return (lambda c: frame[c]), list(frame.column_names)
    first = dataset[0] if len(dataset) else {}
    if not isinstance(first, dict):
        raise ValueError(
            "the sampler builds its TaskPool from dataset columns: give it verl's RLHFDataset, "
            f"a datasets.Dataset or dict rows, or pass selector=... (got {type(dataset).__name__})"
        )
    return (lambda c: [dataset[i][c] for i in range(len(dataset))]), list(first)


def _columns(dataset: Any, config: VerlSamplerConfig, names: Sequence[str]) -> PoolColumns:
    if config.prompt_key is not None and config.prompt_key not in names:
        raise ValueError(
            f"prompt_key {config.prompt_key!r} is not a column of the training data (columns: "
            f"{', '.join(map(str, names[:12]))}); fix it, or leave it unset for verl's prompt_key"
        )
    prompt = config.prompt_key or getattr(dataset, "prompt_key", None) or "prompt"
    return PoolColumns(
        prompt=prompt if prompt in names else None,
        categories=tuple(config.category_keys),
        difficulty=config.difficulty_key,
        pass_rates=tuple(config.pass_rate_keys),
        features=config.features_key,
    )


def verl_self_embeddings(
    model_dir: str, prompts: Sequence[Any], batch_size: int, max_length: int
) -> NDArray[np.float32]:
    """Self-embeddings of `prompts` (chat messages or text) by the model in `model_dir`,
    on a GPU when there is one. The model is released afterwards."""
    import importlib

    import torch

    from frontier_rft.features import policy_embeddings

    hf: Any = importlib.import_module("transformers")  # typed as Any: verl pins its own version
    tokenizer = hf.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    cuda = torch.cuda.is_available()
    model = hf.AutoModelForCausalLM.from_pretrained(
        model_dir, local_files_only=True, dtype=torch.bfloat16 if cuda else torch.float32
    )
    model.to("cuda" if cuda else "cpu")
    texts = []
    for p in prompts:
        if isinstance(p, str) or getattr(tokenizer, "chat_template", None) is None:
            texts.append(prompt_text(p))
        else:
            messages = [dict(m) for m in p]
            rendered = tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
            texts.append(str(rendered))
    try:
        return policy_embeddings(
            model, tokenizer, texts, batch_size=batch_size, max_length=max_length
        )
    finally:
        del model
        if cuda:
            torch.cuda.empty_cache()


def dataset_selector(dataset: Any, config: VerlSamplerConfig) -> Selector:
    """The configured selector over a TaskPool of `dataset`'s columns (task i = position i)."""
    read, names = _reader(dataset)
    columns = _columns(dataset, config, names)
    n = len(dataset)
    features = None
    note = ""
    if config.self_embeddings_model is not None:
        if columns.prompt is None:
            raise ValueError(
                f"self_embeddings_model needs the prompt column; the dataset has {names}"
            )
        start = time.perf_counter()
        features = verl_self_embeddings(
            config.self_embeddings_model,
            list(read(columns.prompt)),
            config.self_embeddings_batch_size,
            config.self_embeddings_max_length,
        )
        note = f"; self-embeddings of {n} prompts in {time.perf_counter() - start:.1f} s"
    pool = build_pool(read, names, n, columns, features=features)
    selector = make_pool_selector(
        config.selector,
        pool,
        config.seed,
        dict(config.selector_config),
        judge=config.selector_judge,
    )
    if features is not None:
        relabel_evidence(selector.evidence, "policy")
    _log.info(
        f"frontier-rft: selector {selector.name!r} over {n} prompts; evidence: "
        f"{evidence_summary(selector)}{note}"
    )
    return selector
