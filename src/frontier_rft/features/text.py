"""Text features from prompt strings: hashed tokens, TF-IDF, a truncated SVD, unit rows.

The default evidence for every selector that needs task features when a user has only
prompts. Deterministic for a given prompt list and config, no model downloads, and
memory-bounded: the IDF weights and the SVD are fitted on a seeded sample of at most
`fit_sample` prompts, then the whole pool is transformed in chunks of `chunk_size`.

Preprocessing keeps what tends to carry difficulty in RL prompts: digits become '0' (so
"1234" and "5678" share the token "0000", which encodes the number's length, not its
value), and operators and punctuation are tokens of their own.

scikit-learn is imported when features are computed, never at import time.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import check

__all__ = ["TextFeatureConfig", "prompt_text", "text_features"]

_DIGITS_TO_ZERO = str.maketrans("0123456789", "0000000000")
TOKEN_PATTERN = r"(?u)\b\w+\b|[^\w\s]"
"""Words (digit runs included) and single non-space symbols such as + - * / = ^ ( )."""


@dataclass(frozen=True)
class TextFeatureConfig:
    """Settings of the prompt-text featurizer; the defaults are what every selector uses."""

    dim: int = 64
    """Output dimensions (SVD components); capped at the number of distinct prompts - 1."""
    hash_features: int = 2**18
    """Hash buckets of the token vectorizer (collisions are rare below ~100k distinct tokens)."""
    ngram_max: int = 1
    """Longest word n-gram; 2 adds bigrams at about half the speed."""
    fit_sample: int = 20_000
    """Prompts (a seeded sample) the IDF weights and the SVD are fitted on."""
    chunk_size: int = 20_000
    """Prompts transformed at a time (bounds the sparse matrix held in memory)."""
    seed: int = 0
    """Seed of the fitting sample and of the randomized SVD."""

    def __post_init__(self) -> None:
        for name in ("dim", "hash_features", "ngram_max", "fit_sample", "chunk_size"):
            value = getattr(self, name)
            check(
                isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                f"TextFeatureConfig.{name} must be a positive int, got {value!r}",
            )
        check(
            isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0,
            f"TextFeatureConfig.seed must be a non-negative int, got {self.seed!r}",
        )


def prompt_text(value: Any) -> str:
    """Text of a prompt cell: a string as is, chat messages as `role: content` lines (what
    the adapters' pools hold, and what a replay of a TRL or verl log derives features from)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return prompt_text(value.get("content", ""))
    if isinstance(value, Sequence | np.ndarray):
        parts = []
        for item in value:
            if isinstance(item, Mapping) and "role" in item:
                parts.append(f"{item['role']}: {prompt_text(item.get('content', ''))}")
            elif isinstance(item, Mapping):  # a multimodal content part
                parts.append(str(item.get("text", "")))
            else:
                parts.append(str(item))
        return "\n".join(p for p in parts if p)
    raise ValueError(
        f"a prompt must be text or a list of chat messages, got {type(value).__name__}"
    )


def _preprocess(text: str) -> str:
    return _escape_surrogates(text.lower().translate(_DIGITS_TO_ZERO))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogates(text: str) -> str:
    """Lone surrogates (e.g. from JSON '\\ud83d') as their escape text: the hasher needs
    UTF-8, which cannot encode them, and distinct ones stay distinct tokens."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


_TOKEN_RE = re.compile(TOKEN_PATTERN)
# For ASCII text, TOKEN_PATTERN's tokens are what str.split() gives once every symbol is
# spaced out (ASCII \w is [A-Za-z0-9_]); this path is ~2x faster than the regex.
_ASCII_SPACED = str.maketrans(
    {
        **{c: "0" for c in "0123456789"},
        **{
            chr(i): f" {chr(i)} "
            for i in range(128)
            if not (chr(i).isalnum() or chr(i) == "_" or chr(i).isspace())
        },
    }
)


def _tokens(text: str) -> list[str]:
    """TOKEN_PATTERN's tokens of the preprocessed text (the unigram analyzer)."""
    text = text.lower()
    if text.isascii():
        return text.translate(_ASCII_SPACED).split()
    return _TOKEN_RE.findall(_escape_surrogates(text.translate(_DIGITS_TO_ZERO)))


def text_features(
    prompts: Sequence[str], config: TextFeatureConfig | None = None
) -> NDArray[np.float32]:
    """(N, d) float32 features of N prompts; rows have unit L2 norm (zero for empty prompts).

    Dot products are cosine similarities. d = min(config.dim, distinct prompts - 1), at
    least 1. Identical prompts get identical rows; a prompt with no token (empty or only
    whitespace) gets a zero row, which is similar to nothing.
    """
    cfg = config or TextFeatureConfig()
    if isinstance(prompts, str):
        raise ValueError("text_features expects a sequence of prompt strings, not one string")
    n = len(prompts)
    if n == 0:
        raise ValueError("text_features needs at least one prompt")
    for i, p in enumerate(prompts):
        if not isinstance(p, str):
            raise ValueError(f"prompt {i} is a {type(p).__name__}, not a str")
    return _fit_transform(prompts, cfg)


def _fit_transform(prompts: Sequence[str], cfg: TextFeatureConfig) -> NDArray[np.float32]:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
    from threadpoolctl import threadpool_limits

    n = len(prompts)
    words: dict[str, Any] = (
        {"analyzer": _tokens}
        if cfg.ngram_max == 1
        else {
            "ngram_range": (1, cfg.ngram_max),
            "preprocessor": _preprocess,
            "token_pattern": TOKEN_PATTERN,
        }
    )
    hasher = HashingVectorizer(
        n_features=cfg.hash_features,
        **words,
        alternate_sign=False,
        norm=None,
        dtype=np.float32,
    )
    rng = np.random.default_rng(cfg.seed)
    sample_ids = np.sort(rng.choice(n, size=min(n, cfg.fit_sample), replace=False))
    sample = hasher.transform([prompts[i] for i in sample_ids])
    tfidf = TfidfTransformer(sublinear_tf=True).fit(sample)
    weighted = tfidf.transform(sample)
    # Only the sample's tokens can carry SVD weight: fit on those columns (fast at any
    # hash width), then scatter the components into a (hash_features, d) projection.
    used = np.unique(weighted.indices)
    dim = max(1, min(cfg.dim, weighted.shape[0] - 1, used.size - 1))
    out = np.zeros((n, dim), dtype=np.float32)
    if used.size == 0:
        return out  # no prompt has a token: nothing tells tasks apart
    compact = weighted[:, used]
    if dim < 2:
        # Too few prompts or tokens for an SVD: project on the direction of their mean.
        components = np.asarray(compact.mean(axis=0), dtype=np.float64).reshape(1, -1)
    else:
        svd = TruncatedSVD(dim, algorithm="randomized", n_iter=5, random_state=cfg.seed)
        # The SVD's products are small: OpenBLAS's worker threads would busy-wait on them and
        # cost ~20x the CPU of one thread (benchmarks/featurizers.py). The limit covers the
        # BLAS libraries loaded when it is set, so it comes after the imports above (scipy's
        # BLAS): on more threads the features differ by rounding the SVD amplifies.
        # On a few prompts whose columns have no variance, sklearn's explained_variance_ratio_
        # (never read here: only the components are) divides 0 by 0 and warns; the warning
        # leaked into a small `skip` replay's output (issue 83, item 6).
        with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "invalid value encountered in divide", RuntimeWarning)
            components = svd.fit(compact).components_
    projection = np.zeros((cfg.hash_features, dim), dtype=np.float32)
    projection[used] = components.T
    for lo in range(0, n, cfg.chunk_size):
        chunk = tfidf.transform(hasher.transform(prompts[lo : lo + cfg.chunk_size]))
        out[lo : lo + chunk.shape[0]] = chunk @ projection
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out
