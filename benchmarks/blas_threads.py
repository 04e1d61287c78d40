"""Does any selector's step depend on BLAS threads? Default threads vs OPENBLAS_NUM_THREADS=1.

Each run is a fresh process (the thread setting is read when numpy loads) that builds
benchmarks/overhead.py's world and times `--steps` selector steps (flush + select +
update, B = 256, 16 rollouts), recording wall and CPU time per step. Runs alternate
between the two settings, `--repeats` times each. BLAS worker threads busy-wait after a
call, so a hot path that reaches BLAS shows CPU time well above wall time with default
threads, and a slower step on a 2-core machine; an elementwise hot path gives the same
CPU time either way. CPU time is the robust signal on a shared machine (other load
inflates wall time, not this process's CPU time).

    python benchmarks/blas_threads.py                  # bots, mopps, dots at N = 1e6
    python benchmarks/blas_threads.py --selectors bots --sizes 1e5,1e6 --repeats 3
    python benchmarks/blas_threads.py --given prompts --selectors bots,dots,offline,pcl
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time

import numpy as np

GIVEN = {"all": "every kind of metadata", "prompts": "prompt text only"}


def child(selectors: list[str], n: int, steps: int, given: str) -> dict[str, list[float]]:
    """In this process: median wall and CPU ms per step of each selector."""
    import warnings

    from frontier_rft import make_selector
    from frontier_rft.bench.overhead.world import Settings, derive_features, make_world

    settings = Settings(sizes=(n,), given=given)
    world = make_world(n, settings, steps + 3)
    derive_features(world, settings)  # prompts only: the one-off text features, untimed
    warnings.simplefilter("ignore")  # the prompts-only EvidenceWarnings
    out: dict[str, list[float]] = {}
    for name in selectors:
        sel = make_selector(name, world.pool, seed=0)
        wall, cpu = [], []
        for t in range(steps + 3):
            w0, c0 = time.perf_counter(), time.process_time()
            sel.flush()
            ids = sel.select(256)
            sel.update(world.feedback(ids, t))
            if t >= 3:
                wall.append(time.perf_counter() - w0)
                cpu.append(time.process_time() - c0)
        out[name] = [1e3 * float(np.median(wall)), 1e3 * float(np.median(cpu))]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--selectors", default="bots,mopps,dots")
    ap.add_argument("--sizes", default="1e6")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="runs per setting, interleaved")
    ap.add_argument(
        "--given", choices=("all", "prompts"), default="all", help="what the pool carries"
    )
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = [s for s in args.selectors.split(",") if s]
    if args.child:
        n, steps = int(float(args.child[0])), int(args.child[1])
        print(json.dumps(child(names, n, steps, args.given)))
        return 0
    rows = []
    for n_text in args.sizes.split(","):
        got: dict[bool, list[dict[str, list[float]]]] = {False: [], True: []}
        for i in range(args.repeats):
            for single in (False, True) if i % 2 == 0 else (True, False):
                env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
                if single:
                    env["OPENBLAS_NUM_THREADS"] = "1"
                print(f"[blas_threads] N={n_text} run {i + 1} single={single}", file=sys.stderr)
                cmd = [
                    sys.executable,
                    __file__,
                    "--selectors",
                    args.selectors,
                    "--given",
                    args.given,
                ]
                cmd += ["--child", n_text, str(args.steps)]
                res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                got[single].append(json.loads(res.stdout.strip().splitlines()[-1]))
        for name in names:
            med = {s: np.median(np.array([r[name] for r in got[s]]), axis=0) for s in (False, True)}
            rows.append((name, int(float(n_text)), med[False], med[True]))
    cmd_line = " ".join(shlex.quote(a) for a in ["python", *sys.argv])
    print("## Selector step time with default BLAS threads vs OPENBLAS_NUM_THREADS=1\n")
    print(f"Command: `{cmd_line}`  ")
    print(
        f"Machine: {os.cpu_count()} CPUs, {platform.platform(terse=True)}, Python "
        f"{platform.python_version()}, numpy {np.__version__}; B = 256, 16 rollouts, "
        f"{args.steps} timed steps per run, median over {args.repeats} runs per setting, "
        f"runs interleaved; pool given {GIVEN[args.given]}.\n"
    )
    print(
        "| selector | N | wall ms default | wall ms 1 thread | CPU ms default "
        "| CPU ms 1 thread | CPU default / 1 thread |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, n, d, s in rows:
        print(
            f"| {name} | {n:.0e} | {d[0]:.3g} | {s[0]:.3g} | {d[1]:.3g} | {s[1]:.3g} "
            f"| {d[1] / s[1]:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
