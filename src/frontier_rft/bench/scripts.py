"""What the benchmark scripts under benchmarks/ share: their --out/--jobs flags, the exact
command that made a result (written into it), the `<stem>.json` + `<stem>.md` pair they
write, and how a TTB cell of their tables reads."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["command_line", "out_and_jobs", "script_parser", "ttb_cell", "write_outputs"]

RESULTS_DIR = "benchmarks/results"
"""Where the committed results live (the scripts' default --out)."""


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
