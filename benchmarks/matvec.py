"""The regression plug-in's per-step product, N x d features times d weights, three ways.

numpy's own loop (`np.einsum`, what the online ridge uses), OpenBLAS's gemv on one thread,
and on its default threads; wall and CPU ms per product, median of 15.

    python benchmarks/matvec.py            # N = 1e6, d = 64 (the text features' width)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import ThreadpoolController


def timed(fn: Callable[[], object], repeats: int = 15) -> tuple[float, float]:
    """Median wall and CPU milliseconds of fn()."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return 1e3 * float(np.median(wall)), 1e3 * float(np.median(cpu))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e6, help="rows (tasks)")
    ap.add_argument("--d", type=int, default=64, help="columns (feature dimensions)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((int(args.n), args.d)), rng.standard_normal(args.d)
    controller = ThreadpoolController()
    rows = [("numpy einsum (used)", timed(lambda: np.einsum("ij,j->i", x, w)))]
    with controller.limit(limits=1, user_api="blas"):
        rows.append(("OpenBLAS gemv, 1 thread", timed(lambda: x @ w)))
    rows.append(("OpenBLAS gemv, default threads", timed(lambda: x @ w)))
    print(f"N = {int(args.n):,}, d = {args.d}, float64; median of 15\n")
    print("| product | wall ms | CPU ms |\n|---|---:|---:|")
    for name, (wall, cpu) in rows:
        print(f"| {name} | {wall:.3g} | {cpu:.3g} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
