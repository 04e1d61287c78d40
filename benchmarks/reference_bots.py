"""BOTS full-pool step against the authors' reference update (Trinity-RFT), same process.

The reference is written out here from the paper's Eq. 1-3 and section 3.3 as the
authors' released selector computes them (Trinity-RFT `InterpolationBetaPREstimator`
and `DiffBasedSelector`; not imported, so no torch/Trinity dependency): per step it

- draws `Beta(alpha, beta)` for every task (gathered through an index array of all
  tasks, as its `predict_pr` does), scores `-|p - 0.5|` and takes the top B;
- on feedback (the batch's pass rates) computes mu_t from the batch means of the weak
  and strong reference rates (+1e-6 in the denominator), mu~ with momentum 0.9, builds
  N-sized explicit count arrays s, f and the clipped interpolation p~ for every task,
  overwrites p~ with the observed rate on the batch, then
  `alpha <- (1 - lam) alpha + lam + (1 - rho) s + rho p~ m`, the same for beta.

Ours is `make_selector("bots", pool)` driven through the public contract (select, then
update with B x R rollouts, validated and grouped), which does more work per step than
the reference (it receives rollouts, not pass rates). Both run on the same world
(benchmarks/overhead.py's), interleaved step by step with alternating order, so machine
load hits both alike; the ratio is of medians. CPU time is reported as well: BLAS worker
threads that busy-wait show up there, not in wall time.

    python benchmarks/reference_bots.py                   # N = 1e5, 1e6; ~1 minute
    python benchmarks/reference_bots.py --sizes 1e6 --steps 40
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from frontier_rft import Feedback, Selector, make_selector
from frontier_rft.bench.overhead.world import Settings, make_world

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


class ReferenceBOTS:
    """The released BOTS selector's arithmetic (interpolation plug-in, Thompson top-B)."""

    def __init__(self, ref: F64, rollouts: int, lam: float = 0.1, rho: float = 0.1, seed: int = 0):
        self.ref = ref  # (N, 2): weak, strong
        self.m = rollouts  # the reference counts every group as m rollouts
        self.lam, self.rho = lam, rho
        n = ref.shape[0]
        self.alphas = np.ones(n)
        self.betas = np.ones(n)
        self.cap: float | None = None
        self.rng = np.random.default_rng(seed)

    def select(self, batch: int) -> I64:
        idx = np.arange(self.alphas.shape[0])
        p = self.rng.beta(self.alphas[idx], self.betas[idx])
        scores = -np.abs(0.5 - p)
        top = np.argpartition(-scores, batch - 1)[:batch]
        return top[np.argsort(-scores[top])].astype(np.int64)

    def update(self, ids: I64, rates: F64) -> None:
        n, m, lam, rho = self.alphas.shape[0], self.m, self.lam, self.rho
        anchors = self.ref[ids].mean(axis=0)
        mu = (rates.mean() - anchors[0]) / (anchors[1] - anchors[0] + 1e-6)
        self.cap = mu if self.cap is None else 0.9 * self.cap + 0.1 * mu
        s_bar = np.zeros(n)
        s_bar[ids] = rates * m
        f_bar = np.zeros(n)
        f_bar[ids] = (1 - rates) * m
        p_tilde = np.clip((self.ref[:, 1] - self.ref[:, 0]) * self.cap + self.ref[:, 0], 0, 1)
        p_tilde[ids] = rates
        self.alphas = (1 - lam) * self.alphas + lam + (1 - rho) * s_bar + rho * p_tilde * m
        self.betas = (1 - lam) * self.betas + lam + (1 - rho) * f_bar + rho * (1 - p_tilde) * m


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def compare(n: int, steps: int, warmup: int, batch: int, rollouts: int) -> dict[str, float]:
    settings = Settings(sizes=(n,), batch=batch, rollouts=rollouts)
    world = make_world(n, settings, warmup + steps)
    ref_rates = world.pool.reference_pass_rates
    assert ref_rates is not None
    ours: Selector = make_selector("bots", world.pool, seed=0)
    theirs = ReferenceBOTS(np.array(ref_rates), rollouts)

    def our_step(t: int) -> None:
        ours.flush()
        ids = ours.select(batch)
        ours.update(world.feedback(ids, t))

    def their_step(t: int) -> None:
        ids = theirs.select(batch)
        fb: Feedback = world.feedback(ids, t)
        rewards = np.asarray(fb.rewards).reshape(batch, rollouts)
        theirs.update(ids, rewards.mean(axis=1))

    wall: dict[str, list[float]] = {"ours": [], "ref": []}
    cpu: dict[str, list[float]] = {"ours": [], "ref": []}
    for t in range(warmup + steps):
        order = [("ours", our_step), ("ref", their_step)]
        if t % 2:
            order.reverse()
        for name, step in order:
            w, c = _timed(functools.partial(step, t))
            if t >= warmup:
                wall[name].append(w)
                cpu[name].append(c)
    med = {f"{k}_ms": 1e3 * float(np.median(v)) for k, v in wall.items()}
    med.update({f"{k}_cpu_ms": 1e3 * float(np.median(v)) for k, v in cpu.items()})
    med["ratio"] = med["ours_ms"] / med["ref_ms"]
    med["ratio_cpu"] = med["ours_cpu_ms"] / med["ref_cpu_ms"]
    return med


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6", help="pool sizes N")
    ap.add_argument("--steps", type=int, default=40, help="timed steps per size")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rollouts", type=int, default=16)
    args = ap.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    threads = {
        k: os.environ[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if k in os.environ
    }
    cmd = " ".join(shlex.quote(a) for a in ["python", *sys.argv])
    print("## BOTS full-pool step vs the reference update (Trinity-RFT's arithmetic)\n")
    print(f"Command: `{cmd}`  ")
    print(
        f"Machine: {os.cpu_count()} CPUs, {platform.platform(terse=True)}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, thread env {threads or 'default'}  "
    )
    print(
        f"B = {args.batch}, {args.rollouts} rollouts per task, lam = rho = 0.1, interpolation "
        f"plug-in; {args.steps} timed steps after {args.warmup}, interleaved.\n"
    )
    print("| N | ours ms | reference ms | ours / reference | ours CPU ms | reference CPU ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        r = compare(n, args.steps, args.warmup, args.batch, args.rollouts)
        print(
            f"| {n:.0e} | {r['ours_ms']:.2f} | {r['ref_ms']:.2f} | {r['ratio']:.2f}x "
            f"| {r['ours_cpu_ms']:.2f} | {r['ref_cpu_ms']:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
