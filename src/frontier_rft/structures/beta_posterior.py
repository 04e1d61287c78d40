"""Per-prompt Beta posteriors of the success rate, with forgetting: the one model behind the
Bayesian skip (selectors/skip.py) and the rollout allocation (sampling/allocation.py).

Prompt k's discounted success and failure counts S_k, F_k are forgotten at rate lam per
pool-size of prompts handed out (the clock e), lazily and exactly, on an empirical-Bayes
prior Beta(c m_k, c (1 - m_k)) whose strength c (and mean m, unless the caller predicts
its own m_k) is fitted by moments to the pass rates seen so far (core/informative.py):

    a_k = c m_k + d^(e - e_k) S_k,   b_k = c (1 - m_k) + d^(e - e_k) F_k,   d = 1 - lam
    S_k <- d^(e - e_k) S_k + s,      F_k <- d^(e - e_k) F_k + f,   e_k <- e   (a new group)

Rewards in [0, 1] count as s = sum of rewards, f = n - s (fractional ones too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.informative import fit_beta_prior, pass_rate_moments
from frontier_rft.core.state_check import read_array, read_int

__all__ = ["BetaPosteriors"]

_BIG = 1e300


class BetaPosteriors:
    """S_k, F_k, their clock, and the prior's moments (numpy arrays, 24 bytes per prompt).

    `per_rollout`: the prior's moments are per rollout (the allocation: the prior is fitted
    with n = 1) or per group (the skip: fitted with the group size)."""

    def __init__(
        self,
        num_tasks: int,
        lam: float,
        base: tuple[float, float],
        prior_forgetting: float,
        *,
        per_rollout: bool,
    ):
        self.num_tasks = num_tasks
        self.lam = lam
        self.base = base
        self.prior_forgetting = prior_forgetting
        self.per_rollout = per_rollout
        self.succ = np.zeros(num_tasks)
        self.fail = np.zeros(num_tasks)
        self.when = np.zeros(num_tasks)
        """The clock at each prompt's last update of S_k, F_k."""
        self.handed_out = 0
        """Prompts handed out so far; the clock e is this / num_tasks."""
        self.moments = np.zeros(4)
        """Decayed moments of the pass rates: groups, sum r, sum r^2, sum p(1-p) estimate."""

    @property
    def clock(self) -> float:
        return self.handed_out / self.num_tasks

    def seen(self, ids: I64) -> NDArray[np.bool_]:
        """True where the prompt ever had rollouts of its own, forgotten or not."""
        out: NDArray[np.bool_] = (self.succ[ids] + self.fail[ids]) != 0.0
        return out

    def tried(self, ids: I64) -> NDArray[np.bool_]:
        """True where the prompt has evidence of its own left (forgetting never reaches 0
        unless lam = 1: then a prompt not seen for a pass is untried again)."""
        decay = self.decay(ids)
        out: NDArray[np.bool_] = decay * (self.succ[ids] + self.fail[ids]) > 0.0
        return out

    def prior(self, n: float = 1.0) -> tuple[float, float]:
        """(m, c) of the prior, for groups of n rollouts (n = 1 when per_rollout)."""
        return fit_beta_prior(self.moments, n, self.base)

    def posterior(self, ids: I64, mean: F64 | None = None, n: float = 1.0) -> tuple[F64, F64]:
        """(a, b) of each prompt's Beta posterior, forgetting applied up to now; the prior's
        mean is `mean` (per prompt) or the fitted m, its strength the fitted c."""
        m, c = self.prior(n)
        if mean is None:
            prior: float | F64 = min(max(m, 1e-6), 1.0 - 1e-6)  # a, b stay positive
        else:
            prior = np.clip(mean, 1e-6, 1.0 - 1e-6)
        decay = self.decay(ids)
        return c * prior + decay * self.succ[ids], c * (1.0 - prior) + decay * self.fail[ids]

    def decay(self, ids: I64) -> F64:
        """d^(e - e_k): the share of each prompt's counts not yet forgotten."""
        d = 1.0 - self.lam
        elapsed = np.maximum(self.clock - self.when[ids], 0.0)
        if d == 0.0:
            return np.where(elapsed > 0, 0.0, 1.0)
        out: F64 = np.power(d, elapsed)
        return out

    def advance(self, handed_out: int) -> None:
        """`handed_out` more prompts were handed out: the clock moves on."""
        self.handed_out += handed_out

    def observe(self, ids: I64, sums: F64, counts: F64) -> None:
        """A step's groups (distinct ids): their counts and the prior's moments learn them."""
        decay = self.decay(ids)
        self.succ[ids] = decay * self.succ[ids] + sums
        self.fail[ids] = decay * self.fail[ids] + (counts - sums)
        self.when[ids] = self.clock
        batch = pass_rate_moments(sums, counts, per_rollout=self.per_rollout)
        self.moments = self.prior_forgetting * self.moments + batch

    def state_dict(self) -> dict[str, Any]:
        return {
            "successes": self.succ.copy(),
            "failures": self.fail.copy(),
            "when": self.when.copy(),
            "handed_out": self.handed_out,
            "moments": self.moments.copy(),
        }

    def loaded(self, state: dict[str, Any], who: str) -> BetaPosteriors:
        """A copy holding `state` (validated; this one is unchanged)."""
        n = self.num_tasks
        out = BetaPosteriors(
            n, self.lam, self.base, self.prior_forgetting, per_rollout=self.per_rollout
        )
        arrays = {}
        for key in ("successes", "failures", "when"):
            arrays[key] = read_array(
                state, key, who, np.float64, shape=(n,), lo=0, hi=_BIG, finite=True
            )
        out.succ, out.fail, out.when = arrays["successes"], arrays["failures"], arrays["when"]
        out.handed_out = read_int(state, "handed_out", who, hi=2**62)
        out.moments = read_array(
            state, "moments", who, np.float64, shape=(4,), lo=0, hi=_BIG, finite=True
        )
        return out
