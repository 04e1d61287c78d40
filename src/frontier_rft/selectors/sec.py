"""SEC, the self-evolving curriculum (arXiv:2505.14970): a softmax bandit over task categories.

Each category ("arm") keeps a value Q; a batch is built by drawing arms from
softmax(Q / tau) and problems uniformly within each drawn arm; after the rollouts the
reward of an arm is the mean |advantage| of its rollouts and Q follows TD(0),
`Q <- alpha * r + (1 - alpha) * Q` (paper eq. 1, Algorithm 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.advantages import ESTIMATORS, Estimator
from frontier_rft.core.bounds import MAX_ABS_VALUE
from frontier_rft.core.config import SelectorConfig, check, check_choice, check_least
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_int
from frontier_rft.features.derive import task_categories

__all__ = ["SECConfig", "SECSelector", "arm_labels", "draw_arm_counts", "softmax"]


@dataclass(frozen=True)
class SECConfig(SelectorConfig):
    """Hyperparameters of SEC; defaults are the paper's (Table S1, Qwen2.5-3B puzzles)."""

    alpha: float = 0.5
    """TD(0) learning rate of the arm values: Q <- alpha * r + (1 - alpha) * Q."""
    tau: float = 1.0
    """Softmax temperature over Q / tau; the paper uses 0.2-1.0 (lower = greedier)."""
    q_init: float = 0.0
    """Initial value Q0 of every arm (paper: 0, i.e. a uniform first batch)."""
    estimator: str = "grpo"
    """Advantage estimator for the arm reward: 'grpo' (std-normalised), 'drgrpo', 'rloo'."""
    decay_unsampled: bool = False
    """Also update arms absent from a step's feedback with r = 0 (the released code does)."""
    max_arm_metrics: int = 16
    """Emit per-arm q/<arm> and arm_prob/<arm> metrics only up to this many arms."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check(
            0.0 < self.alpha <= 1.0,
            f"alpha must lie in (0, 1], got {self.alpha!r} (the paper uses 0.2-0.5)",
        )
        check(
            self.tau > 0.0,
            f"tau must be a positive finite temperature, got {self.tau!r} (paper: 0.2-1.0)",
        )
        check(
            abs(self.q_init) <= MAX_ABS_VALUE,
            f"q_init must lie in [-1e100, 1e100] (paper: 0), got {self.q_init!r}",
        )
        check_choice("estimator", self.estimator, ESTIMATORS)
        check_least(self, ("max_arm_metrics",), 0)


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Numerically stable softmax of a 1-D array."""
    z = np.exp(logits - logits.max())
    return np.asarray(z / z.sum(), dtype=np.float64)


def draw_arm_counts(
    rng: np.random.Generator,
    logits: NDArray[np.float64],
    capacity: NDArray[np.int64],
    n: int,
) -> NDArray[np.int64]:
    """How many of n draws land on each arm, drawing arms from softmax(logits).

    Equivalent in distribution to n sequential categorical draws in which an arm whose
    `capacity` is used up is skipped and the softmax renormalised over the others: the
    first round is one multinomial draw, the draws that overflowed an arm are redrawn
    from the softmax over arms that still have room, and so on (at most one round per
    arm that fills). Requires capacity.sum() >= n.
    """
    counts = rng.multinomial(n, softmax(logits)).astype(np.int64)
    excess = int(np.maximum(counts - capacity, 0).sum())
    while excess:
        np.minimum(counts, capacity, out=counts)
        room = np.flatnonzero(counts < capacity)
        counts[room] += rng.multinomial(excess, softmax(logits[room]))
        excess = int(np.maximum(counts - capacity, 0).sum())
    return counts


def arm_labels(categories: NDArray[np.int64]) -> tuple[NDArray[np.int32], list[str]]:
    """Arm index of every task and a printable label per arm.

    Shape (N,) categories: one arm per distinct value. Shape (N, k): one arm per
    distinct row ("SEC-2D", e.g. difficulty x task type), labelled "a-b".
    """
    cats = np.asarray(categories, dtype=np.int64)
    if cats.ndim == 1:
        uniq, arm_of = np.unique(cats, return_inverse=True)
        return arm_of.reshape(-1).astype(np.int32), [str(v) for v in uniq.tolist()]
    widths = cats.max(axis=0).astype(np.float64) + 1.0
    if float(np.prod(widths)) < 2.0**62:  # mixed-radix code: a fast 1-D unique
        radix = np.concatenate([[1], np.cumprod(widths[:-1].astype(np.int64))])
        _, first, arm_of = np.unique(cats @ radix, return_index=True, return_inverse=True)
        rows = cats[first]
    else:
        rows, arm_of = np.unique(cats, axis=0, return_inverse=True)
    labels = ["-".join(str(v) for v in row) for row in rows.tolist()]
    return arm_of.reshape(-1).astype(np.int32), labels


def _ragged_arange(lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    """concatenate([arange(k) for k in lengths]) without a Python loop."""
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total, dtype=np.int64) - starts


