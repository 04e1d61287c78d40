"""DAPO's dynamic sampling in your own loop: a wrapper around any selector.

Each step rolls out more prompts than it trains on and keeps only the groups whose rewards
are not all equal (the only ones with a GRPO gradient); surplus mixed groups train first at
the next step. Fixed DAPO rolls out 3 candidates per training slot; adaptive sizing (GRESO's
rule) rolls out need / (1 - z) * 1.25, z the measured zero-variance share. Same stand-in
policy as examples/own_loop.py.

    python examples/dynamic_sampling_loop.py      # ~2 s
"""

from __future__ import annotations

import numpy as np

from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.selectors.dynamic_sampling import DynamicSampling, DynamicSamplingConfig

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
        make_selector("uniform", pool, seed=0), DynamicSamplingConfig(adaptive=adaptive)
    )
    gen, skill, spent = np.random.default_rng(1), 0.0, 0
    for step in range(STEPS):
        need, trained = BATCH, 0
        for _ in range(MAX_ROUNDS):  # top-up rounds while the batch lacks mixed groups
            ids = ds.candidates(need)  # fixed: 3 * need; adaptive: from z
            rewards = rollout(ids, skill, gen)
            spent += rewards.size
            fb = Feedback(task_ids=np.repeat(ids, ROLLOUTS), rewards=rewards, step=step)
            ds.update(fb)  # every rollout teaches the selector inside, once
            out = ds.filter_groups(fb, need)  # mixed groups only, surplus first
            trained += out.num_groups  # train on out.rewards / out.advantages() here
            need = out.deficit
            if need == 0:
                break
        skill += 0.05 * trained / BATCH
    return skill, spent


def main() -> None:
    for adaptive in (False, True):
        skill, spent = run(adaptive)
        label = "adaptive" if adaptive else "fixed 3x"
        print(f"{label:9s} skill {skill:.2f}  rollouts {spent}")


if __name__ == "__main__":
    main()
