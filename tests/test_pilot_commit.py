"""PilotCommit, Pilot-Commit's rule (databricks/pilot-commit), checked by hand on scripted pools
of known solved, unsolvable and mixed prompts walked in a known order: the candidates piloted
(3 x B), the commit window's edges (0.125 and 0.75 pass, 0.875 does not), eviction of solved
prompts for good, the buffer's age limit (4 steps), exact rollout counts, exact resume
mid-run, and refusals that change nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from frontier_rft import TaskPool, make_selector
from frontier_rft.core.config import SelectorConfig
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_int
from frontier_rft.sampling.pilot_commit import PilotCommit, PilotCommitConfig
from frontier_rft.sampling.sampler_file import load_sampler, save_sampler
from frontier_rft.sampling.store import GroupStore
from helpers import assert_state_equal

SOLVED, UNSOLVABLE = 0, 1  # id % 4: 0 always solved, 1 never, 2 and 3 mixed (1, 0, 1, 0, ...)
MAXVAR = PilotCommitConfig(buffer_pick="max_variance")


@dataclass(frozen=True)
class _InOrderConfig(SelectorConfig):
    """No hyperparameters."""


class InOrder(Selector):
    """Walks 0, 1, ..., N - 1, 0, 1, ...: candidates a test can name in advance."""

    name = "in-order"
    needs = Needs("nothing", "nothing", "nothing")
    cost = Cost("sublinear", "O(B)", "a cursor")
    color = "#000000"
    config_class = _InOrderConfig

    def __init__(self, pool: TaskPool, config: _InOrderConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        self.cursor = 0

    def _select(self, n: int) -> NDArray[np.int64]:
        ids = (self.cursor + np.arange(n)) % self.num_tasks
        self.cursor = int((self.cursor + n) % self.num_tasks)
        return ids.astype(np.int64)

    def _observe(self, batch: GroupBatch) -> None:
        pass

    def _state_dict(self) -> dict[str, Any]:
        return {"cursor": self.cursor}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.cursor = read_int(state, "cursor", self.name, hi=self.num_tasks - 1)


def in_order(n: int) -> InOrder:
    return InOrder(TaskPool(num_tasks=n))


def by_kind(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Solved prompts all 1, unsolvable all 0, mixed ones 1, 0, 1, 0, ..."""
    out = []
    for task, size in zip(ids.tolist(), counts.tolist(), strict=True):
        if task % 4 == SOLVED:
            out.append(np.ones(size))
        elif task % 4 == UNSOLVABLE:
            out.append(np.zeros(size))
        else:
            out.append((np.arange(size) % 2 == 0).astype(float))
    return np.concatenate(out)


def metric(pc: PilotCommit, name: str) -> float:
    return pc.metrics()[f"pilot_commit/{name}"]


