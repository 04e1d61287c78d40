"""`frontier ab compare RUN_A RUN_B`: your A/B of two selectors, read from the runs' logs.

Prints held-out score against rollouts spent and distinct prompts trained for both arms,
compares them at equal rollouts, equal steps, equal wall-clock seconds (and a named device's
projected seconds with --device) and final against final, each read at evaluation points;
says whether each difference is beyond the seed-to-seed noise (or that one run per arm
cannot tell), and draws both curves (docs/ab_test.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["NO_FIGURE", "add_command"]

NO_FIGURE = (
    "No figure: matplotlib is not installed (the verdict above stands); to draw it: "
    "pip install 'frontier-rft[plot]'"
)
"""The one line `ab compare` prints instead of its figure without the plot extra."""


def _cmd_compare(args: argparse.Namespace) -> int:
    from frontier_rft.bench.real_rl.ab import arm_label, compare_arms

    result = compare_arms(args.run_a, args.run_b, metric=args.metric, device=args.device)
    print(result.table())
    if args.out == "none":
        return 0
    try:
        import matplotlib  # noqa: F401  # the figure's only extra: missing, the verdict stands

        from frontier_rft.reporting.ab_plots import plot_ab
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "matplotlib":
            raise
        print(NO_FIGURE, file=sys.stderr)
        return 0
    same = ", identical to A" if result.identical else ""
    arms = {
        f"{arm_label(arm.path)} ({side}{same if side == 'B' else ''})": [
            (run.rollouts, run.distinct, run.score) for run in arm.runs.values()
        ]
        for side, arm in (("A", result.a), ("B", result.b))
    }
    at_rollouts = result.rollouts.verdict or f"not compared: {result.rollouts.unavailable}."
    verdict = (
        at_rollouts
        if result.identical
        else f"At equal rollouts: {at_rollouts} Final against final: {result.final_verdict}"
    )
    path = plot_ab(arms, result.metric, result.rollouts.budget, verdict, args.out)
    print(f"Figure: {path}")
    return 0


def add_command(sub: Any) -> None:
    """Register `ab compare`."""
    p = sub.add_parser(
        "ab",
        help="compare two arms of your own training runs (a selector against uniform)",
        description="Your A/B of two selectors on your own model (docs/ab_test.md).",
    )
    ab_sub = p.add_subparsers(dest="ab_command", required=True, metavar="COMMAND")
    c = ab_sub.add_parser(
        "compare",
        help="held-out score against rollouts spent and prompts trained, with a verdict",
        description="Read two arms' logs (frontier_metrics.jsonl of the TRL or verl adapter, "
        "metrics.jsonl of frontier train) and compare their held-out score at equal rollouts, "
        "equal steps and equal wall-clock seconds (each at the largest amount every run "
        "reached, each run read at its latest evaluation at or before it, never between "
        "evaluations), and final against final. An arm is a run directory, or a folder of "
        "them (one per seed, named alike in both arms): with several seeds a paired bootstrap "
        "interval says whether the difference is beyond the noise; with one, that it cannot "
        "be judged.",
    )
    c.add_argument("run_a", metavar="RUN_A", help="arm A (the baseline, e.g. uniform)")
    c.add_argument("run_b", metavar="RUN_B", help="arm B (the selector)")
    c.add_argument(
        "--metric",
        default=None,
        help="the held-out score's key in the logs (default: eval_reward, TRL's; "
        "eval/mean_score for frontier train)",
    )
    c.add_argument(
        "--device",
        default=None,
        metavar="CURVE",
        help="also compare at equal seconds projected on a shipped step-cost curve (cpu, "
        "h200), each logged step priced from its shape as the bench does; needs a row per "
        "step (frontier train's logs; TRL's and verl's have none, and the output says so) "
        "(default: none, steps and rollouts only)",
    )
    c.add_argument(
        "--out",
        default="ab_compare.png",
        help="the figure's PNG file, or none (default: ab_compare.png)",
    )
    c.set_defaults(func=_cmd_compare, out_is_file=True)
