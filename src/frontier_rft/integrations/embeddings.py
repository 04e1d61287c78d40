"""Policy self-embeddings inside a trainer: one forward pass per prompt, shared across processes.

Each of W processes embeds an equal share of the prompts (the last share padded with a
repeated prompt, so every process runs the same number of forward passes, which sharded
models need), then the shares are gathered in process order, so every process holds the
same array and the selectors stay identical.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.features.policy import policy_embeddings

__all__ = ["sharded_self_embeddings"]


def sharded_self_embeddings(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    *,
    batch_size: int,
    max_length: int,
    rank: int = 0,
    world: int = 1,
    gather: Callable[[list[Any]], list[Any]] | None = None,
    progress: bool = True,
) -> NDArray[np.float32]:
    """(N, hidden) unit-norm self-embeddings of `texts`, identical on every process.

    `gather` collects a list from every process into one list in process order (accelerate's
    `gather_object`); it is only called when `world > 1`."""
    n = len(texts)
    share = math.ceil(n / world)
    own = [min(rank * share + i, n - 1) for i in range(share)]
    emb = policy_embeddings(
        model,
        tokenizer,
        [texts[i] for i in own],
        batch_size=batch_size,
        max_length=max_length,
        progress=progress,
        desc="policy self-embeddings" + (f" ({share} of {n} on each process)" if world > 1 else ""),
    )
    if world == 1:
        return emb
    if gather is None:
        raise ValueError("several processes need a gather function (accelerate's gather_object)")
    out = np.zeros((n, emb.shape[1]), dtype=np.float32)
    for r, part in gather([(rank, emb)]):
        lo, hi = r * share, min((r + 1) * share, n)
        if hi > lo:
            out[lo:hi] = np.asarray(part)[: hi - lo]
    return out
