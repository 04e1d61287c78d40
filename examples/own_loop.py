"""A selector in your own training loop, from prompts alone: the README's quick start, runnable.

The "policy" here is a stand-in: each prompt has a hidden difficulty, the policy a skill
that grows when it trains on prompts with mixed outcomes (the only ones that carry a
GRPO gradient). Swap `Policy` for your trainer. Runs uniform sampling and `greso` (the TRL
and verl adapters' default: it walks the data like uniform and, from the second epoch on,
skips prompts whose groups came out all correct or all wrong) on the same start, for about
four epochs over the pool.

    python examples/own_loop.py            # ~3 s
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np

from frontier_rft import Feedback, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.features.derive import EvidenceWarning

ROLLOUTS, BATCH, STEPS = 16, 32, 60
rng = np.random.default_rng(0)

# 500 arithmetic prompts; more digits = harder (the selector is not told so).
digits = rng.integers(1, 7, size=500)
prompts = [f"What is {rng.integers(10 ** (d - 1), 10**d)} + {rng.integers(10**d)}?" for d in digits]
difficulty = digits + rng.normal(0, 0.5, size=digits.size)


class Policy:
    """Stand-in for your trainer: rollouts and a training step."""

    def __init__(self) -> None:
        self.skill = 1.0
        self.rng = np.random.default_rng(1)

    def rollout_and_score(self, ids: np.ndarray, n: int) -> np.ndarray:
        """n rollouts per prompt, reward 1 for a correct answer: shape (len(ids) * n,)."""
        p = 1 / (1 + np.exp(-(self.skill - difficulty[ids]) * 2))
        return (self.rng.random((ids.size, n)) < p[:, None]).astype(np.float64).ravel()

    def train(self, rewards: np.ndarray) -> None:
        """Learns from groups with mixed outcomes only (zero-variance groups give no gradient)."""
        group_means = rewards.reshape(-1, ROLLOUTS).mean(axis=1)
        self.skill += 0.05 * float(((group_means > 0) & (group_means < 1)).mean())


def run(name: str, pool: TaskPool) -> float:
    """Train with selector `name`; save, load and check it resumes exactly; final skill."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)  # main() printed them once
        sel = make_selector(name, pool, seed=0)
    policy = Policy()
    for step in range(STEPS):
        ids = sel.select(BATCH)  # which prompts to roll out
        rewards = policy.rollout_and_score(ids, n=ROLLOUTS)  # flat: BATCH * ROLLOUTS rewards
        sel.update(Feedback(task_ids=np.repeat(ids, ROLLOUTS), rewards=rewards, step=step))
        sel.flush()  # fold this step in now, so metrics() sees it
        policy.train(rewards)
        if step % 20 == 0 or step == STEPS - 1:
            etr = sel.metrics()["feedback/effective_task_ratio"]  # share of mixed groups
            print(f"{name:8s} step {step:3d}  skill {policy.skill:.2f}  mixed groups {etr:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "selector.npz"
        save_selector(sel, path)  # atomic
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)
            resumed = load_selector(path)  # the pool is saved with it; pass pool=... otherwise
        assert np.array_equal(resumed.select(BATCH), sel.select(BATCH))  # resumes exactly
    return policy.skill


def main() -> None:
    pool = TaskPool(num_tasks=len(prompts), prompts=prompts)
    with warnings.catch_warnings(record=True) as said:  # what greso derives, said once
        warnings.simplefilter("always", EvidenceWarning)
        make_selector("greso", pool, seed=0)
    for w in said:
        print("evidence:", w.message)
    uniform, greso = run("uniform", pool), run("greso", pool)
    print(f"skill after {STEPS} steps: uniform {uniform:.2f}, greso {greso:.2f}")
    print("both selectors were saved, loaded and resumed exactly")


if __name__ == "__main__":
    main()
