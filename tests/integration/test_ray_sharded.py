"""The sharded service behind real Ray actors: the chaos benchmark (bench.service.ray_sharded)
at toy scale. Workers report through batched clients whose transport loses flushes
before and after the shards apply them (each report retried), with fresh, lagging, stale
and far-future versions, while the driver selects and random shards are killed; the
audit finds every acknowledged rollout folded, dropped or thinned exactly once, as its
version says. Local Ray, 2 CPUs, bounded in calls and time."""

from __future__ import annotations

from typing import Any

import pytest

from frontier_rft.bench.service import ray_sharded as bench
from frontier_rft.bench.service import ray_sharded_run as run
from frontier_rft.bench.service.ray_sharded import ChaosSettings

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_random_shard_kills_lost_replies_and_stale_versions_lose_and_double_count_nothing(
    ray_session: Any,
) -> None:
    ray = ray_session
    toy = ChaosSettings(tasks=3000, groups=8, rollouts=4, batch=16, kill_every=1.5,
                        max_reports=5000, lost_calls=0.05, lost_replies=0.05)  # fmt: skip
    for module in (bench, run):  # the worker actor lives there: shipped as it is here
        ray.cloudpickle.register_pickle_by_value(module)
    try:
        r = run.run_one(ray, toy, shards=3, workers=4, seconds=0.0, kills=3, mode="drop")
    finally:
        for module in (bench, run):
            ray.cloudpickle.unregister_pickle_by_value(module)
    assert r["problems"] == [] and r["ok"]
    assert r["kills"] == 3 and r["replayed_ops"] > 0  # restarted shards replayed their logs
    assert r["lost"] == 0 and r["double"] == 0 and r["wrongly_folded_groups"] == 0
    assert r["folded"] == r["expected_folded"] > 0
    assert r["dropped"] == r["expected_dropped"] > 0  # stale versions dropped, counted once
    assert r["refused"] == r["reports_future"] > 0  # far-future versions refused at report
    assert r["retries"] == r["lost_calls"] + r["lost_replies"] > 0
