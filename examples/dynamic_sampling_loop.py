"""DAPO's dynamic sampling in your own loop: a wrapper around any selector.

Each step rolls out more prompts than it trains on and keeps only the groups whose rewards
are not all equal (the only ones with a GRPO gradient), in rounds until the batch is full.
A step trains on its own fresh groups; the surplus is discarded, as DAPO does.
Mode fixed rolls out 3 candidates per open training slot; adaptive sizing (GRESO's rule)
rolls out need / (1 - z) * 1.25, z the measured zero-variance share. Same stand-in policy
as examples/own_loop.py.

    python examples/dynamic_sampling_loop.py      # ~2 s
"""

from __future__ import annotations

import numpy as np

from frontier_rft import DynamicSampling, DynamicSamplingConfig, TaskPool, make_selector

ROLLOUTS, BATCH, STEPS, MAX_ROUNDS = 8, 16, 40, 3
rng = np.random.default_rng(0)
difficulty = rng.uniform(-1.5, 3.5, size=1000)  # some prompts too easy or too hard


def rollout(ids: np.ndarray, skill: float, gen: np.random.Generator) -> np.ndarray:
    """ROLLOUTS binary rewards per prompt, prompt-major."""
    p = 1 / (1 + np.exp(-(skill - difficulty[ids]) * 2))
    return (gen.random((ids.size, ROLLOUTS)) < p[:, None]).astype(np.float64).ravel()


def run(adaptive: bool) -> tuple[float, int]:
    """Final skill and rollouts spent, uniform inside dynamic sampling."""
    pool = TaskPool(num_tasks=difficulty.size)
    ds = DynamicSampling(
        make_selector("uniform", pool, seed=0),
        DynamicSamplingConfig(adaptive=adaptive, max_rounds=MAX_ROUNDS),
    )
    gen, skill, spent = np.random.default_rng(1), 0.0, 0
    for step in range(STEPS):
        # The wrapper runs the step's rounds: select, roll out (your code), feed back, filter.
        samples = ds.sample(step, BATCH, ROLLOUTS, lambda ids, s=skill: rollout(ids, s, gen))
        spent += samples.rollouts
        trained = samples.train.num_groups  # train on samples.train.advantages() here
        skill += 0.05 * trained / BATCH
    return skill, spent


def main() -> None:
    for adaptive in (False, True):
        skill, spent = run(adaptive)
        label = "adaptive" if adaptive else "fixed 3x"
        print(f"{label:9s} skill {skill:.2f}  rollouts {spent}")


if __name__ == "__main__":
    main()
