"""Backfill: the group slots a kept step frees, filled with replayed informative groups.

A kept step (`rollouts: kept`, FewerRollouts) trains the G groups it rolled out, G <= B.
With `backfill: replay` the reference trainer fills the B - G freed slots with recent
informative groups (mixed rewards) of the run's own past steps, from a bounded buffer: their
stored completions (token ids), their rewards and advantages as computed then, and the log-probs
their behaviour policy (the one that sampled them) gave each token, as scored at their own step.
No new rollout is generated for them (after rollout-level replay, arXiv 2606.04560; DOTS-RR,
arXiv 2506.05316).

The loss on a replayed token, with r = pi_now / pi_behaviour (its importance weight), the
run's clip_eps and the cap c = `backfill_is_cap`, is dual-clip PPO's (Ye et al., arXiv
1912.09729): -min(min(r, c) A, clip(r, 1 - eps, 1 + eps) A). The PPO clip bounds a positive
advantage's weight by 1 + eps; for a negative one the cap c (> 1 + eps) bounds the loss at
c A, and beyond the cap the row's gradient is zero (the min takes the constant c A). That
is a clip, not a truncated importance weight such as IMPALA's rho-bar, which keeps a
gradient at weight rho-bar. Fresh rows are unchanged (their ratio is 1 at the first pass).

Normalisation: a replayed group counts like a fresh one. The step's loss is the trained rows'
aggregate (loss_aggregation) over fresh and replayed rows together, each group one prompt's share
(group_weighting); under `loss_scale: batch` the policy-gradient term is scaled by
(fresh + replayed groups) / B, so a step whose freed slots are all filled has uniform's scale;
under 'kept' it is the mean over the groups trained. KL and entropy terms are the trained rows'
means, replayed rows included.

Cost: the forward and backward passes over the replayed rows (and the reference model's forward
with kl_coef > 0); no generation. Bounds: a group is stored once, at the step it was trained,
replayed at most `backfill_max_uses` times, dropped when older than `backfill_max_age` steps,
and the buffer holds at most `backfill_buffer` groups (the oldest dropped first). The youngest
stored groups are replayed first (no RNG: a resumed run draws what the straight one drew).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = [
    "ReplayBuffer",
    "ReplayRows",
    "Stored",
    "backfill_loss_scale",
    "replay_metrics",
]


@dataclass
class Stored:
    """One informative group kept for replay: what was sampled and trained at `step`."""

    step: int
    """The step that sampled it (and first trained it)."""
    task: int
    prompt: list[int]
    completions: list[list[int]]
    rewards: np.ndarray
    """float64, one per completion."""
    advantages: np.ndarray
    """float64, one per completion, as computed at `step`."""
    behaviour: list[np.ndarray]
    """float32 log-probs of each completion's tokens under the policy that sampled it."""
    uses: int = 0
    """Times it has been replayed."""


