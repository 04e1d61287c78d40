"""Selector service throughput and latency: in-process selector vs the Ray actor.

Each client runs two timed phases of `--seconds` each: select-only (`select(B)`), then
update-only (`update` of B tasks x R rollouts, a fresh step per call, idempotent), and
records every call's latency. Rows:

- *selector, in-process*: the bare Selector (no service), one client;
- *service, in-process*: SelectorService with its write-ahead log (fsync per update);
- *Ray actor*: the same service behind a named actor, 1 and 8 concurrent clients (Ray
  actors with num_cpus=0), with the log fsynced (`durable`) and without a checkpoint
  directory (`memory`, transport cost only).

A durable update costs one fsync, which depends on the disk and its load: the run
measures a bare append + fsync before and after, to read the durable rows against.

calls/s is the total over all clients (the actor runs one call at a time, so it is the
service's capacity); latency p50/p99 is per call, as a client sees it.

    python benchmarks/ray_service.py              # ~1 minute on 2 cores
    python benchmarks/ray_service.py --seconds 1 --selector bots --tasks 100000
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft import Feedback, Selector, TaskPool, make_selector
from frontier_rft.service import SelectorService, ServiceConfig

REPO = Path(__file__).resolve().parents[1]


def phases(
    target: Any, num_tasks: int, seconds: float, batch: int, rollouts: int, seed: int
) -> dict[str, Any]:
    """Select-only then update-only for `seconds` each; latencies in ms per call.

    `target` is anything with select(n) and update(fb, idempotent=...): a Selector, a
    SelectorService or a ServiceClient. Updates report random tasks, a fresh step each.
    """
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for phase in ("select", "update"):
        lat: list[float] = []
        step = seed * 10_000_000
        end = time.perf_counter() + seconds
        while (now := time.perf_counter()) < end:
            if phase == "select":
                target.select(batch)
            else:
                task_ids = np.repeat(rng.choice(num_tasks, batch, replace=False), rollouts)
                fb = Feedback(task_ids, rng.integers(0, 2, task_ids.shape[0]) * 1.0, step=step)
                target.update(fb, idempotent=True)
                step += 1
            lat.append(time.perf_counter() - now)
        out[phase] = np.array(lat) * 1e3
    return out


def fsync_ms(directory: Path, count: int = 200) -> float:
    """Median ms of appending one short line and fsyncing it: the floor of a durable update."""
    path = directory / "fsync-probe"
    times = []
    with open(path, "ab") as fh:
        for _ in range(count):
            start = time.perf_counter()
            fh.write(b'{"seq":1,"op":"update","ids":[1,2,3,4],"r":[0.0,1.0,1.0,0.0]}\n')
            fh.flush()
            os.fsync(fh.fileno())
            times.append(time.perf_counter() - start)
    path.unlink()
    return 1e3 * float(np.median(times))


def ray_client_class(ray: Any) -> Any:
    @ray.remote(num_cpus=0)
    class Client:
        """A rollout-worker stand-in: drives the service actor through a ServiceClient."""

        def run(self, name: str, *args: Any) -> Any:
            from frontier_rft.integrations.ray import connect

            return phases(connect(name), *args)

    return Client


def row(label: str, clients: int, results: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    r: dict[str, Any] = {"mode": label, "clients": clients}
    for phase in ("select", "update"):
        lat = np.concatenate([x[phase] for x in results])
        r[f"{phase}_per_s"] = lat.shape[0] / seconds
        r[f"{phase}_p50"] = float(np.percentile(lat, 50))
        r[f"{phase}_p99"] = float(np.percentile(lat, 99))
    return r


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--selector", default="prioritized", help="registered selector name")
    ap.add_argument("--tasks", type=int, default=10_000, help="pool size N")
    ap.add_argument("--batch", type=int, default=4, help="tasks per select / per update")
    ap.add_argument("--rollouts", type=int, default=4, help="rollouts per task in an update")
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each timed phase")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients of the big rows")
    args = ap.parse_args(argv)
    pool = TaskPool(num_tasks=args.tasks)

    def fresh() -> Selector:
        return make_selector(args.selector, pool, seed=0)

    timing = (args.tasks, args.seconds, args.batch, args.rollouts)
    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench-", dir=REPO / ".ray_tmp"))

    def log(msg: str) -> None:
        print(f"[ray_service] {msg}", file=sys.stderr, flush=True)

    try:
        fsync_before = fsync_ms(work)
        log("in-process selector")
        res = phases(fresh(), *timing, 1)
        rows.append(row("selector, in-process", 1, [res], args.seconds))
        log("in-process service (fsync log)")
        svc = SelectorService(fresh(), ServiceConfig(checkpoint_dir=str(work / "inproc")))
        res = phases(svc, *timing, 1)
        svc.close()
        rows.append(row("service, in-process, durable", 1, [res], args.seconds))

        os.environ["RAY_AUTH_MODE"] = "disabled"
        import ray

        from frontier_rft.integrations.ray import start_service
        from frontier_rft.integrations.ray.local import init_local

        init_local(REPO / ".ray_tmp" / "svc", num_cpus=2)
        cloudpickle: Any = ray.cloudpickle  # untyped upstream
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        try:
            client_cls = ray_client_class(ray)
            clients = [client_cls.remote() for _ in range(args.clients)]
            ray.get([c.__ray_ready__.remote() for c in clients])  # processes up before timing
            for durable in (True, False):
                kind = "durable" if durable else "memory"
                cfg = ServiceConfig(checkpoint_dir=str(work / kind) if durable else None)
                service = start_service(f"bench-{kind}", fresh(), cfg)
                for k in (1, args.clients):
                    log(f"Ray actor, {kind}, {k} client(s)")
                    runs = [
                        c.run.remote(f"bench-{kind}", *timing, i) for i, c in enumerate(clients[:k])
                    ]
                    rows.append(row(f"Ray actor, {kind}", k, ray.get(runs), args.seconds))
                service.close()
        finally:
            ray.shutdown()
        fsync_after = fsync_ms(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    cmd = " ".join(shlex.quote(a) for a in [".venv/bin/python", *sys.argv])
    print("## Selector service: select / update through a Ray actor vs in-process\n")
    print(f"Command: `{cmd}`  ")
    print(
        f"Machine: {os.cpu_count()} CPUs, {platform.platform()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, ray {ray.__version__}  "
    )
    print(
        f"Selector `{args.selector}`, N = {args.tasks:,}; select({args.batch}); update of "
        f"{args.batch} tasks x {args.rollouts} rollouts; {args.seconds:g} s per phase. "
        f"One append + fsync on this disk: {fsync_before:.3f} ms median before the run, "
        f"{fsync_after:.3f} ms after.\n"
    )
    print(
        "| mode | clients | select calls/s | select p50 ms | select p99 ms "
        "| update calls/s | update p50 ms | update p99 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['clients']} | {r['select_per_s']:,.0f} | {r['select_p50']:.3f} "
            f"| {r['select_p99']:.3f} | {r['update_per_s']:,.0f} | {r['update_p50']:.3f} "
            f"| {r['update_p99']:.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
