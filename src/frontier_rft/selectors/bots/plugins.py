"""BOTS building blocks: the implicit-evidence plug-ins, the per-step log and top-B selection.

Plug-ins estimate p~(k, B_t), the success rate (gaussian mode: mean reward) of every task
from the selected batch B_t alone, without extra rollouts:

- interpolation (paper section 3.3): locate the current model between a weak and a strong
  reference model on the batch, `mu = (cur - weak) / (strong - weak)`, smooth it with
  momentum, then `p~(k) = clip(mu~ * strong_k + (1 - mu~) * weak_k, 0, 1)`;
- kernel (paper appendix E.2, after DOTS): the similarity-weighted average of the batch's
  success rates with `K(a, b) = exp(<e_a, e_b> / tau)`, computed in row chunks so that the
  N x B kernel is never held in memory at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.bounds import MAX_ABS_VALUE
from frontier_rft.core.state_check import read_array, read_float, read_int, read_keys

__all__ = [
    "ExternalStep",
    "StepLog",
    "capability",
    "interpolate",
    "kernel_average",
    "smallest_k",
]

_MIN_GAP = 1e-12
"""Reference gaps below this are rounding noise; dividing by them would blow mu up."""
_LOG_KEYS = (
    "step",
    "implicit",
    "mu",
    "rho",
    "n_implicit",
    "ref_ids",
    "ref_rates",
    "explicit_ids",
    "weights",
    "anchor_seq",
)


def capability(ref: F64, ids: I64, rates: F64, eps: float) -> float | None:
    """The batch capability coefficient mu_t of section 3.3, or None when it is undefined.

    `ref` is the (N, 2) array of weak/strong reference pass rates. mu_t is undefined when
    the weak and strong references have (almost) the same mean on the batch (|gap| <= eps):
    the batch then says nothing about where the model sits between them.
    """
    weak = float(ref[ids, 0].mean())
    gap = float(ref[ids, 1].mean()) - weak
    if not abs(gap) > max(eps, _MIN_GAP):
        return None
    return (float(rates.mean()) - weak) / gap


def interpolate(
    ref: F64,
    mu: float,
    clip: bool,
    scale: float = 1.0,
    out: F64 | None = None,
    at: I64 | None = None,
) -> F64:
    """`scale * clip(weak + mu * (strong - weak), 0, 1)` for all tasks or for `at`.

    Elementwise on the two columns of the (N, 2) reference array, written into `out` if
    given. Not a matrix-vector product: `np.matmul` on an (N, 2) array goes to BLAS,
    whose worker threads then busy-wait between calls and steal the cores the rest of
    the step runs on. For mu in [0, 1] the estimate is a convex combination of two rates
    in [0, 1], so the clip (and its extra pass) is only applied when mu extrapolates.
    """
    rows = ref if at is None else ref[at]
    weak = rows[:, 0]
    res = np.subtract(rows[:, 1], weak, out=out)
    res *= mu
    res += weak
    if clip and not 0.0 <= mu <= 1.0:
        np.clip(res, 0.0, 1.0, out=res)
    if scale != 1.0:
        res *= scale
    return res


def kernel_average(
    features: F64,
    ref_ids: I64,
    ref_rates: F64,
    tau: float,
    chunk_rows: int,
    out: F64 | None = None,
    at: I64 | None = None,
) -> F64:
    """Kernel-weighted average of `ref_rates` (E.2, Eq. 8-9) for all tasks or for `at`.

    Weights are a softmax over the batch of `<e_k, e_i> / tau` (the row maximum is
    subtracted before exp, which leaves Eq. 9's normalised weights unchanged and avoids
    overflow). Cost O(N * B * d) time, O(chunk_rows * B) temporary memory.
    """
    keys = features[ref_ids] / tau  # (B, d)
    rows = features if at is None else features[at]
    m = rows.shape[0]
    res = np.empty(m, dtype=np.float64) if out is None else out
    for start in range(0, m, chunk_rows):
        stop = min(start + chunk_rows, m)
        with np.errstate(over="ignore", invalid="ignore"):
            logits = rows[start:stop] @ keys.T
        top = logits.max(axis=1, keepdims=True)
        if not np.all(np.isfinite(top)):
            # Products beyond float range (tiny tau, huge features): the softmax's limit
            # puts equal weight on each row's largest logits.
            top = np.where(np.isnan(top), -np.inf, top)
            logits = np.where(logits == top, 0.0, -np.inf)
            top = np.zeros_like(top)
        logits -= top
        np.exp(logits, out=logits)
        np.divide(logits @ ref_rates, logits.sum(axis=1), out=res[start:stop])
    return res


def smallest_k(score: F64, k: int, rng: np.random.Generator) -> I64:
    """Indices of the k smallest scores, best first; ties at the cut are broken at random.

    On a large pool a threshold from a strided sample of the scores keeps a few k
    candidates in one comparison pass, so only those are partitioned (the result is the
    same as partitioning everything: every score at or below the k-th is a candidate).
    `rng` is only drawn from when more tasks tie at the k-th score than places are left.
    """
    n = score.shape[0]
    cand: I64 | None = None
    if n >= 64 * k:
        sample = score[:: n // (16 * k)]
        j = min(sample.shape[0] - 1, (4 * k * sample.shape[0]) // n + 8)
        found = np.flatnonzero(score <= np.partition(sample, j)[j])
        if found.shape[0] >= k:
            cand = found
    sub = score if cand is None else score[cand]
    kth = np.partition(sub, k - 1)[k - 1]
    below = np.flatnonzero(sub < kth)
    tied = np.flatnonzero(sub == kth)
    need = k - below.shape[0]
    if tied.shape[0] > need:
        tied = np.sort(rng.choice(tied, size=need, replace=False))
    ids = np.concatenate([below, tied])
    ids = ids[np.argsort(sub[ids], kind="stable")]
    return (ids if cand is None else cand[ids]).astype(np.int64)


@dataclass(frozen=True)
class ExternalStep:
    """The interpolation plug-in's results for one step, computed over the whole step by a
    sharded service's driver and applied by every shard (bots.shard)."""

    mu_tilde: float
    """mu~ after the step (NaN while no batch has given a mu_t)."""
    mu: float
    """The step's raw mu_t (NaN when undefined); metric only."""
    rho: float
    """rho after the step (adaptive rho may have halved it)."""
    n_implicit: float
    """Pseudo sample size n~ of the step's implicit evidence."""
    error: float
    """Plug-in error on the step's batch (NaN when not computed); metric only."""
    implicit: bool
    """Whether the step adds implicit evidence (a mu~ exists, a plug-in, rho > 0)."""

    def to_state(self) -> list[float]:
        return [self.mu_tilde, self.mu, self.rho, self.n_implicit, self.error, self.implicit]

    @classmethod
    def from_state(cls, v: list[Any]) -> ExternalStep:
        return cls(float(v[0]), float(v[1]), float(v[2]), float(v[3]), float(v[4]), bool(v[5]))


