"""Sharded selector service on a local Ray: feedback throughput, and a chaos run per staleness mode.

Throughput grid: S shard actors (durable: a flush is acknowledged once fsynced; flushes
that arrive together share one fsync), W rollout-worker actors, each reporting
groups of R rollouts through a BatchedClient that flushes every G groups (one
`update_many` per shard per flush), for `--seconds`; meanwhile the driver runs a
selection round (B tasks, candidate mode) every `--select-every` seconds, as a trainer
would once per step. Groups/s = groups acknowledged by all workers / wall time.

Chaos run (`--kills K`, once per staleness mode of `--modes`): S shards and W workers
while a random shard is killed every `--kill-every` seconds (Ray restarts it; it resumes
from checkpoint + log) until K kills. Meanwhile:

- failed reports: each worker's transport loses a share `--lost-calls` of its flushes
  before they reach the shards and a share `--lost-replies` after the shards applied
  them (the reply lost, as when a shard dies mid-call); the report (or final flush)
  raises, and the worker retries the same report until it is acknowledged;
- stale versions: every round announces the trainer's policy version V0 + step; each
  report carries one version: fresh (the current one), lagging (25,000 behind), stale
  (250,000 behind) or far-future (2,000,000 ahead: refused by `report`, nothing
  buffered). With max_lag = 100,000, downweight_decay = 0.9999 and
  downweight_min_rollouts = 2, each report's fate is fixed in advance whatever its delay
  up to SLACK = 400 versions (100 s), so the ledger is exact: `accept` folds all whole;
  `drop` folds fresh and lagging whole and drops stale; `downweight` folds fresh whole,
  lagging thinned to 2 rollouts per group, and drops stale.

Audit, from the shards' own state and independent of their acknowledgements: each
worker keeps a ledger of the (step, task) groups of every report that returned, with
its version class (all acknowledged once its last flush succeeds); each shard's selector
records every (step, task) pair it folded. lost = ledger groups that should have been
folded and were not; wrongly folded = folded pairs the ledger says must not be (stale,
or never reported); double-counted = rollouts folded beyond the ledger's count for the
folded groups; the shards' dropped and thinned counters must equal the ledger's, every
far-future report must have been refused and no shard may hold a version beyond the
trainer's. Workers report the trainer's step (wall time / `--select-every`) and draw
tasks from their residue class mod W without repeating one within a step, so no (step,
task) pair is reported twice.

    python benchmarks/ray_sharded.py                       # grid + 3 chaos runs, ~8 minutes
    python benchmarks/ray_sharded.py --shards 4 --workers 16 --seconds 10 --kills 0
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft import Feedback, TaskPool
from frontier_rft.service import ServiceConfig
from frontier_rft.service.shard import ShardService
from frontier_rft.service.sharded import (
    BatchedClient,
    LocalShards,
    ShardedService,
    Shards,
    local_sharded,
    shard_config,
)

REPO = Path(__file__).resolve().parents[4]

# ------------------------------------------------------------------ versions and fates
V0 = 300_000
"""The trainer's first policy version (stale versions stay >= 0)."""
CLASSES = ("fresh", "lagging", "stale", "future")
OFFSET = {"fresh": 0, "lagging": -25_000, "stale": -250_000, "future": 2_000_000}
"""A report's policy version: the trainer's current one plus this."""
MAX_LAG, DECAY, MIN_ROLLOUTS = 100_000, 0.9999, 2
SLACK = 400
"""Largest delay (in versions) between a report and its acknowledgement for which every
class's fate is fixed; the audit refuses a run whose delays exceeded it."""
MODES = ("drop", "downweight", "accept")
MAX_ATTEMPTS = 50
"""Attempts at one report before a worker gives up (p ** 50 at the default fault rates)."""


def service_config(
    mode: str, directory: Path, checkpoint_every_ops: int, durability: str = "fsync"
) -> ServiceConfig:
    return ServiceConfig(
        checkpoint_dir=str(directory),
        durability=durability,
        checkpoint_every_ops=checkpoint_every_ops,
        staleness=mode,
        max_lag=MAX_LAG,
        downweight_decay=DECAY,
        downweight_min_rollouts=MIN_ROLLOUTS,
    )


