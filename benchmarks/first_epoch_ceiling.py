"""What any skip could save in uniform's first epoch: the ceiling for issue 62.

Reruns uniform on the standard CPU testbed (the ledger's start weights) with the reward log on,
checks that each rerun reproduces the ledger's record of the same seed (same held-out pass@1 at
every evaluation), then counts, per epoch and per level, the share of uniform's groups that came
out all-correct, all-wrong and mixed. A perfect oracle that skipped exactly the flat groups (and
paid nothing to know them) would spend the mixed share of uniform's rollouts; a skip that only
reads a prompt's own history can skip nothing in epoch 1, since every prompt there is untried.

    python benchmarks/first_epoch_ceiling.py --pool-size 512 --steps 64 --seeds 0-9
    python benchmarks/first_epoch_ceiling.py --pool-size 1280 --steps 160 --seeds 0-4
    python benchmarks/first_epoch_ceiling.py --report   # the page from the saved JSON

Writes benchmarks/results/first_epoch_ceiling.json and .md. Runs go to --runs (resumable).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from frontier_rft.bench.real_rl.finished.first_epoch_ceiling import (
    SMOLLM2_TESTBED,
    count,
    ledger_mixed_share,
    ledger_roots,
    page,
    run,
    testbed_mixed_share,
)
from frontier_rft.bench.scripts import seed_list

ROOT = Path(__file__).resolve().parents[1]
LEDGERS = ledger_roots(ROOT)
OUT = ROOT / "benchmarks" / "results" / "first_epoch_ceiling"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pool-size", type=int, default=512)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--seeds", type=seed_list, default="0-9")
    p.add_argument("--runs", type=Path, default=ROOT / "runs_ceiling")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--report", action="store_true", help="only rebuild the page from the JSON")
    args = p.parse_args()
    json_path = OUT.with_suffix(".json")
    results = json.loads(json_path.read_text()) if json_path.is_file() else {"pools": {}}
    main_ledger, timed = LEDGERS
    if not args.report:
        failed = run(args.pool_size, args.steps, args.seeds, args.runs, args.jobs, main_ledger)
        if failed:
            sys.exit(f"{failed} runs failed; rerun to resume")
        rows = [count(args.pool_size, args.steps, s, args.runs, timed) for s in args.seeds]
        results["pools"][str(args.pool_size)] = {"steps": args.steps, "seeds": rows}
    for size, steps in ((512, 64), (1280, 160)):
        results.setdefault("ledger", {})[str(size)] = {"steps": steps} | ledger_mixed_share(
            size, steps, LEDGERS
        )
    results["smollm2"] = testbed_mixed_share(SMOLLM2_TESTBED, "cuda", LEDGERS)
    json_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    OUT.with_suffix(".md").write_text(page(results) + "\n")
    print(OUT.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
