"""The selector service's boundary (no Ray needed): poison is refused before it is
acknowledged or logged, a restart never replays poison, a far-future policy version is
refused, and update_many group-commits (one fsync) with all-or-nothing validation."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.service import SelectorService, ServiceConfig
from frontier_rft.service import journal as journal_module
from frontier_rft.service.journal import read_log

pytestmark = pytest.mark.integration

POOL = TaskPool(num_tasks=50, prompts=[f"task {i}" for i in range(50)])


def service(tmp_path: Path, **cfg: Any) -> SelectorService:
    config = ServiceConfig(checkpoint_dir=str(tmp_path / "ckpt"), **cfg)
    return SelectorService(make_selector("bots", POOL, reward_model="gaussian"), config)


def good(step: int, version: int | None = None) -> Feedback:
    return Feedback(np.array([1, 1, 2, 2]), np.array([1.0, 0.0, 0.5, 1.0]), step, version)


POISON = [
    ({"step": 2**63}, "Feedback.step"),
    ({"step": np.uint64(2**64 - 1)}, "Feedback.step"),
    ({"step": 2**53}, "Feedback.step"),
    ({"policy_version": 2**63}, "Feedback.policy_version"),
    ({"policy_version": -1}, "Feedback.policy_version"),
    ({"rewards": np.array([1.7e308, 0.0, 0.0, 0.0])}, "divide the rewards"),  # core bound
    ({"rewards": np.array([1e50, 0.0, 0.0, 0.0])}, "rescale"),  # the service's tighter bound
]


@pytest.mark.parametrize(("change", "match"), POISON, ids=[m for _, m in POISON])
def test_poison_is_refused_before_acknowledgement_and_never_logged(
    tmp_path: Path, change: dict[str, Any], match: str
) -> None:
    svc = service(tmp_path)
    svc.update(good(0, 0))
    before = (svc.seq, svc.policy_version, svc.selector_state()["base"]["pending_ids"].copy())
    kwargs: dict[str, Any] = {"task_ids": np.array([1, 1, 2, 2]), "rewards": np.ones(4)}
    kwargs.update(step=1, policy_version=1)
    kwargs.update(change)
    with pytest.raises(ValueError, match=match):
        svc.update(Feedback(**kwargs))
    with pytest.raises(ValueError, match=match):
        svc.update_many([good(2, 1), Feedback(**kwargs)])  # all or nothing
    assert (svc.seq, svc.policy_version) == before[:2]
    np.testing.assert_array_equal(svc.selector_state()["base"]["pending_ids"], before[2])
    assert [r["op"] for r in read_log(tmp_path / "ckpt")] == ["update"]
    svc.select(3)  # still alive, and a restart resumes cleanly
    svc.close()
    again = service(tmp_path)
    assert again.seq == before[0] + 1
    again.close()


def test_select_and_set_policy_version_bounds(tmp_path: Path) -> None:
    svc = service(tmp_path)
    for bad in (2**63, -3, 1.5, True):
        with pytest.raises(ValueError, match="policy_version"):
            svc.select(2, policy_version=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="version"):
            svc.set_policy_version(bad)  # type: ignore[arg-type]
    assert svc.seq == 0
    svc.close()


def test_the_trainers_policy_version_never_moves_back(tmp_path: Path) -> None:
    # A trainer resumed from an older checkpoint would otherwise have every worker update
    # judged stale against the newer version, silently.
    svc = service(tmp_path, staleness="drop", max_lag=2)
    svc.set_policy_version(100)
    seq = svc.seq
    with pytest.raises(ValueError, match=r"policy version 50 is older than .*\(100\)"):
        svc.set_policy_version(50)
    assert svc.seq == seq and svc.policy_version == 100
    svc.set_policy_version(100)  # a retried announcement is fine
    svc.close()


def test_a_far_future_version_is_refused_so_later_updates_are_not_dropped(tmp_path: Path) -> None:
    svc = service(tmp_path, staleness="drop", max_lag=2, max_version_jump=1000)
    svc.update(good(0, 5))
    with pytest.raises(ValueError, match="max_version_jump"):
        svc.update(good(1, 10**12))
    with pytest.raises(ValueError, match="max_version_jump"):
        svc.select(2, policy_version=10**12)
    ack = svc.update(good(2, 6))
    assert ack["dropped"] == 0 and svc.policy_version == 6
    svc.set_policy_version(50_000)  # the trainer's own announcement may jump
    assert svc.update(good(3, 49_999))["dropped"] == 0
    assert svc.update(good(4, 6))["dropped"] == 4  # genuinely stale now
    svc.close()
    with pytest.raises(ValueError, match="max_version_jump"):
        ServiceConfig(max_version_jump=0)


def test_a_poison_record_in_an_old_log_is_skipped_on_restart(tmp_path: Path) -> None:
    svc = service(tmp_path, checkpoint_every_ops=0, checkpoint_every_s=0)
    svc.update(good(0, 0))
    svc.close()  # checkpoint at seq 1
    svc = service(tmp_path, checkpoint_every_ops=0, checkpoint_every_s=0)
    svc.update(good(1, 1))
    svc._journal.append(  # type: ignore[union-attr]
        {"seq": 3, "op": "update", "ids": [1], "r": [1.0], "step": 2**63, "pv": 1, "idem": False},
        durable=True,
    )  # as a version without the boundary checks would have logged it
    svc._journal.append(  # type: ignore[union-attr]
        {"seq": 4, "op": "update", "ids": [3], "r": [0.0], "step": 2, "pv": 1, "idem": False},
        durable=True,
    )
    svc._journal.close()  # type: ignore[union-attr]  # a crash: no final checkpoint
    again = service(tmp_path, checkpoint_every_ops=0, checkpoint_every_s=0)
    m = again.metrics()
    assert m["service/poison_records_skipped"] == 1 and again.seq == 4
    again.flush()
    assert again.metrics()["feedback/rollouts"] == 9  # 4 + 4 + 1: the poison never applied
    json.dumps(again.selector_state()["config"])  # state still serialisable
    again.close()


def test_update_many_is_one_fsync_and_equals_one_update_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = [0]
    real = os.fsync

    def counting(fd: int) -> None:
        calls[0] += 1
        real(fd)

    monkeypatch.setattr(journal_module.os, "fsync", counting)
    batch = [good(t, t) for t in range(20)]
    one = SelectorService(
        make_selector("mopps", POOL), ServiceConfig(checkpoint_dir=str(tmp_path / "a"))
    )
    calls[0] = 0
    acks_one = [one.update(fb, idempotent=True) for fb in batch]
    assert calls[0] == 20
    many = SelectorService(
        make_selector("mopps", POOL), ServiceConfig(checkpoint_dir=str(tmp_path / "b"))
    )
    calls[0] = 0
    acks_many = many.update_many(batch, idempotent=True)
    assert calls[0] == 1
    assert acks_one == acks_many
    one.flush()
    many.flush()
    np.testing.assert_array_equal(
        one.selector_state()["algo"]["alpha"], many.selector_state()["algo"]["alpha"]
    )
    assert read_log(tmp_path / "a") == read_log(tmp_path / "b")
    one.close()
    many.close()


def test_concurrent_flushes_share_fsyncs_and_are_acknowledged_once_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import time

    from frontier_rft.service.shard import ShardService
    from frontier_rft.service.shard_async import AsyncShardActor

    synced_records: list[int] = []
    real = os.fsync

    def slow(fd: int) -> None:  # a busy disk: 20 ms per fsync
        time.sleep(0.02)
        real(fd)

    monkeypatch.setattr(journal_module.os, "fsync", slow)
    cfg = ServiceConfig(checkpoint_dir=str(tmp_path / "c"), checkpoint_every_ops=25)
    actor = AsyncShardActor(make_selector("mopps", POOL), cfg, shard=0, bounds=(0, 50))

    async def flush(i: int) -> int:
        acks = await actor.update_many([good(i, 0)], True)
        journal = actor.svc._journal
        assert journal is not None
        synced_records.append(journal.synced)
        assert journal.synced >= acks[0]["seq"]  # acknowledged only once on disk
        return int(acks[0]["accepted"])

    async def run() -> list[int]:
        return await asyncio.gather(*[flush(i) for i in range(40)])

    fsyncs_before = actor.fsyncs
    assert sum(asyncio.run(run())) == 40 * 4
    assert actor.fsyncs - fsyncs_before <= 6  # 40 acknowledgements, a handful of fsyncs
    asyncio.run(actor.close())
    again = ShardService(make_selector("mopps", POOL), cfg, shard=0, bounds=(0, 50))
    assert again.metrics()["service/buffered_rollouts"] == 160  # every acknowledged update
    again.close()


def _damaged_dir(tmp_path: Path, name: str) -> tuple[Path, ServiceConfig]:
    """What a killed service leaves: a checkpoint plus logged operations after it."""
    live = tmp_path / "live"
    cfg = ServiceConfig(checkpoint_dir=str(live), checkpoint_every_ops=0, checkpoint_every_s=0)
    svc = SelectorService(make_selector("mopps", POOL), cfg)
    ids = svc.select(2, policy_version=0)
    svc.update(Feedback(np.repeat(ids, 2), np.array([1.0, 0.0, 1.0, 1.0]), step=0))
    directory = tmp_path / name
    shutil.copytree(live, directory, ignore=shutil.ignore_patterns("LOCK"))
    svc.close()
    return directory, dataclasses.replace(cfg, checkpoint_dir=str(directory))


@pytest.mark.parametrize(
    ("damage", "phrase"),
    [
        (lambda d: (d / "CURRENT").write_text("{garbage"), "CURRENT is not readable"),
        (
            lambda d: (d / "CURRENT").write_text(
                '{"seq": 0, "selector": "../../x.npz", "service": "ckpt-000000000000.json"}'
            ),
            "does not name a checkpoint",
        ),
        (lambda d: _append(d, '{"seq": 3, "op": "version", "v": 1e300}'), "must be an int"),
        (lambda d: _append(d, '{"seq": 3, "op": "select", "n": 1.5}'), "select size n"),
        (lambda d: _append(d, '{"op": "flush"}'), "unreadable record|checkpoint or log is damaged"),
        (lambda d: _append(d, "[1, 2]"), "unreadable record|checkpoint or log is damaged"),
        (lambda d: _set_seen(d, [3]), "seen must map steps to task ids"),
        (lambda d: _set_seen(d, {"x": [3]}), "a step of seen must be"),
        (lambda d: _set_seen(d, {"0": [3, 3]}), r"seen\[0\] must be sorted, distinct"),
        (lambda d: _set_seen(d, {"0": [10**6]}), r"seen\[0\] holds values outside"),
    ],
)
def test_a_damaged_directory_is_one_error_naming_it(
    tmp_path: Path, damage: Callable[[Path], object], phrase: str
) -> None:
    directory, cfg = _damaged_dir(tmp_path, "svc")
    damage(directory)
    with pytest.raises(ValueError, match=phrase):
        SelectorService(make_selector("mopps", POOL), cfg)


def _set_seen(directory: Path, seen: object) -> None:
    """Replace the delivered groups recorded in the newest service checkpoint."""
    path = max(directory.glob("ckpt-*.json"))
    state = json.loads(path.read_text(encoding="utf-8"))
    state["seen"] = seen
    path.write_text(json.dumps(state), encoding="utf-8")


def _append(directory: Path, line: str) -> None:
    segment = sorted(directory.glob("wal-*.jsonl"))[-1]
    with open(segment, "a", encoding="utf-8") as fh:
        fh.write(line + "\n" + '{"seq": 999, "op": "upd')  # a torn tail after it, as on a crash


def test_bad_service_settings_are_named(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    for cfg, phrase in [
        ({"checkpoint_dir": ""}, "must name a directory"),
        ({"checkpoint_dir": 5}, "checkpoint_dir must be None or a string"),
        ({"keep_history": "no"}, "keep_history must be True or False"),
    ]:
        with pytest.raises(ValueError, match=phrase):
            ServiceConfig(**cfg)  # type: ignore[arg-type]
    for where in ("afile", "afile/sub"):
        cfg = ServiceConfig(checkpoint_dir=str(tmp_path / where))
        with pytest.raises(ValueError, match="is \\(or lies under\\) a file"):
            SelectorService(make_selector("mopps", POOL), cfg)
    never = float("inf")  # no timed checkpoints, no lock or lease timeout
    ServiceConfig(checkpoint_every_s=never, lock_timeout_s=never, lease_timeout_s=never)
    assert ServiceConfig(checkpoint_dir=tmp_path).checkpoint_dir == str(tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a Selector"):
        SelectorService("bots", ServiceConfig())  # type: ignore[arg-type]