def _thinned_to(rollouts: int, lag: int) -> int:
    """The service's down-weighting rule (service.py `_thin`) for one group."""
    want = math.ceil(DECAY**lag * rollouts - 1e-9)
    return min(rollouts, max(want, MIN_ROLLOUTS))


def fates(mode: str, rollouts: int) -> dict[str, int]:
    """Rollouts each class folds per group under `mode`; -1 = dropped, -2 = refused."""
    out = {"fresh": rollouts, "lagging": rollouts, "stale": rollouts, "future": -2}
    if mode != "accept":
        out["stale"] = -1
    if mode == "downweight":
        out["lagging"] = _thinned_to(rollouts, -OFFSET["lagging"])
    return out


def check_fates_fixed(rollouts: int) -> None:
    """Refuse a group size for which a delay below SLACK could change a class's fate."""
    for lag in (-OFFSET["fresh"], -OFFSET["lagging"]):
        if _thinned_to(rollouts, lag + 1) != _thinned_to(rollouts, lag + SLACK):
            raise ValueError(
                f"--rollouts {rollouts}: down-weighting would depend on delays; use 1 to 25"
            )


# ------------------------------------------------------------------ a worker and its faults
class FaultyShards:
    """A client's transport that loses a share of its update_many calls: before they reach
    the shards (nothing applied) or after (applied, the reply lost)."""

    def __init__(
        self,
        inner: Shards,
        lost_calls: float,
        lost_replies: float,
        seed: int,
        on_lost_reply: Callable[[], None] | None = None,
    ):
        self.inner, self.num_shards = inner, inner.num_shards
        self.p_call, self.p_reply = lost_calls, lost_replies
        self.rng = np.random.default_rng(seed)
        self.on_lost_reply = on_lost_reply  # in-process runs: a shard dies mid-call
        self.lost_calls = self.lost_replies = 0

    @property
    def resends(self) -> int:
        return int(getattr(self.inner, "resends", 0))

    def call(
        self, method: str, args: list[tuple[Any, ...] | None], retry: bool = True
    ) -> list[Any]:
        if method != "update_many":
            return self.inner.call(method, args, retry)
        u = self.rng.random()
        if u < self.p_call:
            self.lost_calls += 1
            raise ConnectionError("injected: the flush never reached the shards")
        out = self.inner.call(method, args, retry)
        if u < self.p_call + self.p_reply:
            self.lost_replies += 1
            if self.on_lost_reply is not None:
                self.on_lost_reply()
            raise ConnectionError("injected: the shards applied the flush, its reply was lost")
        return out


