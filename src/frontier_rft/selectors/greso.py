"""GRESO: walk the data like uniform and skip prompts predicted to be zero-variance.

Zheng et al. 2025, "Act Only When It Pays: Efficient Reinforcement Learning for LLM
Reasoning via Selective Rollouts" (arXiv 2506.02177; code Infini-AI-Lab/GRESO). Per prompt,
the trailing streak k of its rollout groups that were all-correct ("easy") or all-wrong
("hard"). Walking a fresh permutation each epoch, a prompt with an easy (hard) streak of k
is taken with probability

    keep = max(p_easy^k, 0.01)        (p_hard^k for a hard streak; k = 0: always taken)

and otherwise passed over until the next epoch. After every training step p_easy and
p_hard move by 0.01 toward target shares of zero-variance groups among those rolled out:
a share at or above its target lowers p (skip more), below raises it, within
[0.05, 0.95]; the targets are 1/3 (easy) and 2/3 (hard) of 0.25. The first epoch neither
skips (no prompt has a streak before its first rollout) nor adapts p.

Deviations from the released code (docs/selectors/greso.md):
- Exact tests instead of thresholds on the group mean (GRESO: easy if mean >= 0.98, hard
  if <= 0.11, which assume 8 rollouts and its 1 / 0.1 / 0 reward scheme): a group is
  zero-variance when all its rewards are equal; easy when they all equal the top reward
  1, hard otherwise (all 0, or all equal to one fractional value: such a group teaches
  nothing either, while GRESO's thresholds would never skip it).
- p moves once per training step on the shares pooled over every rollout round of that
  step, as the released code counts them since the last optimizer step. A step's rounds
  may be folded one by one (DynamicSampling folds each before proposing the next): each
  fold recomputes p from its value before the step and the pooled shares so far, so after
  the last round p has moved exactly once, on the pooled shares. Between rounds the
  released code keeps the previous step's p; here a later round sees p moved on the
  rounds before it (at most p_step apart).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import I64
from frontier_rft.core.config import SelectorConfig, check
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_array, read_counts, read_int
from frontier_rft.selectors._skip_walk import SkipsOnAWalk
from frontier_rft.structures.epoch_walk import EpochWalk

__all__ = ["GRESOConfig", "GRESOSelector", "zero_variance_kind"]

_STREAK_CAP = 2**30  # far past where p^k falls below any floor


@dataclass(frozen=True)
class GRESOConfig(SelectorConfig):
    """GRESO's pre-rollout skip (defaults: the released code's)."""

    p_init: float = 0.5
    """Starting value of p_easy and p_hard (GRESO: 0.5)."""
    target_zero_variance: float = 0.25
    """Target share of zero-variance groups among those rolled out (GRESO: 0.25)."""
    easy_share: float = 1.0 / 3.0
    """Part of the target given to easy groups; the rest is hard (GRESO: 1/3, 2/3)."""
    p_step: float = 0.01
    """Change of p_easy / p_hard per training step (GRESO: 0.01)."""
    p_min: float = 0.05
    """Lower bound of p_easy and p_hard (GRESO: 0.05)."""
    p_max: float = 0.95
    """Upper bound of p_easy and p_hard (GRESO: 0.95)."""
    min_keep: float = 0.01
    """Floor of the keep probability, so no prompt is skipped for good (GRESO: 0.01); at
    least `min_keep_floor`."""

    min_keep_floor: ClassVar[float] = 1e-4
    """Smallest min_keep: one select on an all-solved pool walks about 1/min_keep epochs
    (at most EpochWalk.epochs_bound), so 1e-9 took CPU hours; at 1e-4 a select of 8 from
    an all-solved pool of 8 takes up to ~2 CPU s (measured)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check(
            0.0 < self.p_min <= self.p_init <= self.p_max <= 1.0,
            "need 0 < p_min <= p_init <= p_max <= 1 (GRESO: 0.05 <= 0.5 <= 0.95), got "
            f"{self.p_min}, {self.p_init}, {self.p_max}",
        )
        check(
            0.0 <= self.target_zero_variance <= 1.0 and 0.0 <= self.easy_share <= 1.0,
            "target_zero_variance and easy_share must lie in [0, 1] (GRESO: 0.25 and 1/3)",
        )
        check(0.0 <= self.p_step <= 1.0, f"p_step must lie in [0, 1], got {self.p_step}")
        check(
            self.min_keep_floor <= self.min_keep <= 1.0,
            f"min_keep must lie in [{self.min_keep_floor:g}, 1] so every prompt comes back within "
            f"a bounded walk (GRESO: 0.01), got {self.min_keep}",
        )


