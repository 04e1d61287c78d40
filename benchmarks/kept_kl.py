"""The KL and entropy terms of a kept step (`rollouts: kept`, `loss_scale: batch`) against
uniform's, on real uniform batches of the standard testbed (issue 60, item 4).

    PYTHONPATH=src nice python benchmarks/kept_kl.py --model runs/kept-kl/model-sft \\
        --seeds 0,1,2 --steps 40 --measure-every 10

A kept step trains only the kept groups (G of uniform's B) and scales each row's weight by
G/B, so its policy gradient is uniform's wherever the skipped groups were zero-variance. Its
KL term (k3 to the frozen start model) and entropy term are not zero on the skipped groups.
Two ways to normalise them are compared:

- (a) `kept mean`: the regulariser's row weights are not scaled by G/B: the kept groups'
  mean stands in for the skipped groups' (it would be uniform's KL pull on average only if
  the skip were blind to the KL; the measured skipped groups had more KL per token);
- (b) `scaled`: scaled by G/B as the policy gradient is: the skipped groups' KL gradient is
  simply missing (the KL pull is about G/B of uniform's).

Each seed trains the standard testbed's uniform run (kl_coef --kl-coef throughout, one torch
thread); every `--measure-every` steps, on the batch that step is about to train (before its
update), it computes the gradients (over every parameter) of uniform's full batch and of the
kept groups alone. Kept = the step's mixed groups (the skip's prediction right on every group:
the case in which the docs said the step is uniform's). It reports, per loss aggregation,
the norm ratio ||g_x|| / ||g_uniform||, the relative error ||g_x - g_uniform|| / ||g_uniform||
and the cosine, for the KL term, the entropy term, the policy gradient and the whole step
(policy gradient + kl_coef * KL) under (a) and (b). Nothing was tuned: the seeds, steps and
kl_coef (0.04, GRPO's beta) were set before the first run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from frontier_rft.bench.real_rl.finished.kept_kl import markdown, run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--model",
        default="runs/kept-kl/model-sft",
        help="start model directory (copied from the ledger's start weights)",
    )
    p.add_argument("--start-weights", default="d8e66360e158")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--warmup", type=int, default=20, help="uniform steps before measuring")
    p.add_argument("--measure", type=int, default=10, help="consecutive steps measured")
    p.add_argument("--kl-coef", type=float, default=0.04)
    p.add_argument("--runs", default="runs/kept-kl")
    p.add_argument("--out", default="benchmarks/results/kept_kl")
    args = p.parse_args()
    out = run(
        Path(args.model),
        command=(
            f"PYTHONPATH=src nice python benchmarks/kept_kl.py --seeds {args.seeds} "
            f"--warmup {args.warmup} --measure {args.measure} --kl-coef {args.kl_coef}"
        ),
        start_weights=args.start_weights,
        seeds=[int(s) for s in args.seeds.split(",")],
        warmup=args.warmup,
        steps_measured=args.measure,
        kl_coef=args.kl_coef,
        runs=Path(args.runs),
        progress=lambda line: print(line, flush=True),
    )
    Path(args.out + ".json").write_text(json.dumps(out, indent=1) + "\n")
    Path(args.out + ".md").write_text(markdown(out))
    print(markdown(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