class ChaosWorker:
    """A rollout worker: reports of one version class each, retried until acknowledged,
    and a ledger of every (step, task) group it reported."""

    def __init__(
        self,
        client: BatchedClient,
        wid: int,
        workers: int,
        *,
        rollouts: int,
        mix: tuple[float, ...],
        now: Callable[[], int],
    ):
        self.client, self.rollouts, self.now = client, rollouts, now
        self.groups = client.flush_groups  # one report = one flush's worth of groups
        self.mix = np.asarray(mix, dtype=np.float64)
        self.rng = np.random.default_rng(wid)
        n = client.partition.bounds[-1]
        self.mine = self.rng.permutation(np.arange(wid, n, workers))
        if self.mine.shape[0] < self.groups:
            raise ValueError(f"worker {wid} owns {self.mine.shape[0]} tasks < {self.groups} groups")
        self.cursor, self.last_step = 0, -1
        self.ledger: list[tuple[int, np.ndarray, int]] = []  # (step, task ids, class index)
        self.pending: list[int] = []  # steps of the reports not yet acknowledged
        self.counts = dict.fromkeys(("reports", "retries", "refused", "future_accepted"), 0)
        self.counts.update({f"reports_{c}": 0 for c in CLASSES})
        self.max_delay = 0
        self.latency_ms: list[float] = []

    def report(self, step: int) -> bool:
        """One report at trainer step `step`; False when this step has no unused task left."""
        if self.cursor + self.groups > self.mine.shape[0]:
            if step <= self.last_step:  # a new lap could repeat a (step, task) pair
                return False
            self.cursor = 0
        ids = self.mine[self.cursor : self.cursor + self.groups]
        self.cursor, self.last_step = self.cursor + self.groups, step
        kind = int(self.rng.choice(len(CLASSES), p=self.mix))
        name = CLASSES[kind]
        task_ids = np.repeat(ids, self.rollouts)
        rewards = (self.rng.random(task_ids.shape[0]) < 0.5).astype(np.float64)
        fb = Feedback(task_ids, rewards, step, V0 + step + OFFSET[name])
        self.counts["reports"] += 1
        self.counts[f"reports_{name}"] += 1
        flushes = self.client.flushes
        t0 = time.perf_counter()
        for _ in range(MAX_ATTEMPTS):
            try:
                self.client.report(fb)
            except ConnectionError:  # its flush was lost: the same report again
                self.counts["retries"] += 1
                continue
            except ValueError as exc:
                if name != "future" or "max_version_jump" not in str(exc):
                    raise
                self.counts["refused"] += 1
                return True
            break
        else:
            raise RuntimeError(f"a report failed {MAX_ATTEMPTS} times in a row")
        self.latency_ms.append(1e3 * (time.perf_counter() - t0))
        self.counts["future_accepted"] += int(name == "future")
        self.ledger.append((step, ids, kind))
        self.pending.append(step)
        if self.client.flushes > flushes:  # all acknowledged but this one, if still buffered
            self._acknowledged(keep=1 if self.client.buffered_groups else 0)
        return True

    def _acknowledged(self, keep: int) -> None:
        now = self.now()
        done = self.pending[: len(self.pending) - keep]
        self.max_delay = max([self.max_delay, *(now - s for s in done)])
        self.pending = self.pending[len(done) :]

    def finish(self) -> dict[str, Any]:
        """Flush what is buffered (retried until acknowledged); the ledger and counters."""
        for _ in range(MAX_ATTEMPTS):
            try:
                self.client.flush()
                break
            except ConnectionError:
                self.counts["retries"] += 1
        else:
            raise RuntimeError(f"the final flush failed {MAX_ATTEMPTS} times in a row")
        self._acknowledged(keep=0)
        sizes = [ids.shape[0] for _, ids, _ in self.ledger]
        shards = self.client.shards
        return {
            "steps": np.repeat([s for s, _, _ in self.ledger], sizes).astype(np.int64),
            "tasks": np.concatenate([ids for _, ids, _ in self.ledger] or [np.zeros(0, np.int64)]),
            "kinds": np.repeat([k for _, _, k in self.ledger], sizes).astype(np.int64),
            "acked": self.client.acked_rollouts,
            "counts": dict(self.counts),
            "max_delay": self.max_delay,
            "latency_ms": np.asarray(self.latency_ms),
            "lost_calls": getattr(shards, "lost_calls", 0),
            "lost_replies": getattr(shards, "lost_replies", 0),
            "resends": getattr(shards, "resends", 0),
        }


