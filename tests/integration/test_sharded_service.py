"""The sharded selector service in-process (no Ray): BOTS's posteriors equal one selector
fed the same rounds, selection merges to one selector's choice (greedy) or law
(Thompson), resume and driver recovery are exact, and the batched client group-commits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.selectors.bots import BOTSSelector
from frontier_rft.service import ServiceConfig
from frontier_rft.service.shard import ShardService
from frontier_rft.service.sharded import (
    BatchedClient,
    LocalShards,
    ShardedService,
    local_sharded,
    shard_config,
    shard_selectors,
)

pytestmark = pytest.mark.integration

N = 90


def world(seed: int = 0) -> tuple[TaskPool, np.ndarray]:
    """Reference rates below the policy's early on (mu~ > 1: the interpolation clips)."""
    rng = np.random.default_rng(seed)
    weak = rng.uniform(0.0, 0.5, N)
    strong = np.clip(weak + rng.uniform(0.0, 0.4, N), 0.0, 1.0)
    rate = np.clip(strong + rng.uniform(-0.2, 0.4, N), 0.0, 1.0)
    return TaskPool(num_tasks=N, reference_pass_rates=np.c_[weak, strong]), rate


def deliveries(seed: int, rounds: int) -> list[list[tuple[int, np.ndarray, np.ndarray]]]:
    """Per round, feedback pieces: on time, split, held back and delivered late."""
    rng = np.random.default_rng(seed)
    _, rate = world()
    out: list[list[tuple[int, np.ndarray, np.ndarray]]] = []
    held: list[tuple[int, np.ndarray, np.ndarray]] = []
    for t in range(rounds):
        ids = rng.choice(N, 10, replace=False)
        task_ids = np.repeat(ids, rng.integers(2, 6, ids.shape[0]))
        rewards = (rng.random(task_ids.shape[0]) < rate[task_ids]).astype(np.float64)
        first = np.isin(task_ids, ids[:6])
        now = [(2 * t, task_ids[first], rewards[first])]
        (held if rng.random() < 0.4 else now).append((2 * t, task_ids[~first], rewards[~first]))
        if held and rng.random() < 0.5:
            now.append(held.pop(0))
        out.append(now)
    out.append(held)
    return out


def posterior(sel: BOTSSelector) -> tuple[np.ndarray, np.ndarray]:
    return sel.posterior_mean(), sel.effective_sample_size()


def sharded_posterior(svc: ShardedService) -> tuple[np.ndarray, np.ndarray]:
    shards = svc.shards
    assert isinstance(shards, LocalShards)
    parts = [posterior(s.selector) for s in shards.services]  # type: ignore[arg-type]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("bots", {}),
    ("bots", {"adaptive_rho": True, "lam": 0.3}),
    ("bots", {"reward_model": "gaussian"}),
    ("bots", {"candidates": 24}),
    ("bots", {"candidates": 24, "lam": 0.5, "rho": 0.4}),
    ("mopps", {"candidates": 16}),
    ("dots", {}),
]


@pytest.mark.parametrize(("name", "cfg"), CONFIGS, ids=[f"{n}-{c}" for n, c in CONFIGS])
def test_sharded_posteriors_equal_one_selector_fed_the_same_rounds(
    name: str, cfg: dict[str, Any]
) -> None:
    pool, _ = world()
    one = make_selector(name, pool, seed=0, **cfg)
    assert isinstance(one, BOTSSelector)
    svc = local_sharded(name, pool, 3, seed=0, **cfg)
    for pieces in deliveries(1, 40):
        for step, ids, rewards in pieces:
            if ids.size:
                one.update(Feedback(ids, rewards, step), idempotent=True)
                svc.update(Feedback(ids, rewards, step))
        one.select(5)
        svc.select(5)
    one.flush()
    svc.flush()
    exact = not cfg.get("candidates")
    got, want = sharded_posterior(svc), posterior(one)
    for g, w in zip(got, want, strict=True):
        if exact:  # the same arithmetic, task by task
            np.testing.assert_array_equal(g, w)
        else:  # lazy catch-up at other moments: equal to rounding
            np.testing.assert_allclose(g, w, rtol=1e-11)
    m1 = one.metrics()
    assert svc.metrics()["feedback/rollouts"] == m1["feedback/rollouts"]
    shards = svc.shards
    assert isinstance(shards, LocalShards)
    for s in shards.services:
        m = s.selector.metrics()
        for key in ("mu_tilde", "rho", "clock"):
            assert m[f"{name}/{key}"] == pytest.approx(m1[f"{name}/{key}"], nan_ok=True)


