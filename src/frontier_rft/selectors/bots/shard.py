"""BOTS over a pool split into shards: the same posteriors, and the same selection law.

Per task, Eq. 1 only needs the task's own counts and the step's plug-in results. Those
results are global: mu_t (and so mu~, the clipped p~, the adaptive rho) comes from the
whole batch B_t, n~ from its mean group size, and the forgetting clock from every step
folded so far. A sharded service therefore folds feedback in rounds led by its driver:

1. each shard reports, per step it holds unfolded rollouts of, its groups' (task,
   rollouts, reward sum, weak and strong reference rates) (`summarize`);
2. the driver's `Coordinator` replays BOTS's step logic over the union, exactly as one
   selector would see it (new step, late step inside the log window, or a piece each
   shard folds locally), computing the plug-in results once (`ExternalStep`);
3. every shard folds each planned step with those results, also the shards with no
   rollouts of the step (forgetting and implicit evidence still reach their tasks)
   (`apply_plan`).

A task's posterior then follows the same arithmetic as in one selector fed the same
rounds: identical in whole-pool mode, equal to rounding in candidate mode.

Selection (`propose`): each shard returns its k best tasks by `|p^ - target|` with a
uniform tie-break key, and the driver keeps the k best (score, key) pairs of the union.
Each task's draw is independent given its posterior, so this is the top-k of one draw
over the whole pool: the selection law of one selector (not its random stream). In
candidate mode the driver splits the C candidates across shards by a multivariate
hypergeometric draw over shard sizes, so their union is a uniform C-subset of the pool.

The kernel and regression plug-ins are not supported here (each shard would need the
whole batch's features, or the whole pool's regression); the driver refuses them. This
module is BOTSSelector's companion and reads its state (clock, step log, mu~, rho,
posteriors) directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.feedback import Feedback, GroupBatch
from frontier_rft.selectors.bots import BOTSSelector
from frontier_rft.selectors.bots.config import BOTSConfig
from frontier_rft.selectors.bots.plugins import ExternalStep, capability, interpolate

__all__ = ["Coordinator", "PlanStep", "Proposal", "apply_plan", "propose", "summarize"]

SUMMARY_KEYS = ("ids", "counts", "sums", "weak", "strong")
Summary = dict[int, dict[str, list[float]]]
"""Per step: a shard's groups as lists (global ids, rollouts, reward sums, reference rates)."""


@dataclass(frozen=True)
class PlanStep:
    """One step of a fold round: `new` or `window` steps carry the driver's plug-in
    results (every shard folds them); `local` steps (a late piece, a step older than the
    log) are folded by the shards holding rollouts of them, with nothing global."""

    step: int
    case: str
    external: ExternalStep | None

    def to_state(self) -> list[Any]:
        return [self.step, self.case, None if self.external is None else self.external.to_state()]

    @classmethod
    def from_state(cls, v: list[Any]) -> PlanStep:
        ext = None if v[2] is None else ExternalStep.from_state(v[2])
        return cls(int(v[0]), str(v[1]), ext)


@dataclass(frozen=True)
class Proposal:
    """A shard's best tasks: local ids, scores (smaller is better) and tie-break keys."""

    ids: I64
    scores: F64
    keys: F64


def summarize(sel: BOTSSelector, pieces: list[tuple[I64, F64, int]], offset: int) -> Summary:
    """Per step, this shard's groups of `pieces` (local ids, rewards, step) as the driver
    needs them: global ids, rollouts, reward sums, weak/strong reference rates."""
    by_step: dict[int, list[tuple[I64, F64]]] = {}
    for ids, rewards, step in pieces:
        by_step.setdefault(step, []).append((ids, rewards))
    ref = sel.pool.reference_pass_rates
    out: Summary = {}
    for step, parts in by_step.items():
        ids = np.concatenate([p[0] for p in parts])
        rewards = np.concatenate([p[1] for p in parts])
        batch = GroupBatch.from_rollouts(step, ids, rewards, np.full(ids.shape[0], -1))
        local = batch.task_ids
        rows = ref[local] if ref is not None else np.zeros((local.shape[0], 2))
        out[step] = {
            "ids": (local + offset).tolist(),
            "counts": batch.counts.astype(np.float64).tolist(),
            "sums": batch.sums.tolist(),
            "weak": rows[:, 0].tolist(),
            "strong": rows[:, 1].tolist(),
        }
    return out


