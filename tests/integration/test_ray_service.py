"""The shared selector service: in-process (no Ray) for its logic, then behind a real Ray actor.

In-process tests check what the service promises whatever the transport: resuming from a
checkpoint plus the write-ahead log reproduces an uninterrupted run exactly, stale
feedback is accepted / down-weighted / dropped as configured, and leases expire together
with prioritized replay's own in-flight timeout. The Ray tests start a local Ray once
per module (2 CPUs, dashboard off, auth off, temp dir in the repo) and check that
concurrent workers lose and double-count nothing, also across a kill and restart.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import Feedback, Selector, TaskPool, make_selector
from frontier_rft.service import SelectorService, ServiceConfig
from frontier_rft.service.journal import read_log

pytestmark = pytest.mark.integration

NUM_TASKS = 600
PASS = np.random.default_rng(7).random(NUM_TASKS)  # true pass rate per task


def make_pool() -> TaskPool:
    """Prompt text only (bots derives its features from it)."""
    return TaskPool(num_tasks=NUM_TASKS, prompts=[f"task {i}" for i in range(NUM_TASKS)])


def assert_tree_equal(a: Any, b: Any, path: str = "") -> None:
    """Exact equality of two state trees (NaN equals NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {set(a) ^ set(b)}"
        for k in a:
            assert_tree_equal(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_tree_equal(x, y, f"{path}/{i}")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), path
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), path
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def folded_state(target: SelectorService | Selector) -> dict[str, Any]:
    """The selector's state but for its duplicate count: the service drops duplicates
    before they reach its selector (and counts them in service/duplicates_dropped)."""
    state = target.selector_state() if isinstance(target, SelectorService) else target.state_dict()
    state["base"]["totals"].pop("duplicates_dropped")
    return state


def rollouts(ids: np.ndarray, rng: np.random.Generator, n: int = 4) -> tuple[np.ndarray, ...]:
    rep = np.repeat(ids, n)
    return rep, (rng.random(rep.shape[0]) < PASS[rep]).astype(np.float64)


