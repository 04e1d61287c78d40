"""Top-up rounds of DAPO's released code (mode dapo: every round 3x the batch) against mode
fixed (3x the open slots): prompts rolled out per training slot, rounds per step, share of
steps that train short, on a stand-in where each group is mixed with probability p.

It measures the arithmetic of the two round rules, not learning (uniform inside, 8 rollouts
a prompt, 300 steps per cell; docs/selectors/dapo.md quotes the table).

    python benchmarks/dapo_round_rules.py      # ~30 s of CPU
"""

from __future__ import annotations

import numpy as np

from frontier_rft import TaskPool, make_selector
from frontier_rft.sampling.dynamic_sampling import DynamicSampling, DynamicSamplingConfig

CELLS = ((0.15, 16), (0.15, 128), (0.15, 512), (0.2, 128), (0.33, 128), (0.33, 512))
"""(p, B) of each row."""


def measure(mode: str, p: float, batch: int, steps: int = 300, n: int = 8) -> tuple[float, ...]:
    """(prompts rolled out / B, rounds, share of short steps) of `mode` at mixed share p."""
    rng = np.random.default_rng(1)
    flip = np.tile([1.0, 0.0], n // 2)

    def rollout(ids: np.ndarray) -> np.ndarray:
        mixed = rng.random(ids.size) < p
        return np.where(mixed[:, None], flip, 0.0).ravel()

    pool = TaskPool(num_tasks=100_000)
    ds = DynamicSampling(
        make_selector("uniform", pool, seed=0), DynamicSamplingConfig.for_mode(mode)
    )
    prompts = rounds = short = 0
    for t in range(steps):
        out = ds.sample(t, batch, n, rollout)
        prompts += sum(r.task_ids.size for r in out.rounds)
        rounds += len(out.rounds)
        short += int(out.train.deficit > 0)
    return prompts / steps / batch, rounds / steps, short / steps


def main() -> None:
    print("| p | B | fixed prompts / B | rounds | short | dapo prompts / B | rounds | short "
          "| fixed / dapo |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p, batch in CELLS:
        f, d = measure("fixed", p, batch), measure("dapo", p, batch)
        print(
            f"| {p:.2f} | {batch} | {f[0]:.2f} | {f[1]:.2f} | {f[2]:.0%} | {d[0]:.2f} | "
            f"{d[1]:.2f} | {d[2]:.0%} | {f[0] / d[0]:.2f} |"
        )


if __name__ == "__main__":
    main()
