"""Frontier-curriculum replay for RLOO (Vizcarra & Kim, sec. 3.1 and App. B).

After each step, prompts whose K rollouts hold both a full success and a failure enter a
bounded memory of recent frontier prompts with priority f = 4p(1-p). Each batch is mostly
uniform; a fraction rho is retrieved from the bank by its best priority-weighted cosine
match to the memory, c_m = max_j <e_m, e_j> u_j, after canonical-key de-duplication.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import MAX_STEP
from frontier_rft.core.config import SelectorConfig, check, check_choice, check_least
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import (
    read_array,
    read_counts,
    read_int,
)
from frontier_rft.features.derive import task_features
from frontier_rft.structures.epoch_walk import EpochWalk

__all__ = [
    "MEMORY_RULES",
    "FrontierReplayConfig",
    "FrontierReplaySelector",
    "frontier_priority",
    "replay_slots",
    "retrieval_scores",
]

MEMORY_RULES = ("frontier", "goldilocks", "failure")
_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)
_EMPTY_I.setflags(write=False)  # shared sentinels: never written to
_EMPTY_F.setflags(write=False)
_SCORE_BLOCK_MIN = 1 << 13
"""Similarity temporary cap (floats): the larger of this and 4 floats (32 B) per task."""
_GEMM_SERIAL = 1 << 18
"""OpenBLAS runs a GEMM on one thread when m*n*k <= 65536 * 4; blocks aim below that."""
_BLOCKS_PER_GATHER = 64
"""Candidate blocks gathered and cast at once (bounds the copy when scoring the bank)."""
_BLOCK_MIN_ROWS = 16
"""Fewest candidates per block (wide embeddings get multithreaded products instead)."""


@dataclass(frozen=True)
class FrontierReplayConfig(SelectorConfig):
    """Frontier replay; defaults are the paper's where it gives them (see docs for the rest)."""

    replay_ratio: float = 0.10
    """Fraction rho of each batch retrieved from memory (paper 0.10; ablations 0.05-0.15)."""
    memory_size: int = 256
    """Capacity of the memory of recent frontier prompts (paper: bounded, size unstated)."""
    min_memory: int = 16
    """Memory entries needed before retrieval starts; uniform until then (size unstated)."""
    top_pool_factor: float = 4.0
    """Top candidate pool = ceil(factor * retrieved count) best scores, sampled uniformly."""
    memory_rule: str = "frontier"
    """Who enters memory: 'frontier' (0<s<K), 'goldilocks' (|p-0.5|<=band), 'failure' (s=0)."""
    goldilocks_band: float = 0.25
    """Goldilocks rule: a frontier prompt enters only when |p - 0.5| <= this band."""
    candidate_sample: int | None = 512
    """Bank prompts scored per step (random subset); None or >= pool size scores the bank."""

    def __post_init__(self) -> None:
        super().__post_init__()
        rho = self.replay_ratio
        check(
            0.0 <= rho <= 1.0,
            f"replay_ratio must be a number in [0, 1] (paper: 0.10), got {rho!r}",
        )
        check_least(self, ("memory_size",), 1)
        check(
            1 <= self.min_memory <= self.memory_size,
            f"min_memory must be an int in [1, memory_size={self.memory_size}], "
            f"got {self.min_memory!r}",
        )
        f = self.top_pool_factor
        check(
            f >= 1,
            f"top_pool_factor must be a finite number >= 1, got {f!r}",
        )
        check_choice("memory_rule", self.memory_rule, MEMORY_RULES)
        b = self.goldilocks_band
        check(
            0.0 <= b <= 0.5,
            f"goldilocks_band must be a number in [0, 0.5] (0.5 = plain frontier), got {b!r}",
        )
        c = self.candidate_sample
        check(
            c is None or c >= 1,
            f"candidate_sample must be a positive int, or None to score the whole bank, got {c!r}",
        )


def replay_slots(replay_ratio: float, batch_size: int) -> int:
    """Retrieval slots in a batch of `batch_size`: rho * batch rounded half up, so nearby
    ratios can give the same count at small batches (0.10 and 0.15 of 16 -> 2)."""
    return min(batch_size, math.floor(replay_ratio * batch_size + 0.5 + 1e-9))


def frontier_priority(
    successes: NDArray[np.int64], counts: NDArray[np.int64]
) -> NDArray[np.float64]:
    """f = 4p(1-p) with p = s/K: 1 at p = 1/2, 0 for all-fail or all-success groups."""
    p = successes / counts
    return np.asarray(4.0 * p * (1.0 - p), dtype=np.float64)


def _unit_rows(x: NDArray[np.float64]) -> NDArray[np.float64]:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x / np.where(norms > 0, norms, 1.0), dtype=np.float64)


