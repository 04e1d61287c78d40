"""`frontier demo-countdown`: a one-seed walk-through of the real trainer on Countdown
(what it runs and compares: frontier_rft.bench.real_rl.countdown_demo)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.countdown_demo import DEMO_SELECTORS
from frontier_rft.cli.common import UsageError, quiet_transformers
from frontier_rft.training.config import ModelConfig, SFTConfig, TrainConfig

__all__ = ["add_command"]


def _cmd(args: argparse.Namespace) -> int:
    from frontier_rft.bench.real_rl.countdown_demo import demo_summary, run_countdown_demo
    from frontier_rft.selectors.registry import SELECTORS

    selectors = tuple(s.strip() for s in args.selectors.split(",") if s.strip())
    unknown = [s for s in selectors if s not in SELECTORS]
    if unknown or not selectors:
        raise UsageError(f"unknown selectors {unknown}; choose from {', '.join(sorted(SELECTORS))}")
    quiet_transformers()
    out = Path(args.out)
    print(
        f"frontier demo-countdown: a {ModelConfig().hidden_size}-wide tiny Llama, warm-started "
        f"for {args.sft_steps} steps, then {args.steps} RL steps per selector "
        f"({', '.join(selectors)}); held-out pass@1 on {args.eval_size} tasks"
    )
    t0 = time.perf_counter()
    train = TrainConfig(
        steps=args.steps,
        eval_size=args.eval_size,
        eval_every=0,
        checkpoint_every=args.steps,
        keep_checkpoints=1,
        tensorboard=False,
    )
    runs = run_countdown_demo(out, selectors, ModelConfig(), SFTConfig(steps=args.sft_steps), train)
    summary, png = demo_summary(out, runs)
    print(summary)
    print(f"wrote {out / 'summary.md'} and {png} in {time.perf_counter() - t0:.0f} s")
    return 0


def add_command(sub: Any) -> None:
    """Register `demo-countdown` on a subparsers object."""
    p = sub.add_parser(
        "demo-countdown",
        help="one-seed real-model Countdown walk-through of the selectors (not evidence)",
    )
    p.add_argument("--out", default="runs/demo-countdown", help="output directory")
    p.add_argument("--selectors", default=",".join(DEMO_SELECTORS), help="comma-separated names")
    p.add_argument("--steps", type=int, default=40, help="RL steps per selector")
    p.add_argument("--sft-steps", type=int, default=300, help="supervised warm-start steps")
    p.add_argument("--eval-size", type=int, default=64, help="held-out tasks")
    p.set_defaults(func=_cmd)
