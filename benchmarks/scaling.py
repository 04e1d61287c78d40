"""Step time and memory against the pool size N: BOTS whole-pool vs candidate mode.

Each (mode, N) runs in a fresh subprocess, so its peak resident memory (`ru_maxrss`) is
its own: the pool (weak/strong reference pass rates, 16 bytes per task, the user's data),
the selector, and the temporaries of a step. Per run:

- step = flush (the update rule) + select(B) + update(B x R rollouts); median and p90
  of wall time over the timed steps after warm-up, and the median CPU time of this
  process (the robust figure on a shared machine: other load inflates wall time);
- bytes per task the selector retains: what its construction allocates plus what 72
  more steps (past the 64-step log window, so in steady state) add, by tracemalloc, after
  the timed steps; the pool is not counted;
- peak RSS of the whole process, and the peak RSS added by a save_selector of the
  state (`--save`, one save at the end).

The world is lean so that N = 1e8 fits: pass rates are derived from the reference rates
of the chosen tasks on the fly, not stored per task: halfway between the weak and the
strong model's (`--policy inside`: mu~ stays in [0, 1]) or the strong model's + 0.05
(`--policy above`: mu~ > 1, every step's interpolation clips, candidate mode's worst
case, where the clipped steps' corrections are computed for every drawn task).

    python benchmarks/scaling.py                                  # 1e5..1e7, both modes
    python benchmarks/scaling.py --sizes 1e8 --modes candidates --save --steps 100
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft import Feedback, TaskPool, make_selector, save_selector

MEMORY_CAP = 12 << 30  # address-space cap of each run, so a runaway cannot take the host
MEMORY_STEPS = 72  # steps of the memory pass: more than the 64-step late_window


def one(
    n: int, mode: str, candidates: int, steps: int, warmup: int, save: bool, policy: str
) -> dict[str, Any]:
    """One (mode, N) run, in this process."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    batch, rollouts = 256, 16
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    ref = np.empty((n, 2))
    chunk = 1 << 22
    for lo in range(0, n, chunk):  # in chunks: no N-sized temporaries besides `ref`
        hi = min(n, lo + chunk)
        ref[lo:hi, 0] = rng.uniform(0.0, 0.6, hi - lo)
        ref[lo:hi, 1] = np.minimum(ref[lo:hi, 0] + rng.uniform(0.0, 0.4, hi - lo), 1.0)
    pool = TaskPool(num_tasks=n, reference_pass_rates=ref)
    del ref
    pool_s = time.perf_counter() - start
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    sel = make_selector("bots", pool, seed=0, candidates=candidates if mode != "whole" else 0)
    built = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()  # timing without tracemalloc; growth is re-measured at the end
    ref_rates = pool.reference_pass_rates
    assert ref_rates is not None
    times: list[tuple[float, float]] = []

    def step(t: int) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        sel.flush()
        ids = sel.select(batch)
        t1, c1 = time.perf_counter(), time.process_time()
        task_ids = np.repeat(ids, rollouts)
        weak, strong = ref_rates[task_ids, 0], ref_rates[task_ids, 1]
        p = np.minimum(strong + 0.05, 1.0) if policy == "above" else 0.5 * (weak + strong)
        rewards = (rng.random(task_ids.shape[0]) < p).astype(np.float64)
        t2, c2 = time.perf_counter(), time.process_time()
        sel.update(Feedback(task_ids, rewards, step=t))
        wall = (t1 - t0) + (time.perf_counter() - t2)
        return wall, (c1 - c0) + (time.process_time() - c2)

    for t in range(warmup + steps):
        elapsed = step(t)
        if t >= warmup:
            times.append(elapsed)
    ms = 1e3 * np.array([w for w, _ in times])
    cpu_ms = 1e3 * np.array([c for _, c in times])
    peak = _peak_rss_gib()
    # Memory pass: what the steps keep (logs of the last late_window steps, the lazy
    # event history) once in steady state, on top of what construction allocated.
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for t in range(warmup + steps, warmup + steps + MEMORY_STEPS):
        step(t)
    sel.flush()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    out: dict[str, Any] = {
        "n": n,
        "mode": mode,
        "candidates": candidates if mode != "whole" else 0,
        "policy": policy,
        "steps": steps,
        "pool_s": pool_s,
        "step_ms_median": float(np.median(ms)),
        "step_ms_p90": float(np.percentile(ms, 90)),
        "step_cpu_ms_median": float(np.median(cpu_ms)),
        "bytes_per_task_built": built / n,
        "bytes_per_task_retained": (built + grown) / n,
        "peak_rss_gib": peak,
    }
    if save:
        before = _peak_rss_gib()
        with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parents[1]) as tmp:
            t0 = time.perf_counter()
            save_selector(sel, Path(tmp) / "sel.npz", include_pool=False)
            out["save_s"] = time.perf_counter() - t0
            out["save_file_gib"] = (Path(tmp) / "sel.npz").stat().st_size / 2**30
        out["peak_rss_after_save_gib"] = _peak_rss_gib()
        out["save_extra_rss_gib"] = out["peak_rss_after_save_gib"] - before
    return out


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6,1e7", help="pool sizes N")
    ap.add_argument("--modes", default="whole,candidates", help="whole and/or candidates")
    ap.add_argument("--candidates", type=int, default=4096, help="C in candidate mode (16 B)")
    ap.add_argument("--steps", type=int, default=200, help="timed steps (whole pool: <= 20)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--save", action="store_true", help="also time one save_selector")
    ap.add_argument(
        "--policy",
        default="inside",
        choices=("inside", "above"),
        help="policy between its weak and strong references (mu~ in [0, 1]) or above the "
        "strong one (every step clips: candidate mode's worst case)",
    )
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--one", nargs=2, metavar=("N", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        n, mode = int(float(args.one[0])), args.one[1]
        steps = min(args.steps, 20) if mode == "whole" else args.steps
        warm = min(args.warmup, 3) if mode == "whole" else args.warmup
        print(json.dumps(one(n, mode, args.candidates, steps, warm, args.save, args.policy)))
        return 0
    rows = []
    for n_text in args.sizes.split(","):
        for mode in args.modes.split(","):
            cmd = [sys.executable, __file__, "--one", n_text, mode]
            cmd += ["--candidates", str(args.candidates), "--steps", str(args.steps)]
            cmd += ["--warmup", str(args.warmup), "--policy", args.policy]
            cmd += ["--save"] if args.save else []
            print(f"[scaling] N={n_text} {mode}", file=sys.stderr, flush=True)
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if res.returncode != 0:
                print(res.stderr, file=sys.stderr)
                continue
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    cmd_line = " ".join(shlex.quote(a) for a in ["python", *sys.argv])
    print("## BOTS step time and memory vs pool size\n")
    print(f"Command: `{cmd_line}`  ")
    print(
        f"Machine: {os.cpu_count()} CPUs, {platform.platform(terse=True)}, Python "
        f"{platform.python_version()}, numpy {np.__version__}  "
    )
    print(
        "B = 256 tasks x 16 rollouts per step, interpolation plug-in (lam = rho = 0.1), "
        f"policy {args.policy} its references; one fresh process per row.\n"
    )
    head = (
        "| N | mode | C | step ms (median) | p90 | step CPU ms (median) "
        "| selector bytes/task | peak RSS GiB |"
    )
    sep = "|---:|---|---:|---:|---:|---:|---:|---:|"
    if args.save:
        head += " save s | save file GiB | RSS added by save GiB |"
        sep += "---:|---:|---:|"
    print(head)
    print(sep)
    for r in rows:
        line = (
            f"| {r['n']:.0e} | {r['mode']} | {r['candidates'] or '-'} | {r['step_ms_median']:.3g} "
            f"| {r['step_ms_p90']:.3g} | {r['step_cpu_ms_median']:.3g} "
            f"| {r['bytes_per_task_retained']:.1f} "
            f"| {r['peak_rss_gib']:.2f} |"
        )
        if args.save:
            line += (
                f" {r['save_s']:.1f} | {r['save_file_gib']:.2f} | {r['save_extra_rss_gib']:.2f} |"
            )
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
