"""The `frontier` command line: demo, simulate, compare, selectors, and the trainer."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence

from frontier_rft.cli.bench_rl import add_command as add_bench_rl
from frontier_rft.cli.countdown_demo import add_command as add_countdown_demo
from frontier_rft.cli.simulate import add_commands
from frontier_rft.cli.train import add_commands as add_train_commands
from frontier_rft.cli.ziprc import add_commands as add_ziprc_commands
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="frontier", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    add_commands(sub)
    add_train_commands(sub)
    add_ziprc_commands(sub)
    add_countdown_demo(sub)
    add_bench_rl(sub)
    sel = sub.add_parser("selectors", help="list selectors, or show one's config and defaults")
    sel.add_argument("name", nargs="?", help="a registered selector name")
    sel.set_defaults(func=_cmd_selectors)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