def test_sharded_greedy_selection_is_one_selectors_selection() -> None:
    pool, rate = world()
    one = make_selector("dots", pool, seed=0)
    svc = local_sharded("dots", pool, 4, seed=0)
    rng = np.random.default_rng(3)
    for t in range(25):
        a, b = one.select(7), svc.select(7)
        if t > 0:  # after the first step the posterior means have no ties at the cut
            np.testing.assert_array_equal(np.sort(a), np.sort(b))
        task_ids = np.repeat(a, 4)
        rewards = (rng.random(task_ids.shape[0]) < rate[task_ids]).astype(np.float64)
        one.update(Feedback(task_ids, rewards, t))
        svc.update(Feedback(task_ids, rewards, t))


def test_sharded_thompson_selection_has_one_selectors_law() -> None:
    """Frequencies of each task in a pick of 2 from 8 fixed posteriors, sharded or not."""
    pool = TaskPool(num_tasks=8)
    evidence = [(i, [1.0] * i + [0.0] * (7 - i)) for i in range(8)]
    one = make_selector("mopps", pool, seed=1)
    svc = local_sharded("mopps", pool, 3, seed=1)
    for i, r in evidence:
        fb = Feedback(np.full(len(r), i), np.array(r), step=0)
        one.update(fb)
        svc.update(fb)
    rounds = 3000
    freq = np.zeros((2, 8))
    for _ in range(rounds):
        freq[0, one.select(2)] += 1
        freq[1, svc.select(2)] += 1
    p = freq / rounds
    se = np.sqrt(p[0] * (1 - p[0]) / rounds) + 1e-3
    assert np.all(np.abs(p[0] - p[1]) < 5 * np.sqrt(2) * se), p
    assert p[0, 3] + p[0, 4] > 0.5  # tasks near 0.5 dominate: the test has power


