"""Why prompts-only BOTS trails BOTS with references: where its implicit evidence falls short.

A diagnosis, not a tuning run (the variants: frontier_rft.bench.simulation.bots_prompts_gap). Writes
`bots_prompts_gap.{json,md}`.

    python benchmarks/bots_prompts_gap.py --out benchmarks/results    # ~4 min, 2 cores
"""

from __future__ import annotations

from frontier_rft.bench.scripts import out_and_jobs, write_outputs
from frontier_rft.bench.simulation.bots_prompts_gap import diagnose


def main() -> int:
    args, command = out_and_jobs(__doc__ or "")
    results, lines = diagnose(args.jobs, command)
    write_outputs(args.out, "bots_prompts_gap", results, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
