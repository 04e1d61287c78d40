"""Metadata a selector needs, taken from the TaskPool when given, derived from prompts if not.

| needed     | given by the user         | derived from prompts alone                       |
|------------|---------------------------|--------------------------------------------------|
| features   | `TaskPool.features`       | `text_features(TaskPool.prompts)`                |
| categories | `TaskPool.categories`     | k-means clusters of the features                 |

Each function returns the array and a short label of its source ('given', 'text',
'kmeans_text', 'kmeans_given'), which the selector keeps in `selector.evidence` and
reports in `metrics()` as `evidence/<what>/<source>`, so nothing degrades silently.
Text features are cached per pool (by fingerprint), so several selectors built on one
pool featurize it once.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from collections.abc import MutableMapping

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.pool import TaskPool
from frontier_rft.features.text import TextFeatureConfig, text_features

__all__ = [
    "EvidenceWarning",
    "announce",
    "cluster_count",
    "cluster_features",
    "relabel_evidence",
    "task_categories",
    "task_features",
]

_CACHE: OrderedDict[tuple[str, TextFeatureConfig], NDArray[np.float64]] = OrderedDict()
_CACHE_SIZE = 2
MAX_CLUSTERS = 16
"""Most arms a derived category set gets: SEC needs several draws per arm per batch."""
KMEANS_SAMPLE = 20_000
"""Tasks k-means is fitted on; the rest are assigned to the nearest centre."""


class EvidenceWarning(UserWarning):
    """A selector derives metadata or runs on weaker evidence than its paper assumes."""


def announce(message: str) -> None:
    """Say once (per message) which evidence a selector falls back to, and what to pass."""
    warnings.warn(message, EvidenceWarning, stacklevel=3)


def task_features(
    pool: TaskPool, selector: str, config: TextFeatureConfig | None = None
) -> tuple[NDArray[np.float64], str]:
    """(features, source): `pool.features` ('given') or text features of the prompts ('text')."""
    if pool.features is not None:
        return pool.features, "given"
    if pool.prompts is None:
        raise ValueError(
            f"selector {selector!r} needs TaskPool.features or TaskPool.prompts: pass "
            "TaskPool(prompts=...) to derive features from the prompt text, or "
            "TaskPool(features=...) with your own embeddings"
        )
    announce(
        f"{selector}: task features derived from the prompt text "
        "(pass TaskPool(features=...) to use your own embeddings)"
    )
    cfg = config or TextFeatureConfig()
    key = (pool.fingerprint, cfg)
    cached = _CACHE.get(key)
    if cached is None:
        # float64 like given features; read-only and shared by the selectors of one pool
        cached = text_features(pool.prompts, cfg).astype(np.float64)
        cached.setflags(write=False)
        _CACHE[key] = cached
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(key)
    return cached, "text"


def cluster_count(num_tasks: int) -> int:
    """k = round(sqrt(N / 10)), clipped to [2, 16]: ~14 arms for 2,000 tasks, 16 from 2,403.

    Few enough that a batch of 32 draws every arm it favours several times (SEC's arm
    reward is a batch mean), many enough to separate task types when they exist.
    """
    return int(min(MAX_CLUSTERS, max(2, round(math.sqrt(num_tasks / 10)))))


def cluster_features(features: NDArray[np.float64], k: int, seed: int) -> NDArray[np.int64]:
    """k-means labels (0..k'-1, k' <= k distinct) of the rows, fitted on a seeded sample.

    k' is at most the number of distinct rows in the sample (one label when all agree).
    Features of extreme magnitude (beyond 2**+-64) are first scaled by a power of two,
    which is exact and leaves k-means' answer unchanged, so their squared distances
    neither overflow to inf/NaN nor underflow to 0.
    """
    from sklearn.cluster import KMeans

    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k-means needs a positive int number of clusters, got {k!r}")
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"features must be a finite (tasks, dims) array, got shape {x.shape}")
    n = x.shape[0]
    peak = float(np.abs(x).max()) if x.size else 0.0
    if peak > 0.0 and not 2.0**-64 <= peak <= 2.0**64:
        x = np.ldexp(x, -np.frexp(peak)[1])  # largest |value| now in [0.5, 1)
    rng = np.random.default_rng(seed)
    sample = x[np.sort(rng.choice(n, size=min(n, KMEANS_SAMPLE), replace=False))]
    k = min(int(k), np.unique(sample, axis=0).shape[0]) if n else 1
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    model = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(sample)
    labels = np.concatenate(
        [model.predict(x[lo : lo + KMEANS_SAMPLE]) for lo in range(0, n, KMEANS_SAMPLE)]
    )
    _, dense = np.unique(labels, return_inverse=True)  # no empty label ids
    return dense.astype(np.int64).reshape(-1)


def task_categories(
    pool: TaskPool, selector: str, num_clusters: int | None = None, seed: int = 0
) -> tuple[NDArray[np.int64], str]:
    """(categories, source): `pool.categories` ('given') or k-means clusters of the features."""
    if pool.categories is not None:
        return pool.categories, "given"
    if pool.features is None and pool.prompts is None:
        raise ValueError(
            f"selector {selector!r} needs TaskPool.categories or TaskPool.prompts: pass "
            "TaskPool(categories=...) (e.g. a dataset's source or level column), or "
            "TaskPool(prompts=...) to cluster the prompt text"
        )
    if num_clusters is not None and (
        isinstance(num_clusters, bool) or not isinstance(num_clusters, int) or num_clusters < 1
    ):
        raise ValueError(f"num_clusters must be a positive int or None, got {num_clusters!r}")
    features, source = task_features(pool, selector)
    k = num_clusters or cluster_count(pool.num_tasks)
    announce(
        f"{selector}: categories are {k} k-means clusters of the "
        f"{'prompt-text ' if source == 'text' else ''}features (pass TaskPool(categories=...), "
        "e.g. a dataset's source or level column, to use your own)"
    )
    labels = cluster_features(features, k, seed)
    return labels, f"kmeans_{source}"


def relabel_evidence(evidence: MutableMapping[str, str], source: str) -> None:
    """Name the source of the features a pool was given, in a selector's `evidence`: 'given'
    features become `source` (e.g. 'policy' for self-embeddings), 'kmeans_given' categories
    'kmeans_<source>'."""
    for what, label in list(evidence.items()):
        if label == "given" and what == "features":
            evidence[what] = source
        elif label == "kmeans_given":
            evidence[what] = f"kmeans_{source}"
