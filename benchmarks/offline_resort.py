"""The offline curriculum without difficulty, over a whole first epoch: re-sort schedule cost.

Given prompts only, `offline` estimates difficulty from first observed pass rates and
re-sorts the tasks not yet walked. `overhead.py` times 20 steps early in training, when
re-sorts are most frequent; this script times every step of the first epoch (N / B
steps, when all first observations arrive) and reports the mean (amortized), median and
worst step, and how many steps re-sorted, for the default schedule (`resort_fraction`
0.01) and, where it fits in the time, for a re-sort after every step (0).

    python benchmarks/offline_resort.py --json benchmarks/results/offline_resort.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any, cast

import numpy as np

from frontier_rft import make_selector
from frontier_rft.bench.overhead import world as overhead_world
from frontier_rft.bench.scripts import command_line
from frontier_rft.selectors.offline import OfflineSelector

RUNS = ((100_000, 0.0), (100_000, 0.01), (1_000_000, 0.01))
"""(N, resort_fraction): every-step re-sorting at 1e6 would take ~20 minutes."""


def epoch(n: int, fraction: float, batch: int) -> dict[str, Any]:
    """Time every step of the first epoch of prompts-only `offline` at pool size n."""
    steps = -(-n // batch)
    settings = overhead_world.Settings(given="prompts", batch=batch)
    world = overhead_world.make_world(n, settings, steps)
    overhead_world.derive_features(world, settings)  # the one-off text features, not timed here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = cast(
            OfflineSelector,
            make_selector("offline", world.pool, seed=0, resort_fraction=fraction),
        )
    est = sel._estimated
    assert est is not None  # given prompts only, offline estimates difficulty
    times, resorts, last = [], 0, est.sorted_at
    for t in range(steps):
        t0 = time.perf_counter()
        sel.flush()
        ids = sel.select(batch)
        sel.update(world.feedback(ids, t))
        times.append(time.perf_counter() - t0)
        if est.sorted_at != last:
            resorts, last = resorts + 1, est.sorted_at
    ms = 1e3 * np.array(times)
    return {
        "n": n,
        "resort_fraction": fraction,
        "steps": steps,
        "resorts": resorts,
        "mean_ms": float(ms.mean()),
        "median_ms": float(np.median(ms)),
        "p99_ms": float(np.percentile(ms, 99)),
        "max_ms": float(ms.max()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256, help="tasks selected per step")
    ap.add_argument("--json", metavar="PATH", help="also write the rows here")
    args = ap.parse_args()
    command = command_line()
    rows = []
    for n, fraction in RUNS:
        rows.append(epoch(n, fraction, args.batch))
        r = rows[-1]
        print(
            f"[offline_resort] N={n:,} fraction={fraction}: {r['mean_ms']:.3g} ms/step",
            file=sys.stderr,
        )
    lines = [
        f"Command: `{command}`  ",
        f"Prompts only, batch {args.batch} x 16 rollouts, every step of the first epoch.",
        "",
        "| N | resort_fraction | steps | re-sorting steps | mean ms/step | median | p99 | max |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['resort_fraction']:g} | {r['steps']} | {r['resorts']} "
            f"| {r['mean_ms']:.3g} | {r['median_ms']:.3g} | {r['p99_ms']:.3g} | {r['max_ms']:.3g} |"
        )
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