def zero_variance_kind(batch: GroupBatch) -> NDArray[np.int8]:
    """Per group: +1 easy (all rewards equal the top reward 1), -1 hard (all equal, below
    1), 0 mixed. A group of one rollout is zero-variance by definition."""
    lo = np.minimum.reduceat(batch.rewards, batch.offsets[:-1])
    hi = np.maximum.reduceat(batch.rewards, batch.offsets[:-1])
    kind = np.where(hi > lo, 0, np.where(lo >= 1.0, 1, -1))
    return kind.astype(np.int8)


class GRESOSelector(SkipsOnAWalk, Selector):
    """GRESO: walks the data each epoch, skipping prompts whose recent groups were all
    correct or all wrong with a probability that grows with the streak."""

    name = "greso"
    kept_loses = (
        "with rollouts: kept it ended 0.04 below uniform's held-out pass@1 over 4.5 and 11 "
        "epochs (5 paired seeds; full batches ended within noise)"
    )
    kept_saves = "0.60-0.82x of uniform's rollouts on the CPU testbed; nothing in its first epoch"
    config_class = GRESOConfig
    config: GRESOConfig
    needs: ClassVar[Needs] = Needs.rewards_only(
        "each prompt's streak of all-correct / all-wrong groups (its own rollouts)"
    )
    cost: ClassVar[Cost] = Cost(
        "sublinear", "O(B / keep)", "walks the permutation until B prompts are kept"
    )
    color: ClassVar[str] = "#e7298a"  # magenta: apart from offline's brown and skip's teal

    def __init__(self, pool: TaskPool, config: GRESOConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        cfg = self.config
        self._walk = EpochWalk(pool.num_tasks)
        # Trailing streak per prompt: +k = k easy groups in a row, -k = k hard, 0 = mixed
        # last (or never rolled out). At most one kind can be trailing, so one int suffices.
        self._streak = np.zeros(pool.num_tasks, dtype=np.int32)
        self._p = np.array([cfg.p_init, cfg.p_init])  # p_easy, p_hard
        self._newest_step = -1
        # The newest step's pooled counts (groups, easy, hard) over all its rounds, the p it
        # started from, and whether it adapts (not in the first epoch).
        self._pool = np.zeros(3, dtype=np.int64)
        self._p_before = self._p.copy()
        self._adapting = False
        self._skip_totals = {"skipped": 0, "adapted_steps": 0}
        self._handed_out = 0  # prompts selected so far: the run's epoch is this / N
        self._last_skipped = 0
        self._last_shares = np.array([np.nan, np.nan])  # pooled shares p last moved on

    @property
    def p_easy(self) -> float:
        return float(self._p[0])

    @property
    def p_hard(self) -> float:
        return float(self._p[1])

    def keep_probability(self, ids: I64 | None = None) -> NDArray[np.float64]:
        """max(p^k, min_keep) by each prompt's trailing streak (1 for k = 0)."""
        streak = self._streak if ids is None else self._streak[ids]
        k = np.abs(streak).astype(np.float64)
        p = np.where(streak > 0, self._p[0], self._p[1])
        keep: NDArray[np.float64] = np.where(
            streak == 0, 1.0, np.maximum(np.power(p, k), self.config.min_keep)
        )
        return keep

    # ------------------------------------------------------------------ select
    def _keep(self, ids: I64) -> NDArray[np.bool_]:
        out: NDArray[np.bool_] = self.rng.random(ids.shape[0]) < self.keep_probability(ids)
        return out

    def _select(self, n: int) -> I64:
        ids, self._last_skipped = self._walk.take_where(
            n, self.rng, self._keep, EpochWalk.epochs_bound(self.config.min_keep)
        )
        self._skip_totals["skipped"] += self._last_skipped
        self._handed_out += n
        return ids

    def _select_window(self, positions: int) -> I64:
        ids, skipped = self._walk.take_window(positions, self.rng, self._keep)
        if ids.size == 0:  # every prompt of the window passed over: walk on to one kept
            ids, more = self._walk.take_where(
                1, self.rng, self._keep, EpochWalk.epochs_bound(self.config.min_keep)
            )
            skipped += more
        self._count_window(ids.size + skipped, skipped)
        return ids

    def _keeps(self, ids: I64) -> NDArray[np.bool_]:
        kept = self._walk.walk_beside(ids, self.rng, self._keep)
        self._count_window(ids.size, int(ids.size - kept.sum()))
        return kept

    def _count_window(self, walked: int, skipped: int) -> None:
        """A window's bookkeeping: `walked` positions, `skipped` of them passed over."""
        self._last_skipped = skipped
        self._skip_totals["skipped"] += skipped
        self._handed_out += walked  # the run walks uniform's prompts: its epoch

    # ------------------------------------------------------------------ observe
    def _observe(self, batch: GroupBatch) -> None:
        kind = zero_variance_kind(batch).astype(np.int32)
        old = self._streak[batch.task_ids]
        same = (kind != 0) & (np.sign(old) == kind)
        grown = np.clip(old + kind, -_STREAK_CAP, _STREAK_CAP)
        self._streak[batch.task_ids] = np.where(same, grown, kind)
        counts = np.array([kind.shape[0], np.sum(kind > 0), np.sum(kind < 0)], dtype=np.int64)
        if batch.step > self._newest_step:  # a new training step: start its pool
            self._newest_step = batch.step
            self._pool = counts
            self._p_before = self._p.copy()
            # Not in the first epoch (GRESO: `epoch > 0`).
            self._adapting = self._walk.epoch >= 2
            self._skip_totals["adapted_steps"] += int(self._adapting)
        elif batch.step == self._newest_step:  # another round of the same step
            self._pool = self._pool + counts
        else:  # late feedback of an older step: streaks only
            return
        shares = self._pool[1:] / self._pool[0]
        self._last_shares = shares
        if self._adapting:  # p moves once per step, from where it stood before the step
            self._p = self._moved(self._p_before, shares)

    def _moved(self, p: NDArray[np.float64], shares: NDArray[np.float64]) -> NDArray[np.float64]:
        cfg = self.config
        target = cfg.target_zero_variance * np.array([cfg.easy_share, 1.0 - cfg.easy_share])
        # At or above target: skip more (lower p); below: skip less.
        moved = np.where(shares >= target, p - cfg.p_step, p + cfg.p_step)
        out: NDArray[np.float64] = np.clip(moved, cfg.p_min, cfg.p_max)
        return out

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            "walk": self._walk.state_dict(),
            "streak": self._streak,
            "p": self._p,
            "newest_step": self._newest_step,
            "totals": dict(self._skip_totals),
            "handed_out": self._handed_out,
            "last_skipped": self._last_skipped,
            "last_shares": self._last_shares,
            "pool": self._pool,
            "p_before": self._p_before,
            "adapting": int(self._adapting),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n, who, cfg = self.num_tasks, self.name, self.config
        walk = EpochWalk(n)
        walk.load_state_dict(state["walk"], who)
        cap = _STREAK_CAP
        streak = read_array(state, "streak", who, np.int32, shape=(n,), lo=-cap, hi=cap)
        p = read_array(state, "p", who, np.float64, shape=(2,), lo=cfg.p_min, hi=cfg.p_max)
        shares = read_array(state, "last_shares", who, np.float64, shape=(2,), lo=0.0, hi=1.0)
        totals = read_counts(state, "totals", who, tuple(self._skip_totals), hi=2**62)
        newest = read_int(state, "newest_step", who, lo=-1)
        last_skipped = read_int(state, "last_skipped", who, hi=2**62)
        if "handed_out" in state:
            handed_out = read_int(state, "handed_out", who, hi=2**62)
        else:  # saved before the count: an estimate for the `epoch` metric (nothing else
            # reads it): ids walked less ids passed over, which counts a batch that
            # straddled a pass twice
            walked = max(0, walk.epoch - 1) * n + walk.cursor
            handed_out = max(0, walked - totals["skipped"])
        # States saved before rounds were pooled lack the pool: the step p last moved on
        # is then complete, so an empty pool that adapts nothing continues it exactly.
        if "pool" in state:
            pool = read_array(state, "pool", who, np.int64, shape=(3,), lo=0, hi=2**62)
            p_before = read_array(
                state, "p_before", who, np.float64, shape=(2,), lo=cfg.p_min, hi=cfg.p_max
            )
            adapting = bool(read_int(state, "adapting", who, hi=1))
        else:
            pool, p_before, adapting = np.zeros(3, dtype=np.int64), p.copy(), False
        if pool[1] + pool[2] > pool[0]:
            raise ValueError(f"{who} state: pool counts more easy and hard groups than groups")
        self._pool, self._p_before, self._adapting = pool, p_before, adapting
        self._walk, self._streak, self._p, self._last_shares = walk, streak, p, shares
        self._skip_totals, self._newest_step, self._last_skipped = totals, newest, last_skipped
        self._handed_out = handed_out

    def _metrics(self) -> dict[str, float]:
        streak = self._streak
        return {
            "epoch": float(EpochWalk.run_epoch(self._handed_out, self.num_tasks)),
            "walk_passes": float(self._walk.epoch),
            "p_easy": self.p_easy,
            "p_hard": self.p_hard,
            "skipped": float(self._last_skipped),
            "skipped_total": float(self._skip_totals["skipped"]),
            "easy_share": float(self._last_shares[0]),
            "hard_share": float(self._last_shares[1]),
            "easy_streak_tasks": float(np.count_nonzero(streak > 0)),
            "hard_streak_tasks": float(np.count_nonzero(streak < 0)),
            "mean_keep_probability": float(self.keep_probability().mean()),
        }
