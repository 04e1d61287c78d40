"""Issue 70's skip cost, from the run ledger alone: per epoch, for entries that pass over groups
(`rollouts: kept`), the share of B x steps left out, the mixed rate of what was left out against
the base rate, and the mixed groups lost as a share of the paired uniform run's
(`frontier_rft.bench.real_rl.skip_cost`). Nothing is run.

    python benchmarks/skip_cost_table.py --testbed fcca87e79ef9 --device cpu --seeds 0-9 \
        --entries skip-kept
    python benchmarks/skip_cost_table.py --testbed 619d1051399b --device cuda --seeds 0-5 \
        --entries skip-kept --epoch-steps 32 --batch 16

B and the epoch's steps default to the testbed's batch size and pool size / B.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from frontier_rft.bench.real_rl.skip_cost import ledger_skip_cost, skip_cost_lines
from frontier_rft.bench.scripts import seed_list

ROOT = Path(__file__).resolve().parents[1]
LEDGERS = (ROOT / "benchmarks" / "ledger" / "timed", ROOT / "benchmarks" / "ledger")
"""Searched in this order; an entry pairs with the uniform runs of the ledger that holds it."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--testbed", required=True, help="the ledger's testbed digest")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="device class")
    p.add_argument("--seeds", default="0-9")
    p.add_argument("--entries", default="skip-kept", help="comma-separated entry labels")
    p.add_argument("--against", default="uniform", help="the paired entry (walks B a step)")
    p.add_argument("--batch", type=int, default=None, help="uniform's B (default: testbed's)")
    p.add_argument("--epoch-steps", type=int, default=None, help="default: pool size / B")
    args = p.parse_args(argv)
    costs = ledger_skip_cost(
        LEDGERS,
        args.testbed,
        args.device,
        args.entries.split(","),
        seed_list(args.seeds),
        args.batch,
        args.epoch_steps,
        args.against,
    )
    if not costs:
        print(f"no paired runs of {args.entries} in the ledger for {args.testbed}/{args.device}")
        return 1
    print("\n".join(skip_cost_lines(costs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
