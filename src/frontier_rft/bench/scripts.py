"""What the benchmark scripts under benchmarks/ share: their --out/--jobs flags and the
argparse types of their seeds, steps, grids and file stems (`frontier bench-rl` and the CLI
take some of them too), the
exact command that made a result (written into it), the `<stem>.json` + `<stem>.md` pair
they write, and how a TTB cell of their tables reads."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_SEEDS",
    "SEED_LIMIT",
    "command_line",
    "file_stem",
    "int_at_least",
    "int_tuple",
    "out_and_jobs",
    "positive_ints",
    "script_parser",
    "seed_list",
    "ttb_cell",
    "write_outputs",
]

RESULTS_DIR = "benchmarks/results"
"""Where the committed results live (the scripts' default --out)."""


MAX_SEEDS = 1000
"""Most seeds one bench-rl call (or script) runs."""
SEED_LIMIT = 2**32
"""Seeds are in [0, SEED_LIMIT): torch and the pool generator take them as they are."""


def seed_list(text: str) -> list[int]:
    """Sorted distinct ints from "0-4" or "0,2,5" (at most 1000, each in [0, 2**32)); an
    argparse type. Bounds are checked on the numbers before any range is built."""
    out: set[int] = set()
    try:
        for part in (p.strip() for p in text.split(",") if p.strip()):
            lo_text, sep, hi_text = part.partition("-")
            lo = int(lo_text)
            hi = int(hi_text) if sep else lo
            if not 0 <= lo <= hi < SEED_LIMIT or len(out) + hi - lo + 1 > MAX_SEEDS:
                raise ValueError(part)
            out.update(range(lo, hi + 1))
    except ValueError:
        out = set()
    if not out:
        raise argparse.ArgumentTypeError(
            f"expected seeds like 0-4 or 0,2,5 (at most {MAX_SEEDS} seeds in [0, 2**32)), "
            f"got {text!r}"
        )
    return sorted(out)


def int_tuple(text: str) -> tuple[int, ...]:
    """'1,4,8' -> (1, 4, 8); an argparse type (the scripts' and the CLI's)."""
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated ints, got {text!r}") from exc


def positive_ints(text: str) -> tuple[int, ...]:
    """'16,8,8' -> (8, 16): sorted distinct ints >= 1, at least one; an argparse type (a grid)."""
    try:
        values = int_tuple(text)
    except argparse.ArgumentTypeError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive ints like 8,16,32, got {text!r}")
    return tuple(sorted(set(values)))


def int_at_least(least: int) -> Callable[[str], int]:
    """An argparse type: an int >= `least`, refused at parse time with the bound named."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"expected an integer >= {least}, got {text!r}")
        return value

    parse.__name__ = f"int >= {least}"
    return parse


FILE_STEM = re.compile(r"[A-Za-z0-9][\w.-]*")
"""A results file's stem: a letter or digit, then letters, digits, '_', '.', '-' (no path)."""


def file_stem(text: str) -> str:
    """An argparse type: a results file's stem (`FILE_STEM`), as a script's --name takes it."""
    if not FILE_STEM.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"expected a file stem of letters, digits, '_', '.', '-', got {text!r}"
        )
    return text


def command_line() -> str:
    """The command that is running, as a shell would take it back: `python script.py ...`."""
    return "python " + " ".join(shlex.quote(a) for a in sys.argv)


def script_parser(doc: str) -> argparse.ArgumentParser:
    """A parser described by the first line of the script's docstring, with --out."""
    parser = argparse.ArgumentParser(
        description=doc.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--out", default=RESULTS_DIR, help="output directory")
    return parser


def out_and_jobs(doc: str, jobs: int | None = None) -> tuple[argparse.Namespace, str]:
    """The --out/--jobs arguments the simulator benchmarks share (`jobs`: the default, None
    for every CPU), parsed, and the exact command."""
    parser = script_parser(doc)
    parser.add_argument("--jobs", type=int, default=jobs, help="parallel processes")
    return parser.parse_args(), command_line()


def write_outputs(out_dir: str | Path, stem: str, payload: Any, lines: list[str]) -> None:
    """`<stem>.json` and `<stem>.md` under `out_dir`; the markdown is also printed."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def ttb_cell(stats: dict[str, Any]) -> str:
    """A simulated TTB summary (bench.metrics.seed_stats) as mean ± std, with (k/n) when not
    every seed reached the target and '- (0/n)' when none did."""
    if not stats["reached"]:
        return f"- (0/{stats['of']})"
    text = f"{stats['mean']:.2f}"
    if stats["reached"] > 1:
        text += f" ± {stats['std']:.2f}"
    return text + (
        "" if stats["reached"] == stats["of"] else f" ({stats['reached']}/{stats['of']})"
    )