# ------------------------------------------------------------------ the audit
def audit(
    mode: str,
    results: list[dict[str, Any]],
    driver: ShardedService,
    rollouts: int,
    announced: int,
) -> dict[str, Any]:
    """The workers' ledgers against the shards' own state (see the module docstring);
    `announced` is the newest version the driver announced."""
    n, shards = driver.num_tasks, driver.partition.num_shards
    steps = np.concatenate([r["steps"] for r in results])
    tasks = np.concatenate([r["tasks"] for r in results])
    kinds = np.concatenate([r["kinds"] for r in results])
    keys = steps * n + tasks
    if np.unique(keys).shape[0] != keys.shape[0]:
        raise RuntimeError(
            "the workers reported a (step, task) pair twice: the ledger is not exact"
        )
    fate = fates(mode, rollouts)
    per_group = np.array([fate[c] for c in CLASSES], dtype=np.int64)[kinds]
    expect = per_group >= 0
    # Every (step, task) pair each shard's selector folded: its de-duplication record.
    folded_keys = []
    for s, state in enumerate(driver.shards.call("selector_state", [()] * shards)):
        base = state["base"]
        seen_steps = np.asarray(base["seen_steps"], dtype=np.int64)
        seen_tasks = np.asarray(base["seen_tasks"], dtype=np.int64) + driver.partition.bounds[s]
        folded_keys.append(seen_steps * n + seen_tasks)
    folded = np.concatenate(folded_keys)
    lost_mask = expect & ~np.isin(keys, folded)
    wrong = np.setdiff1d(folded, keys[expect])
    m = driver.metrics()
    folded_rollouts = int(m["feedback/rollouts"])
    expected_rollouts = int(per_group[expect].sum())
    lost = int(per_group[lost_mask].sum())
    versions = [int(i["policy_version"]) for i in driver.shards.call("info", [()] * shards)]
    newest_fresh = max(V0 + int(steps.max(initial=0)), announced)
    out = {
        "mode": mode,
        "groups": int(keys.shape[0]),
        "acked": int(sum(r["acked"] for r in results)),
        "ledger_rollouts": int(keys.shape[0]) * rollouts,
        "folded": folded_rollouts,
        "expected_folded": expected_rollouts,
        "lost": lost,
        "lost_groups": int(lost_mask.sum()),
        "wrongly_folded_groups": int(wrong.shape[0]),
        "double": folded_rollouts - (expected_rollouts - lost),
        "dropped": int(m["service/dropped_stale_rollouts"]),
        "expected_dropped": int((per_group == -1).sum()) * rollouts,
        "thinned": int(m["service/thinned_rollouts"]),
        "expected_thinned": int((rollouts - per_group[per_group >= 0]).sum()),
        "buffered": int(m["service/buffered_rollouts"]),
        "duplicates_dropped": int(m["service/duplicates_dropped"]),
        "replayed_ops": int(m["service/replayed_ops"]),
        "shard_versions_max": max(versions),
        "newest_fresh_version": newest_fresh,
        "max_delay": max(r["max_delay"] for r in results),
    }
    for key in ("retries", "refused", "future_accepted", "reports"):
        out[key] = sum(r["counts"][key] for r in results)
    for c in CLASSES:
        out[f"reports_{c}"] = sum(r["counts"][f"reports_{c}"] for r in results)
    for key in ("lost_calls", "lost_replies", "resends"):
        out[key] = sum(int(r[key]) for r in results)
    out["problems"] = problems(out)
    out["ok"] = not out["problems"]
    return out


def problems(r: dict[str, Any]) -> list[str]:
    """Every way the audited run broke a promise (empty: none)."""
    out = []
    checks = [
        (r["lost_groups"] == 0, f"{r['lost_groups']} acknowledged groups never folded"),
        (r["wrongly_folded_groups"] == 0, f"{r['wrongly_folded_groups']} groups wrongly folded"),
        (r["double"] == 0, f"{r['double']} rollouts folded beyond the ledger"),
        (r["dropped"] == r["expected_dropped"], "dropped stale rollouts != ledger"),
        (r["thinned"] == r["expected_thinned"], "thinned rollouts != ledger"),
        (r["acked"] == r["ledger_rollouts"], "client acknowledgements != ledger"),
        (r["buffered"] == 0, "rollouts left in a shard's fold buffer"),
        (r["future_accepted"] == 0, "a far-future version was accepted"),
        (r["refused"] == r["reports_future"], "a far-future report was not refused"),
        (r["shard_versions_max"] <= r["newest_fresh_version"], "a shard holds a future version"),
        (r["max_delay"] < SLACK, f"delays reached {r['max_delay']} versions (fates not fixed)"),
    ]
    for ok, what in checks:
        if not ok:
            out.append(what)
    return out


# ------------------------------------------------------------------ in process (tests)
def restart_local(shards: LocalShards, s: int, config: ServiceConfig) -> None:
    """Shard s crashes (no final checkpoint) and resumes from its directory, as a Ray
    restart does."""
    old = shards.services[s]
    assert old._journal is not None
    old._journal.close()  # a crash: the log as written, no checkpoint
    shards.services[s] = ShardService(None, shard_config(config, s), shard=s, bounds=old.bounds)