def test_rounds_pilot_three_b_candidates_and_commit_the_buffer_exactly() -> None:
    """16 prompts in order (id % 4: solved, unsolvable, mixed, mixed), B = 2, n = 8: the pilot
    is n / 4 = 2 rollouts, the commit 6, a round pilots 3 x B = 6 candidates."""
    pc = PilotCommit(in_order(16), MAXVAR)
    s0 = pc.sample(0, 2, 8, by_kind)
    # Round 0: 0..5 piloted, the buffer empty. Round 1: 6..11 piloted, 2 and 3 committed.
    assert [r.task_ids.tolist() for r in s0.rounds] == [[0, 1, 2, 3, 4, 5], [*range(6, 12), 2, 3]]
    assert [r.sizes.tolist() for r in s0.rounds] == [[2] * 6, [2] * 6 + [6] * 2]
    assert s0.rollouts == 6 * 2 + 6 * 2 + 2 * 6 == 36
    train = s0.train
    assert train.task_ids.tolist() == [2, 3] and train.counts.tolist() == [8, 8]
    assert train.steps.tolist() == [0, 0] and train.deficit == 0
    assert [train.parts(g) for g in range(2)] == [((0, 2), (1, 6)), ((0, 3), (1, 7))]
    assert train.rewards[:8].tolist() == [1, 0, 1, 0, 1, 0, 1, 0]  # pilot 1, 0; commit 6
    groups = s0.groups()  # every group of the step, whole: the true bill
    assert int(groups.counts.sum()) == 36 and groups.num_groups == 12
    m = {k: metric(pc, k) for k in ("passed", "too_correct", "too_incorrect", "evicted")}
    assert m == {"passed": 6, "too_correct": 3, "too_incorrect": 3, "evicted": 3}  # 0, 4, 8
    assert pc.evicted.nonzero()[0].tolist() == [0, 4, 8]
    assert pc.held() == [(0, 1, 0), (0, 1, 1), (0, 1, 4), (0, 1, 5)]  # 6, 7, 10, 11

    s1 = pc.sample(1, 2, 8, by_kind)  # one round: 0 evicted is passed over, 2 walked again
    assert [r.task_ids.tolist() for r in s1.rounds] == [[12, 13, 14, 15, 1, 2, 6, 7]]
    assert s1.rollouts == 6 * 2 + 2 * 6 == 24
    assert s1.train.task_ids.tolist() == [6, 7]
    assert s1.train.steps.tolist() == [0, 0]  # pilots of step 0, trained at step 1
    assert s1.train.source_round.tolist() == [1, 1] and s1.train.source_group.tolist() == [0, 1]
    assert s1.train.continued == (((0, 6),), ((0, 7),))
    assert s1.train.counts.tolist() == [8, 8]
    groups = s1.groups()  # this step's rollouts only: the commits alone, not their pilots
    assert sorted(groups.counts.tolist()) == [2] * 6 + [6] * 2
    assert metric(pc, "committed_earlier") == 2 and metric(pc, "staleness_mean") == 1
    assert pc.evicted.nonzero()[0].tolist() == [0, 4, 8, 12]
    assert pc.buffer.task.tolist() == [10, 11, 14, 15, 2]

    s2 = pc.sample(2, 2, 8, by_kind)  # 4 and 8 passed over; 10 drawn again: piloted afresh
    assert [r.task_ids.tolist() for r in s2.rounds] == [[3, 5, 6, 7, 9, 10, 14, 15]]
    assert metric(pc, "replaced") == 1
    assert s2.train.task_ids.tolist() == [14, 15]  # max_variance: ties go to the newest
    assert pc.buffer.task.tolist() == [11, 2, 3, 6, 7, 10]


