"""The `frontier` command line: the simulated benchmark, the reference trainer, ZIP-RC-Lite.

Each module registers its commands with `add_commands(sub)`; this one adds the global flags
and turns user errors into one line with the fix (`--debug` shows the traceback instead).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from frontier_rft import __version__
from frontier_rft.cli.ab import add_command as add_ab
from frontier_rft.cli.bench_rl import add_command as add_bench_rl
from frontier_rft.cli.check_config import add_command as add_check_config
from frontier_rft.cli.common import (
    EXTRA_OF_MODULE,
    Interrupted,
    Parser,
    UsageError,
    apply_config_file,
    print_error,
)
from frontier_rft.cli.countdown_demo import add_command as add_countdown_demo
from frontier_rft.cli.plan_batch import add_command as add_plan_batch
from frontier_rft.cli.selectors import add_command as add_selectors
from frontier_rft.cli.shadow import add_command as add_shadow
from frontier_rft.cli.simulate import add_commands as add_simulate_commands
from frontier_rft.cli.train import add_commands as add_train_commands
from frontier_rft.cli.ziprc import add_commands as add_ziprc_commands
from frontier_rft.logs import LOG_LEVEL_ENV, LOG_LEVELS, env_level, show_messages

__all__ = ["build_parser", "main"]

_DEBUG_HINT = "(add --debug to see where it came from)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="frontier",
        description="Task selection for RL fine-tuning: compare selectors on a simulated "
        "learner, train a tiny model with one, inspect their settings.",
    )
    parser.add_argument("--version", action="version", version=f"frontier-rft {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="on an error, show the Python traceback"
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=None,
        help=f"least severe library message shown on stderr (default: ${LOG_LEVEL_ENV}, else info)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_simulate_commands(sub)
    add_countdown_demo(sub)
    add_train_commands(sub)
    add_ziprc_commands(sub)
    add_bench_rl(sub)
    add_selectors(sub)
    add_check_config(sub)
    add_ab(sub)
    add_shadow(sub)
    add_plan_batch(sub)
    return parser


def _config_path(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[str, str] | None:
    """(command, path) when argv holds `--config PATH` (or `--config=PATH`) after a command."""
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            path = argv[i + 1]
        elif arg.startswith("--config="):
            path = arg.split("=", 1)[1]
        else:
            continue
        words = [a for a in argv[:i] if not a.startswith("-")]
        return (words[0], path) if words else None
    return None


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser | None = action.choices.get(command)
            return found
    return None


def _command_name(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """'frontier ziprc train' for error messages: the (sub)command words of argv."""
    words = ["frontier"]
    current: argparse.ArgumentParser | None = parser
    for arg in (a for a in argv if not a.startswith("-")):
        sub = None
        for action in current._actions if current is not None else ():
            if isinstance(action, argparse._SubParsersAction):
                sub = action.choices.get(arg)
        if sub is None:
            break
        words.append(arg)
        current = sub
    return " ".join(words)


def _missing_extra(exc: ImportError) -> str:
    module = (exc.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return str(exc)
    return (
        f"{module} is not installed; this command needs the {extra!r} extra: "
        f"pip install 'frontier-rft[{extra}]' (on a GPU machine install your CUDA torch first; "
        "the extras never replace it)"
    )


def _check_out_dir(args: argparse.Namespace) -> None:
    """--out names a directory for every command but those that write one file."""
    out = getattr(args, "out", None)
    if out and not getattr(args, "out_is_file", False) and Path(out).is_file():
        raise UsageError(f"--out {out} is a file; give a directory (it is created)")


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_in
    args_in = [a for a in args_in if a != "--debug"]  # accepted anywhere on the line
    # Local directories only: nothing here may ask the Hugging Face hub for a model.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    prog = "frontier"
    try:
        parser = build_parser()
        prog = _command_name(parser, args_in)
        parser.prog = prog  # "unrecognized arguments" is reported by the top-level parser
        found = _config_path(parser, args_in)
        if found is not None:
            command, path = found
            sub = _subparser(parser, command)
            if sub is None or not any(a.dest == "config" for a in sub._actions):
                raise UsageError(f"{prog} takes no --config file")
            apply_config_file(sub, path)
        args = parser.parse_args(args_in)
        _check_out_dir(args)
        with show_messages(args.log_level or env_level()):
            return int(args.func(args))
    except KeyboardInterrupt as exc:
        if debug:
            raise
        print_error(prog, str(exc) if isinstance(exc, Interrupted) else "interrupted")
        return 130
    except UsageError as exc:
        if debug:
            raise
        print_error(prog, str(exc))
        return 2
    except ImportError as exc:
        if debug:
            raise
        print_error(prog, _missing_extra(exc), _DEBUG_HINT)
        return 2
    except (ValueError, OSError) as exc:
        if debug:
            raise
        print_error(prog, str(exc), _DEBUG_HINT)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