def chaos_local(
    mode: str,
    directory: Path,
    *,
    tasks: int = 600,
    shards: int = 3,
    workers: int = 3,
    ticks: int = 30,
    reports_per_tick: int = 2,
    groups: int = 8,
    rollouts: int = 4,
    kills: int = 3,
    lost_calls: float = 0.1,
    lost_replies: float = 0.1,
    mix: tuple[float, ...] = (0.55, 0.15, 0.2, 0.1),
    idempotent: bool = True,
    staleness: str | None = None,
) -> dict[str, Any]:
    """The chaos run in one process at toy scale: shards restart between ticks and when a
    reply is lost (they died mid-call). `staleness` overrides the service's mode (the
    audit still expects `mode`'s fates: a way to check that the audit can fail)."""
    check_fates_fixed(rollouts)
    # A crash in one process loses nothing the OS has: no fsync needed (and none to wait for).
    cfg = service_config(staleness or mode, directory, checkpoint_every_ops=25, durability="flush")
    driver = local_sharded(
        "bots", make_pool(tasks), shards, cfg, candidates=64, dedupe_window=10**9
    )
    local = driver.shards
    assert isinstance(local, LocalShards)
    rng = np.random.default_rng(7)
    clock = [0]

    def crash() -> None:
        restart_local(local, int(rng.integers(shards)), cfg)

    team = []
    for w in range(workers):
        client = BatchedClient(
            FaultyShards(local, lost_calls, lost_replies, seed=100 + w, on_lost_reply=crash),
            driver.partition,
            flush_groups=groups,
            idempotent=idempotent,
            max_version_jump=driver.info["max_version_jump"],
        )
        team.append(
            ChaosWorker(client, w, workers, rollouts=rollouts, mix=mix, now=lambda: clock[0])
        )
    driver.select(0, policy_version=V0)
    kill_at = set(rng.choice(np.arange(1, ticks), size=kills, replace=False).tolist())
    for t in range(ticks):
        clock[0] = t
        for _ in range(reports_per_tick):
            for worker in team:
                worker.report(t)
        driver.select(8, policy_version=V0 + t)
        if t in kill_at:
            crash()
    results = [worker.finish() for worker in team]
    driver.flush()
    out = audit(mode, results, driver, rollouts, V0 + ticks - 1)
    out["kills"] = kills
    return out


# ------------------------------------------------------------------ the Ray benchmark
def make_pool(n: int) -> TaskPool:
    rng = np.random.default_rng(0)
    weak = rng.uniform(0.0, 0.6, n)
    return TaskPool(num_tasks=n, reference_pass_rates=np.c_[weak, np.minimum(weak + 0.3, 1.0)])


@dataclass(frozen=True)
class ChaosSettings:
    """The Ray benchmark's settings (benchmarks/ray_sharded.py's flags, which document them);
    ValueError, naming the flag, for settings whose ledger could not be exact."""

    tasks: int = 1_000_000
    seconds: float = 8.0
    groups: int = 64
    rollouts: int = 16
    batch: int = 256
    select_every: float = 0.25
    kills: int = 20
    kill_every: float = 1.5
    kill_shards: int = 4
    kill_workers: int = 16
    modes: tuple[str, ...] = MODES
    lost_calls: float = 0.03
    lost_replies: float = 0.03
    mix: tuple[float, ...] = (0.6, 0.15, 0.2, 0.05)
    max_reports: int = 10**9
    grid_shards: tuple[int, ...] = (1, 2, 4)
    grid_workers: tuple[int, ...] = (1, 4, 16)

    def __post_init__(self) -> None:
        mix = self.mix
        if len(mix) != 4 or min(mix) < 0 or abs(sum(mix) - 1) > 1e-9:
            raise ValueError(
                "--mix takes 4 non-negative shares summing to 1 (fresh,lagging,stale,future)"
            )
        if any(m not in MODES for m in self.modes):
            raise ValueError(f"--modes: each one of {', '.join(MODES)}")
        if not 1 <= self.rollouts <= 25:
            raise ValueError(
                "--rollouts must be in [1, 25] (larger groups make down-weighting delay-dependent)"
            )
        if not (
            self.lost_calls >= 0
            and self.lost_replies >= 0
            and self.lost_calls + self.lost_replies < 0.5
        ):
            raise ValueError("--lost-calls and --lost-replies: non-negative, summing below 0.5")
        check_fates_fixed(self.rollouts)
