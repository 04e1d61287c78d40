"""Sharded selector service on a local Ray: feedback throughput, and a chaos run per staleness mode.

Throughput grid: S shard actors (durable: a flush is acknowledged once fsynced), W rollout
workers reporting groups through BatchedClients, while the driver selects every
`--select-every` seconds. Chaos run (`--kills K`, once per staleness mode of `--modes`): a
random shard is killed every `--kill-every` seconds while workers' transports lose flushes
before and after the shards apply them (and retry), and reports carry fresh, lagging,
stale or far-future versions; an audit of the workers' ledgers against the shards' own
state counts what was lost, double-counted or wrongly folded. What is injected and how
the audit decides: frontier_rft.bench.service.ray_sharded (the run: bench.service.ray_sharded_run).

    python benchmarks/ray_sharded.py                       # grid + 3 chaos runs, ~8 minutes
    python benchmarks/ray_sharded.py --shards 4 --workers 16 --seconds 10 --kills 0
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
from pathlib import Path

from frontier_rft.bench.service.ray_sharded import MODES, ChaosSettings
from frontier_rft.bench.service.ray_sharded_run import run_benchmark


def parse_args(argv: list[str] | None = None) -> tuple[ChaosSettings, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tasks", type=int, default=1_000_000, help="pool size N")
    ap.add_argument("--shards", default="1,2,4", help="shard counts of the grid ('' = no grid)")
    ap.add_argument("--workers", default="1,4,16", help="worker counts of the grid")
    ap.add_argument("--seconds", type=float, default=8.0, help="length of each grid run")
    ap.add_argument("--groups", type=int, default=64, help="G: groups per report (one flush)")
    ap.add_argument("--rollouts", type=int, default=16, help="R: rollouts per group (1 to 25)")
    ap.add_argument("--batch", type=int, default=256, help="B of the driver's rounds")
    ap.add_argument("--select-every", type=float, default=0.25, help="seconds between rounds")
    ap.add_argument("--kills", type=int, default=20, help="shard kills per chaos run (0 = none)")
    ap.add_argument("--kill-every", type=float, default=1.5, help="seconds between kills")
    ap.add_argument("--kill-shards", type=int, default=4)
    ap.add_argument("--kill-workers", type=int, default=16)
    ap.add_argument("--modes", default=",".join(MODES), help="staleness modes of the chaos runs")
    ap.add_argument("--lost-calls", type=float, default=0.03, help="flushes lost before the shards")
    ap.add_argument("--lost-replies", type=float, default=0.03, help="flushes whose reply is lost")
    ap.add_argument("--mix", default="0.6,0.15,0.2,0.05", help="shares: fresh,lagging,stale,future")
    ap.add_argument("--max-reports", type=int, default=10**9, help="reports per worker, at most")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)
    try:
        settings = ChaosSettings(
            tasks=args.tasks,
            seconds=args.seconds,
            groups=args.groups,
            rollouts=args.rollouts,
            batch=args.batch,
            select_every=args.select_every,
            kills=args.kills,
            kill_every=args.kill_every,
            kill_shards=args.kill_shards,
            kill_workers=args.kill_workers,
            modes=tuple(m for m in args.modes.split(",") if m),
            lost_calls=args.lost_calls,
            lost_replies=args.lost_replies,
            mix=tuple(float(x) for x in args.mix.split(",")),
            max_reports=args.max_reports,
            grid_shards=tuple(int(x) for x in args.shards.split(",") if x),
            grid_workers=tuple(int(x) for x in args.workers.split(",") if x),
        )
    except ValueError as exc:
        ap.error(str(exc))
    return settings, args


def main(argv: list[str] | None = None) -> int:
    settings, args = parse_args(argv)
    cmd = " ".join(shlex.quote(a) for a in ["python", *(sys.argv if argv is None else argv)])
    payload, text, ok = run_benchmark(settings, cmd)
    print(text)
    if args.json is not None:
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the library's progress lines
    raise SystemExit(main())
