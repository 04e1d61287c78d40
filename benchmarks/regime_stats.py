"""Issue 70's regime table, from the run ledger alone: per testbed, uniform's held-out gain, the
start zero-variance share, epoch 2's mixed share and flat sides, and the default skip's
left-out mixed rate against the base rate in epoch 2 (`frontier_rft.bench.real_rl.regime`);
then, from uniform's reward logs where the ledger holds them, epoch 2's groups by the prompt's
epoch-1 outcome, with their mixed rate over the base rate. Nothing is run.

    python benchmarks/regime_stats.py --testbed fast=<digest>:cpu:0-9 \
        --testbed smollm2=619d1051399b:cuda:0-5 --testbed standard=fcca87e79ef9:cpu:0-9
"""

from __future__ import annotations

import argparse
from pathlib import Path

from frontier_rft.bench.real_rl.regime import (
    regime_lines,
    regime_stats,
    transition_lines,
    transition_stats,
)
from frontier_rft.bench.scripts import seed_list

ROOT = Path(__file__).resolve().parents[1]
LEDGERS = (ROOT / "benchmarks" / "ledger" / "timed", ROOT / "benchmarks" / "ledger")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--testbed",
        action="append",
        required=True,
        metavar="NAME=DIGEST:DEVICE:SEEDS",
        help="a row: its name, the ledger's testbed digest, device class and seeds",
    )
    args = p.parse_args(argv)
    rows, moves = {}, {}
    for spec in args.testbed:
        name, _, rest = spec.partition("=")
        digest, device, seeds = rest.split(":")
        rows[name] = regime_stats(LEDGERS, digest, device, seed_list(seeds))
        moves[name] = transition_stats(LEDGERS, digest, device, seed_list(seeds))
    print("\n".join([*regime_lines(rows), "", *transition_lines(moves)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