def retrieval_scores(
    candidates: NDArray[np.float64], memory: NDArray[np.float64], priority: NDArray[np.float64]
) -> NDArray[np.float64]:
    """c_m = max_j <e_m, e_j> u_j with rows L2-normalised (zero rows stay zero); u_j >= 0."""
    weighted = _unit_rows(memory) * priority[:, None]
    return np.asarray((_unit_rows(candidates) @ weighted.T).max(axis=1), dtype=np.float64)


class FrontierReplaySelector(Selector):
    """Uniform batches (without replacement within an epoch) with rho of them frontier replay.

    Batch layout: the uniform part first, then the retrieved prompts, then uniform fallback
    for retrieval slots that could not be filled (memory below `min_memory`, or too few
    candidates after filtering). `last_retrieved` holds the ids retrieved by the last call.

    Late feedback: memory recency is ordered by trainer step (then arrival), so a late
    piece for an older step enters as old and is evicted first; a prompt's entry is only
    replaced by an observation from the same or a newer step.
    """

    name = "frontier"
    needs = Needs(
        "task embeddings (retrieval of neighbours) and a key per task (de-duplication)",
        "prompt-text features; the prompt text as key",
        "features=(N, d) your embeddings, e.g. the policy's (policy_embeddings); keys=",
        ("evidence/features/text", "evidence/keys/prompts"),
    )
    requires = Requires(("features", "prompts"), "it retrieves neighbours by task embeddings")
    cost = Cost(
        "sublinear",
        "O(CM)",
        "retrieval scores C = candidate_sample (default 512) bank prompts against the memory "
        "of M frontier prompts; O(N) with candidate_sample=None (the whole bank)",
    )
    color = "#d62728"  # red
    config_class = FrontierReplayConfig
    config: FrontierReplayConfig

    @classmethod
    def reads_features(cls, config: SelectorConfig, given: frozenset[str]) -> bool:
        """It de-duplicates and replays by task features, always."""
        return True

    def __init__(
        self, pool: TaskPool, config: FrontierReplayConfig | None = None, *, seed: int = 0
    ):
        super().__init__(pool, config, seed=seed)
        feats, self.evidence["features"] = task_features(pool, self.name)
        if feats.shape[1] == 0:
            raise ValueError("selector 'frontier' needs TaskPool.features with at least 1 column")
        self._features: NDArray[np.float64] = feats
        # Canonical keys: given ones, else the prompt text (identical prompts are one task
        # for de-duplication), else the index.
        keys = pool.keys if pool.keys is not None else pool.prompts
        if pool.keys is not None or pool.prompts is not None:
            self.evidence["keys"] = "given" if pool.keys is not None else "prompts"
        self._key_codes = _key_codes(keys)
        # Uniform walk (same scheme as UniformSelector, plus exclusions for the fallback).
        self._walk = EpochWalk(pool.num_tasks)
        # Memory, oldest first: task id, priority u_j, trainer step, arrival sequence number.
        self._mem_ids = _EMPTY_I.copy()
        self._mem_prio = _EMPTY_F.copy()
        self._mem_step = _EMPTY_I.copy()
        self._mem_seq = _EMPTY_I.copy()
        self._next_seq = 0
        self._last_retrieved: NDArray[np.int64] = _EMPTY_I.copy()
        self._last_scores = _EMPTY_F.copy()
        self._last_fallback = 0
        self._counts = {"retrieved": 0, "fallback": 0, "memory_inserts": 0}

    # ------------------------------------------------------------------ select
    def replay_count(self, batch_size: int) -> int:
        """Retrieval slots in a batch: rho * batch rounded half up (64 at 0.10 -> 6)."""
        return replay_slots(self.config.replay_ratio, batch_size)

    @property
    def last_retrieved(self) -> NDArray[np.int64]:
        """Task ids retrieved from memory by the last select call (a copy)."""
        out: NDArray[np.int64] = self._last_retrieved.copy()
        return out

    def memory(self) -> dict[str, NDArray[Any]]:
        """Copies of the frontier memory, oldest first: task_ids, priority, step."""
        return {
            "task_ids": self._mem_ids.copy(),
            "priority": self._mem_prio.copy(),
            "step": self._mem_step.copy(),
        }

    def _select(self, n: int) -> NDArray[np.int64]:
        r = self.replay_count(n)
        uniform = self._walk.take(n - r, self.rng)
        retrieved, scores = _EMPTY_I, _EMPTY_F
        if r > 0 and self._mem_ids.size >= self.config.min_memory:
            retrieved, scores = self._retrieve(r, uniform)
        missing = r - retrieved.size
        fallback = self._walk.take(missing, self.rng, np.concatenate([uniform, retrieved]))
        self._last_retrieved, self._last_scores, self._last_fallback = retrieved, scores, missing
        self._counts["retrieved"] += int(retrieved.size)
        self._counts["fallback"] += int(missing)
        return np.concatenate([uniform, retrieved, fallback])

    def _keys(self, ids: NDArray[np.int64]) -> NDArray[np.int64]:
        return ids if self._key_codes is None else self._key_codes[ids]

    def _retrieve(
        self, r: int, uniform: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        n_tasks, sample = self.num_tasks, self.config.candidate_sample
        if sample is None or n_tasks <= sample:
            cand = np.arange(n_tasks, dtype=np.int64)  # exact: the whole bank
            scores = self._score(None)
        else:
            # Repeats are harmless: the top pool keeps one entry per key.
            cand = self.rng.integers(0, n_tasks, size=sample, dtype=np.int64)
            scores = self._score(cand)
        blocked = np.sort(np.concatenate([self._keys(self._mem_ids), self._keys(uniform)]))
        keep = ~_member(self._keys(cand), blocked)
        cand, scores = cand[keep], scores[keep]
        if cand.size == 0:
            return _EMPTY_I, _EMPTY_F
        size = min(cand.size, max(r, math.ceil(self.config.top_pool_factor * r)))
        top = np.argpartition(-scores, size - 1)[:size] if size < cand.size else np.arange(size)
        top = top[np.lexsort((cand[top], -scores[top]))]  # best first, ties by id
        pool_ids, pool_scores = cand[top], scores[top]
        _, first = np.unique(self._keys(pool_ids), return_index=True)  # one per key, best kept
        first.sort()
        pool_ids, pool_scores = pool_ids[first], pool_scores[first]
        pick = self.rng.choice(pool_ids.size, size=min(r, pool_ids.size), replace=False)
        return pool_ids[pick], pool_scores[pick]

    def _score(self, cand: NDArray[np.int64] | None) -> NDArray[np.float64]:
        """`retrieval_scores` of `cand` (None: the whole bank) as max_j <x, u_j e_j> / ||x||.

        Products run in float32 (scores only rank candidates; |error| < 1e-6) and in
        candidate blocks: that bounds the similarity temporary and keeps each product
        under OpenBLAS's multithreading threshold, since these products are tiny and
        waking BLAS threads costs more than the arithmetic (10-50x on a busy machine).
        """
        n_mem, dim = self._mem_ids.size, self._features.shape[1]
        mem = self._features[self._mem_ids]
        mem_norms = np.sqrt(np.einsum("ij,ij->i", mem, mem))
        scale = self._mem_prio / np.where(mem_norms > 0, mem_norms, 1.0)
        weighted_t = np.ascontiguousarray((mem * scale[:, None]).T, dtype=np.float32)  # (d, |M|)
        n_cand = self.num_tasks if cand is None else cand.size
        by_memory = max(_SCORE_BLOCK_MIN, 4 * self.num_tasks) // n_mem
        rows = max(1, min(by_memory, max(_BLOCK_MIN_ROWS, _GEMM_SERIAL // (n_mem * dim))))
        best = np.empty(n_cand, dtype=np.float32)
        norms = np.empty(n_cand, dtype=np.float64)
        for lo in range(0, n_cand, rows * _BLOCKS_PER_GATHER):
            hi = min(lo + rows * _BLOCKS_PER_GATHER, n_cand)
            x = self._features[lo:hi] if cand is None else self._features[cand[lo:hi]]
            norms[lo:hi] = np.sqrt(np.einsum("ij,ij->i", x, x))
            x32 = x.astype(np.float32)
            for a in range(0, hi - lo, rows):
                (x32[a : a + rows] @ weighted_t).max(axis=1, out=best[lo + a : lo + a + rows])
        np.maximum(norms, np.finfo(np.float64).tiny, out=norms)  # a zero row scores 0
        return np.divide(best, norms)

    def _refresh_features(self, features: NDArray[np.float64]) -> bool:
        self._features = features
        return True

    # ------------------------------------------------------------------ observe
    def _observe(self, batch: GroupBatch) -> None:
        cfg = self.config
        s, k = batch.successes, batch.counts
        if cfg.memory_rule == "failure":
            enter = s == 0
            prio = np.ones(s.shape[0])  # f(p=0) = 0 would mute retrieval; all failures equal
        else:
            enter = (s > 0) & (s < k)
            if cfg.memory_rule == "goldilocks":
                enter &= np.abs(s / k - 0.5) <= cfg.goldilocks_band + 1e-12
            prio = frontier_priority(s, k)
        if not np.any(enter):
            return
        new_ids = batch.task_ids[enter]
        seq = self._next_seq + np.arange(new_ids.size, dtype=np.int64)
        ids = np.concatenate([self._mem_ids, new_ids])
        pr = np.concatenate([self._mem_prio, prio[enter]])
        st = np.concatenate([self._mem_step, np.full(new_ids.size, batch.step, np.int64)])
        sq = np.concatenate([self._mem_seq, seq])
        keys = self._keys(ids)
        order = np.lexsort((sq, st, keys))  # by key, then recency: the last of a key is newest
        ks = keys[order]
        newest = np.append(ks[:-1] != ks[1:], True)
        keep = order[newest]
        keep = keep[np.lexsort((sq[keep], st[keep]))][-cfg.memory_size :]  # oldest first
        self._mem_ids, self._mem_prio = ids[keep], pr[keep]
        self._mem_step, self._mem_seq = st[keep], sq[keep]
        self._next_seq += int(new_ids.size)
        self._counts["memory_inserts"] += int(new_ids.size)

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            **self._walk.state_dict(),  # flat: "order", "cursor", "epoch"
            "mem_ids": self._mem_ids,
            "mem_prio": self._mem_prio,
            "mem_step": self._mem_step,
            "mem_seq": self._mem_seq,
            "next_seq": self._next_seq,
            "last_retrieved": self._last_retrieved,
            "last_scores": self._last_scores,
            "last_fallback": self._last_fallback,
            "counts": dict(self._counts),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n, who = self.num_tasks, self.name
        walk = EpochWalk(n)
        walk.load_state_dict({k: state[k] for k in ("order", "cursor", "epoch")}, who)
        ids = read_array(state, "mem_ids", who, np.int64, lo=0, hi=n - 1)
        prio = read_array(state, "mem_prio", who, np.float64, lo=0.0, hi=1.0, finite=True)
        step = read_array(state, "mem_step", who, np.int64, lo=0, hi=MAX_STEP)
        seq = read_array(state, "mem_seq", who, np.int64, lo=0, hi=MAX_STEP)
        shapes = {a.shape for a in (ids, prio, step, seq)}
        if len(shapes) != 1 or ids.size > self.config.memory_size:
            raise ValueError("frontier state: memory arrays have inconsistent shapes")
        last = read_array(state, "last_retrieved", who, np.int64, lo=0, hi=n - 1)
        scores = read_array(state, "last_scores", who, np.float64)
        if last.shape != scores.shape:
            raise ValueError("frontier state: last retrieval arrays are invalid")
        counts = read_counts(state, "counts", who, ("retrieved", "fallback", "memory_inserts"))
        next_seq = read_int(state, "next_seq", who)
        fallback = read_int(state, "last_fallback", who)
        self._walk = walk
        self._mem_ids, self._mem_prio, self._mem_step, self._mem_seq = ids, prio, step, seq
        self._next_seq = next_seq
        self._last_retrieved, self._last_scores, self._last_fallback = last, scores, fallback
        self._counts = counts

    def _metrics(self) -> dict[str, float]:
        prio, scores = self._mem_prio, self._last_scores
        return {
            "memory_size": float(self._mem_ids.size),
            "memory_mean_priority": float(prio.mean()) if prio.size else float("nan"),
            "retrieved": float(self._last_retrieved.size),
            "fallback": float(self._last_fallback),
            "retrieval_score_mean": float(scores.mean()) if scores.size else float("nan"),
            "retrieved_total": float(self._counts["retrieved"]),
            "fallback_total": float(self._counts["fallback"]),
            "memory_inserts_total": float(self._counts["memory_inserts"]),
            "epoch": float(self._walk.epoch),
        }


def _member(x: NDArray[np.int64], sorted_set: NDArray[np.int64]) -> NDArray[np.bool_]:
    """np.isin(x, sorted_set) for a small sorted set, by binary search (no O(range) table)."""
    if sorted_set.size == 0:
        return np.zeros(x.shape, dtype=np.bool_)
    pos = np.minimum(np.searchsorted(sorted_set, x), sorted_set.size - 1)
    return np.asarray(sorted_set[pos] == x)


def _key_codes(keys: tuple[str, ...] | None) -> NDArray[np.int64] | None:
    """Dense integer code per canonical key, or None when every key is distinct (use ids)."""
    if keys is None:
        return None
    codes: dict[str, int] = {}
    # One pass at construction (a str->int map has no vectorised numpy equivalent).
    arr = np.fromiter((codes.setdefault(k, len(codes)) for k in keys), np.int64, len(keys))
    return None if len(codes) == len(keys) else arr