def test_a_killed_shard_resumes_from_its_log_and_the_run_is_unchanged(tmp_path: Path) -> None:
    pool, _ = world()
    cfg = ServiceConfig(checkpoint_dir=str(tmp_path / "a"), checkpoint_every_ops=7)
    ref_cfg = ServiceConfig(checkpoint_dir=str(tmp_path / "b"), checkpoint_every_ops=7)
    svc = local_sharded("bots", pool, 3, cfg, seed=2, candidates=20)
    ref = local_sharded("bots", pool, 3, ref_cfg, seed=2, candidates=20)
    shards = svc.shards
    assert isinstance(shards, LocalShards)
    picked = ([], [])
    for r, pieces in enumerate(deliveries(4, 30)):
        for step, ids, rewards in pieces:
            if ids.size:
                svc.update(Feedback(ids, rewards, step))
                ref.update(Feedback(ids, rewards, step))
        if r in (9, 20):  # crash shard 1: no final checkpoint, a torn line in its log
            old = shards.services[1]
            assert old._journal is not None
            old._journal._wal.write(b'{"seq": 99999, "op": "upd')  # type: ignore[union-attr]
            old._journal.close()
            spec = make_selector("bots", old.selector.pool, seed=0, candidates=20)
            shards.services[1] = ShardService(
                spec, shard_config(cfg, 1), shard=1, bounds=svc.partition.bounds
            )
            assert shards.services[1].replayed > 0
        picked[0].append(svc.select(4))
        picked[1].append(ref.select(4))
    for a, b in zip(*picked, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(shards.services, ref.shards.services, strict=True):  # type: ignore[attr-defined]
        np.testing.assert_array_equal(
            a.selector.state_dict()["algo"]["alpha"], b.selector.state_dict()["algo"]["alpha"]
        )


def test_a_new_driver_levels_shards_a_round_apart(tmp_path: Path) -> None:
    pool, _ = world()
    part, selectors = shard_selectors("bots", pool, 3, seed=5)
    services = [ShardService(s, shard=i, bounds=part.bounds) for i, s in enumerate(selectors)]
    svc = ShardedService(LocalShards(services))
    for pieces in deliveries(6, 5):
        for step, ids, rewards in pieces:
            if ids.size:
                svc.update(Feedback(ids, rewards, step))
        svc.select(4)
    # The driver dies after shard 0 got the next round's propose, before the others did.
    r = svc._round + 1
    svc.update(Feedback(np.array([1, 1, 50, 50]), np.array([1.0, 0.0, 1.0, 1.0]), step=20))
    prep = [s.prepare() for s in services]
    coord = svc._coord
    assert coord is not None
    plan = [p.to_state() for p in coord.plan([p["summary"] for p in prep])]
    services[0].propose(r, plan, [p["cut"] for p in prep], 4, None)
    assert [s._round for s in services] == [r, r - 1, r - 1]
    fresh = ShardedService(LocalShards(services))
    assert [s._round for s in services] == [r, r, r]
    clocks = {s.selector.metrics()["bots/clock"] for s in services}
    assert clocks == {20.0}  # every shard folded step 20 (forgetting reached all tasks)
    assert len(fresh.select(4)) == 4


def test_batched_client_flushes_per_groups_and_per_step_with_one_call_per_shard() -> None:
    pool, _ = world()
    svc = local_sharded("mopps", pool, 3)
    calls: list[int] = []
    shards = svc.shards
    original = shards.call

    def counting(method: str, args: Any, retry: bool = True) -> Any:
        if method == "update_many":
            calls.append(sum(a is not None for a in args))
        return original(method, args, retry)

    shards.call = counting  # type: ignore[method-assign]
    client = BatchedClient(shards, svc.partition, flush_groups=8)
    acked = 0
    for i in range(7):  # 7 groups of step 0: buffered
        acked += client.report(Feedback(np.full(4, i * 12), np.ones(4), step=0))
    assert calls == [] and client.buffered_groups == 7
    acked += client.report(Feedback(np.full(4, 85), np.ones(4), step=0))  # the 8th: flush
    assert len(calls) == 1 and calls[0] == 3 and acked == 32  # one update_many per shard
    client.report(Feedback(np.full(4, 3), np.ones(4), step=0))
    acked = client.report(Feedback(np.full(4, 3), np.ones(4), step=1))  # new step: flush
    assert acked == 4 and len(calls) == 2
    with pytest.raises(ValueError, match="out of range"):
        client.report(Feedback(np.array([N]), np.ones(1), step=1))
    assert client.buffered_groups == 1  # the bad one was never buffered
    client.flush()
    svc.flush()
    assert svc.metrics()["feedback/rollouts"] == 32 + 4 + 4


def test_a_version_one_shard_would_refuse_changes_no_shard() -> None:
    """Shards learn policy versions apart; a report one shard refuses reaches none and is
    not buffered (a buffered one would make every later flush raise)."""
    pool, _ = world()
    svc = local_sharded("mopps", pool, 3, ServiceConfig(max_version_jump=5))
    shards = svc.shards
    assert isinstance(shards, LocalShards)
    calls: list[str] = []
    original = shards.call

    def counting(method: str, args: Any, retry: bool = True) -> Any:
        calls.append(method)
        return original(method, args, retry)

    shards.call = counting  # type: ignore[method-assign]
    svc.update(Feedback(np.full(4, 1), np.ones(4), step=0, policy_version=4))  # shard 0 only
    assert [s.policy_version for s in shards.services] == [4, -1, -1]
    before = [s.selector.state_dict() for s in shards.services]
    seqs = [s.seq for s in shards.services]
    client = BatchedClient(shards, svc.partition, max_version_jump=5)
    late = Feedback(np.array([1, 1, 45, 45]), np.ones(4), step=1, policy_version=8)
    with pytest.raises(ValueError, match="max_version_jump"):
        client.report(late)  # shard 0 would accept 8 (4 + 5), shard 1 refuses it (-1 + 5)
    assert [s.seq for s in shards.services] == seqs
    for s, state in zip(shards.services, before, strict=True):
        np.testing.assert_equal(s.selector.state_dict(), state)
    assert client.buffered_groups == 0  # refused, not buffered
    svc.update(Feedback(np.full(4, 45), np.ones(4), step=2, policy_version=4))
    calls.clear()
    client.report(late)  # now within every shard's limit
    assert client.flush() == 4
    assert calls == ["check_many", "update_many"]
    assert client.known_version == -1  # shard 2 has seen no version
    calls.clear()
    client.report(Feedback(np.array([1]), np.ones(1), step=3, policy_version=4))
    assert client.flush() == 1 and calls == ["update_many"]  # within the known limit


@pytest.mark.parametrize("name", ["uniform", "prioritized"])
def test_other_selectors_split_the_batch_across_shards(name: str) -> None:
    pool, rate = world()
    svc = local_sharded(name, pool, 3, dedupe_window=1000)
    rng = np.random.default_rng(0)
    seen: set[int] = set()
    for t in range(20):
        ids = svc.select(9)
        assert ids.shape == (9,) and np.unique(ids).size == 9
        assert ids.min() >= 0 and ids.max() < N
        seen.update(ids.tolist())
        task_ids = np.repeat(ids, 4)
        svc.update(Feedback(task_ids, (rng.random(36) < rate[task_ids]) * 1.0, t))
    svc.flush()
    assert svc.metrics()["feedback/rollouts"] == 20 * 36
    assert len(seen) > 40


# ------------------------------------------------------------------ promises (issue 28)
@pytest.mark.parametrize("name", ["mopps", "uniform"])  # merged rounds, split rounds
def test_the_trainers_policy_version_reaches_every_shard_and_drop_refuses_stale(
    name: str, tmp_path: Path
) -> None:
    """select(policy_version=v) on the driver moves every shard to v (also through its log),
    so staleness='drop' drops feedback sampled more than max_lag versions ago."""
    pool, _ = world()
    cfg = ServiceConfig(staleness="drop", max_lag=1, checkpoint_dir=str(tmp_path))
    svc = local_sharded(name, pool, 3, cfg)
    shards = svc.shards
    assert isinstance(shards, LocalShards)
    ids = svc.select(6, policy_version=5)
    assert [s.policy_version for s in shards.services] == [5, 5, 5]
    task_ids = np.repeat(ids, 2)
    svc.update(Feedback(task_ids, np.ones(12), step=0, policy_version=3))  # lag 2 > 1
    svc.flush()
    m = svc.metrics()
    assert m["feedback/rollouts"] == 0 and m["service/dropped_stale_rollouts"] == 12
    svc.update(Feedback(task_ids, np.ones(12), step=1, policy_version=4))  # lag 1: kept
    svc.flush()
    assert svc.metrics()["feedback/rollouts"] == 12
    for s in range(3):  # a shard rebuilt from its checkpoint and log knows the version
        old = shards.services[s]
        old.close()
        spec = make_selector(name, old.selector.pool, seed=0)
        again = ShardService(spec, shard_config(cfg, s), shard=s, bounds=svc.partition.bounds)
        assert again.policy_version == 5
        again.close()


def test_a_far_future_select_version_is_refused_by_the_driver_and_changes_nothing() -> None:
    pool, _ = world()
    svc = local_sharded("uniform", pool, 3, ServiceConfig(max_version_jump=5))
    shards = svc.shards
    assert isinstance(shards, LocalShards)
    svc.select(3, policy_version=2)
    seqs = [s.seq for s in shards.services]
    with pytest.raises(ValueError, match=r"policy_version 1000000000 is .* max_version_jump=5"):
        svc.select(3, policy_version=10**9)
    assert [s.seq for s in shards.services] == seqs
    assert [s.policy_version for s in shards.services] == [2, 2, 2]
    assert len(svc.select(3, policy_version=7)) == 3  # 2 + 5: within the limit


def _client(flush_groups: int = 64, **cfg: Any) -> tuple[ShardedService, BatchedClient]:
    pool, _ = world()
    svc = local_sharded("uniform", pool, 3, ServiceConfig(**cfg))
    bounds = svc.info["reward_bounds"]
    client = BatchedClient(
        svc.shards,
        svc.partition,
        flush_groups=flush_groups,
        reward_bounds=(bounds[0], bounds[1]),
        max_version_jump=svc.info["max_version_jump"],
    )
    return svc, client


def test_a_report_retried_after_its_flush_failed_is_counted_once() -> None:
    svc, client = _client(flush_groups=2)
    shards = svc.shards
    original, fail = shards.call, [True]

    def flaky(method: str, args: Any, retry: bool = True) -> Any:
        if method == "update_many" and fail[0]:
            fail[0] = False
            raise ConnectionError("shard 1 unreachable")
        return original(method, args, retry)

    shards.call = flaky  # type: ignore[method-assign]
    client.report(Feedback(np.full(4, 1), np.ones(4), step=0))
    second = Feedback(np.full(4, 50), np.ones(4), step=0)
    with pytest.raises(ConnectionError):
        client.report(second)  # the 2nd group triggers the flush, which fails
    assert client.buffered_groups == 1  # the rejected report left nothing behind
    assert client.report(second) == 8  # the retry: both groups, each once
    svc.flush()
    assert svc.metrics()["feedback/rollouts"] == 8


def test_a_repeated_report_is_not_double_counted() -> None:
    svc, client = _client()
    fb = Feedback(np.array([1, 1, 50, 50]), np.ones(4), step=0)
    client.report(fb)
    client.report(fb)  # the same groups again, still in the buffer
    assert client.buffered_groups == 2
    client.flush()
    client.report(fb)  # and again after they were delivered
    client.flush()
    svc.flush()
    assert svc.metrics()["feedback/rollouts"] == 4


def test_a_far_future_report_is_refused_and_never_wedges_the_client() -> None:
    svc, client = _client(max_version_jump=5)
    client.report(Feedback(np.full(2, 1), np.ones(2), step=0, policy_version=0))
    with pytest.raises(ValueError, match=r"Feedback.policy_version 1000000 is .* ahead"):
        client.report(Feedback(np.full(2, 2), np.ones(2), step=0, policy_version=10**6))
    assert client.buffered_groups == 1  # refused as the single service does: not buffered
    client.report(Feedback(np.full(2, 60), np.ones(2), step=0, policy_version=3))
    assert client.flush() == 4  # later reports and flushes work
    svc.flush()
    assert svc.metrics()["feedback/rollouts"] == 4


def _lose_next_reply(svc: ShardedService) -> None:
    """The next update_many reaches every shard, then its reply is lost (a shard died
    mid-call, a connection dropped)."""
    shards = svc.shards
    original, armed = shards.call, [True]

    def lossy(method: str, args: Any, retry: bool = True) -> Any:
        out = original(method, args, retry)
        if method == "update_many" and armed[0]:
            armed[0] = False
            raise ConnectionError("the reply was lost")
        return out

    shards.call = lossy  # type: ignore[method-assign]


@pytest.mark.parametrize(
    ("staleness", "dropped", "thinned", "folded"),
    [("drop", 16, 0, 0), ("downweight", 0, 12, 4)],  # lag 2 of max_lag 1 / of max_lag 2
)
def test_a_stale_report_retried_after_its_reply_was_lost_is_counted_once(
    staleness: str, dropped: int, thinned: int, folded: int
) -> None:
    """A shard de-duplicates a re-delivered group before judging its staleness: dropped
    and thinned rollouts are counted once, as folded ones are."""
    max_lag = 1 if staleness == "drop" else 2
    svc, client = _client(flush_groups=2, staleness=staleness, max_lag=max_lag)
    svc.select(3, policy_version=10)
    _lose_next_reply(svc)
    fb = Feedback(np.repeat([1, 50], 8), np.ones(16), step=0, policy_version=8)  # lag 2
    with pytest.raises(ConnectionError):
        client.report(fb)
    assert client.report(fb) == 16  # the retry is acknowledged: all 16 rollouts
    svc.flush()
    m = svc.metrics()
    assert m["service/dropped_stale_rollouts"] == dropped  # decay 0.5 ** 2: 2 of 8 kept
    assert m["service/thinned_rollouts"] == thinned
    assert m["feedback/rollouts"] == folded
    assert m["service/duplicates_dropped"] == 16  # the whole retry
    assert m["service/dropped_stale_updates"] == (2 if staleness == "drop" else 0)  # 2 shards


def test_a_group_folded_before_its_reply_was_lost_is_not_dropped_as_stale_on_retry() -> None:
    """The retry of a group a shard accepted arrives after the trainer moved past max_lag:
    it is a duplicate, not a stale drop (the group was folded)."""
    svc, client = _client(flush_groups=2, staleness="drop", max_lag=1)
    svc.select(3, policy_version=10)
    _lose_next_reply(svc)
    fb = Feedback(np.repeat([1, 50], 8), np.ones(16), step=0, policy_version=10)  # lag 0
    with pytest.raises(ConnectionError):
        client.report(fb)
    svc.select(3, policy_version=20)  # the retry now lags 10 > max_lag
    assert client.report(fb) == 16
    svc.flush()
    m = svc.metrics()
    assert m["feedback/rollouts"] == 16
    assert m["service/dropped_stale_rollouts"] == 0
    assert m["service/accepted_rollouts"] == 16 and m["service/duplicates_dropped"] == 16


def test_a_shard_checkpoint_with_its_groups_under_shard_still_resumes_them(
    tmp_path: Path,
) -> None:
    """A development checkpoint of 0.2.0 kept a shard's delivered groups (and their
    duplicate count) under "shard"; resuming one keeps them."""
    pool = TaskPool(num_tasks=N)
    cfg = ServiceConfig(checkpoint_dir=str(tmp_path), checkpoint_every_s=0)
    shard = ShardService(make_selector("uniform", pool), cfg, shard=0, bounds=(0, N))
    fb = Feedback(np.repeat([1, 5], 2), np.ones(4), step=0)
    shard.update(fb, idempotent=True)
    shard.update(fb, idempotent=True)
    shard.close()
    path = max(tmp_path.glob("ckpt-*.json"))
    state = json.loads(path.read_text(encoding="utf-8"))
    state["shard"]["seen"] = state.pop("seen")
    state["shard"]["counts"]["duplicates_dropped"] = state["counts"].pop("duplicates_dropped")
    path.write_text(json.dumps(state), encoding="utf-8")
    resumed = ShardService(make_selector("uniform", pool), cfg, shard=0, bounds=(0, N))
    assert resumed.update(fb, idempotent=True)["duplicates"] == 4
    assert resumed.metrics()["service/duplicates_dropped"] == 8
    assert resumed.service_state()["seen"] == {"0": [1, 5]}
    resumed.close()
