"""Calibrate the simulated learner on the committed real-RL results, and check its predictions.

The real GPU testbed (`frontier bench-rl --scale gpu`: tiny Llama, GRPO on Countdown, 360
steps x 16 prompts x 8 rollouts, 5 paired seeds) on 512 prompts (11 epochs) and 1,280
prompts (4.5 epochs), results in benchmarks/results/real_rl_gpu*_full.json. The parts:

    fit      grid search of the learner's mechanism parameters on the 512-prompt results,
             on fit seeds 100-102 (never reported); writes sim_calibration.{json,md}
             (~2 h on 2 shared cores; cached per point in sim_calibration_cache.json,
             which is committed: a rerun only summarises)
    fit-joint  the same on both pool sizes at once, one learning rate per point, with the
             cost of quick repeats; its best point is the calibrated scenarios; writes
             sim_calibration_joint.{json,md} (~25 min; cached likewise)
    compare  the calibrated scenarios (small-pool, large-pool) against the real results on
             report seeds 0-4, both pool sizes; writes sim_vs_real.{json,md} (~1 min)
    predict  the calibrated simulator's predictions for selectors with no real-RL result
             yet (greso, skip, coverage="epoch", DAPO around greso/skip); writes
             sim_predictions_coverage.{json,md} with the predictor's git commit (~1 min)
    check    the committed predictions against a real run's report, once it exists:
             --real benchmarks/results/real_rl_gpu_coverage_full.json (prints a table)

The grids a fit runs are read from the results JSON they produced (`--grids`, each grid with
why it was run); a new grid is a new entry there. What is fitted and how, and the guards
against overfitting: docs/simulation.md. The code: frontier_rft.bench.simulation.vs_real, sim_fit,
sim_compare. Selectors always run at their defaults; nothing here changes a selector.

    python benchmarks/sim_vs_real.py fit --jobs 2
    python benchmarks/sim_vs_real.py fit-joint --jobs 2
    python benchmarks/sim_vs_real.py compare --jobs 2
    python benchmarks/sim_vs_real.py compare --jobs 2 --seeds 5-9   # fresh seeds, a check
    python benchmarks/sim_vs_real.py predict --jobs 2
    python benchmarks/sim_vs_real.py check --real benchmarks/results/real_rl_gpu_coverage_full.json
"""

from __future__ import annotations

import argparse
import logging

from frontier_rft.bench.scripts import command_line
from frontier_rft.bench.simulation.compare import check, compare, predict
from frontier_rft.bench.simulation.fit import fit, fit_joint, read_grids
from frontier_rft.bench.simulation.vs_real import RESULTS, parse_seeds

GRIDS = {"fit": "sim_calibration.json", "fit-joint": "sim_calibration_joint.json"}
"""Where each fit's grids are recorded, beside what they produced (the --grids default)."""


def main() -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("part", choices=("fit", "fit-joint", "compare", "predict", "check"))
    parser.add_argument(
        "--real", default=None, help="check: a frontier bench-rl <name>_full.json to compare"
    )
    parser.add_argument("--out", default=str(RESULTS), help="output directory")
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes")
    parser.add_argument("--pools", default="512", help="fit: pool sizes to fit on")
    parser.add_argument(
        "--seeds",
        default="0-4",
        help="compare: simulated seeds (other than 0-4: written to sim_vs_real_seeds_<seeds>)",
    )
    parser.add_argument(
        "--grids",
        default=None,
        help="fit, fit-joint: the results JSON whose grids to run (default: the committed one)",
    )
    args = parser.parse_args()
    command = command_line()
    if args.part in GRIDS:
        grids = read_grids(args.grids or RESULTS / GRIDS[args.part])
        if args.part == "fit":
            fit(args.out, [int(p) for p in args.pools.split(",")], args.jobs, command, grids)
        else:
            fit_joint(args.out, args.jobs, command, grids)
    elif args.part == "predict":
        predict(args.out, args.jobs, command)
    else:  # compare, check: a mistake in --seeds or --real is its message, no traceback
        try:
            if args.part == "compare":
                parse_seeds(args.seeds)
                compare(args.out, args.seeds, args.jobs, command)
            elif not args.real:
                raise ValueError("check needs --real PATH: a frontier bench-rl <name>_full.json")
            else:
                print("\n".join(check(args.out, args.real, command)))
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the library's progress lines
    raise SystemExit(main())
