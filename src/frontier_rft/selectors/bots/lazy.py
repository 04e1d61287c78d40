"""Lazy BOTS posteriors for candidate mode: an untouched task costs nothing until it is drawn.

Eq. 1 is linear, so a task's posterior after its last update at event j is, at event J,

    alpha = alpha0 + D (alpha_j - alpha0) + sum_{j < u <= J} d^(T_J - T_u) c_u p~_u(k)
    beta  = beta0  + D (beta_j  - beta0)  + sum_{j < u <= J} d^(T_J - T_u) c_u (1 - p~_u(k))

with d = 1 - lam, T the trainer-step clock, D = d^(T_J - T_j) and c_u = rho_u n~_u (times
a late step's weight) the implicit weight of event u. The interpolation's estimate is
linear in mu, `p~_u(k) = w_k + mu_u (s_k - w_k)` while mu_u lies in [0, 1], so the sums
reduce to two global accumulators over events, `A = sum d^(T - T_u) c_u` and
`M = sum d^(T - T_u) c_u mu_u`, whose values at every event are kept:

    implicit alpha = (A_J - D A_j) w_k + (M_J - D M_j) (s_k - w_k)

Events whose mu lies outside [0, 1] clip per task; they are kept as a short list and their
exact correction `c_u (clip(p) - p)` is added for the drawn tasks. Gaussian mode adds
`c_u m~_u(k)` to the pseudo sum and `c_u` to the pseudo count, with no clip.

With lam > 0 an event older than `horizon` steps weighs below 1e-20 of its original value
and is dropped together with its history entry (a task whose last event was dropped is
treated as D = 0: everything before has weight below 1e-20). With lam = 0 the history is
kept whole (24 bytes per event).

Per task this keeps alpha, beta (float64) and the event index of its last update (int32):
20 bytes, against 24 in the eager pool (alpha, beta and a scratch array).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.bounds import MAX_STEP
from frontier_rft.core.state_check import check_keys, read_array, read_int

__all__ = ["LazyPosterior"]

_NEGLIGIBLE = 1e-20  # discount below which an event's remaining weight is dropped
_MAX_EVENT = np.iinfo(np.int32).max
_STATE_KEYS = (
    "event",
    "base",
    "steps",
    "acc_a",
    "acc_m",
    "clip_events",
    "clip_steps",
    "clip_c",
    "clip_mu",
)


class LazyPosterior:
    """alpha/beta per task, brought up to date on demand from global event accumulators."""

    def __init__(
        self,
        num_tasks: int,
        prior: tuple[float, float],
        lam: float,
        gaussian: bool,
        ref: F64 | None,
    ):
        self.prior = prior
        self.lam = lam
        self.gaussian = gaussian
        self.ref = ref  # (N, 2) weak/strong reference rates; None without interpolation
        self.alpha = np.full(num_tasks, prior[0])
        self.beta = np.full(num_tasks, prior[1])
        self.event = np.zeros(num_tasks, dtype=np.int32)  # last event applied to each task
        # Event history: row i holds event (base + i): its clock step and accumulators A, M.
        # Rows beyond `size` are spare capacity (appends double it, so they are amortised O(1)).
        self.base = 0
        self.size = 1
        self._steps: I64 = np.full(16, -1, dtype=np.int64)
        self._acc: F64 = np.zeros((16, 2))
        # Events whose interpolation clips: (event, step, c, mu).
        self.clip_events = np.zeros(0, dtype=np.int64)
        self.clip_steps = np.zeros(0, dtype=np.int64)
        self.clip_c = np.zeros(0)
        self.clip_mu = np.zeros(0)
        # _clip_correction's tables, valid for one (newest event, clock)
        self._tables: tuple[tuple[int, int], F64, F64, F64, F64] | None = None
        d = 1.0 - lam
        self.horizon = None if d >= 1.0 else (1 if d <= 0.0 else _horizon(d))

    # ------------------------------------------------------------------ events
    @property
    def current(self) -> int:
        """Index of the newest event."""
        return self.base + self.size - 1

    @property
    def steps(self) -> I64:
        """Clock step of each kept event."""
        return self._steps[: self.size]

    @property
    def acc_a(self) -> F64:
        """Accumulator A after each kept event."""
        return self._acc[: self.size, 0]

    @property
    def acc_m(self) -> F64:
        """Accumulator M after each kept event."""
        return self._acc[: self.size, 1]

    def advance(self, clock: int, c: float, mu: float, clip: bool) -> None:
        """A new event at trainer step `clock` (>= the last): forget over the elapsed steps,
        then add implicit evidence of weight `c` with capability `mu` to every task."""
        last = int(self.steps[-1])
        if c == 0.0 and self.lam == 0.0:
            return  # nothing is forgotten and nothing added: the event would change nothing
        if self.current >= _MAX_EVENT:
            raise OverflowError("candidate mode: more than 2**31 - 1 update events")
        disc = self._discount(clock - last) if last >= 0 else 0.0
        a = disc * float(self.acc_a[-1]) + c
        m = disc * float(self.acc_m[-1]) + (c * mu if c else 0.0)
        if self.size == self._steps.shape[0]:
            self._steps = np.concatenate([self._steps, np.empty_like(self._steps)])
            self._acc = np.concatenate([self._acc, np.empty_like(self._acc)])
        self._steps[self.size] = clock
        self._acc[self.size] = (a, m)
        self.size += 1
        if c and clip and not self.gaussian and not 0.0 <= mu <= 1.0:
            self.clip_events = np.append(self.clip_events, self.current)
            self.clip_steps = np.append(self.clip_steps, clock)
            self.clip_c = np.append(self.clip_c, c)
            self.clip_mu = np.append(self.clip_mu, mu)
        self._prune(clock)

    def sync(self, ids: I64) -> None:
        """Bring the tasks `ids` up to the newest event, in place."""
        a, b = self.values(ids)
        self.alpha[ids] = a
        self.beta[ids] = b
        self.event[ids] = self.current

    def values(self, ids: I64 | slice) -> tuple[F64, F64]:
        """(alpha, beta) of `ids` as of the newest event, without changing anything."""
        a, b = self.alpha[ids], self.beta[ids]
        ev = self.event[ids].astype(np.int64)
        if ev.shape[0] == 0 or bool(np.all(ev == self.current)):
            return a.copy(), b.copy()
        idx = ev - self.base
        kept = idx >= 0
        idx = np.maximum(idx, 0)
        clock = int(self.steps[-1])
        dsc = np.where(kept, self._discount_array(clock - self.steps[idx]), 0.0)
        da = self.acc_a[-1] - np.where(kept, dsc * self.acc_a[idx], 0.0)
        a0, b0 = self.prior
        a_new = dsc * (a - a0) + a0
        b_new = dsc * (b - b0) + b0
        if self.ref is not None:
            dm = self.acc_m[-1] - np.where(kept, dsc * self.acc_m[idx], 0.0)
            rows = self.ref[ids]
            weak = rows[:, 0]
            imp = da * weak + dm * (rows[:, 1] - weak)
            if self.clip_events.shape[0]:
                imp += self._clip_correction(ev, rows, clock)
        else:
            imp = np.zeros_like(da)  # no plug-in: c is always 0, so da is too
        a_new += imp
        b_new += da if self.gaussian else da - imp
        return a_new, b_new

    # ------------------------------------------------------------------ internals
    def _discount(self, steps: int) -> float:
        return 1.0 if steps <= 0 else (1.0 - self.lam) ** steps

    def _discount_array(self, steps: I64) -> F64:
        d = 1.0 - self.lam
        if d >= 1.0:
            return np.ones(steps.shape[0])
        return np.power(d, steps.astype(np.float64))

    def _clip_correction(self, ev: I64, rows: F64, clock: int) -> F64:
        """sum over clipping events after each task's last event of c d^age (clip(p) - p).

        For a task with weak rate w and gap g = strong - w, event i clips at 1 when
        `mu_i g > 1 - w` and at 0 when `mu_i g < -w`, adding `(1 - w) - mu_i g` or
        `-w - mu_i g`: sums of `c'_i` and `c'_i mu_i` over the events after the task's last
        one whose mu lies beyond a threshold. Events are cut into blocks of about sqrt(E);
        tables of those sums by starting block and mu rank answer the whole blocks with a
        lookup, and the few events before a task's first whole block are summed directly:
        O(E^1.5 + tasks (log E + sqrt E)) instead of O(tasks E).
        """
        n_ev = self.clip_events.shape[0]
        size = max(1, math.isqrt(n_ev))
        if self._tables is None or self._tables[0] != (self.current, clock):
            self._tables = ((self.current, clock), *self._clip_tables(clock, size))
        _, weight, mu_sorted, t0, t1 = self._tables
        first = np.searchsorted(self.clip_events, ev, side="right")  # first event after ev
        block = -(-first // size)  # first whole block after it
        weak = rows[:, 0]
        gap = rows[:, 1] - weak
        safe = np.where(gap == 0.0, 1.0, gap)
        up_t, lo_t = (1.0 - weak) / safe, -weak / safe

        def below(t: F64) -> tuple[F64, F64]:  # events with mu < t
            r = np.searchsorted(mu_sorted, t, side="left")
            return t0[block, r], t1[block, r]

        def above(t: F64) -> tuple[F64, F64]:  # events with mu > t
            r = np.searchsorted(mu_sorted, t, side="right")
            return t0[block, n_ev] - t0[block, r], t1[block, n_ev] - t1[block, r]

        pos = gap > 0.0
        (ua0, ua1), (ub0, ub1) = above(up_t), below(up_t)
        (la0, la1), (lb0, lb1) = above(lo_t), below(lo_t)
        up0, up1 = np.where(pos, ua0, ub0), np.where(pos, ua1, ub1)
        lo0, lo1 = np.where(pos, lb0, la0), np.where(pos, lb1, la1)
        corr: F64 = (1.0 - weak) * up0 - weak * lo0 - gap * (up1 + lo1)
        # Events between a task's last one and its first whole block, summed directly.
        part = np.flatnonzero(first < np.minimum(block * size, n_ev))
        if part.shape[0]:
            idx = first[part, None] + np.arange(size)[None, :]
            live = idx < np.minimum(block[part] * size, n_ev)[:, None]
            idx = np.minimum(idx, n_ev - 1)
            p = weak[part, None] + self.clip_mu[idx] * gap[part, None]
            corr[part] += ((np.clip(p, 0.0, 1.0) - p) * np.where(live, weight[idx], 0.0)).sum(1)
        return np.where(gap == 0.0, 0.0, corr)

    def _clip_tables(self, clock: int, size: int) -> tuple[F64, F64, F64, F64]:
        """Discounted weights, sorted mu and the two block tables of _clip_correction."""
        n_ev = self.clip_events.shape[0]
        weight = self.clip_c * self._discount_array(clock - self.clip_steps)
        order = np.argsort(self.clip_mu, kind="stable")
        rank = np.empty(n_ev, dtype=np.int64)
        rank[order] = np.arange(n_ev)
        blocks = -(-n_ev // size)
        # table[k, r]: sum over events i >= k * size (time order) with mu rank < r
        tables = []
        for values in (weight, weight * self.clip_mu):
            z = np.zeros((blocks + 1, n_ev + 1))
            np.add.at(z, (np.arange(n_ev) // size, rank + 1), values)
            np.cumsum(z, axis=1, out=z)
            tables.append(np.cumsum(z[::-1], axis=0)[::-1])
        return weight, self.clip_mu[order], tables[0], tables[1]

    def _prune(self, clock: int) -> None:
        """Drop history older than the horizon (its weight is below 1e-20 by now)."""
        if self.horizon is None:
            return
        keep_from = int(np.searchsorted(self.steps, clock - self.horizon, side="left"))
        keep_from = min(keep_from, self.size - 1)
        if keep_from > self.size // 2:  # shift rarely: stale rows are harmless, only unused
            kept = self.size - keep_from
            self._steps[:kept] = self._steps[keep_from : self.size]
            self._acc[:kept] = self._acc[keep_from : self.size]
            self.base += keep_from
            self.size = kept
        live = self.clip_steps > clock - self.horizon
        if not np.all(live):
            self.clip_events = self.clip_events[live]
            self.clip_steps = self.clip_steps[live]
            self.clip_c = self.clip_c[live]
            self.clip_mu = self.clip_mu[live]

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "base": self.base,
            "steps": self.steps.copy(),
            "acc_a": self.acc_a.copy(),
            "acc_m": self.acc_m.copy(),
            "clip_events": self.clip_events,
            "clip_steps": self.clip_steps,
            "clip_c": self.clip_c,
            "clip_mu": self.clip_mu,
        }

    def load_state_dict(self, state: dict[str, Any], alpha: F64, beta: F64) -> None:
        n, who = alpha.shape[0], "bots candidate-mode"
        state = check_keys(state, f"{who} state", _STATE_KEYS)
        event = read_array(state, "event", who, np.int32, shape=(n,), lo=0, hi=2**31 - 1)
        steps = read_array(state, "steps", who, np.int64, lo=-1, hi=MAX_STEP)
        acc_a = read_array(state, "acc_a", who, np.float64, finite=True)
        acc_m = read_array(state, "acc_m", who, np.float64, finite=True)
        base = read_int(state, "base", who, lo=0, hi=2**31 - 1)
        clip_events = read_array(state, "clip_events", who, np.int64, lo=0, hi=2**31 - 1)
        clip_steps = read_array(state, "clip_steps", who, np.int64, lo=-1, hi=MAX_STEP)
        clip_c = read_array(state, "clip_c", who, np.float64, finite=True)
        clip_mu = read_array(state, "clip_mu", who, np.float64, finite=True)
        clip = (clip_events, clip_steps, clip_c, clip_mu)
        if event.shape != (n,) or steps.ndim != 1 or steps.shape[0] == 0:
            raise ValueError("bots state: candidate-mode arrays do not match the pool")
        if acc_a.shape != steps.shape or acc_m.shape != steps.shape:
            raise ValueError("bots state: candidate-mode history arrays differ in length")
        if any(x.shape != clip[0].shape for x in clip):
            raise ValueError("bots state: candidate-mode clip arrays differ in length")
        current = base + steps.shape[0] - 1
        if base < 0 or (n and (int(event.min()) < 0 or int(event.max()) > current)):
            raise ValueError("bots state: candidate-mode event indices out of range")
        if not (np.all(np.isfinite(acc_a)) and np.all(np.isfinite(acc_m))):
            raise ValueError("bots state: candidate-mode accumulators must be finite")
        self.alpha, self.beta, self.event = alpha, beta, event
        self.base, self.size = base, steps.shape[0]
        self._steps = steps.copy()
        self._acc = np.stack([acc_a, acc_m], axis=1)
        self.clip_events, self.clip_steps = clip_events, clip_steps
        self.clip_c, self.clip_mu = clip_c, clip_mu
        self._tables = None


def _horizon(d: float) -> int:
    """Steps after which d^steps < 1e-20."""
    return math.ceil(math.log(_NEGLIGIBLE) / math.log(d))
