"""Seconds per step of the standard real-RL testbed on one CPU thread (no evaluation).

    PYTHONPATH=src python benchmarks/step_speed.py --model runs/bench-rl/model-sft --steps 10

Trains `--steps` GRPO steps of the standard testbed's settings (uniform selector, seed 0)
from a start model (a bench-rl runs directory's model-sft) and prints the mean seconds of a
step and of its generation and update parts. Timed as a whole command against another
checkout's code (PYTHONPATH) in benchmarks/results/step_speed.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="start model directory (model-sft)")
    p.add_argument("--steps", type=int, default=10, help="training steps")
    args = p.parse_args()

    import torch

    from frontier_rft.bench.real_rl.testbed import testbed
    from frontier_rft.training.grpo import Trainer

    torch.set_num_threads(1)
    config = dataclasses.replace(
        testbed("gpu").train, device="cpu", threads=1, seed=0, train_seed=100, eval_every=0
    )
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(config, args.model, out)
        rows = [trainer.step() for _ in range(args.steps)]
    for key in ("perf/step_s", "perf/generate_s", "perf/update_s"):
        print(f"{key} {np.mean([r[key] for r in rows]):.3f}")


if __name__ == "__main__":
    main()