def script(seed: int, length: int) -> list[tuple[str, Any]]:
    """A random interleaving of selects, updates (in pieces, late, retried), flushes and
    version bumps, as several asynchronous workers would produce it."""
    rng = np.random.default_rng(seed)
    ops: list[tuple[str, Any]] = []
    outstanding: list[tuple[int, np.ndarray, np.ndarray, int]] = []
    step = 0
    for _ in range(length):
        r = rng.random()
        if r < 0.35 or not outstanding:
            ops.append(("select", int(rng.integers(1, 9))))
            outstanding.append((step, *rollouts(rng.choice(NUM_TASKS, 6, replace=False), rng), 0))
            step += 1
        elif r < 0.85:
            i = int(rng.integers(len(outstanding)))
            s, ids, rew, _ = outstanding.pop(i)
            cut = 4 * int(rng.integers(1, ids.shape[0] // 4 + 1))  # whole groups per piece
            fb = Feedback(ids[:cut], rew[:cut], step=s, policy_version=s)
            ops.append(("update", fb))
            if rng.random() < 0.2:
                ops.append(("update", fb))  # a retried delivery
            if cut < ids.shape[0]:
                outstanding.append((s, ids[cut:], rew[cut:], 0))
        elif r < 0.95:
            ops.append(("flush", None))
        else:
            ops.append(("version", step))
    return ops


def apply(target: SelectorService | Selector, op: tuple[str, Any]) -> None:
    kind, arg = op
    if kind == "select":
        target.select(arg)
    elif kind == "update":
        target.update(arg, idempotent=True)
    elif kind == "flush":
        target.flush()
    elif isinstance(target, SelectorService):
        target.set_policy_version(arg)


# --------------------------------------------------------------------- in-process service
@pytest.mark.parametrize("name", ["prioritized", "bots"])
def test_resume_after_crash_equals_uninterrupted_run(tmp_path: Path, name: str) -> None:
    """Crash (disk state copied mid-run, a torn record appended), resume, continue: the
    selector equals a plain selector fed the same operations, and the service equals the
    service that never stopped."""
    ops = script(seed=1, length=400)
    live_dir = tmp_path / "live"
    cfg = ServiceConfig(checkpoint_dir=str(live_dir), checkpoint_every_ops=37, checkpoint_every_s=0)
    now = [0.0]  # one clock for both services, so their lease times agree

    def clock() -> float:
        return now[0]

    live = SelectorService(make_selector(name, make_pool(), seed=3), cfg, clock=clock)
    reference = make_selector(name, make_pool(), seed=3)
    crash_at = 250
    for op in ops[:crash_at]:
        now[0] += 0.5
        apply(live, op)
        apply(reference, op)
    # What a killed process leaves on disk: the directory as it is now, plus a torn line.
    crashed = tmp_path / "crashed"
    shutil.copytree(live_dir, crashed, ignore=shutil.ignore_patterns("LOCK"))
    segment = sorted(crashed.glob("wal-*.jsonl"))[-1]
    with open(segment, "ab") as fh:
        fh.write(b'{"seq":999999,"op":"upd')
    resumed = SelectorService(
        make_selector(name, make_pool(), seed=3),
        ServiceConfig(checkpoint_dir=str(crashed), checkpoint_every_ops=37, checkpoint_every_s=0),
        clock=clock,
    )
    assert resumed.replayed == crash_at % 37 > 0  # the last checkpoint was at 222
    assert resumed.seq == live.seq
    assert_tree_equal(folded_state(resumed), folded_state(reference))
    assert_tree_equal(resumed.service_state(), live.service_state())
    for op in ops[crash_at:]:
        now[0] += 0.5
        for target in (live, resumed, reference):
            apply(target, op)
    for target in (live, resumed):
        target.flush()
    reference.flush()
    assert_tree_equal(folded_state(resumed), folded_state(reference))
    assert_tree_equal(resumed.service_state(), live.service_state())
    m, ref = resumed.metrics(), reference.metrics()
    assert m["feedback/rollouts"] == ref["feedback/rollouts"] > 0
    # The retries were dropped, not counted: by the service, as the selector would.
    assert m["service/duplicates_dropped"] == ref["feedback/duplicates_dropped"] > 0
    assert m["feedback/duplicates_dropped"] == 0
    live.close()
    resumed.close()


def test_checkpoints_are_periodic_atomic_and_prune_the_log(tmp_path: Path) -> None:
    now = [1000.0]
    cfg = ServiceConfig(
        checkpoint_dir=str(tmp_path), checkpoint_every_ops=10, checkpoint_every_s=5.0
    )
    svc = SelectorService(make_selector("uniform", make_pool()), cfg, clock=lambda: now[0])
    rng = np.random.default_rng(0)
    for t in range(12):  # 24 operations: checkpoints at 10 and 20
        ids = svc.select(3)
        svc.update(Feedback(*rollouts(ids, rng), step=t))
    assert svc.metrics()["service/checkpoint_seq"] == 20
    assert [p.name for p in tmp_path.glob("wal-*")] == ["wal-000000000021.jsonl"]
    assert {p.name for p in tmp_path.glob("ckpt-*")} == {
        "ckpt-000000000020.npz",
        "ckpt-000000000020.json",
    }
    now[0] += 5.0  # the next operation is due by time
    svc.select(2)
    assert svc.metrics()["service/checkpoint_seq"] == 25
    svc.update(Feedback(*rollouts(np.array([1]), rng), step=99, policy_version=np.int64(3)))
    assert svc.save() == {"seq": 26, "path": str(tmp_path / "ckpt-000000000026.npz")}
    assert read_log(tmp_path) == []
    svc.close()
    # A second live service on the same directory is refused.
    svc = SelectorService(make_selector("uniform", make_pool()), cfg)
    with pytest.raises(RuntimeError, match="in use by another live selector service"):
        SelectorService(
            make_selector("uniform", make_pool()),
            ServiceConfig(checkpoint_dir=str(tmp_path), lock_timeout_s=0.2),
        )
    svc.close()
    with pytest.raises(ValueError, match="selector 'uniform' != 'bots'"):
        SelectorService(make_selector("bots", make_pool()), cfg)


def test_checkpoint_only_durability_resumes_from_the_last_checkpoint(tmp_path: Path) -> None:
    """durability='checkpoint' writes no log: a restart resumes from the last save()."""
    cfg = ServiceConfig(checkpoint_dir=str(tmp_path / "live"), durability="checkpoint")
    svc = SelectorService(make_selector("bots", make_pool()), cfg)
    rng = np.random.default_rng(0)
    for t in range(3):
        svc.update(Feedback(*rollouts(svc.select(2), rng), step=t))
    saved = svc.save()
    svc.update(Feedback(*rollouts(svc.select(2), rng), step=3))  # after the checkpoint
    assert not list((tmp_path / "live").glob("wal-*"))
    expected = svc.selector_state()
    # A crash: the directory as it is now (no final checkpoint).
    shutil.copytree(tmp_path / "live", tmp_path / "crashed", ignore=shutil.ignore_patterns("LOCK"))
    cfg = dataclasses.replace(cfg, checkpoint_dir=str(tmp_path / "crashed"))
    resumed = SelectorService(make_selector("bots", make_pool()), cfg)
    assert resumed.seq == saved["seq"] == 6 and resumed.replayed == 0
    assert resumed.metrics()["feedback/pending_rollouts"] == 8  # step 2's, not step 3's
    assert expected["base"]["select_calls"] == resumed.selector_state()["base"]["select_calls"] + 1
    resumed.close()
    svc.close()


def test_staleness_accept_drop_downweight() -> None:
    rng = np.random.default_rng(0)
    ids = np.arange(10)
    rep, rew = rollouts(ids, rng, n=8)

    def fresh(staleness: str) -> SelectorService:
        cfg = ServiceConfig(staleness=staleness, max_lag=2, downweight_decay=0.5)
        svc = SelectorService(make_selector("bots", make_pool()), cfg)
        svc.set_policy_version(10)
        return svc

    accept = fresh("accept")
    ack = accept.update(Feedback(rep, rew, step=0, policy_version=3))
    assert ack == {"seq": 2, "lag": 7, "accepted": 80, "dropped": 0, "thinned": 0, "duplicates": 0}

    drop = fresh("drop")
    assert drop.update(Feedback(rep, rew, step=0, policy_version=8))["accepted"] == 80
    ack = drop.update(Feedback(rep, rew, step=1, policy_version=7))
    assert ack["dropped"] == 80 and ack["accepted"] == 0
    drop.flush()
    m = drop.metrics()
    assert m["feedback/rollouts"] == 80
    assert m["service/dropped_stale_rollouts"] == 80 and m["service/dropped_stale_updates"] == 1

    down = fresh("downweight")
    # lag 1 keeps ceil(0.5 * 8) = 4 of each group's 8; lag 2 keeps 2; lag 3 is dropped.
    for step, version, kept in ((0, 9, 40), (1, 8, 20), (2, 7, 0)):
        ack = down.update(Feedback(rep, rew, step=step, policy_version=version), idempotent=True)
        assert ack["accepted"] == kept
    # A retry is a duplicate before it is thinned again: each group counts once.
    ack = down.update(Feedback(rep, rew, step=0, policy_version=9), idempotent=True)
    assert ack["accepted"] == ack["thinned"] == 0 and ack["duplicates"] == 80
    down.flush()
    m = down.metrics()
    assert m["feedback/rollouts"] == 60 and m["service/duplicates_dropped"] == 80
    assert m["feedback/groups"] == 20  # every group kept, only thinner
    assert m["service/thinned_rollouts"] == 40 + 60
    assert m["service/dropped_stale_rollouts"] == 80
    with pytest.raises(ValueError, match=r"needs Feedback\.policy_version"):
        down.update(Feedback(rep, rew, step=5))


def _stale_service(
    staleness: str, max_lag: int, checkpoint_dir: Path | None = None
) -> SelectorService:
    cfg = ServiceConfig(
        staleness=staleness,
        max_lag=max_lag,
        downweight_decay=0.5,
        checkpoint_dir=None if checkpoint_dir is None else str(checkpoint_dir),
        checkpoint_every_s=0,
    )
    svc = SelectorService(make_selector("bots", make_pool()), cfg)
    svc.set_policy_version(10)
    return svc


STALE = Feedback(np.repeat([1, 50], 8), np.ones(16), step=0, policy_version=8)  # lag 2


@pytest.mark.parametrize(
    ("staleness", "max_lag", "dropped", "thinned", "folded"),
    [("drop", 1, 16, 0, 0), ("downweight", 2, 0, 12, 4)],  # decay 0.5 ** 2: 2 of 8 kept
)
def test_a_retried_stale_update_is_counted_once(
    staleness: str, max_lag: int, dropped: int, thinned: int, folded: int
) -> None:
    """A re-sent group is a duplicate before its staleness is judged: dropped, thinned and
    folded rollouts count each group once, as a shard counts them."""
    svc = _stale_service(staleness, max_lag)
    first = svc.update(STALE, idempotent=True)
    retry = svc.update(STALE, idempotent=True)
    svc.flush()
    m = svc.metrics()
    assert m["service/dropped_stale_rollouts"] == dropped
    assert m["service/dropped_stale_updates"] == (1 if staleness == "drop" else 0)
    assert m["service/thinned_rollouts"] == thinned
    assert m["service/accepted_rollouts"] == m["feedback/rollouts"] == folded
    assert m["service/duplicates_dropped"] == 16 and m["service/updates"] == 2
    assert first["dropped"] + first["thinned"] + first["accepted"] == 16
    assert first["duplicates"] == 0
    assert retry == {
        "seq": 3,
        "lag": 2,
        "accepted": 0,
        "dropped": 0,
        "thinned": 0,
        "duplicates": 16,
    }


def test_a_folded_group_retried_after_the_trainer_moved_on_is_not_dropped_as_stale() -> None:
    svc = _stale_service("drop", max_lag=1)
    fb = Feedback(np.repeat([1, 50], 8), np.ones(16), step=0, policy_version=10)  # lag 0
    assert svc.update(fb, idempotent=True)["accepted"] == 16
    svc.set_policy_version(20)  # the retry now lags 10 > max_lag
    ack = svc.update(fb, idempotent=True)
    assert ack["dropped"] == 0 and ack["duplicates"] == 16
    svc.flush()
    m = svc.metrics()
    assert m["feedback/rollouts"] == 16 and m["service/dropped_stale_rollouts"] == 0
    assert m["service/dropped_stale_updates"] == 0 and m["service/duplicates_dropped"] == 16


def test_a_non_idempotent_resend_is_counted_again() -> None:
    svc = _stale_service("drop", max_lag=1)
    for _ in range(2):
        ack = svc.update(STALE)  # idempotent=False: the caller says every report is new
        assert ack["dropped"] == 16 and ack["duplicates"] == 0
    m = svc.metrics()
    assert m["service/dropped_stale_rollouts"] == 32 and m["service/duplicates_dropped"] == 0


@pytest.mark.parametrize("resume_from", ["checkpoint", "log"])
def test_groups_seen_before_a_restart_stay_duplicates_after_it(
    tmp_path: Path, resume_from: str
) -> None:
    """The groups the service has seen are part of its checkpoint and rebuilt by replay."""
    live = _stale_service("drop", max_lag=1, checkpoint_dir=tmp_path / "live")
    live.update(STALE, idempotent=True)  # dropped as stale
    if resume_from == "checkpoint":
        live.save()
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "live", crashed, ignore=shutil.ignore_patterns("LOCK"))
    cfg = dataclasses.replace(live.config, checkpoint_dir=str(crashed))
    resumed = SelectorService(make_selector("bots", make_pool()), cfg)
    assert resumed.replayed == (0 if resume_from == "checkpoint" else 2)
    assert_tree_equal(resumed.service_state(), live.service_state())
    assert "0" in resumed.service_state()["seen"]
    for svc in (live, resumed):
        assert svc.update(STALE, idempotent=True)["duplicates"] == 16
    assert_tree_equal(resumed.service_state(), live.service_state())
    assert_tree_equal(resumed.selector_state(), live.selector_state())
    assert resumed.metrics()["service/dropped_stale_rollouts"] == 16
    resumed.close()
    live.close()


def test_leases_expire_with_prioritized_inflight_timeout() -> None:
    sel = make_selector("prioritized", make_pool(), inflight_timeout=5, exploration_fraction=0.0)
    svc = SelectorService(sel, ServiceConfig())
    rng = np.random.default_rng(0)
    lost = svc.select(4)  # never reported
    expired, returned = [], []
    for t in range(8):
        ids = svc.select(4)
        svc.update(Feedback(*rollouts(ids, rng), step=t))
        m = svc.metrics()
        expired.append(m["service/leases_expired"])
        returned.append(m["prioritized/timed_out_returns"])
    # Both send the 4 lost tasks home at the 6th select (call index 5), not before.
    assert expired == returned == [0, 0, 0, 0, 4, 4, 4, 4]
    m = svc.metrics()
    assert m["service/leases_active"] == 0 and m["service/leases_reported"] == 32
    assert lost.shape == (4,)
    with pytest.raises(ValueError, match="differs from the prioritized selector's"):
        SelectorService(sel, ServiceConfig(lease_timeout_selects=16))


def test_wall_clock_leases() -> None:
    now = [0.0]
    cfg = ServiceConfig(lease_timeout_s=30.0)
    svc = SelectorService(make_selector("uniform", make_pool()), cfg, clock=lambda: now[0])
    first = svc.select(5)
    now[0] = 20.0
    svc.select(5)
    svc.update(Feedback(np.repeat(first[:2], 2), np.ones(4), step=0))  # 2 of 5 reported
    now[0] = 31.0
    svc.select(1)  # the first batch's 3 unreported tasks are 31 s old
    m = svc.metrics()
    assert m["service/leases_expired"] == 3 and m["service/leases_active"] == 6


# --------------------------------------------------------------------- behind Ray
def worker(name: str, wid: int, workers: int, calls: int, seed: int) -> list[int]:
    """A rollout worker: select 1-4 tasks, report 4 rollouts each, retry every 7th report.

    Steps are unique per report (step = call * workers + wid), so the expected totals are
    the sums of what was acknowledged. Returns [rollouts acknowledged, retried rollouts,
    reconnects].
    """
    from frontier_rft.integrations.ray import connect

    client = connect(name)
    rng = np.random.default_rng(seed)
    acked = retried = 0
    for i in range(calls):
        ids = client.select(int(rng.integers(1, 5)), policy_version=i)
        fb = Feedback(*rollouts(ids, rng), step=i * workers + wid, policy_version=i)
        ack = client.update(fb, idempotent=True)
        # Duplicates of a first report: the client re-sent it after the actor died, and
        # the first delivery had been applied (its acknowledgement was lost).
        acked += ack["accepted"] + ack["duplicates"]
        if i % 7 == 3:
            retried += client.update(fb, idempotent=True)["duplicates"]
    return [acked, retried, client.reconnects]


@pytest.mark.slow
def test_eight_workers_lose_and_double_count_nothing(ray_session: Any, tmp_path: Path) -> None:
    ray = ray_session
    from frontier_rft.integrations.ray import start_service

    # Checkpoints by count only: on a busy machine the run outlasts checkpoint_every_s, and a
    # timed checkpoint would shift where the counted ones fall.
    cfg = ServiceConfig(
        checkpoint_dir=str(tmp_path / "ckpt"), checkpoint_every_ops=1000, checkpoint_every_s=0
    )
    # Steps are unique per report and workers drift apart: remember every step's pairs.
    sel = make_selector("prioritized", make_pool(), seed=0, dedupe_window=8 * 500)
    client = start_service("svc-8", sel, cfg)
    task = ray.remote(num_cpus=0)(worker)
    results = ray.get([task.remote("svc-8", w, 8, 500, seed=w) for w in range(8)])
    acked = sum(r[0] for r in results)
    retried = sum(r[1] for r in results)
    client.flush()
    m = client.metrics()
    assert m["service/updates"] == 8 * 500 + sum(1 for i in range(500) if i % 7 == 3) * 8
    assert m["feedback/rollouts"] == acked  # every acknowledged rollout, once
    assert m["service/duplicates_dropped"] == retried  # every retry dropped
    assert m["feedback/groups"] == acked // 4
    assert m["feedback/steps"] == 8 * 500
    assert m["feedback/pending_rollouts"] == 0
    assert m["service/checkpoint_seq"] >= 8000  # periodic checkpoints happened
    assert m["service/ops_since_checkpoint"] < 1000
    client.close()


def kill_selector(steps: int) -> Selector:
    return make_selector("prioritized", make_pool(), seed=0, dedupe_window=steps)


@pytest.mark.slow
def test_kill_and_restart_loses_no_acknowledged_update(ray_session: Any, tmp_path: Path) -> None:
    """Kill the actor mid-run; a new one resumes from checkpoint + log; workers retry."""
    ray = ray_session
    from frontier_rft.integrations.ray import start_service

    ckpt = tmp_path / "ckpt"
    cfg = ServiceConfig(
        checkpoint_dir=str(ckpt), checkpoint_every_ops=0, checkpoint_every_s=0, keep_history=True
    )
    name, workers, calls = "svc-kill", 4, 400
    client = start_service(name, kill_selector(workers * calls), cfg)
    task = ray.remote(num_cpus=0)(worker)
    running = [task.remote(name, w, workers, calls, seed=100 + w) for w in range(workers)]
    deadline = time.monotonic() + 60
    while client.metrics()["service/updates"] < 300 and time.monotonic() < deadline:
        time.sleep(0.02)
    client.save()  # an on-demand checkpoint; the log carries everything after it
    while client.metrics()["service/updates"] < 800 and time.monotonic() < deadline:
        time.sleep(0.02)
    ray.kill(client.handle)  # workers' calls fail; they wait for the service to come back
    client = start_service(name, kill_selector(workers * calls), cfg)
    replayed = client.metrics()["service/replayed_ops"]
    results = ray.get(running)
    acked = sum(r[0] for r in results)
    client.flush()
    m = client.metrics()
    assert replayed > 0  # the restart replayed logged operations after the checkpoint
    assert sum(r[2] for r in results) >= 1  # workers did see the actor die and re-attached
    assert m["feedback/rollouts"] == acked
    assert m["feedback/groups"] == acked // 4
    assert m["feedback/steps"] == workers * calls
    # The restarted service equals one rebuilt from the whole log by a never-killed service.
    state = client.selector_state()
    client.close()
    in_memory = dataclasses.replace(cfg, checkpoint_dir=None)
    reference = SelectorService(kill_selector(workers * calls), in_memory)
    reference.replay(read_log(ckpt))
    assert_tree_equal(state, reference.selector_state())


@pytest.mark.slow
def test_ray_restarts_a_crashed_actor_which_resumes_from_its_log(
    ray_session: Any, tmp_path: Path
) -> None:
    """max_restarts=1: Ray re-runs the constructor, which resumes from the directory."""
    ray = ray_session
    from frontier_rft.integrations.ray import start_service

    # No timed or counted checkpoint: on a busy machine one could land before the kill.
    cfg = ServiceConfig(
        checkpoint_dir=str(tmp_path / "ckpt"),
        durability="flush",
        checkpoint_every_ops=0,
        checkpoint_every_s=0,
    )
    client = start_service("svc-restart", make_selector("bots", make_pool()), cfg, max_restarts=1)
    rng = np.random.default_rng(0)
    acked = 0
    for t in range(80):
        if t == 40:  # every operation so far is acknowledged, none checkpointed but seq 0
            ray.kill(client.handle, no_restart=False)
            # ray.kill is asynchronous (on a busy machine it can land after the last step):
            # wait, bounded, until the restarted actor answers, then go on.
            deadline = time.monotonic() + 120
            while client.metrics()["service/replayed_ops"] == 0:
                assert time.monotonic() < deadline, "Ray did not restart the killed actor"
                time.sleep(0.05)
        ids = client.select(3, policy_version=t)
        fb = Feedback(*rollouts(ids, rng), step=t, policy_version=t)
        acked += client.update(fb, idempotent=True)["accepted"]
    client.flush()
    m = client.metrics()
    # The restarted actor replayed every logged select and update before the kill (2 per step).
    assert m["service/replayed_ops"] == 80
    assert m["feedback/rollouts"] == acked == 80 * 12
    assert m["feedback/steps"] == 80
    client.close()


def test_start_service_refuses_a_live_service_of_another_selector(
    ray_session: Any, tmp_path: Path
) -> None:
    from frontier_rft.integrations.ray import start_service

    first = start_service("svc-name-taken", make_selector("bots", make_pool(), seed=0))
    try:
        same = start_service("svc-name-taken", make_selector("bots", make_pool(), seed=0))
        assert same.metrics()["service/seq"] == first.metrics()["service/seq"]  # attached
        other = make_selector("prioritized", TaskPool(num_tasks=80), seed=0)
        with pytest.raises(ValueError, match="already running with another selector"):
            start_service("svc-name-taken", other, ServiceConfig(staleness="drop"))
    finally:
        first.close()


def test_a_corrected_start_after_a_refused_one_succeeds_at_once(
    ray_session: Any, tmp_path: Path
) -> None:
    from frontier_rft.integrations.ray import start_service

    base = {"checkpoint_dir": str(tmp_path / "ckpt"), "staleness": "downweight", "max_lag": 3}
    client = start_service("svc-retry", make_selector("bots", make_pool()), ServiceConfig(**base))
    client.select(4, policy_version=0)
    client.close()
    wrong = ServiceConfig(**{**base, "max_lag": 5})
    with pytest.raises(ValueError, match=r"max_lag 3 \(saved\) != 5"):
        start_service("svc-retry", make_selector("bots", make_pool()), wrong, timeout_s=60)
    client = start_service("svc-retry", make_selector("bots", make_pool()), ServiceConfig(**base))
    assert client.metrics()["service/seq"] == 1
    client.close()
    with pytest.raises(ValueError, match="was closed by this client"):
        client.select(2)  # not a TimeoutError after waiting reconnect_timeout_s for a restart


def test_a_client_whose_service_never_comes_back_times_out_naming_it(ray_session: Any) -> None:
    from frontier_rft.integrations.ray import connect, start_service

    owner = start_service("svc-gone", make_selector("bots", make_pool()))
    client = connect("svc-gone", reconnect_timeout_s=1)
    assert client.select(2).shape == (2,)
    ray_session.kill(owner.handle, no_restart=True)
    # ray.kill only asks: on a busy machine a call right after it can still reach the actor.
    # Wait (bounded) until the name is gone, so the call below meets a dead service.
    gone_by = time.monotonic() + 60
    while time.monotonic() < gone_by:
        try:
            ray_session.get_actor("svc-gone")
        except ValueError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the killed actor kept its name for 60 s")
    msg = r"selector service 'svc-gone' did not come back within 1 s; restart it with start_service"
    with pytest.raises(TimeoutError, match=msg):
        client.select(2)
    assert client.reconnects == 0


def test_waiting_for_a_missing_actor_ends_at_the_deadline(ray_session: Any) -> None:
    from frontier_rft.integrations.ray.actor_wait import wait_for_actor
    from frontier_rft.integrations.ray.sharded_ray import RayShards

    def missing() -> Any:
        return ray_session.get_actor("no-such-actor")

    with pytest.raises(ValueError, match="no-such-actor"):  # no message: Ray's own error
        wait_for_actor(missing, time.monotonic() + 0.3)
    with pytest.raises(TimeoutError, match=r"^gone$"):
        wait_for_actor(missing, time.monotonic() + 0.3, attempt_s=5, gave_up="gone")
    shards = RayShards("no-such-service", 1, owned=[None], reconnect_timeout_s=0.5)
    with pytest.raises(TimeoutError, match=r"shard 0 of 'no-such-service' did not come back "):
        shards._wait_alive(0, time.monotonic() + 0.3)