class SECSelector(Selector):
    """Self-evolving curriculum: a non-stationary softmax bandit over TaskPool.categories.

    Sampling. Arm counts for the whole batch are one multinomial draw from softmax(Q/tau)
    (the paper's sequential draws are i.i.d., so the counts are multinomial); an arm has
    room for at most its number of problems per batch, and overflowing draws are redrawn
    over the remaining arms (`draw_arm_counts`), so one batch never repeats an id.
    Within an arm, problems come from a per-arm permutation walked by a cursor (without
    replacement within a pass over the arm); when a pass ends mid-batch, the arm's
    unvisited tail is taken and the rest is drawn from a fresh permutation that avoids it.
    The batch order is shuffled so arms are interleaved as with sequential draws.

    Update. r(c) = mean |A| over every rollout of arm c in a step's feedback (advantages
    from `config.estimator`), then Q(c) <- alpha r(c) + (1 - alpha) Q(c) for the arms in
    the feedback (paper section 2.3). With `decay_unsampled`, arms absent from the step
    also get r = 0, as in the authors' released code.

    Late feedback. A batch for a step older than the newest step already observed (or a
    later piece of that newest step) updates only the arms it contains: it never decays
    absent arms again, since that per-step decay already happened. A step's rollouts that
    are split across flushes therefore give their arms one TD update per piece.
    """

    name = "sec"
    needs = Needs(
        "a category per task (the bandit's arms)",
        "categories = k-means clusters of prompt-text features",
        "categories=(N,) or (N, 2), e.g. a dataset's source and level columns",
        ("evidence/categories/kmeans_text",),
    )
    requires = Requires(
        ("categories", "features", "prompts"),
        "its bandit's arms are categories, else k-means clusters of the features",
    )
    cost = Cost("sublinear", "O(B)", "bandit over categories, uniform within an arm")
    color = "#2ca02c"  # green
    config_class = SECConfig
    config: SECConfig

    def __init__(self, pool: TaskPool, config: SECConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        cats, self.evidence["categories"] = task_categories(pool, self.name, seed=seed)
        self._arm_of, self._labels = arm_labels(cats)
        k = len(self._labels)
        self._sizes: NDArray[np.int64] = np.bincount(self._arm_of, minlength=k).astype(np.int64)
        self._starts: NDArray[np.int64] = np.cumsum(self._sizes) - self._sizes
        # Tasks grouped by arm (4 + 8 bytes per task), each arm's segment in random order.
        keys = self._arm_of + self.rng.random(self.num_tasks)
        self._perm: NDArray[np.int64] = np.argsort(keys).astype(np.int64)
        self._cursor: NDArray[np.int64] = np.zeros(k, dtype=np.int64)
        self._q: NDArray[np.float64] = np.full(k, float(self.config.q_init))
        self._passes: NDArray[np.int64] = np.zeros(k, dtype=np.int64)
        self._newest_step = -1
        self._late_batches = 0
        self._last_reward: NDArray[np.float64] = np.full(k, np.nan)

    @property
    def num_arms(self) -> int:
        return int(self._sizes.shape[0])

    @classmethod
    def reward_bounds_for(
        cls, config: SelectorConfig, given: frozenset[str]
    ) -> tuple[float, float] | None:
        """SEC reads only advantages, so any reward scale is accepted (paper sec. 3.2), up to
        the |reward| <= 1e100 that Feedback enforces for every selector."""
        return None

    @classmethod
    def reads_features(cls, config: SelectorConfig, given: frozenset[str]) -> bool:
        """Without categories its arms are k-means clusters of the features."""
        return "categories" not in given

    def probabilities(self) -> NDArray[np.float64]:
        """Current arm distribution softmax(Q / tau)."""
        return softmax(self._logits())

    def _logits(self) -> NDArray[np.float64]:
        """(Q - max Q) / tau: the softmax's logits shifted before dividing, so a small tau
        or Q values far apart give -inf (probability 0) instead of inf - inf = NaN."""
        with np.errstate(over="ignore"):
            logits: NDArray[np.float64] = (self._q - self._q.max()) / self.config.tau
        return logits

    @property
    def q_values(self) -> NDArray[np.float64]:
        """A copy of the arm values Q."""
        return np.array(self._q, dtype=np.float64)

    # ------------------------------------------------------------------ select
    def _select(self, n: int) -> NDArray[np.int64]:
        counts = draw_arm_counts(self.rng, self._logits(), self._sizes, n)
        left = self._sizes - self._cursor
        wrap = counts > left
        direct = np.where(wrap, left, counts)  # taken from the current pass
        arms = np.repeat(np.arange(self.num_arms), direct)
        pos = self._starts[arms] + self._cursor[arms] + _ragged_arange(direct[direct > 0])
        ids = self._perm[pos]
        if np.any(wrap):
            ended = np.flatnonzero(wrap)
            fresh = self._new_passes(ended, self._cursor[ended], counts[ended] - left[ended])
            ids = np.concatenate([ids, fresh])
        self._cursor += np.where(wrap, 0, direct)
        out: NDArray[np.int64] = ids[self.rng.permutation(n)]
        return out

    def _new_passes(
        self, arms: NDArray[np.int64], visited: NDArray[np.int64], need: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """Start a new pass over each of `arms`; return its first `need` ids.

        The old pass's unvisited tail (segment positions >= visited) was just taken, so
        the fresh ids are a uniform random subset of the visited part, in random order;
        they open the new pass and all other ids follow in uniformly random order. Both
        shuffles are done for all arms at once by sorting on (segment, group, uniform).
        """
        sizes = self._sizes[arms]
        local = _ragged_arange(sizes)
        seg = 2.0 * np.repeat(np.arange(arms.shape[0]), sizes)
        pos = np.repeat(self._starts[arms], sizes) + local
        reusable = local < np.repeat(visited, sizes)
        ids = self._perm[pos][np.argsort(seg + ~reusable + self.rng.random(seg.shape[0]))]
        need_rep = np.repeat(need, sizes)
        fresh = local < need_rep  # after the sort these positions hold reusable ids
        tiebreak = np.where(fresh, local / np.maximum(need_rep, 1), self.rng.random(seg.shape[0]))
        ids = ids[np.argsort(seg + ~fresh + tiebreak)]
        self._perm[pos] = ids
        self._cursor[arms] = need
        self._passes[arms] += 1
        out: NDArray[np.int64] = ids[fresh]
        return out

    # ------------------------------------------------------------------ observe
    def _observe(self, batch: GroupBatch) -> None:
        k = self.num_arms
        arm = self._arm_of[batch.task_ids]
        abs_sum = batch.mean_abs_advantage(self._estimator) * batch.counts
        total = np.bincount(arm, weights=abs_sum, minlength=k)
        rollouts = np.bincount(arm, weights=batch.counts, minlength=k)
        present = rollouts > 0
        reward = np.divide(total, rollouts, out=np.zeros(k), where=present)
        a = self.config.alpha
        if self.config.decay_unsampled and batch.step > self._newest_step:
            self._q = a * reward + (1.0 - a) * self._q
        else:
            self._q[present] = a * reward[present] + (1.0 - a) * self._q[present]
        if batch.step < self._newest_step:
            self._late_batches += 1
        self._newest_step = max(self._newest_step, batch.step)
        self._last_reward = np.where(present, reward, np.nan)

    @property
    def _estimator(self) -> Estimator:
        est: Estimator = self.config.estimator  # type: ignore[assignment]
        return est

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            "q": self._q,
            "perm": self._perm,
            "cursor": self._cursor,
            "passes": self._passes,
            "newest_step": self._newest_step,
            "late_batches": self._late_batches,
            "last_reward": self._last_reward,
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        k, n = self.num_arms, self.num_tasks
        q = np.asarray(state["q"], dtype=np.float64)
        perm = np.asarray(state["perm"], dtype=np.int64)
        cursor = np.asarray(state["cursor"], dtype=np.int64)
        passes = np.asarray(state["passes"], dtype=np.int64)
        last_reward = np.asarray(state["last_reward"], dtype=np.float64)
        if q.shape != (k,) or cursor.shape != (k,) or passes.shape != (k,):
            raise ValueError(f"sec state: per-arm arrays must have shape ({k},)")
        if last_reward.shape != (k,) or not np.all(np.isfinite(q)):
            raise ValueError("sec state: arm values must be finite, one per arm")
        if np.any(cursor < 0) or np.any(cursor > self._sizes):
            raise ValueError("sec state: arm cursors out of range")
        if perm.shape != (n,) or perm.min() < 0 or perm.max() >= n:
            raise ValueError("sec state: task permutation does not match the pool")
        if np.any(np.bincount(perm, minlength=n) != 1) or np.any(
            self._arm_of[perm] != np.repeat(np.arange(k), self._sizes)
        ):
            raise ValueError("sec state: task permutation is not grouped by arm")
        self._q, self._perm, self._cursor, self._passes = q, perm, cursor, passes
        self._newest_step = read_int(state, "newest_step", self.name, lo=-1)
        self._late_batches = read_int(state, "late_batches", self.name)
        self._last_reward = last_reward

    # ------------------------------------------------------------------ metrics
    def _metrics(self) -> dict[str, float]:
        prob = self.probabilities()
        nz = prob[prob > 0]
        out = {
            "num_arms": float(self.num_arms),
            "entropy": float(-(nz * np.log(nz)).sum()),
            "q_max": float(self._q.max()),
            "q_min": float(self._q.min()),
            "arm_prob_max": float(prob.max()),
            "late_batches": float(self._late_batches),
            "passes_completed": float(self._passes.sum()),
        }
        if self.num_arms <= self.config.max_arm_metrics:
            arms = zip(self._labels, self._q, prob, self._last_reward, strict=True)
            for label, q, p, r in arms:
                out[f"q/{label}"] = float(q)
                out[f"arm_prob/{label}"] = float(p)
                out[f"reward/{label}"] = float(r)
        return out
