"""The store of groups a later step may train (sampling/store.py), and payloads: what a
rollout function hands the sampler beside the rewards, returned with each whole group."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from frontier_rft import make_selector
from frontier_rft.core.pool import TaskPool
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.pilot_commit import PilotCommit, PilotCommitConfig
from frontier_rft.sampling.sampler_file import SAMPLER_FILE, load_sampler, save_sampler
from frontier_rft.sampling.step import Rolled, Round
from frontier_rft.sampling.store import GroupStore, payload_state, read_payloads


def tokens_of(task: int, i: int) -> list[int]:
    """A completion's token list that names its prompt and rollout."""
    return [task, i, task + i]


def rolled(ids: np.ndarray, counts: np.ndarray | None = None, n: int = 4) -> Rolled:
    """Half of every group solved; each group's payload its completions as token lists."""
    sizes = [n] * len(ids) if counts is None else [int(c) for c in counts]
    rewards = np.concatenate([np.arange(c) % 2 for c in sizes]).astype(float)
    payloads = [[tokens_of(int(t), i) for i in range(c)] for t, c in zip(ids, sizes, strict=True)]
    return Rolled(rewards, payloads)


def test_a_plain_step_returns_each_group_with_its_own_payload() -> None:
    sampler = PassThrough(make_selector("uniform", TaskPool(num_tasks=20), seed=0))
    samples = sampler.sample(0, 5, 4, rolled)
    train = samples.train
    for g, task in enumerate(train.task_ids.tolist()):
        (only,) = train.payload_parts(g)
        assert only == [tokens_of(task, i) for i in range(4)]


def test_a_pilot_committed_later_comes_back_with_its_pilots_and_its_commits_payloads() -> None:
    """Pilot-Commit: the pilot's k completions are held in the sampler's store across steps
    (and across a save), then returned before the commit's n - k."""
    config = PilotCommitConfig(pilot=2, candidates=2, max_rounds=1)
    pc = PilotCommit(make_selector("uniform", TaskPool(num_tasks=40), seed=0), config)
    pc.sample(0, 2, 8, rolled)  # step 0 pilots; its buffer holds the passing pilots
    assert pc.buffer.size
    assert [len(p) for p in pc.buffer.payloads] == [2] * pc.buffer.size
    saved = pc.state_dict()
    again = PilotCommit(make_selector("uniform", TaskPool(num_tasks=40), seed=0), config)
    again.load_state_dict(saved)
    for sampler in (pc, again):
        train = sampler.sample(1, 2, 8, rolled).train
        earlier = np.flatnonzero(train.steps == 0)
        assert earlier.size
        for g in earlier.tolist():
            pilot, commit = train.payload_parts(g)
            task = int(train.task_ids[g])
            assert pilot == [tokens_of(task, i) for i in range(2)]
            assert commit == [tokens_of(task, i) for i in range(6)]


def test_payloads_survive_a_file_exactly_and_bare_rewards_carry_none() -> None:
    ids = np.array([3, 7])
    one = Round(ids, np.zeros(5), 0.0, np.array([2, 3]), (rolled(ids[:1], n=2).payloads[0], None))
    store = GroupStore.empty().add(one, np.array([0, 1]), step=4, index=0)
    assert store.payloads[1] is None
    with pytest.raises(ValueError, match="token lists"):  # a mix cannot be saved as tokens
        store.state()
    store = store.keep(np.array([True, False]))
    assert store.counts.tolist() == [2] and store.group_rewards(0).tolist() == [0.0, 0.0]


def test_held_payloads_round_trip_through_the_sampler_file(tmp_path: Any) -> None:
    """A checkpoint's sampler file keeps the store's payloads exactly (`save_sampler`)."""
    config = PilotCommitConfig(pilot=2, candidates=2, max_rounds=1)
    pc = PilotCommit(make_selector("uniform", TaskPool(num_tasks=40), seed=0), config)
    pc.sample(0, 2, 8, rolled)
    path = tmp_path / SAMPLER_FILE
    save_sampler(pc, path)
    back = load_sampler(path, make_selector("uniform", TaskPool(num_tasks=40), seed=0))
    assert isinstance(back, PilotCommit) and back.buffer.size == pc.buffer.size
    assert back.buffer.payloads == pc.buffer.payloads
    assert back.buffer.rewards.tolist() == pc.buffer.rewards.tolist()
    assert back.held() == pc.held()


@pytest.mark.parametrize(
    "payload",
    [{"text": "x"}, ["abc"], [[1.5]], [[True]], [[-1]], [[1 << 40]]],
)
def test_a_payload_a_checkpoint_cannot_hold_is_refused_with_the_reason(payload: Any) -> None:
    with pytest.raises(ValueError, match="token lists"):
        payload_state([payload])


def test_a_damaged_payload_state_is_refused() -> None:
    good = payload_state([[[1, 2], [3]]])
    assert read_payloads(good, "t", 1) == ([[1, 2], [3]],)
    with pytest.raises(ValueError, match="do not match"):
        read_payloads(good, "t", 2)
    bad = dict(good, tokens=good["tokens"][:-1])
    with pytest.raises(ValueError, match="do not match"):
        read_payloads(bad, "t", 1)
    with pytest.raises(ValueError, match="form"):
        read_payloads({"form": "pickle"}, "t", 1)


def test_an_older_pilot_buffer_without_payloads_still_reads() -> None:
    """A Pilot-Commit state saved before the store held payloads: a (rows, k) reward matrix."""
    raw = {
        "task": np.array([1, 2]),
        "step": np.array([0, 0]),
        "round": np.array([0, 0]),
        "group": np.array([0, 1]),
        "rewards": np.array([[0.0, 1.0], [1.0, 0.0]]),
    }
    store = GroupStore.read(raw, "pilot_commit", 10)
    assert store.counts.tolist() == [2, 2] and store.payloads == (None, None)
    assert store.matrix().tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_a_rollout_with_the_wrong_number_of_payloads_is_refused() -> None:
    sampler = PassThrough(make_selector("uniform", TaskPool(num_tasks=20), seed=0))

    def short(ids: np.ndarray) -> Rolled:
        return Rolled(np.zeros(4 * len(ids)), [[]])

    with pytest.raises(ValueError, match="payloads for 5 prompts"):
        sampler.sample(0, 5, 4, short)


def test_bare_rewards_give_groups_without_payloads_and_asking_for_them_says_how() -> None:
    sampler = PassThrough(make_selector("uniform", TaskPool(num_tasks=20), seed=0))
    train = sampler.sample(0, 5, 4, lambda ids: rolled(ids).rewards).train
    assert train.payloads == ()
    with pytest.raises(ValueError, match="return Rolled"):
        train.payload_parts(0)
