"""The sharded selector service's benchmark on a local Ray: the throughput grid and the
chaos runs (`run_one`, `run_benchmark`), and their report. What a chaos run injects and how
its audit decides: frontier_rft.bench.service.ray_sharded; the command line:
benchmarks/ray_sharded.py.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.service.ray_sharded import (
    CLASSES,
    DECAY,
    MAX_LAG,
    MIN_ROLLOUTS,
    OFFSET,
    REPO,
    SLACK,
    V0,
    ChaosSettings,
    ChaosWorker,
    FaultyShards,
    audit,
    make_pool,
    service_config,
)

_log = logging.getLogger(__name__)

__all__ = ["report", "run_benchmark", "run_one"]


def worker_class(ray: Any) -> Any:
    @ray.remote(num_cpus=0)
    class Worker:
        """A rollout worker stand-in: ChaosWorker behind a faulty transport."""

        def run(self, name: str, wid: int, spec: dict[str, Any]) -> dict[str, Any]:
            from frontier_rft.integrations.ray import connect_sharded

            client = connect_sharded(name, flush_groups=spec["groups"], reconnect_timeout_s=300)
            client.shards = FaultyShards(
                client.shards, spec["lost_calls"], spec["lost_replies"], seed=1000 + wid
            )
            epoch, step_s = spec["epoch"], spec["step_s"]

            def now() -> int:
                return int((time.time() - epoch) / step_s)  # the trainer's step, shared

            worker = ChaosWorker(
                client, wid, spec["workers"], rollouts=spec["rollouts"], mix=spec["mix"], now=now
            )
            stop, start = Path(spec["stop_file"]), time.perf_counter()
            while time.perf_counter() - start < spec["seconds"] and not stop.exists():
                if worker.counts["reports"] >= spec["max_reports"]:
                    break
                if not worker.report(now()):
                    time.sleep(0.01)  # this step's tasks are used up: wait for the next
            out = worker.finish()
            out["elapsed"] = time.perf_counter() - start
            return out

    return Worker


def run_one(
    ray: Any,
    args: ChaosSettings,
    shards: int,
    workers: int,
    seconds: float,
    kills: int,
    mode: str = "accept",
) -> dict[str, Any]:
    """One grid run (kills = 0, no faults, fresh versions only) or one chaos run."""
    from frontier_rft.integrations.ray import start_sharded_service
    from frontier_rft.integrations.ray.sharded_ray import shard_name

    name = f"bench-{shards}-{workers}-{kills}-{mode}"
    (REPO / ".ray_tmp").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="shard-", dir=REPO / ".ray_tmp"))
    chaos = kills > 0
    try:
        cfg = service_config(mode, work / "ckpt", checkpoint_every_ops=2000)
        driver = start_sharded_service(
            name,
            "bots",
            make_pool(args.tasks),
            shards,
            cfg,
            candidates=16 * args.batch,
            dedupe_window=10**9,
        )
        driver.select(0, policy_version=V0)
        pool = [worker_class(ray).remote() for _ in range(workers)]
        ray.get([w.__ray_ready__.remote() for w in pool])
        epoch, stop = time.time(), work / "STOP"
        spec = {
            "workers": workers,
            "seconds": 3600.0 if chaos else seconds,  # a chaos run stops after its kills
            "max_reports": args.max_reports,
            "groups": args.groups,
            "rollouts": args.rollouts,
            "mix": args.mix if chaos else (1.0, 0.0, 0.0, 0.0),
            "lost_calls": args.lost_calls if chaos else 0.0,
            "lost_replies": args.lost_replies if chaos else 0.0,
            "epoch": epoch,
            "step_s": args.select_every,
            "stop_file": str(stop),
        }
        runs = [w.run.remote(name, i, spec) for i, w in enumerate(pool)]
        rng = np.random.default_rng(1)
        rounds, done_kills, last_kill, announced = [], 0, time.monotonic(), V0
        deadline = time.monotonic() + seconds + (1200 if chaos else 600)
        while time.monotonic() < deadline:
            ready, _ = ray.wait(runs, num_returns=len(runs), timeout=args.select_every)
            if len(ready) == len(runs):
                break
            t0 = time.perf_counter()
            announced = V0 + int((time.time() - epoch) / args.select_every)
            driver.select(args.batch, policy_version=announced)
            rounds.append(time.perf_counter() - t0)
            if done_kills < kills and time.monotonic() - last_kill >= args.kill_every:
                victim = ray.get_actor(shard_name(name, int(rng.integers(shards))))
                ray.kill(victim, no_restart=False)
                done_kills, last_kill = done_kills + 1, time.monotonic()
            if chaos and done_kills == kills and time.monotonic() - last_kill > 3.0:
                stop.touch()  # the last restart has had time to come back: finish
        results = ray.get(runs, timeout=max(1.0, deadline - time.monotonic()))
        driver.flush()
        out = audit(mode, results, driver, args.rollouts, announced)
        for s in range(shards):
            ray.kill(ray.get_actor(shard_name(name, s)))
        for w in pool:
            ray.kill(w)
        elapsed = max(r["elapsed"] for r in results)
        lat = np.concatenate([r["latency_ms"] for r in results])
        out.update(
            {
                "shards": shards,
                "workers": workers,
                "kills": done_kills,
                "groups_per_s": out["groups"] / elapsed,
                "flush_p50": float(np.percentile(lat, 50)),
                "flush_p99": float(np.percentile(lat, 99)),
                "round_p50": 1e3 * float(np.median(rounds)) if rounds else float("nan"),
                "rounds": len(rounds),
                "elapsed_s": elapsed,
            }
        )
        if chaos and done_kills < kills:
            out["problems"].append(f"only {done_kills} of {kills} kills before the deadline")
            out["ok"] = False
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fsync_ms(directory: Path, count: int = 200) -> float:
    path = directory / "fsync-probe"
    times = []
    with open(path, "ab") as fh:
        for _ in range(count):
            start = time.perf_counter()
            fh.write(b'{"seq":1,"op":"update"}\n')
            fh.flush()
            os.fsync(fh.fileno())
            times.append(time.perf_counter() - start)
    path.unlink()
    return 1e3 * float(np.median(times))


def settings_record(s: ChaosSettings) -> dict[str, Any]:
    """The settings as the results JSON records them, with the fixed versions and fates."""
    out = asdict(s)
    out.update({"v0": V0, "offsets": OFFSET, "max_lag": MAX_LAG, "slack": SLACK})
    out.update({"downweight_decay": DECAY, "downweight_min_rollouts": MIN_ROLLOUTS})
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)


def report(
    args: ChaosSettings,
    cmd: str,
    machine: str,
    grid: list[dict[str, Any]],
    chaos: list[dict[str, Any]],
    disk: dict[str, list[float]],
) -> str:
    fsync, load = disk["fsync_ms"], disk["load_1min"]
    lines = [
        "## Sharded selector service on Ray: feedback throughput and chaos runs\n",
        f"Command: `{cmd}`  ",
        f"Machine: {machine}  ",
        f"bots, N = {args.tasks:,}, candidate mode C = {16 * args.batch}; workers flush every "
        f"{args.groups} groups of {args.rollouts} rollouts (one update_many per shard; a "
        "shard acknowledges once its log is fsynced, flushes arriving together sharing one "
        f"fsync); the driver selects B = {args.batch} every {args.select_every:g} s. One "
        f"append + fsync on this disk: {fsync[0]:.3f} ms median before, {fsync[1]:.3f} ms "
        f"after; load average (1 min) of this shared machine {load[0]:.1f} before, "
        f"{load[1]:.1f} after.\n",
    ]
    if grid:
        lines += [
            "| shards | workers | groups/s | flush p50 ms | flush p99 ms | round p50 ms "
            "| rounds | acked = folded |",
            "|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in grid:
            lines.append(
                f"| {r['shards']} | {r['workers']} | {r['groups_per_s']:,.0f} "
                f"| {r['flush_p50']:.2f} | {r['flush_p99']:.2f} | {r['round_p50']:.1f} "
                f"| {r['rounds']} | {'yes' if r['ok'] else 'NO'} |"
            )
    if chaos:
        mix = dict(zip(CLASSES, args.mix, strict=True))
        lines += [
            f"\nChaos runs: {args.kill_shards} shards, {args.kill_workers} workers, "
            f"{args.kills} random shard kills (one every {args.kill_every:g} s) per run; "
            f"each worker's transport loses {args.lost_calls:.0%} of its flushes before the "
            f"shards and the reply of {args.lost_replies:.0%} after, and the worker retries "
            "the report. Reports carry the trainer's version (fresh, "
            f"{mix['fresh']:.0%}), one 25,000 behind (lagging, {mix['lagging']:.0%}), "
            f"250,000 behind (stale, {mix['stale']:.0%}) or 2,000,000 ahead (future, "
            f"{mix['future']:.0%}); max_lag = {MAX_LAG:,}, downweight_decay = {DECAY}, "
            f"downweight_min_rollouts = {MIN_ROLLOUTS}.\n",
            "What was injected:\n",
            "| staleness | kills | calls lost | replies lost | reports retried "
            "| calls re-sent after a restart | ops replayed "
            "| reports fresh / lagging / stale / future | groups/s |",
            "|---|---:|---:|---:|---:|---:|---:|---|---:|",
        ]
        for r in chaos:
            mixes = " / ".join(f"{r[f'reports_{c}']:,}" for c in CLASSES)
            lines.append(
                f"| {r['mode']} | {r['kills']} | {r['lost_calls']} | {r['lost_replies']} "
                f"| {r['retries']} | {r['resends']} | {r['replayed_ops']:,} | {mixes} "
                f"| {r['groups_per_s']:,.0f} |"
            )
        lines += [
            "\nWhat the audit found (ledgers of the workers against the shards' own state):\n",
            "| staleness | rollouts acknowledged | folded (ledger) | dropped stale (ledger) "
            "| thinned (ledger) | future refused | duplicates dropped | lost | double-counted "
            "| groups wrongly folded | max delay (versions) | verdict |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in chaos:
            verdict = "exact" if r["ok"] else "FAILED: " + "; ".join(r["problems"])
            lines.append(
                f"| {r['mode']} | {r['acked']:,} | {r['folded']:,} ({r['expected_folded']:,}) "
                f"| {r['dropped']:,} ({r['expected_dropped']:,}) "
                f"| {r['thinned']:,} ({r['expected_thinned']:,}) "
                f"| {r['refused']:,} of {r['reports_future']:,} | {r['duplicates_dropped']:,} "
                f"| {r['lost']} | {r['double']} "
                f"| {r['wrongly_folded_groups']} | {r['max_delay']} | {verdict} |"
            )
    return "\n".join(lines)


def run_benchmark(s: ChaosSettings, command: str) -> tuple[dict[str, Any], str, bool]:
    """The throughput grid and one chaos run per staleness mode on a local Ray: the results
    (as the JSON records them), the markdown report, and whether every run was exact."""
    os.environ["RAY_AUTH_MODE"] = "disabled"
    from frontier_rft.integrations.ray.local import init_local

    (REPO / ".ray_tmp").mkdir(exist_ok=True)
    probe = Path(tempfile.mkdtemp(dir=REPO / ".ray_tmp"))
    fsync_before, load_before = fsync_ms(probe), os.getloadavg()[0]
    ray = init_local(REPO / ".ray_tmp" / "svc", num_cpus=2)
    # The workers run this module's code as it is here (a checkout's src/, not an install).
    for module in (sys.modules[__name__], sys.modules[ChaosWorker.__module__]):
        ray.cloudpickle.register_pickle_by_value(module)
    grid, chaos = [], []
    try:
        for shards in s.grid_shards:
            for w in s.grid_workers:
                _log.info("[ray_sharded] S=%d W=%d", shards, w)
                grid.append(run_one(ray, s, shards, w, s.seconds, 0))
        for mode in s.modes if s.kills else []:
            _log.info("[ray_sharded] chaos: %s, %d kills", mode, s.kills)
            chaos.append(run_one(ray, s, s.kill_shards, s.kill_workers, 0.0, s.kills, mode))
    finally:
        ray.shutdown()
    fsync_after, load_after = fsync_ms(probe), os.getloadavg()[0]
    shutil.rmtree(probe, ignore_errors=True)
    machine = (
        f"{os.cpu_count()} CPUs, {platform.platform(terse=True)}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, ray {ray.__version__}"
    )
    disk = {"fsync_ms": [fsync_before, fsync_after], "load_1min": [load_before, load_after]}
    text = report(s, command, machine, grid, chaos, disk)
    payload = {"command": command, "machine": machine, **disk, "settings": settings_record(s)}
    payload.update({"grid": grid, "chaos": chaos})
    payload = json.loads(json.dumps(payload, default=_plain))
    return payload, text, all(r["ok"] for r in grid + chaos)