class Coordinator:
    """The driver's copy of BOTS's global state: clock, logged steps, mu~ and rho."""

    def __init__(self, cfg: BOTSConfig, plugin: str, gaussian: bool, state: dict[str, Any]):
        if plugin in ("kernel", "regression"):
            raise ValueError(
                f"a sharded service cannot run the {plugin} plug-in (its estimate needs every "
                "shard's features and history); give the pool reference_pass_rates, or pass "
                "plugin='none'"
            )
        if cfg.coverage != "pool":
            raise ValueError(
                "a sharded service cannot run coverage='epoch' (its epoch walk is one order "
                "over the whole pool, not per shard); pass coverage='pool'"
            )
        self.cfg, self.plugin, self.gaussian = cfg, plugin, gaussian
        self.clock = int(state["clock"])
        self.logged = {int(s) for s in state["logged"]}
        self.mu_tilde = float(state["mu_tilde"])
        self.rho = float(state["rho"])

    @staticmethod
    def state_of(sel: BOTSSelector) -> dict[str, Any]:
        """What a Coordinator needs, read from a shard's selector (they all agree)."""
        return {
            "clock": sel._clock,
            "logged": sorted(sel._log),
            "mu_tilde": sel._mu_tilde,
            "rho": sel._rho,
            "plugin": sel.plugin,
            "gaussian": sel.gaussian,
        }

    def plan(self, summaries: list[Summary]) -> list[PlanStep]:
        """The fold round for the shards' summaries, oldest step first (BOTS._advance)."""
        steps = sorted({s for summary in summaries for s in summary})
        cfg, out = self.cfg, []
        for t in steps:
            union = {
                k: np.concatenate([np.asarray(s[t][k]) for s in summaries if t in s])
                for k in SUMMARY_KEYS
            }
            order = np.argsort(union["ids"], kind="stable")  # one selector's group order
            union = {k: v[order] for k, v in union.items()}
            if self.clock < 0:
                self.clock = t
            if t > self.clock:
                out.append(PlanStep(t, "new", self._plugin(union)))
                self.logged.add(t)
                self.clock = t
            elif (1.0 - cfg.lam) ** (self.clock - t) == 0.0 or t in self.logged:
                out.append(PlanStep(t, "local", None))
            elif t > self.clock - cfg.late_window:
                out.append(PlanStep(t, "window", self._plugin(union)))
                self.logged.add(t)
            else:
                out.append(PlanStep(t, "local", None))
            horizon = self.clock - (cfg.late_window if cfg.lam < 1.0 else 1)
            self.logged = {s for s in self.logged if s > horizon}
        return out

    def _plugin(self, union: dict[str, Any]) -> ExternalStep:
        """BOTSSelector._plugin_on_batch and n~ over the whole step."""
        cfg = self.cfg
        counts = union["counts"]
        rates = union["sums"] / counts
        n_imp = float(cfg.implicit_rollouts or counts.mean())
        mu_t, error = float("nan"), float("nan")
        if self.plugin == "interpolation":
            ref = np.stack([union["weak"], union["strong"]], axis=1)
            at = np.arange(ref.shape[0])
            got = capability(ref, at, rates, cfg.interpolation_eps)
            if got is not None:
                mu_t = got
                g, prev = cfg.momentum, self.mu_tilde
                self.mu_tilde = mu_t if math.isnan(prev) else g * prev + (1.0 - g) * mu_t
            if not math.isnan(self.mu_tilde):
                p_sel = interpolate(ref, self.mu_tilde, clip=not self.gaussian)
                error = float(np.abs(p_sel - rates).mean())
                if cfg.adaptive_rho and error >= cfg.adaptive_rho_threshold:
                    self.rho *= 0.5
        implicit = self.plugin != "none" and not math.isnan(self.mu_tilde) and self.rho > 0
        return ExternalStep(self.mu_tilde, mu_t, self.rho, n_imp, error, implicit)


def apply_plan(sel: BOTSSelector, plan: list[PlanStep], pieces: list[tuple[I64, F64, int]]) -> None:
    """Fold this shard's `pieces` (local ids, rewards, step) by the driver's plan."""
    by_step: dict[int, list[tuple[I64, F64]]] = {}
    for ids, rewards, step in pieces:
        by_step.setdefault(step, []).append((ids, rewards))
    for p in plan:
        if p.external is not None:
            sel._external[p.step] = p.external
        try:
            parts = by_step.pop(p.step, [])
            for ids, rewards in parts:
                sel.update(Feedback(ids, rewards, step=p.step))
            sel.flush()
            if not parts and p.case != "local":
                sel.fold_external_step(p.step)
        finally:
            sel._external.pop(p.step, None)
    if by_step:
        raise RuntimeError(f"fold round without a plan for steps {sorted(by_step)}")


def propose(sel: BOTSSelector, k: int, candidates: int | None) -> Proposal:
    """This shard's k best tasks of one draw: over `candidates` uniform ones, or all."""
    total = sel.num_tasks
    if candidates is None or candidates >= total:
        cand = np.arange(total, dtype=np.int64)
    else:
        cand = sel.rng.choice(total, size=candidates, replace=False).astype(np.int64)
    k = min(k, cand.shape[0])
    if k == 0:
        return Proposal(np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    if sel.lazy is not None:
        sel.lazy.sync(cand)
    a, b = sel._a[cand], sel._b[cand]
    score = sel._score(a, b, np.empty_like(a))
    kth = np.partition(score, k - 1)[k - 1]
    below = np.flatnonzero(score < kth)
    tied = np.flatnonzero(score == kth)
    keys_tied = sel.rng.random(tied.shape[0])  # iid keys: the union's k smallest pairs are
    take = np.argsort(keys_tied, kind="stable")[: k - below.shape[0]]  # a uniform tie-break
    chosen = np.concatenate([below, tied[take]])
    keys = np.concatenate([sel.rng.random(below.shape[0]), keys_tied[take]])
    order = np.lexsort((keys, score[chosen]))
    return Proposal(cand[chosen[order]], score[chosen[order]], keys[order])
