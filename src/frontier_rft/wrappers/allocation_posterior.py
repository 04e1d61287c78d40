"""Per-prompt Beta posteriors of the success rate, with forgetting, for the rollout allocation.

The Bayesian skip's model (selectors/skip.py), without its features: prompt k's discounted
success and failure counts S_k, F_k, forgotten at rate lam per pool-size of prompts handed
out (lazily, exactly), on an empirical-Bayes prior Beta(c m, c (1 - m)) fitted by moments to
the pass rates seen so far (core/informative.py):

    a_k = c m + d^(e - e_k) S_k,   b_k = c (1 - m) + d^(e - e_k) F_k,   d = 1 - lam

Rewards in [0, 1] count as s = sum of rewards, f = n - s (fractional ones too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.informative import fit_beta_prior, pass_rate_moments
from frontier_rft.core.state_check import read_array, read_int

__all__ = ["PassRatePosteriors"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
_BIG = 1e300


class PassRatePosteriors:
    """S_k, F_k, their clock, and the prior's moments (numpy arrays, 24 bytes per prompt)."""

    def __init__(
        self, num_tasks: int, lam: float, base: tuple[float, float], prior_forgetting: float
    ):
        self.num_tasks = num_tasks
        self.lam = lam
        self.base = base
        self.prior_forgetting = prior_forgetting
        self.succ = np.zeros(num_tasks)
        self.fail = np.zeros(num_tasks)
        self.when = np.zeros(num_tasks)
        self.handed_out = 0
        """Prompts handed out so far; the clock e is this / num_tasks."""
        self.moments = np.zeros(4)

    @property
    def clock(self) -> float:
        return self.handed_out / self.num_tasks

    def tried(self, ids: I64) -> NDArray[np.bool_]:
        """True where the prompt has rollouts of its own (forgetting never reaches 0 unless
        lam = 1: then a prompt not seen for a pass is untried again)."""
        decay = self._decay(ids)
        out: NDArray[np.bool_] = decay * (self.succ[ids] + self.fail[ids]) > 0.0
        return out

    def prior(self) -> tuple[float, float]:
        """(m, c) of the prior (the variances are per rollout already: n = 1)."""
        return fit_beta_prior(self.moments, 1.0, self.base)

    def posterior(self, ids: I64) -> tuple[F64, F64]:
        """(a, b) of each prompt's Beta posterior, forgetting applied up to now."""
        m, c = self.prior()
        m = min(max(m, 1e-6), 1.0 - 1e-6)  # a, b stay positive
        decay = self._decay(ids)
        return c * m + decay * self.succ[ids], c * (1.0 - m) + decay * self.fail[ids]

    def _decay(self, ids: I64) -> F64:
        d = 1.0 - self.lam
        elapsed = np.maximum(self.clock - self.when[ids], 0.0)
        if d == 0.0:
            return np.where(elapsed > 0, 0.0, 1.0)
        out: F64 = np.power(d, elapsed)
        return out

    def observe(self, handed_out: int, ids: I64, sums: F64, counts: F64) -> None:
        """A step's groups (distinct ids), after `handed_out` more prompts were handed out."""
        self.handed_out += handed_out
        decay = self._decay(ids)
        self.succ[ids] = decay * self.succ[ids] + sums
        self.fail[ids] = decay * self.fail[ids] + (counts - sums)
        self.when[ids] = self.clock
        batch = pass_rate_moments(sums, counts, per_rollout=True)
        self.moments = self.prior_forgetting * self.moments + batch

    def state_dict(self) -> dict[str, Any]:
        return {
            "successes": self.succ.copy(),
            "failures": self.fail.copy(),
            "when": self.when.copy(),
            "handed_out": self.handed_out,
            "moments": self.moments.copy(),
        }

    def loaded(self, state: dict[str, Any], who: str) -> PassRatePosteriors:
        """A copy holding `state` (validated; this one is unchanged)."""
        n = self.num_tasks
        out = PassRatePosteriors(n, self.lam, self.base, self.prior_forgetting)
        shape = (n,)
        out.succ = read_array(
            state, "successes", who, np.float64, shape=shape, lo=0, hi=_BIG, finite=True
        )
        out.fail = read_array(
            state, "failures", who, np.float64, shape=shape, lo=0, hi=_BIG, finite=True
        )
        out.when = read_array(
            state, "when", who, np.float64, shape=shape, lo=0, hi=_BIG, finite=True
        )
        out.handed_out = read_int(state, "handed_out", who, hi=2**62)
        out.moments = read_array(
            state, "moments", who, np.float64, shape=(4,), lo=0, hi=_BIG, finite=True
        )
        return out
