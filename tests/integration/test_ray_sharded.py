"""The sharded service behind real Ray actors: workers report through batched clients
while the driver selects and random shards are killed; every acknowledged rollout is
folded exactly once. Local Ray, 2 CPUs, bounded in calls and time."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool
from frontier_rft.integrations.ray.service import ServiceConfig

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NUM_TASKS = 3000


def worker(name: str, wid: int, workers: int, flushes: int, groups: int) -> list[int]:
    """Report `flushes` x `groups` groups of 4 rollouts (a step per flush); returns
    [rollouts acknowledged, calls re-sent after a shard restart]."""
    from frontier_rft.integrations.ray import connect_sharded

    client = connect_sharded(name, flush_groups=groups, reconnect_timeout_s=120)
    rng = np.random.default_rng(wid)
    for i in range(flushes):
        step = i * workers + wid  # unique per report: the expected totals are exact
        ids = rng.choice(NUM_TASKS, groups, replace=False)
        task_ids = np.repeat(ids, 4)
        client.report(Feedback(task_ids, (rng.random(task_ids.size) < 0.5) * 1.0, step))
    client.flush()
    return [client.acked_rollouts, client.shards.resends]  # type: ignore[attr-defined]


def test_random_shard_kills_lose_and_double_count_nothing(ray_session: Any, tmp_path: Path) -> None:
    ray = ray_session
    from frontier_rft.integrations.ray import start_sharded_service
    from frontier_rft.integrations.ray.sharded_ray import shard_name

    cfg = ServiceConfig(checkpoint_dir=str(tmp_path / "ckpt"), checkpoint_every_ops=50)
    name, workers, flushes, groups = "shk", 4, 150, 8
    driver = start_sharded_service(
        name, "bots", TaskPool(num_tasks=NUM_TASKS), 3, cfg, candidates=64, dedupe_window=10**6
    )
    task = ray.remote(num_cpus=0)(worker)
    running = [task.remote(name, w, workers, flushes, groups) for w in range(workers)]
    rng = np.random.default_rng(0)
    kills, last_kill, deadline = 0, time.monotonic(), time.monotonic() + 240
    while time.monotonic() < deadline:
        done, _ = ray.wait(running, num_returns=len(running), timeout=0.2)
        if len(done) == len(running):
            break
        driver.select(16)
        if kills < 3 and time.monotonic() - last_kill > 1.5:
            victim = ray.get_actor(shard_name(name, int(rng.integers(3))))
            ray.kill(victim, no_restart=False)  # Ray restarts it; it resumes from its log
            kills, last_kill = kills + 1, time.monotonic()
    results = ray.get(running, timeout=max(1.0, deadline - time.monotonic()))
    driver.flush()
    m = driver.metrics()
    acked = sum(r[0] for r in results)
    assert kills == 3
    assert acked == workers * flushes * groups * 4
    assert m["feedback/rollouts"] == acked  # every acknowledged rollout folded, once
    assert m["service/buffered_rollouts"] == 0
    assert m["service/replayed_ops"] > 0  # restarted shards replayed their logs