def edges(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Prompt j's pilot of 8 has j successes; a commit is 1, 0, 1, 0, ..."""
    return np.concatenate(
        [
            (np.arange(c) < t).astype(float) if c == 8 else (np.arange(c) % 2 == 0).astype(float)
            for t, c in zip(ids.tolist(), counts.tolist(), strict=True)
        ]
    )


def test_the_commit_window_edges_and_eviction() -> None:
    """Pilot k = 8 of n = 16: p = j / 8. 0.125 (j = 1) and 0.75 (j = 6) enter the buffer,
    0 is too hard, 0.875 too easy, 1.0 too easy and evicted."""
    pc = PilotCommit(in_order(9), PilotCommitConfig(pilot=8, buffer_pick="max_variance"))
    s = pc.sample(0, 3, 16, edges)
    assert metric(pc, "passed") == 6 and metric(pc, "too_incorrect") == 1
    assert metric(pc, "too_correct") == 2 and pc.evicted.nonzero()[0].tolist() == [8]
    # Round 1 has no candidate left (every prompt piloted this step) and commits 3 of the
    # 6: the largest pilot std first (j = 4, then 3 and 5 tied, in the buffer's order).
    assert [r.task_ids.tolist() for r in s.rounds] == [list(range(9)), [4, 3, 5]]
    assert s.rollouts == 9 * 8 + 3 * 8 == 96
    assert s.train.task_ids.tolist() == [4, 3, 5] and s.train.counts.tolist() == [16] * 3
    assert pc.buffer.task.tolist() == [1, 2, 6]


def test_solved_prompts_are_evicted_for_good() -> None:
    sel = make_selector("uniform", TaskPool(num_tasks=64), seed=1)
    pc = PilotCommit(sel)
    piloted: list[list[int]] = []
    for t in range(40):
        s = pc.sample(t, 4, 8, by_kind)
        piloted.append(
            [i for r in s.rounds for i, c in zip(r.task_ids, r.sizes, strict=True) if c == 2]
        )
        assert np.all(s.train.task_ids % 4 >= 2)  # only mixed pilots are ever committed
        assert np.all(s.train.counts == 8) and np.all(s.train.mixed)
        assert s.rollouts == int(s.groups().counts.sum())
    solved = {i for i in range(0, 64, 4)}
    first = {i: next(t for t, ids in enumerate(piloted) if i in ids) for i in solved}
    for i, t in first.items():  # piloted once, then never again
        assert all(i not in ids for ids in piloted[t + 1 :])
    assert set(pc.evicted.nonzero()[0].tolist()) == solved
    assert metric(pc, "evicted_total") == 16


def ages(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Prompt 0's pilot of 4 is 1, 0, 0, 0 (std 0.43); every other's 1, 0, 1, 0 (std 0.5)."""
    return np.concatenate(
        [
            np.array([1.0, 0, 0, 0][:c] if t == 0 else (np.arange(c) % 2 == 0), dtype=float)
            for t, c in zip(ids.tolist(), counts.tolist(), strict=True)
        ]
    )


def test_a_pilot_is_buffered_at_most_max_age_steps() -> None:
    """B = 1, two candidates a round, one round a step, commits by the largest pilot std:
    prompt 0 (piloted at step 0) always loses to a newer pilot. It is still buffered after
    step 4 (4 steps old), so step 5 may commit it; after step 5 it is dropped."""
    config = PilotCommitConfig(pilot=4, candidates=2, max_rounds=1, buffer_pick="max_variance")
    pc = PilotCommit(in_order(40), config)
    committed = []
    for t in range(6):
        s = pc.sample(t, 1, 8, ages)
        committed += s.train.task_ids.tolist()
        assert metric(pc, "expired") == (1 if t == 5 else 0)
        if t == 4:
            assert (0, 0, 0) in pc.held()
            before_5 = pc.state_dict()
    assert committed == [1, 2, 4, 6, 8]  # step 0 has an empty buffer: no commit, deficit 1
    assert 0 not in pc.buffer.task.tolist() and metric(pc, "expired_total") == 1
    # Step 5 with prompt 0 the only buffered pilot: committed 5 steps after its pilot.
    only = PilotCommit(in_order(40), config)
    state = before_5
    held = GroupStore.read(state["buffer"], "pilot_commit", 40)
    state["buffer"] = held.keep(held.task == 0).state()
    only.load_state_dict(state)
    s = only.sample(5, 1, 8, ages)
    assert s.train.task_ids.tolist() == [0] and s.train.steps.tolist() == [0]
    assert metric(only, "staleness_mean") == 5


def test_a_short_step_trains_what_it_has_and_an_exhausted_pool_is_refused() -> None:
    """Four solved prompts: step 0 pilots them all (evicted), commits nothing and trains
    nothing (deficit B); step 1 has nothing to pilot and is refused, changing nothing."""
    pc = PilotCommit(in_order(4))
    s = pc.sample(0, 1, 8, lambda ids, c: np.ones(int(np.sum(c))))
    assert [r.task_ids.tolist() for r in s.rounds] == [[0, 1, 2], [3]]
    assert s.train.num_groups == 0 and s.train.deficit == 1 and s.rollouts == 8
    assert metric(pc, "short_steps_total") == 1
    before = pc.state_dict()
    with pytest.raises(ValueError, match="every prompt of the pool is evicted"):
        pc.sample(1, 1, 8, lambda ids, c: np.ones(int(np.sum(c))))
    assert_state_equal(pc.state_dict(), before)


def run(pc: PilotCommit, steps: range) -> list[tuple[Any, ...]]:
    out = []
    for t in steps:
        s = pc.sample(t, 4, 8, by_kind)
        tr = s.train
        out.append(
            (
                s.task_ids.tolist(),
                s.rollouts,
                tr.task_ids.tolist(),
                tr.steps.tolist(),
                tr.rewards.tolist(),
            )
        )
    return out


@pytest.mark.parametrize("pick", ["random", "max_variance"])
def test_resume_is_exact_mid_run(pick: str, tmp_path: Path) -> None:
    config = PilotCommitConfig(buffer_pick=pick)  # type: ignore[arg-type]
    straight = PilotCommit(make_selector("uniform", TaskPool(num_tasks=64), seed=3), config)
    expected = run(straight, range(14))
    first = PilotCommit(make_selector("uniform", TaskPool(num_tasks=64), seed=3), config)
    got = run(first, range(6))
    assert first.buffer.size > 0  # pilots waiting for a commit across the save
    save_sampler(first, tmp_path / "pc.npz")
    resumed = load_sampler(
        tmp_path / "pc.npz", make_selector("uniform", TaskPool(num_tasks=64), seed=99)
    )
    got += run(resumed, range(6, 14))
    assert got == expected
    assert_state_equal(resumed.state_dict(), straight.state_dict())


def test_bad_arguments_change_nothing() -> None:
    pc = PilotCommit(make_selector("uniform", TaskPool(num_tasks=64), seed=0))
    run(pc, range(3))
    before = pc.state_dict()
    for bad in (
        dict(step=2**53, batch_size=4, group_size=8),
        dict(step=-1, batch_size=4, group_size=8),
        dict(step=3, batch_size=0, group_size=8),
        dict(step=3, batch_size=65, group_size=8),
        dict(step=3, batch_size=4, group_size=2),  # pilot 2 leaves nothing to commit
        dict(step=3, batch_size=4, group_size=16),  # pilots of 4, but the buffer holds 2s
    ):
        with pytest.raises(ValueError):
            pc.sample(rollout=by_kind, **bad)  # type: ignore[arg-type]
        assert_state_equal(pc.state_dict(), before)  # the selector's RNG and walk included
    own = pc.state_dict(with_inner=False)
    for rollout, message in (
        (lambda ids, c: np.ones(3), "rollout returned"),
        (lambda ids, c: np.full(int(np.sum(c)), 2.0), "must lie in \\[0, 1\\]"),
    ):
        with pytest.raises(ValueError, match=message):
            pc.sample(3, 4, 8, rollout)
        assert_state_equal(pc.state_dict(with_inner=False), own)  # the wrapper unchanged


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: PilotCommitConfig(pilot=1), "one reward is never mixed"),
        (lambda: PilotCommitConfig(candidates=0), "candidates must be"),
        (lambda: PilotCommitConfig(commit_low=0.8), "commit_low <= commit_high"),
        (lambda: PilotCommitConfig(pilot=2, commit_low=0.6), "nothing would ever be committed"),
        (lambda: PilotCommitConfig(evict_at=0.0), "evict_at must lie in"),
        (lambda: PilotCommitConfig(evict_at=1.5), "evict_at must lie in"),
        (lambda: PilotCommitConfig(max_age=-1), "max_age must be"),
        (lambda: PilotCommitConfig(max_rounds=0), "max_rounds must be"),
        (lambda: PilotCommitConfig(buffer_pick="best"), "buffer_pick"),  # type: ignore[arg-type]
        (lambda: PilotCommitConfig(pilot=2.0), "must be an int"),  # type: ignore[arg-type]
        (lambda: PilotCommit("uniform"), "wraps a built selector"),  # type: ignore[arg-type]
    ],
)
def test_settings_are_refused_by_name(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        make()


def test_a_state_of_another_config_or_a_damaged_buffer_is_refused() -> None:
    pc = PilotCommit(make_selector("uniform", TaskPool(num_tasks=64), seed=0))
    run(pc, range(3))
    state = pc.state_dict()
    other = PilotCommit(make_selector("uniform", TaskPool(num_tasks=64), seed=0), MAXVAR)
    with pytest.raises(ValueError, match="saved with"):
        other.load_state_dict(state)
    fresh = PilotCommit(make_selector("uniform", TaskPool(num_tasks=64), seed=0))
    before = fresh.state_dict()
    bad = dict(state, buffer=dict(state["buffer"], task=state["buffer"]["task"][:-1]))
    with pytest.raises(ValueError, match="differ in length"):
        fresh.load_state_dict(bad)
    assert_state_equal(fresh.state_dict(), before)


def test_the_bench_entry_runs_pilot_commit_under_a_definition_of_its_own() -> None:
    """`pilot-commit` trains uniform inside Pilot-Commit at the paper's settings; its ledger
    definition holds them resolved, and an entry without it keeps its committed digest."""
    from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES, BenchEntry, flags
    from frontier_rft.bench.real_rl.ledger import definition_digest, entry_definition
    from frontier_rft.bench.real_rl.testbed import testbed as make_testbed

    tb = make_testbed("standard")
    entry = next(e for e in EFFECT_ENTRIES if e.label == "pilot-commit")
    config = tb.run_config(entry, 0)
    assert config.sampler == "pilot_commit" and config.selector == "uniform"
    assert config.sampler_settings() == PilotCommitConfig()
    assert config.sampler_settings().pilot_size(config.group_size) == 2  # 8 // 4
    definition = entry_definition(config, entry.own_train())
    assert definition["pilot_commit"]["commit_low"] == 0.125
    assert definition["pilot_commit"]["max_age"] == 4
    plain = entry_definition(tb.run_config(MAIN_ENTRIES[0], 0))
    assert "pilot_commit" not in plain and definition_digest(plain) == "61328573"
    picky = BenchEntry("x", "uniform", sampler=flags(pilot_commit=True, pc_evict_at=None))
    assert tb.run_config(picky, 0).sampler_settings().evict_at is None
    assert picky.own_train() == {"pc_evict_at": None}  # its definition holds the flag it sets
    from frontier_rft.bench.real_rl.effects import PER_PROMPT_ROLLOUT_ENTRIES

    assert "pilot-commit" in PER_PROMPT_ROLLOUT_ENTRIES  # its own claim is checked on it
