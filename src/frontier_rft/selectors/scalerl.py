"""ScaleRL's No-Positive-Resampling, as TRL's experimental ScaleRLTrainer runs it.

Khatri et al. 2025, "The Art of Scaling Reinforcement Learning Compute for LLMs" (arXiv
2510.13786); TRL's `ScaleRLRolloutLoop` (trl/experimental/async_grpo/scalerl_trainer.py,
commit 02ca6edd2c42f6e491e7d9df4482037576fd2d63, `_repeat_iterator` and `_score_group`).

Per prompt, the pass rate of its latest group: the share of its rollouts whose reward is
above 0 (each group overwrites the last). The walk goes over the pool pass after pass;
from the second pass on, a prompt whose latest pass rate is >= 0.9 is passed over. A
prompt passed over is never rolled out again, so its rate never changes: it is retired
for good (no retest). In the first pass the rule does nothing. A prompt never rolled out
counts as pass rate 0 (TRL: `.get(row, 0.0)`).

TRL walks the dataset in its own order every pass (`enumerate(self.dataset)`): `order =
'pool'`. `order = 'shuffle'` walks a fresh permutation each pass, as uniform does, so that
a comparison with uniform differs by the rule alone. TRL's other half of the recipe, flat
groups dropped and the step filled from the stream, is the trainer's (DynamicSampling, or
`rollouts: kept`); docs/selectors/scalerl.md maps it and lists the deviations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import I64
from frontier_rft.core.config import SelectorConfig, check, check_choice
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_array, read_counts, read_int
from frontier_rft.structures.epoch_walk import EpochWalk, KeepRule

__all__ = ["ScaleRLConfig", "ScaleRLSelector"]

Order = Literal["pool", "shuffle"]
ORDERS: tuple[Order, ...] = ("pool", "shuffle")
# Passes one select may start before it tops the batch up with retired prompts: the keep rule
# is deterministic, so one full new pass finds every prompt it can still take, and a batch
# still short then has fewer prompts left than it needs (TRL's iterator would spin forever).
_MAX_PASSES = 1


@dataclass(frozen=True)
class ScaleRLConfig(SelectorConfig):
    """No-Positive-Resampling (defaults: TRL's ScaleRLRolloutLoop)."""

    pass_rate_cap: float = 0.9
    """A prompt whose latest pass rate is >= this is never rolled out again (TRL: 0.9)."""
    start_epoch: int = 2
    """First pass over the pool the rule applies in (TRL: `epoch > 0`, the second pass)."""
    pass_above: float = 0.0
    """A rollout passes when its reward is above this (TRL: `r > 0`)."""
    order: Order = "pool"
    """Walk order of every pass: 'pool' (the pool's own order, TRL's) or 'shuffle' (a fresh
    permutation each pass, as uniform)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check(
            0.0 < self.pass_rate_cap <= 1.0,
            f"pass_rate_cap must lie in (0, 1] (TRL: 0.9), got {self.pass_rate_cap}",
        )
        check(
            isinstance(self.start_epoch, int) and 1 <= self.start_epoch <= 1_000_000,
            f"start_epoch must be an int >= 1 (TRL: 2), got {self.start_epoch!r}",
        )
        check(
            -1e6 <= self.pass_above <= 1e6,
            f"pass_above must be a number (TRL: 0), got {self.pass_above!r}",
        )
        check_choice("order", self.order, ORDERS)


class _PoolOrderWalk(EpochWalk):
    """An EpochWalk whose every pass is the pool's own order, a stream as TRL's iterator is:
    it draws no random numbers, and a batch that straddles two passes leaves the new pass
    as it is (EpochWalk would move the batch's ids to its front, visited), so those prompts
    come again at their own places. The selector's keep rule refuses an id already taken
    in the same call, which keeps a batch distinct."""

    def _new_epoch(self, rng: np.random.Generator) -> None:
        self.order = np.arange(self.num_tasks, dtype=np.int64)
        self.cursor = 0
        self.epoch += 1

    def _move_to_front(self, ids: I64) -> None:
        pass  # the stream goes on from the new pass's start (see the class docstring)


class ScaleRLSelector(Selector):
    """ScaleRL's No-Positive-Resampling (TRL): walks the pool, and from the second pass on
    passes over for good every prompt whose latest group passed at a rate >= 0.9."""

    name = "scalerl"
    config_class = ScaleRLConfig
    config: ScaleRLConfig
    needs: ClassVar[Needs] = Needs.rewards_only(
        "each prompt's pass rate in its latest group (its own rollouts)"
    )
    cost: ClassVar[Cost] = Cost(
        "sublinear", "O(B / keep)", "walks the pool until B unretired prompts are taken"
    )
    color: ClassVar[str] = "#c7a300"  # mustard
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = (
        {"order": "shuffle", "pass_rate_cap": 0.5},
    )

    def __init__(self, pool: TaskPool, config: ScaleRLConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        self._walk = self._new_walk()
        self._pass_rate = np.zeros(pool.num_tasks, dtype=np.float64)  # TRL: .get(row, 0.0)
        self._rule_totals = {"skipped": 0, "topped_up": 0}
        self._handed_out = 0  # prompts handed out: the run's epoch is this / N
        self._last_skipped = 0

    def _new_walk(self) -> EpochWalk:
        if self.config.order == "pool":
            return _PoolOrderWalk(self.num_tasks)
        return EpochWalk(self.num_tasks)

    @property
    def epoch(self) -> int:
        """The walk's passes started so far (the first is 1), prompts passed over included:
        TRL's `epoch + 1`, what `start_epoch` counts."""
        return self._walk.epoch

    def retired(self) -> NDArray[np.bool_]:
        """Per prompt: whether its latest pass rate has reached the cap (passed over from
        `start_epoch` on)."""
        out: NDArray[np.bool_] = self._pass_rate >= self.config.pass_rate_cap
        return out

    def pass_rates(self) -> NDArray[np.float64]:
        """Each prompt's latest pass rate (0 for one never rolled out)."""
        out: NDArray[np.float64] = self._pass_rate.copy()
        return out

    # ------------------------------------------------------------------ select
    def _keep(self, ids: I64) -> NDArray[np.bool_]:
        """TRL's test, made when the walk reaches the prompt: skip in a pass >= start_epoch
        when the latest pass rate >= cap. Called on chunks within one pass."""
        if self._walk.epoch < self.config.start_epoch:
            return np.ones(ids.shape[0], dtype=np.bool_)
        out: NDArray[np.bool_] = self._pass_rate[ids] < self.config.pass_rate_cap
        return out

    def _keep_once(self) -> tuple[KeepRule, list[I64]]:
        """(the rule for one select call, the ids it accepted so far): an id it accepted
        earlier in the call (in the batch already: a walk in pool order reaches it again
        in the next pass) is refused."""
        accepted: list[I64] = []

        def keep(chunk: I64) -> NDArray[np.bool_]:
            mask = self._keep(chunk)
            if accepted:
                mask &= ~np.isin(chunk, np.concatenate(accepted))
            accepted.append(chunk[mask])
            return mask

        return keep, accepted

    def _take(self, n: int) -> tuple[I64, int]:
        """(n ids the rule takes, walking on; topped up with retired ones when fewer than n
        are left, how many it passed over)."""
        keep, accepted = self._keep_once()
        ids, skipped = self._walk.take_where(n, self.rng, keep, _MAX_PASSES)
        # The top-up (take_where's `take` without asking) is what the rule never accepted.
        topped = ~np.isin(ids, np.concatenate(accepted)) if accepted else np.ones(ids.size, bool)
        self._rule_totals["topped_up"] += int(np.count_nonzero(topped))
        return ids, skipped

    def _select(self, n: int) -> I64:
        ids, skipped = self._take(n)
        self._count(n, skipped)  # the run hands out n prompts
        return ids

    def _select_window(self, positions: int) -> I64:
        ids, skipped = self._walk.take_window(positions, self.rng, self._keep_once()[0])
        if ids.size == 0:  # every prompt of the window retired: walk on to one kept
            ids, more = self._take(1)
            skipped += more
        self._count(ids.size + skipped, skipped)  # the run walks uniform's window
        return ids

    def _passes_walked(self) -> float:
        return self._walk.progress

    def _keeps(self, ids: I64) -> NDArray[np.bool_]:
        kept = self._walk.walk_beside(ids, self.rng, self._keep)
        self._count(ids.size, int(ids.size - kept.sum()))
        return kept

    def _count(self, handed_out: int, skipped: int) -> None:
        """One select's bookkeeping: `handed_out` prompts by uniform's count (its epoch clock),
        `skipped` passed over."""
        self._last_skipped = skipped
        self._rule_totals["skipped"] += skipped
        self._handed_out += handed_out

    # ------------------------------------------------------------------ observe
    def _observe(self, batch: GroupBatch) -> None:
        # TRL records the rate of every scored group, flat ones included, before dropping
        # them; the latest group overwrites (a dict assignment).
        passed = (batch.rewards > self.config.pass_above).astype(np.float64)
        rate = np.add.reduceat(passed, batch.offsets[:-1]) / batch.counts
        self._pass_rate[batch.task_ids] = rate

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            "walk": self._walk.state_dict(),
            "pass_rate": self._pass_rate,
            "totals": dict(self._rule_totals),
            "handed_out": self._handed_out,
            "last_skipped": self._last_skipped,
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n, who = self.num_tasks, self.name
        walk = self._new_walk()
        walk.load_state_dict(state["walk"], who)
        rate = read_array(state, "pass_rate", who, np.float64, shape=(n,), lo=0.0, hi=1.0)
        totals = read_counts(state, "totals", who, tuple(self._rule_totals), hi=2**62)
        handed_out = read_int(state, "handed_out", who, hi=2**62)
        last_skipped = read_int(state, "last_skipped", who, hi=2**62)
        self._walk, self._pass_rate, self._rule_totals = walk, rate, totals
        self._handed_out, self._last_skipped = handed_out, last_skipped

    def _metrics(self) -> dict[str, float]:
        return {
            "epoch": float(EpochWalk.run_epoch(self._handed_out, self.num_tasks)),
            "walk_passes": float(self._walk.epoch),
            "retired": float(np.count_nonzero(self.retired())),
            "skipped": float(self._last_skipped),
            "skipped_total": float(self._rule_totals["skipped"]),
            "topped_up_total": float(self._rule_totals["topped_up"]),
        }
