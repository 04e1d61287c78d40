"""The regression plug-in of BOTS: implicit evidence without reference models.

BOTS's interpolation plug-in needs a weak and a strong reference model's pass rates; few
users have them. This plug-in, one of the alternatives the paper names for future work
(a "task-embedding regressor", section 6), needs only what training itself shows:

    eta_k = x_k . w           online ridge regression of the link of each rolled-out
                              task's observed rate on its features x_k (given, derived
                              from the prompt text, or none: then only an intercept)
    r_k   = g_k - eta_k       each task's anchor: how far its last observed rate sat
                              from the regression when it was observed (0 if never)
    p~_k  = link^-1(eta_k + r_k)

with the logit link for success rates (g = logit((s + 1/2) / (n + 1)), smoothed so all-0
and all-1 groups stay finite) and the identity for Gaussian mean rewards. The regression
follows the policy as it improves (past batches decay by `forgetting` per step); the
anchor keeps what a task's own rollouts showed about it relative to similar tasks, which
stays informative long after the Beta posterior has forgotten the counts themselves.
A task never rolled out gets the regression's prediction alone.

Late pieces stay exact: every anchor change is logged with a sequence number, so p~ as
it was when a past step was folded can be recomputed for the tasks a late piece retracts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.state_check import check_keys, read_array, read_int
from frontier_rft.selectors._ridge import OnlineRidge

__all__ = ["RegressionPlugin"]

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


class RegressionPlugin:
    """Ridge regression on task features plus a per-task anchor (see the module docstring)."""

    def __init__(
        self, features: F64, ridge: float, forgetting: float, *, gaussian: bool, anchors: bool
    ):
        self.features = features
        self.gaussian = gaussian
        self.use_anchors = anchors
        self.model = OnlineRidge(features.shape[1], ridge, forgetting)
        self.anchors = np.zeros(features.shape[0])
        self.seq = 0
        # Anchor changes, oldest first: sequence number, task id, value before the change.
        self._log_seq = _EMPTY_I
        self._log_ids = _EMPTY_I
        self._log_prev = _EMPTY_F

    # ------------------------------------------------------------------ link
    def _link(self, sums: F64, counts: F64) -> F64:
        if self.gaussian:
            out: F64 = sums / counts
            return out
        p = (sums + 0.5) / (counts + 1.0)
        logit: F64 = np.log(p / (1.0 - p))
        return logit

    def _inverse(self, eta: F64) -> F64:
        if self.gaussian:
            return eta
        out: F64 = 0.5 * (1.0 + np.tanh(0.5 * eta))  # overflow-free logistic
        return out

    # ------------------------------------------------------------------ estimates
    def estimate(self, at: I64 | None = None, out: F64 | None = None) -> F64:
        """p~ for all tasks (or `at`), written into `out` if given."""
        x = self.features if at is None else self.features[at]
        eta = self.model.predict(x)
        if self.use_anchors:
            eta += self.anchors if at is None else self.anchors[at]
        p = self._inverse(eta)
        if out is None:
            return p
        out[...] = p
        return out

    def estimate_as_of(self, seq: int, weights: F64, at: I64) -> F64:
        """p~ of tasks `at` as it was when the anchors were at sequence `seq` and the
        regression had `weights` (the state a past step's implicit evidence used)."""
        eta = np.einsum("ij,j->i", self.features[at], weights[:-1]) + weights[-1]
        if self.use_anchors:
            anchors = self.anchors[at]
            later = self._log_seq > seq
            if later.any():
                # Undo changes newest first, so the oldest change after `seq` wins.
                lookup = {int(t): j for j, t in enumerate(at.tolist())}
                for i in np.flatnonzero(later)[::-1]:
                    j = lookup.get(int(self._log_ids[i]))
                    if j is not None:
                        anchors[j] = self._log_prev[i]
            eta = eta + anchors
        return self._inverse(eta)

    # ------------------------------------------------------------------ learning
    def observe(self, ids: I64, sums: F64, counts: F64) -> tuple[F64, F64]:
        """Learn from one batch; returns (p~ before, p~ after) on the batch's tasks."""
        before = self.estimate(at=ids)
        target = self._link(sums, counts)
        x = self.features[ids]
        self.model.observe(x, target)
        if self.use_anchors:
            self.seq += 1
            self._log_seq = np.concatenate([self._log_seq, np.full(ids.shape[0], self.seq)])
            self._log_ids = np.concatenate([self._log_ids, ids])
            self._log_prev = np.concatenate([self._log_prev, self.anchors[ids]])
            self.anchors[ids] = target - self.model.predict(x)
        return before, self.estimate(at=ids)

    def forget_changes_before(self, seq: int) -> None:
        """Drop logged anchor changes no retained step can need (those at or before seq)."""
        keep = self._log_seq > seq
        if not keep.all():
            self._log_seq = self._log_seq[keep]
            self._log_ids = self._log_ids[keep]
            self._log_prev = self._log_prev[keep]

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "anchors": self.anchors,
            "seq": self.seq,
            "log_seq": self._log_seq,
            "log_ids": self._log_ids,
            "log_prev": self._log_prev,
        }

    def load_state_dict(self, state: dict[str, Any], who: str) -> None:
        keys = ("model", "anchors", "seq", "log_seq", "log_ids", "log_prev")
        state = check_keys(state, f"{who} state: regression", keys)
        n = self.anchors.shape[0]
        anchors = read_array(state, "anchors", who, np.float64, shape=(n,), finite=True)
        seq = read_int(state, "seq", who)
        log_seq = read_array(state, "log_seq", who, np.int64, lo=0, hi=seq)
        log_ids = read_array(state, "log_ids", who, np.int64, lo=0, hi=n - 1)
        log_prev = read_array(state, "log_prev", who, np.float64, finite=True)
        if not log_seq.shape == log_ids.shape == log_prev.shape:
            raise ValueError(f"{who} state: regression anchor log arrays differ in shape")
        self.model.load_state_dict(state["model"], who)
        self.anchors, self.seq = anchors, seq
        self._log_seq, self._log_ids, self._log_prev = log_seq, log_ids, log_prev
