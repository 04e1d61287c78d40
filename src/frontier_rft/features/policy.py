"""Policy self-embeddings: the trained policy's own mean-pooled hidden states per prompt.

What the policy finds similar is closer to what it finds equally hard than any text
statistic, and a trainer already holds the model: one forward pass per prompt, in
batches, is the whole cost. Pass the result as `TaskPool(features=...)` (or to
`selector.refresh_features(...)` to refresh them during training).

torch is imported when embeddings are computed, never at import time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.progress import progress_bar

__all__ = ["policy_embeddings"]


def _token_ids(tokenizer: Any, prompt: str, max_length: int) -> list[int]:
    ids = tokenizer(prompt, add_special_tokens=True, truncation=True, max_length=max_length)
    tokens = list(ids["input_ids"])
    return tokens or [0]  # an empty prompt still gets one position to pool


def policy_embeddings(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    batch_size: int = 16,
    max_length: int = 512,
    layer: int = -1,
    progress: bool = True,
    desc: str = "policy self-embeddings",
) -> NDArray[np.float32]:
    """(N, hidden) float32 mean-pooled hidden states of `model` per prompt, unit L2 rows.

    `model` is a Hugging Face causal or base LM (the decoder is called without the LM head,
    so no vocabulary-sized logits are allocated); `prompts` should be formatted exactly as
    the trainer feeds them (chat template applied). `layer` picks the hidden state (-1:
    the last, after the final norm). Prompts are batched by length; the model's training
    mode is restored afterwards.
    """
    import torch

    if isinstance(prompts, str) or not isinstance(prompts, Sequence):
        raise ValueError("policy_embeddings expects a sequence of prompt strings")
    if len(prompts) == 0:
        raise ValueError("policy_embeddings needs at least one prompt")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be a positive int, got {max_length!r}")
    for i, p in enumerate(prompts):
        if not isinstance(p, str):
            raise ValueError(f"prompt {i} is a {type(p).__name__}, not a str")
    decoder = getattr(model, "base_model", model)
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    encoded = [_token_ids(tokenizer, p, max_length) for p in prompts]
    order = np.argsort([len(t) for t in encoded], kind="stable")  # similar lengths together
    out: NDArray[np.float32] | None = None
    bar = progress_bar(len(prompts), desc, unit="prompt", enabled=progress)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for lo in range(0, len(order), batch_size):
                rows = order[lo : lo + batch_size]
                width = max(len(encoded[i]) for i in rows)
                ids = torch.full((len(rows), width), pad, dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, i in enumerate(rows):
                    ids[r, : len(encoded[i])] = torch.tensor(encoded[i])
                    mask[r, : len(encoded[i])] = 1
                ids, mask = ids.to(device), mask.to(device)
                result = decoder(
                    input_ids=ids, attention_mask=mask, output_hidden_states=layer != -1
                )
                hidden = result.last_hidden_state if layer == -1 else result.hidden_states[layer]
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1)
                block = pooled.float().cpu().numpy()
                if out is None:
                    out = np.zeros((len(prompts), block.shape[1]), dtype=np.float32)
                out[rows] = block
                bar.update(len(rows))
    finally:
        bar.close()
        model.train(was_training)
    assert out is not None
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out
