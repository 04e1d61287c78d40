"""Sharded selector service on a local Ray: feedback throughput, and random shard kills.

Throughput grid: S shard actors (durable: a flush is acknowledged once fsynced; flushes
that arrive together share one fsync), W rollout-worker actors, each reporting
groups of R rollouts through a BatchedClient that flushes every G groups (one
`update_many` per shard per flush), for `--seconds`; meanwhile the driver runs a
selection round (B tasks, candidate mode) every `--select-every` seconds, as a trainer
would once per step. Groups/s = groups acknowledged by all workers / wall time.

Kill run (`--kills K`): the same with S shards and W workers while a random shard is
killed every `--kill-every` seconds (Ray restarts it; it resumes from checkpoint + log)
until K kills; then every acknowledged rollout must be folded exactly once:
lost = acknowledged - folded, double-counted = folded - acknowledged.

Workers are Ray actors (separate processes, num_cpus=0) on this machine. They report
the trainer's step (wall time / `--select-every`, shared by all), so a round folds one
or two steps, as in training; worker w draws its tasks from ids = w mod W without
repeating one within a step, so no (step, task) pair is reported twice and the
acknowledged totals are exact.

    python benchmarks/ray_sharded.py                       # grid + 20 kills, ~5 minutes
    python benchmarks/ray_sharded.py --shards 4 --workers 16 --seconds 10 --kills 0
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft import Feedback, TaskPool
from frontier_rft.integrations.ray.service import ServiceConfig

REPO = Path(__file__).resolve().parents[1]


def make_pool(n: int) -> TaskPool:
    rng = np.random.default_rng(0)
    weak = rng.uniform(0.0, 0.6, n)
    return TaskPool(num_tasks=n, reference_pass_rates=np.c_[weak, np.minimum(weak + 0.3, 1.0)])


def worker_class(ray: Any) -> Any:
    @ray.remote(num_cpus=0)
    class Worker:
        """A rollout worker stand-in: groups of random tasks, reported through a client."""

        def run(
            self,
            name: str,
            wid: int,
            workers: int,
            seconds: float,
            groups: int,
            rollouts: int,
            epoch: float,
            step_s: float,
            stop_file: str,
        ) -> dict[str, Any]:
            from frontier_rft.integrations.ray import connect_sharded

            client = connect_sharded(name, flush_groups=groups, reconnect_timeout_s=300)
            n = client.partition.bounds[-1]
            rng = np.random.default_rng(wid)
            # This worker's tasks: its residue class mod W, walked in a random order, so no
            # two reports share a (step, task) and the acknowledged totals are exact.
            mine = rng.permutation(np.arange(wid, n, workers))
            lat: list[float] = []
            flushes, cursor, start = 0, 0, time.perf_counter()
            stop = Path(stop_file)
            while time.perf_counter() - start < seconds and not stop.exists():
                step = int((time.time() - epoch) / step_s)  # the trainer's step, shared
                if cursor + groups > mine.shape[0]:
                    cursor = 0
                ids = mine[cursor : cursor + groups]
                cursor += groups
                task_ids = np.repeat(ids, rollouts)
                rewards = (rng.random(task_ids.shape[0]) < 0.5).astype(np.float64)
                t0 = time.perf_counter()
                client.report(Feedback(task_ids, rewards, step))  # G groups: flushes
                lat.append(time.perf_counter() - t0)
                flushes += 1
            elapsed = time.perf_counter() - start
            return {
                "acked": client.acked_rollouts,
                "groups": client.acked_rollouts // rollouts,
                "elapsed": elapsed,
                "flush_ms": 1e3 * np.asarray(lat),
                "resends": client.shards.resends,  # type: ignore[attr-defined]
            }

    return Worker


def run_one(
    ray: Any, args: argparse.Namespace, shards: int, workers: int, seconds: float, kills: int
) -> dict[str, Any]:
    from frontier_rft.integrations.ray import start_sharded_service
    from frontier_rft.integrations.ray.sharded_ray import shard_name

    name = f"bench-{shards}-{workers}-{kills}"
    work = Path(tempfile.mkdtemp(prefix="shard-", dir=REPO / ".ray_tmp"))
    try:
        cfg = ServiceConfig(checkpoint_dir=str(work / "ckpt"), checkpoint_every_ops=2000)
        driver = start_sharded_service(
            name,
            "bots",
            make_pool(args.tasks),
            shards,
            cfg,
            candidates=16 * args.batch,
            dedupe_window=10**9,
        )
        pool = [worker_class(ray).remote() for _ in range(workers)]
        ray.get([w.__ray_ready__.remote() for w in pool])
        epoch, stop = time.time(), work / "STOP"
        limit = seconds if not kills else 3600.0  # a kill run stops after its kills
        runs = [
            w.run.remote(
                name,
                i,
                workers,
                limit,
                args.groups,
                args.rollouts,
                epoch,
                args.select_every,
                str(stop),
            )
            for i, w in enumerate(pool)
        ]
        rng = np.random.default_rng(1)
        rounds, done_kills, last_kill = [], 0, time.monotonic()
        deadline = time.monotonic() + seconds + (1200 if kills else 600)
        while time.monotonic() < deadline:
            ready, _ = ray.wait(runs, num_returns=len(runs), timeout=args.select_every)
            if len(ready) == len(runs):
                break
            t0 = time.perf_counter()
            driver.select(args.batch)
            rounds.append(time.perf_counter() - t0)
            if done_kills < kills and time.monotonic() - last_kill >= args.kill_every:
                victim = ray.get_actor(shard_name(name, int(rng.integers(shards))))
                ray.kill(victim, no_restart=False)
                done_kills, last_kill = done_kills + 1, time.monotonic()
            if kills and done_kills == kills and time.monotonic() - last_kill > 3.0:
                stop.touch()  # the last restart has had time to come back: finish
        results = ray.get(runs)
        driver.flush()
        m = driver.metrics()
        for s in range(shards):
            ray.kill(ray.get_actor(shard_name(name, s)))
        for w in pool:
            ray.kill(w)
        acked = sum(r["acked"] for r in results)
        folded = int(m["feedback/rollouts"])
        elapsed = max(r["elapsed"] for r in results)
        lat = np.concatenate([r["flush_ms"] for r in results])
        return {
            "shards": shards,
            "workers": workers,
            "groups_per_s": sum(r["groups"] for r in results) / elapsed,
            "flush_p50": float(np.percentile(lat, 50)),
            "flush_p99": float(np.percentile(lat, 99)),
            "round_p50": 1e3 * float(np.median(rounds)) if rounds else float("nan"),
            "rounds": len(rounds),
            "kills": done_kills,
            "acked": acked,
            "folded": folded,
            "lost": max(0, acked - folded),
            "double": max(0, folded - acked),
            "duplicates_dropped": int(m["service/duplicates_dropped"]),
            "resends": sum(r["resends"] for r in results),
            "replayed_ops": int(m["service/replayed_ops"]),
        }
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tasks", type=int, default=1_000_000, help="pool size N")
    ap.add_argument("--shards", default="1,2,4", help="shard counts of the grid")
    ap.add_argument("--workers", default="1,4,16", help="worker counts of the grid")
    ap.add_argument("--seconds", type=float, default=8.0, help="length of each grid run")
    ap.add_argument("--groups", type=int, default=64, help="G: groups per flush")
    ap.add_argument("--rollouts", type=int, default=16, help="R: rollouts per group")
    ap.add_argument("--batch", type=int, default=256, help="B of the driver's rounds")
    ap.add_argument("--select-every", type=float, default=0.25, help="seconds between rounds")
    ap.add_argument("--kills", type=int, default=20, help="random shard kills (0 = skip)")
    ap.add_argument("--kill-every", type=float, default=1.5, help="seconds between kills")
    ap.add_argument("--kill-shards", type=int, default=4)
    ap.add_argument("--kill-workers", type=int, default=16)
    args = ap.parse_args()
    os.environ["RAY_AUTH_MODE"] = "disabled"
    from frontier_rft.integrations.ray.local import init_local

    probe = Path(tempfile.mkdtemp(dir=REPO / ".ray_tmp"))
    fsync_before = fsync_ms(probe)
    ray = init_local(REPO / ".ray_tmp" / "svc", num_cpus=2)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    grid, kill = [], None
    try:
        for s in (int(x) for x in args.shards.split(",") if x):
            for w in (int(x) for x in args.workers.split(",") if x):
                print(f"[ray_sharded] S={s} W={w}", file=sys.stderr, flush=True)
                grid.append(run_one(ray, args, s, w, args.seconds, 0))
        if args.kills:
            print(f"[ray_sharded] {args.kills} kills", file=sys.stderr, flush=True)
            kill = run_one(ray, args, args.kill_shards, args.kill_workers, 0.0, args.kills)
    finally:
        ray.shutdown()
    fsync_after = fsync_ms(probe)
    shutil.rmtree(probe, ignore_errors=True)
    cmd = " ".join(shlex.quote(a) for a in ["python", *sys.argv])
    print("## Sharded selector service on Ray: feedback throughput and shard kills\n")
    print(f"Command: `{cmd}`  ")
    print(
        f"Machine: {os.cpu_count()} CPUs, {platform.platform(terse=True)}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, ray {ray.__version__}  "
    )
    print(
        f"bots, N = {args.tasks:,}, candidate mode C = {16 * args.batch}; workers flush every "
        f"{args.groups} groups of {args.rollouts} rollouts (one update_many per shard; a "
        f"shard acknowledges once its log is fsynced, flushes arriving together sharing one "
        f"fsync); the driver selects B = {args.batch} every "
        f"{args.select_every:g} s. One append + fsync on this disk: {fsync_before:.3f} ms "
        f"median before, {fsync_after:.3f} ms after.\n"
    )
    if grid:
        print(
            "| shards | workers | groups/s | flush p50 ms | flush p99 ms | round p50 ms "
            "| rounds | acked = folded |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in grid:
            ok = "yes" if r["lost"] == 0 and r["double"] == 0 else "NO"
            print(
                f"| {r['shards']} | {r['workers']} | {r['groups_per_s']:,.0f} "
                f"| {r['flush_p50']:.2f} | {r['flush_p99']:.2f} | {r['round_p50']:.1f} "
                f"| {r['rounds']} | {ok} |"
            )
    if kill is not None:
        print(
            f"\nKill run: {kill['shards']} shards, {kill['workers']} workers, "
            f"{kill['kills']} random shard kills (one every {args.kill_every:g} s), "
            f"{kill['groups_per_s']:,.0f} groups/s meanwhile.\n"
        )
        print(
            "| kills | rollouts acknowledged | folded | lost | double-counted "
            "| duplicates dropped | calls re-sent | ops replayed |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        print(
            f"| {kill['kills']} | {kill['acked']:,} | {kill['folded']:,} | {kill['lost']} "
            f"| {kill['double']} | {kill['duplicates_dropped']:,} | {kill['resends']} "
            f"| {kill['replayed_ops']:,} |"
        )
    return 0 if kill is None or (kill["lost"] == 0 and kill["double"] == 0) else 1


if __name__ == "__main__":
    raise SystemExit(main())