@dataclass
class ReplayRows:
    """The replayed rows of one update (they follow the `first` fresh rows), and what the
    update hands back: the fresh rows' behaviour log-probs and the replay's metrics."""

    first: int
    """Fresh rows before the replayed ones."""
    behaviour: list[np.ndarray]
    """Each replayed row's stored log-probs."""
    cap: float
    """c of the dual clip: a replayed token's IS weight is truncated at c."""
    clip_eps: float
    fresh_logprobs: np.ndarray | None = None
    """(first, T) log-probs of the fresh rows at the first pass: their behaviour policy's."""
    metrics: dict[str, float] = field(default_factory=dict)

    def prepare(
        self, old: torch.Tensor, logprobs: torch.Tensor, mask: torch.Tensor, epoch: int
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`old` (the update's pi_old) with the replayed rows' behaviour log-probs in place,
        and the per-row cap (inf on fresh rows; None with no replayed row). At the first pass
        it records the fresh rows' log-probs and the replayed tokens' IS weight metrics."""
        if epoch == 0:
            self.fresh_logprobs = old[: self.first].detach().float().cpu().numpy()
        if not self.behaviour:
            return old, None
        out = old.clone()
        for i, lp in enumerate(self.behaviour):
            out[self.first + i, : lp.shape[0]] = torch.from_numpy(lp).to(out.device, out.dtype)
        caps = torch.full((old.shape[0],), math.inf, dtype=old.dtype, device=old.device)
        caps[self.first :] = self.cap
        if epoch == 0:
            rows = slice(self.first, None)
            m = mask[rows] > 0
            ratio = torch.exp(logprobs.detach()[rows] - out[rows])[m]
            eps = self.clip_eps
            self.metrics = {
                "backfill/is_weight_mean": float(ratio.mean()) if ratio.numel() else 0.0,
                "backfill/clipped_share": (
                    float(((ratio < 1 - eps) | (ratio > 1 + eps)).float().mean())
                    if ratio.numel()
                    else 0.0
                ),
                "backfill/truncated_share": (
                    float((ratio > self.cap).float().mean()) if ratio.numel() else 0.0
                ),
            }
        return out, caps


def backfill_loss_scale(nominal_groups: int, trained: int, replayed: int) -> float:
    """The policy-gradient factor of a step that trains `trained` fresh and `replayed`
    replayed groups: (trained + replayed) / B under loss_scale 'batch' (nominal B), else 1."""
    return (trained + replayed) / nominal_groups if nominal_groups else 1.0


class ReplayBuffer:
    """A run's recent informative groups, each replayed at most `max_uses` times while no
    older than `max_age` steps; at most `capacity` held (the oldest dropped first)."""

    def __init__(self, capacity: int, max_age: int, max_uses: int):
        self.capacity, self.max_age, self.max_uses = capacity, max_age, max_uses
        self.groups: list[Stored] = []
        """Oldest first."""

    def expire(self, step: int) -> None:
        """Drop the groups older than max_age at `step`."""
        self.groups = [g for g in self.groups if step - g.step <= self.max_age]

    def draw(self, k: int, step: int) -> list[Stored]:
        """Up to k groups to replay at `step`, youngest first; each one's use is counted and a
        group used max_uses times leaves the buffer."""
        self.expire(step)
        if k <= 0:
            return []
        picked = self.groups[::-1][:k]
        for g in picked:
            g.uses += 1
        self.groups = [g for g in self.groups if g.uses < self.max_uses]
        return picked

    def add(
        self,
        step: int,
        groups: Sequence[Any],
        advantages: np.ndarray,
        logprobs: np.ndarray | None,
    ) -> None:
        """Store the informative ones of `groups` (fresh, trained at `step`, in row order:
        `advantages` and `logprobs` are their rows')."""
        row = 0
        for g in groups:
            n = len(g.completions)
            if np.ptp(np.asarray(g.rewards)) > 0 and logprobs is not None:
                behaviour = [
                    logprobs[row + i, : len(c)].astype(np.float32).copy()
                    for i, c in enumerate(g.completions)
                ]
                self.groups.append(
                    Stored(
                        step,
                        int(g.task),
                        list(g.prompt),
                        [list(c) for c in g.completions],
                        np.asarray(g.rewards, dtype=np.float64).copy(),
                        np.asarray(advantages[row : row + n], dtype=np.float64).copy(),
                        behaviour,
                    )
                )
            row += n
        del self.groups[: max(0, len(self.groups) - self.capacity)]

    def state(self) -> list[dict[str, Any]]:
        """JSON of the buffer (floats as repr: float32 and float64 come back exactly)."""
        return [
            {
                "step": g.step,
                "task": g.task,
                "completions": g.completions,
                "rewards": g.rewards.tolist(),
                "advantages": g.advantages.tolist(),
                "behaviour": [lp.astype(np.float64).tolist() for lp in g.behaviour],
                "uses": g.uses,
            }
            for g in self.groups
        ]

    def load(self, saved: Any, prompts: Sequence[Sequence[int]], step: int) -> None:
        """Inverse of `state`, checked (the run's pool: `prompts`; its step: `step`)."""
        fix = "resume from this run's own checkpoint, or start a new --out"
        bad = ValueError(f"the checkpoint's backfill buffer does not fit this run; {fix}")
        if not isinstance(saved, list) or len(saved) > self.capacity:
            raise bad
        groups = []
        for item in saved:
            try:
                task, at, uses = int(item["task"]), int(item["step"]), int(item["uses"])
                completions = [[int(t) for t in c] for c in item["completions"]]
                rewards = np.asarray(item["rewards"], dtype=np.float64)
                adv = np.asarray(item["advantages"], dtype=np.float64)
                behaviour = [np.asarray(lp, dtype=np.float32) for lp in item["behaviour"]]
            except (KeyError, TypeError, ValueError):
                raise bad from None
            n = len(completions)
            ok = (
                0 <= task < len(prompts)
                and 0 <= at < step
                and 0 <= uses < self.max_uses
                and rewards.shape == adv.shape == (n,)
                and len(behaviour) == n
                and all(lp.shape == (len(c),) for lp, c in zip(behaviour, completions, strict=True))
                and bool(np.isfinite(rewards).all() and np.isfinite(adv).all())
                and all(bool(np.isfinite(lp).all()) for lp in behaviour)
            )
            if not ok:
                raise bad
            prompt = list(prompts[task])
            groups.append(Stored(at, task, prompt, completions, rewards, adv, behaviour, uses))
        self.groups = groups


def replay_metrics(
    replayed: Sequence[Stored], rows: ReplayRows | None, step: int, buffer: ReplayBuffer
) -> dict[str, float]:
    """A step's backfill metrics: groups and rows replayed, their mean staleness (steps since
    they were sampled), their tokens' mean IS weight, clipped and truncated shares, and the
    groups the buffer holds after the step."""
    weights = rows.metrics if rows is not None and replayed else {}
    return {
        "backfill/replayed_groups": float(len(replayed)),
        "backfill/replayed_rows": float(sum(len(g.completions) for g in replayed)),
        "backfill/staleness_mean": (
            float(np.mean([step - g.step for g in replayed])) if replayed else 0.0
        ),
        "backfill/is_weight_mean": weights.get("backfill/is_weight_mean", 0.0),
        "backfill/clipped_share": weights.get("backfill/clipped_share", 0.0),
        "backfill/truncated_share": weights.get("backfill/truncated_share", 0.0),
        "backfill/buffer_groups": float(len(buffer.groups)),
    }
