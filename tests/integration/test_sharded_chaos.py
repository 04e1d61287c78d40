"""The chaos benchmark's core (frontier_rft.bench.service.ray_sharded) in one process at toy scale.

Shards crash and resume from their logs, flushes are lost before and after the shards
apply them and the workers retry, reports carry fresh, lagging, stale and far-future
versions. The audit of the workers' ledgers against the shards' own state finds every
rollout where the staleness mode puts it, and it fails when a promise is broken."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.bench.service import ray_sharded as bench
from frontier_rft.service.shard import ShardService

pytestmark = pytest.mark.integration

GROUPS, ROLLOUTS = 8, 4  # chaos_local's defaults: one report = 8 groups of 4 rollouts


@pytest.mark.parametrize("mode", ["drop", "downweight", "accept"])
def test_every_rollout_lands_where_its_version_says_once(mode: str, tmp_path: Path) -> None:
    r = bench.chaos_local(mode, tmp_path)
    assert r["problems"] == [] and r["ok"]
    assert r["lost"] == 0 and r["double"] == 0 and r["wrongly_folded_groups"] == 0
    # The faults happened: each lost call or reply is one retry; shards replayed logs.
    assert r["lost_calls"] > 0 and r["lost_replies"] > 0
    assert r["retries"] == r["lost_calls"] + r["lost_replies"]
    assert r["replayed_ops"] > 0 and r["duplicates_dropped"] > 0
    assert r["refused"] == r["reports_future"] > 0 and r["future_accepted"] == 0
    # The fates by hand: fresh whole; lagging whole or thinned to 2 of 4; stale whole or
    # dropped (downweight_decay 0.9999 ** 25,000 * 4 = 0.33 -> at least 2 kept).
    per_report = GROUPS * ROLLOUTS
    fresh, lagging, stale = (r[f"reports_{c}"] * per_report for c in ("fresh", "lagging", "stale"))
    assert min(fresh, lagging, stale) > 0
    if mode == "accept":
        assert r["folded"] == fresh + lagging + stale and r["dropped"] == 0
    elif mode == "drop":
        assert r["folded"] == fresh + lagging and r["dropped"] == stale
    else:
        assert r["folded"] == fresh + lagging // 2 and r["thinned"] == lagging // 2
        assert r["dropped"] == stale
    assert r["acked"] == fresh + lagging + stale


def test_the_audit_catches_double_counting(tmp_path: Path) -> None:
    """Without idempotent delivery a retried flush whose reply was lost is applied twice."""
    r = bench.chaos_local("drop", tmp_path, idempotent=False)
    assert not r["ok"] and r["double"] > 0
    assert "rollouts folded beyond the ledger" in " ".join(r["problems"])
    assert r["dropped"] > r["expected_dropped"]


def test_the_audit_catches_stale_feedback_folded(tmp_path: Path) -> None:
    r = bench.chaos_local("drop", tmp_path, staleness="accept")
    assert not r["ok"] and r["wrongly_folded_groups"] == r["reports_stale"] * GROUPS > 0


def test_the_audit_catches_lost_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard that acknowledges and then forgets every other piece it should fold."""
    deliver = ShardService._deliver
    calls = [0]

    def forgetful(self: ShardService, *args: object) -> None:
        calls[0] += 1
        if calls[0] % 2:
            deliver(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ShardService, "_deliver", forgetful)
    r = bench.chaos_local("accept", tmp_path, lost_calls=0.0, lost_replies=0.0, kills=0)
    assert not r["ok"] and r["lost_groups"] > 0 and r["lost"] > 0
