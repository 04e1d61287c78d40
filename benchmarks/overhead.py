"""Selection overhead: select + update time per step and memory per task, for every selector.

Each selector runs a learner-free world of N tasks and is held to the floor its class
declares (`Selector.cost`); what is measured and judged is `frontier_rft.bench.overhead.runner`.

    python benchmarks/overhead.py           # the README table, ~2 minutes on 2 cores
    python benchmarks/overhead.py --selectors bots,dots --sizes 1e6 --json out.json
    python benchmarks/overhead.py --given prompts --selectors bots,dots    # prompts only

With `--given prompts` the pool carries distinct prompt texts and nothing else, what most
users have: the BOTS family then runs its regression plug-in on text features derived
from the prompts. Deriving them is a one-off per pool (timed and reported separately, as
is the feature matrix the selectors of one pool share); steps are timed after it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence

from frontier_rft import SELECTORS
from frontier_rft.bench.overhead.report import render_markdown
from frontier_rft.bench.overhead.runner import WRAPPED, run
from frontier_rft.bench.overhead.world import FULL_SIZES, Settings, quick
from frontier_rft.bench.scripts import int_at_least


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(float(t)) for t in text.split(",") if t.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--sizes must be numbers like 1e4,1e5: {exc}") from exc
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError("--sizes must be positive numbers like 1e4,1e5,1e6")
    return sizes


def _names(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [n for n in names if n not in SELECTORS and n not in WRAPPED]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown selector(s) {unknown}; known: {', '.join(SELECTORS)}"
        )
    return names


def parse_args(argv: Sequence[str] | None = None) -> tuple[Settings, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=_sizes, default=FULL_SIZES, help="pool sizes N (1e4,1e5,1e6)")
    positive, natural = int_at_least(1), int_at_least(0)
    ap.add_argument("--batch", type=positive, default=256, help="tasks selected per step")
    ap.add_argument("--rollouts", type=positive, default=16, help="rollouts per selected task")
    ap.add_argument(
        "--steps",
        type=positive,
        default=None,
        help="timed steps per run (default 200/50/20 at 1e4/5/6)",
    )
    ap.add_argument("--warmup", type=natural, default=10, help="untimed steps before timing")
    ap.add_argument("--mem-steps", type=positive, default=72, help="steps of the memory pass")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per selector, size, pass")
    ap.add_argument(
        "--selectors",
        type=_names,
        default=tuple(SELECTORS),
        help="comma-separated names (default: all)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--given",
        choices=("all", "prompts"),
        default="all",
        help="what the pool carries: every kind of metadata, or prompt text only",
    )
    ap.add_argument("--json", metavar="PATH", help="also write machine-readable results here")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="tiny settings for a smoke test (N=1e3, batch 32, 4 rollouts, 3 steps)",
    )
    a = ap.parse_args(argv)
    s = Settings(
        sizes=a.sizes,
        batch=a.batch,
        rollouts=a.rollouts,
        steps=a.steps,
        warmup=a.warmup,
        mem_steps=a.mem_steps,
        budget_s=a.budget,
        selectors=a.selectors,
        seed=a.seed,
        given=a.given,
    )
    if a.quick:
        s = quick(s)
    return s, a


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    settings, ns = parse_args(args)
    script = os.path.relpath(__file__) if not os.path.isabs(sys.argv[0]) else __file__
    command = " ".join(["python", script, *map(shlex.quote, args)])
    res = run(settings, log=lambda msg: print(f"[overhead] {msg}", file=sys.stderr, flush=True))
    res["command"] = command
    sys.stdout.write(render_markdown(res, command))
    if ns.json:
        with open(ns.json, "w") as fh:
            json.dump(res, fh, indent=2)
    return 1 if any(v.startswith("ERROR") for v in res["notes"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
