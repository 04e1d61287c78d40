"""PilotCommit: Pilot-Commit (Kim et al., databricks/pilot-commit) as a step sampler.

A round pilots `candidates` x B prompts the selector inside proposes with k rollouts each.
A pilot whose pass rate p̂ (its mean reward) lies in [commit_low, commit_high] = [0.125, 0.75]
enters a buffer; the round also commits n - k more rollouts to up to B - (groups so far)
prompts taken from the buffer as it stood before the round's pilots, and each committed
prompt's pilot and commit are one group of n, trained. Rounds repeat until the step has B
groups (at most `max_rounds`). A pilot with p̂ >= evict_at (1.0: every pilot rollout solved)
evicts its prompt for good; after the step, buffered pilots more than `max_age` steps old
are dropped. Scaled to any group size n with the paper's ratios: k = n / 4 (its 16 of 64 and
32 of 128), the commit n - k (48 and 96), 3 x B candidates.

    pc = PilotCommit(make_selector("uniform", pool, seed=0))
    samples = pc.sample(step, B, n, rollout)   # rollout(ids, counts) -> rewards, id-major
    train(samples.train)                       # B groups of n: a pilot and its commit each

A pilot committed at a later step is trained there: its rewards and its rollout's payload
(`Rolled`: the trainer's completions) are kept in the sampler's store (`sampling/store.py`)
and saved with its state, and `samples.train.payloads[g]` hands them back beside the commit's.
`samples.train.steps[g]` is the step of group g's first part, its pilot, and its further
part, the commit, is this step's. Every rollout is
counted in the step that generated it. docs/selectors/pilot_commit.md lists what the released
code does and each deviation from it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import bounded_int
from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.core.selector import MAX_SEED, Selector
from frontier_rft.core.state_check import read_array, read_int
from frontier_rft.sampling.base import WrapsSelector, checked_seed, checked_wrapper_args
from frontier_rft.sampling.filtered_batch import FilteredBatch, csr
from frontier_rft.sampling.step import (
    MAX_GROUP_SIZE,
    RolloutFn,
    Round,
    StepSamples,
    check_rollout,
    roll_unit_round,
)
from frontier_rft.sampling.store import GroupStore

__all__ = ["BUFFER_PICKS", "PilotCommit", "PilotCommitConfig"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
BUFFER_PICKS = ("random", "max_variance")
"""PilotCommitConfig.buffer_pick: how a round takes its commits when the buffer holds more."""
_KIND = "pilot_commit"
_STATE_KEYS = ("kind", "config", "seed", "evicted", "buffer", "totals", "last", "inner")


@dataclass(frozen=True)
class PilotCommitConfig:
    """Pilot-Commit's settings, at the released scripts' values (ratios for any n)."""

    pilot: int = 0
    """Pilot rollouts per candidate, k (0 = group_size // 4, at least 2: the scripts' 16 of 64
    and 32 of 128); the commit adds group_size - k."""
    candidates: int = 3
    """Candidates piloted per round, as a multiple of batch_size (the scripts' 3 x 128)."""
    commit_low: float = 0.125
    """Lowest pilot pass rate that enters the buffer (diversity_threshold_lower)."""
    commit_high: float = 0.75
    """Highest pilot pass rate that enters the buffer (1 - diversity_threshold_upper)."""
    evict_at: float | None = 1.0
    """A pilot pass rate at or above this evicts the prompt for good (exclude_threshold_upper;
    None = never)."""
    max_age: int = 4
    """A buffered pilot older than this many steps after a step is dropped
    (buffer_max_off_steps)."""
    buffer_pick: Literal["random", "max_variance"] = "random"
    """Commits taken from a fuller buffer: 'random', or 'max_variance' (highest pilot std, newest
    first; the 1.5B script's)."""
    max_rounds: int = 10
    """Most rounds in a step while it has fewer than batch_size groups (max_num_gen_batches)."""

    def __post_init__(self) -> None:
        check_field_types(self)
        check(
            self.pilot == 0 or self.pilot >= 2,
            f"pilot must be 0 (a quarter of the group) or >= 2 (one reward is never mixed), got "
            f"{self.pilot!r}",
        )
        check(
            self.candidates >= 1,
            f"candidates must be a multiple of batch_size >= 1 (Pilot-Commit: 3), "
            f"got {self.candidates!r}",
        )
        check(
            0.0 <= self.commit_low <= self.commit_high <= 1.0,
            f"need 0 <= commit_low <= commit_high <= 1 (Pilot-Commit: 0.125, 0.75), got "
            f"{self.commit_low!r}, {self.commit_high!r}",
        )
        check(
            self.evict_at is None or 0.0 < self.evict_at <= 1.0,
            f"evict_at must lie in (0, 1] or be None (never evict), got {self.evict_at!r}",
        )
        check(0 <= self.max_age <= 1_000_000, f"max_age must be an int >= 0, got {self.max_age!r}")
        check_choice("buffer_pick", self.buffer_pick, BUFFER_PICKS)
        check(1 <= self.max_rounds <= 10_000, f"max_rounds must be >= 1, got {self.max_rounds!r}")
        if self.pilot:
            self._check_window(self.pilot)

    def pilot_size(self, group_size: int) -> int:
        """k for groups of `group_size`; ValueError unless 2 <= k < group_size and some pilot
        of k rollouts can have a pass rate in the commit window."""
        k = self.pilot or max(2, group_size // 4)
        if not k < group_size:
            raise ValueError(
                f"pilot {k} must be below group_size {group_size}: the commit adds group_size - "
                "pilot rollouts (Pilot-Commit: 16 + 48, 32 + 96); raise group_size or set pilot"
            )
        self._check_window(k)
        return k

    def _check_window(self, k: int) -> None:
        rates = np.arange(k + 1) / k
        if not np.any((rates >= self.commit_low) & (rates <= self.commit_high)):
            raise ValueError(
                f"no pilot of {k} rollouts has a pass rate in [commit_low, commit_high] = "
                f"[{self.commit_low}, {self.commit_high}]: nothing would ever be committed; "
                "widen the window or change pilot"
            )


class PilotCommit(WrapsSelector):
    """Pilot-Commit around a built selector (see the module docstring). Not a Selector: it
    asks the selector inside for candidates and sends it every rollout's rewards once."""

    holds_groups: ClassVar[bool] = True

    kind: ClassVar[str] = _KIND
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = (
        {"buffer_pick": "max_variance"},
        {"evict_at": None, "max_age": 1},  # no eviction, pilots dropped after a step
        {"pilot": 2, "candidates": 1, "max_rounds": 2},
    )

    @classmethod
    def _check_sizes(cls, config: Any, batch_size: int, group_size: int) -> None:
        """Its pilot size for groups of this size."""
        config.pilot_size(group_size)

    TOTALS = ("pilot_rollouts", "commit_rollouts", "expired", "replaced", "short_steps")
    LAST = (
        "rounds",
        "candidates",
        "passed",
        "too_correct",
        "too_incorrect",
        "evicted",
        "committed",
        "committed_earlier",
        "staleness_mean",
        "expired",
        "replaced",
        "deficit",
        "pilot_rollouts",
        "commit_rollouts",
    )

    def __init__(
        self,
        selector: Selector,
        config: PilotCommitConfig | None = None,
        *,
        seed: int | None = None,
    ):
        config = checked_wrapper_args("PilotCommit", "uniform", selector, config, PilotCommitConfig)
        seed = checked_seed(selector, seed)
        self.inner = selector
        self.config = config
        self.seed = seed
        self.evicted = np.zeros(selector.num_tasks, dtype=np.bool_)
        """Prompts evicted for good (a pilot at or above evict_at)."""
        self.buffer = GroupStore.empty()
        """Pilots waiting for a commit, with their rewards and payloads (the store)."""
        self._start_counts()

    def held(self) -> list[tuple[int, int, int]]:
        """(step, round, position) of every buffered pilot: what a later step may train."""
        return self.buffer.keys()

    # ------------------------------------------------------------------ one step
    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """Step `step`: rounds of candidates piloted with k rollouts and buffered pilots
        committed with group_size - k, until batch_size groups (or max_rounds rounds).
        `rollout(ids, counts)` returns counts[i] rewards in [0, 1] for ids[i], id-major.
        Invalid arguments change nothing; if `rollout` fails or returns bad rewards, the
        wrapper is unchanged and the selector inside keeps the rounds already sent."""
        step = bounded_int(step, "step")
        batch_size = bounded_int(batch_size, "batch_size", lo=1, hi=self.inner.num_tasks)
        n = bounded_int(group_size, "group_size", lo=2, hi=MAX_GROUP_SIZE)
        check_rollout(rollout)
        cfg = self.config
        k = cfg.pilot_size(n)
        if self.buffer.size and self.buffer.counts[0] != k:
            raise ValueError(
                f"the buffer holds pilots of {self.buffer.counts[0]} rollouts, but "
                f"group_size {n} asks for pilots of {k}: keep group_size as it was in this run"
            )
        # Everything below works on copies: the wrapper changes only once the step is done.
        buf, evicted = self.buffer, self.evicted.copy()
        touched = np.zeros(self.inner.num_tasks, dtype=np.bool_)  # piloted or committed this step
        rounds: list[Round] = []
        heads: list[tuple[int, int, int, F64, Any]] = []  # per trained group: its pilot
        tails: list[tuple[int, int]] = []  # and its commit, (round, position) of this step
        c = dict.fromkeys(("passed", "too_correct", "too_incorrect", "evicted", "replaced"), 0)
        pilots = commits = 0
        for r in range(cfg.max_rounds):
            if len(heads) >= batch_size:
                break
            start = time.perf_counter()
            cands = self._candidates(cfg.candidates * batch_size, evicted | touched)
            redrawn = np.isin(buf.task, cands)  # piloted afresh (see the docs): drop the old
            c["replaced"] += int(redrawn.sum())
            buf = buf.keep(~redrawn)
            take = self._pick(buf, batch_size - len(heads), step, r)
            seconds = time.perf_counter() - start
            ids = np.concatenate([cands, buf.task[take]])
            if ids.size == 0:  # no prompt left to pilot and none buffered
                break
            counts = np.concatenate(
                [np.full(cands.size, k, np.int64), np.full(take.size, n - k, np.int64)]
            )
            rnd = self._roll(step, ids, counts, rollout, seconds)
            rounds.append(rnd)
            pilots += cands.size * k
            commits += take.size * (n - k)
            for m, b in enumerate(take.tolist()):  # the buffer as it stood before this round
                heads.append(
                    (
                        int(buf.step[b]),
                        int(buf.round[b]),
                        int(buf.group[b]),
                        buf.group_rewards(b),
                        buf.payloads[b],
                    )
                )
                tails.append((len(rounds) - 1, cands.size + m))
            left = np.ones(buf.size, dtype=np.bool_)
            left[take] = False
            buf = buf.keep(left)
            rates = rnd.rewards[: cands.size * k].reshape(cands.size, k)
            p = rates.mean(axis=1)
            passed = (p >= cfg.commit_low) & (p <= cfg.commit_high)
            c["passed"] += int(passed.sum())
            c["too_correct"] += int((p > cfg.commit_high).sum())
            c["too_incorrect"] += int((p < cfg.commit_low).sum())
            buf = buf.add(rnd, np.flatnonzero(passed), step, len(rounds) - 1)
            if cfg.evict_at is not None:
                out = cands[p >= cfg.evict_at]
                c["evicted"] += int((~evicted[out]).sum())
                evicted[out] = True
            touched[ids] = True
        if not rounds:
            raise ValueError(
                "Pilot-Commit has no prompt left to pilot: every prompt of the pool is evicted "
                "(solved in a pilot); the run is over, or set evict_at None to keep them"
            )
        expired = step - buf.step > cfg.max_age
        buf = buf.keep(~expired)
        self.inner.flush()  # the step's sampling is over: fold it so metrics describe it
        batch = _step_batch(tuple(rounds), heads, tails, step, batch_size)
        # The step is done: only now does the wrapper change.
        self.buffer, self.evicted = buf, evicted
        stale = [step - h[0] for h in heads]
        t = self._totals
        t["pilot_rollouts"] += pilots
        t["commit_rollouts"] += commits
        t["expired"] += int(expired.sum())
        t["replaced"] += c["replaced"]
        t["short_steps"] += int(batch.deficit > 0)
        self._last = {
            "rounds": float(len(rounds)),
            "candidates": float(sum(r.task_ids.shape[0] for r in rounds) - len(heads)),
            **{key: float(v) for key, v in c.items()},
            "committed": float(len(heads)),
            "committed_earlier": float(sum(s > 0 for s in stale)),
            "staleness_mean": float(np.mean(stale)) if stale else float("nan"),
            "expired": float(expired.sum()),
            "deficit": float(batch.deficit),
            "pilot_rollouts": float(pilots),
            "commit_rollouts": float(commits),
        }
        return StepSamples(step, tuple(rounds), batch)

    def _candidates(self, want: int, unavailable: NDArray[np.bool_]) -> I64:
        """Up to `want` distinct prompts from the selector inside, passing over the unavailable
        ones (evicted, or already piloted or committed this step), in the order it gave them."""
        target = min(want, int((~unavailable).sum()))
        got: list[int] = []
        seen = unavailable.copy()
        drawn, bound = 0, 4 * self.inner.num_tasks + want  # a walk covers the pool within one pass
        while len(got) < target and drawn < bound:
            ids = self.inner.select(min(target - len(got), self.inner.num_tasks))
            drawn += ids.shape[0]
            for i in ids.tolist():
                if not seen[i]:
                    seen[i] = True
                    got.append(i)
        return np.array(got, dtype=np.int64)

    def _pick(self, buf: GroupStore, need: int, step: int, rnd: int) -> I64:
        """Rows of `buf` committed this round: all of them when it holds at most `need`, else
        `need` at random (a generator seeded by seed, step and round: nothing to save) or
        by the largest pilot std, then the newest."""
        if buf.size <= need:
            return np.arange(buf.size, dtype=np.int64)
        if self.config.buffer_pick == "random":
            rng = np.random.default_rng([self.seed, step, rnd])
            return np.sort(rng.choice(buf.size, size=need, replace=False)).astype(np.int64)
        std = buf.matrix().std(axis=1)
        order = np.lexsort((-buf.step, -std))  # stable: ties keep the buffer's order
        return order[:need].astype(np.int64)

    def _roll(self, step: int, ids: I64, counts: I64, rollout: RolloutFn, seconds: float) -> Round:
        """Roll out one round, check its rewards, send them to the selector inside once."""
        why = (
            "Pilot-Commit reads a pilot's mean reward as its pass rate: rewards must lie "
            "in [0, 1]; rescale them"
        )
        return roll_unit_round(self.inner, step, ids, counts, rollout, seconds, why)

    # ------------------------------------------------------------------ reporting
    def metrics(self) -> dict[str, float]:
        """The selector's metrics and this step's, under `pilot_commit/` (docs page)."""
        own = dict(self._last)
        own.update({f"{k}_total": float(v) for k, v in self._totals.items()})
        own["buffer_size"] = float(self.buffer.size)
        own["evicted_total"] = float(self.evicted.sum())
        return self._metrics_with("pilot_commit", own)

    # ------------------------------------------------------------------ state
    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        """Everything needed to continue exactly (the random commit picks are re-derived from
        the seed); the selector's state nested unless `with_inner=False`."""
        buffer = self.buffer.state()
        own = {"seed": self.seed, "evicted": self.evicted.copy(), "buffer": buffer}
        return self._state(own, with_inner)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict (its nested selector state too, when it holds one); on any
        error nothing changes."""
        who, n = _KIND, self.inner.num_tasks
        state = self._checked_state(state, _STATE_KEYS)
        evicted = read_array(state, "evicted", who, np.bool_, shape=(n,))
        buffer = GroupStore.read(state["buffer"], who, n)
        size, counts = buffer.size, buffer.counts
        if size and (counts.min() < 2 or np.unique(buffer.task).size != size):
            raise ValueError(f"{who} state: the buffer holds a prompt twice or a pilot under 2")
        if size and np.any(counts != counts[0]):
            raise ValueError(f"{who} state: the buffer's pilots differ in size")
        totals, last = self._read_counts(state)
        seed = read_int(state, "seed", who, hi=MAX_SEED - 1)
        self._load_inner(state)  # atomic; the last step that can fail
        self.buffer = buffer
        self.evicted, self._totals, self._last, self.seed = evicted, totals, last, seed


def _step_batch(
    rounds: tuple[Round, ...],
    heads: list[tuple[int, int, int, F64, Any]],
    tails: list[tuple[int, int]],
    step: int,
    batch_size: int,
) -> FilteredBatch:
    """The trained groups in the order committed: each its pilot's rewards (kept from the
    step `steps[g]` that rolled it out), then its commit's (this step's `continued` part);
    the payloads likewise, the pilot's from the store."""
    rows = [
        np.concatenate([h[3], rounds[r].group(j)]) for h, (r, j) in zip(heads, tails, strict=True)
    ]
    counts = np.array([row.shape[0] for row in rows], dtype=np.int64)
    g = len(rows)
    return FilteredBatch(
        task_ids=np.array([rounds[r].task_ids[j] for r, j in tails], dtype=np.int64),
        steps=np.array([h[0] for h in heads], dtype=np.int64),
        counts=counts,
        offsets=csr(counts),
        rewards=np.concatenate(rows) if rows else np.zeros(0),
        from_surplus=np.zeros(g, dtype=np.bool_),
        source_round=np.array([h[1] for h in heads], dtype=np.int64),
        source_group=np.array([h[2] for h in heads], dtype=np.int64),
        deficit=batch_size - g,
        continued=tuple(((r, j),) for r, j in tails),
        payloads=tuple((h[4], rounds[r].payload(j)) for h, (r, j) in zip(heads, tails, strict=True))
        if any(one.payloads is not None for one in rounds)
        else (),
    )