@dataclass
class StepLog:
    """What one observed trainer step contributed, kept so a late piece can be folded exactly.

    `ref_ids`/`ref_rates` are the groups the plug-in saw (fixed once logged); `explicit_ids`
    grows as late pieces of the step arrive. `mu` is the mu~ the interpolation used (NaN when
    no implicit evidence was applied), `rho` and `n_implicit` the weight and pseudo sample
    size of the implicit evidence.
    """

    implicit: bool
    mu: float
    rho: float
    n_implicit: float
    ref_ids: I64
    ref_rates: F64
    explicit_ids: I64
    weights: F64
    """Regression plug-in: the regressor's weights that produced p~ (empty otherwise)."""
    anchor_seq: int = 0
    """Regression plug-in: the anchors' sequence number right after this step's fold."""

    def to_state(self, step: int) -> dict[str, Any]:
        return {
            "step": step,
            "implicit": self.implicit,
            "mu": self.mu,
            "rho": self.rho,
            "n_implicit": self.n_implicit,
            "ref_ids": self.ref_ids,
            "ref_rates": self.ref_rates,
            "explicit_ids": self.explicit_ids,
            "weights": self.weights,
            "anchor_seq": self.anchor_seq,
        }

    @classmethod
    def from_state(cls, d: dict[str, Any], num_tasks: int, who: str) -> tuple[int, StepLog]:
        """Inverse of to_state for a record that may come from an untrusted file."""
        d = read_keys({"log": d}, "log", who, _LOG_KEYS)
        who = f"{who} log"
        ids = read_array(d, "ref_ids", who, np.int64, lo=0, hi=num_tasks - 1)
        explicit = read_array(d, "explicit_ids", who, np.int64, lo=0, hi=num_tasks - 1)
        rates = read_array(d, "ref_rates", who, np.float64, shape=ids.shape, finite=True)
        if not isinstance(d["implicit"], bool):
            raise ValueError(f"{who} state: implicit must be true or false")
        log = cls(
            implicit=d["implicit"],
            mu=read_float(d, "mu", who, -MAX_ABS_VALUE, MAX_ABS_VALUE),
            rho=read_float(d, "rho", who, 0.0, 1.0, nan=False),
            n_implicit=read_float(d, "n_implicit", who, 0.0, MAX_ABS_VALUE, nan=False),
            ref_ids=ids,
            ref_rates=rates,
            explicit_ids=explicit,
            weights=read_array(d, "weights", who, np.float64, finite=True),
            anchor_seq=read_int(d, "anchor_seq", who),
        )
        return read_int(d, "step", who), log
