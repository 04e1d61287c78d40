"""`frontier shadow replay LOG --rule R...`: what rules that pass over prompts before rollout
would have saved and lost on a logged run (docs/shadow.md)."""

from __future__ import annotations

import argparse
from typing import Any

from frontier_rft.cli.common import positive_int

__all__ = ["add_command"]


def _cmd_replay(args: argparse.Namespace) -> int:
    from frontier_rft.training.shadows import CAVEAT, replay, replay_table

    shadows = replay(args.log, args.rule, pool_size=args.pool_size, seed=args.seed)
    steps = int(shadows[0].passes()[-1]["steps"])
    print(f"Replay of {args.log}: {steps} steps, a pool of {shadows[0].pool_size} prompts")
    print(replay_table(shadows))
    print(
        "saved share: of the run's rollouts; precision: share of the groups a rule left out "
        "that were zero-variance; abs(A) lost: share of the sum of |GRPO advantage| they held."
    )
    print(CAVEAT)
    return 0


def add_command(sub: Any) -> None:
    """Register `shadow replay`."""
    p = sub.add_parser(
        "shadow",
        help="what a skip or screening rule would have saved and lost on a logged run",
        description="Rules that pass over prompts before rollout, replayed on a run's own "
        "rewards (docs/shadow.md).",
    )
    shadow_sub = p.add_subparsers(dest="shadow_command", required=True, metavar="COMMAND")
    r = shadow_sub.add_parser(
        "replay",
        help="replay rules on a reward log (frontier train --reward-log)",
        description="Read a run's rewards.jsonl (frontier train --reward-log) and print, per "
        "rule and pass over the pool, the rollouts it would have saved, the share of the "
        "groups it left out that were zero-variance, and the informative groups and |advantage| "
        "it would have lost. The same counts as live shadows (frontier train --shadows).",
    )
    r.add_argument("log", metavar="LOG", help="a reward log: rewards.jsonl of frontier train")
    r.add_argument(
        "--rule",
        action="append",
        required=True,
        help="a rule: greso, screenK (K >= 2) or greso+screenK; repeat for several",
    )
    r.add_argument(
        "--pool-size",
        type=positive_int,
        default=None,
        help="prompts in the training pool (default: the log's pool_size)",
    )
    r.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the rules' own draws (default: the log's, as live shadows use)",
    )
    r.set_defaults(func=_cmd_replay)
