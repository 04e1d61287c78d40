"""`frontier` command line: `frontier demo`, `frontier selectors [NAME]`."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence

from frontier_rft.core.config import field_docs
from frontier_rft.selectors import SELECTORS


def _cmd_selectors(args: argparse.Namespace) -> int:
    names = [args.name] if args.name else sorted(SELECTORS)
    for name in names:
        if name not in SELECTORS:
            known = ", ".join(sorted(SELECTORS))
            print(f"unknown selector {name!r}; known: {known}", file=sys.stderr)
            return 2
        cls = SELECTORS[name]
        summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        print(f"{name}: {summary}")
        if args.name:
            docs = field_docs(cls.config_class)
            for f in dataclasses.fields(cls.config_class):
                default = getattr(cls.config_class(), f.name)
                print(f"  {f.name} = {default!r:<10} {docs.get(f.name, '')}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from frontier_rft.cli.demo import format_table, run_selection_demo

    print(
        f"frontier demo: every selector on a fixed-difficulty pool of {args.tasks} tasks, "
        f"{args.steps} steps, batch {args.batch}, {args.rollouts} rollouts per task, "
        f"seed {args.seed}"
    )
    results = run_selection_demo(
        names=args.selectors.split(",") if args.selectors else None,
        steps=args.steps,
        batch=args.batch,
        rollouts=args.rollouts,
        num_tasks=args.tasks,
        seed=args.seed,
    )
    print(format_table(results))
    print(
        "\nEffective task ratio = share of selected prompts whose rollout group had mixed "
        "outcomes (the only ones that produce a GRPO gradient). Task pass rates are fixed "
        "here, so a method that keeps re-selecting a few mixed tasks scores well; read it "
        "with the distinct-tasks column (coverage)."
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="frontier", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compare every selector on a scripted task pool")
    demo.add_argument("--steps", type=int, default=100, help="selection steps per selector")
    demo.add_argument("--batch", type=int, default=32, help="prompts per step")
    demo.add_argument("--rollouts", type=int, default=8, help="rollouts per prompt")
    demo.add_argument("--tasks", type=int, default=2000, help="tasks in the pool")
    demo.add_argument("--seed", type=int, default=0, help="seed for pool, rollouts and selectors")
    demo.add_argument("--selectors", default="", help="comma-separated names (default: all)")
    demo.set_defaults(func=_cmd_demo)
    sel = sub.add_parser("selectors", help="list selectors, or show one's config and defaults")
    sel.add_argument("name", nargs="?", help="a registered selector name")
    sel.set_defaults(func=_cmd_selectors)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
