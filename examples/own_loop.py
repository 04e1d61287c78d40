"""A selector in your own training loop, from prompts alone: the README's quick start, runnable.

The "policy" here is a stand-in: a shared skill plus one per digit count, and prompts whose
difficulty grows with their digits. Its training step is GRPO's on those skills with an
Adam-like fixed step length: the direction comes from the groups with mixed outcomes (the
others have zero advantage), the length does not grow with how many there are, so a batch
is not rewarded for its share of mixed groups. Swap `Policy` for your trainer. Runs uniform
sampling and `skip` (the TRL, verl and SkyRL adapters' default: it walks the data like
uniform and rolls out only the prompts it keeps among uniform's next batch, passing over
those its posterior expects to come back all correct or all wrong) on the same start and the
same steps, about four epochs, and compares them as you would: held-out score (prompts never
trained on) against rollouts spent. A stand-in, not evidence for either.

    python examples/own_loop.py            # 2 s at load 3 on 2 cores
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np

from frontier_rft import Feedback, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.features.derive import EvidenceWarning

ROLLOUTS, BATCH, STEPS, LR = 16, 32, 60, 0.05
rng = np.random.default_rng(0)


def arithmetic(n: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """n prompts with 1-6 digits; more digits = harder (the selector is not told so)."""
    digits = rng.integers(1, 7, size=n)
    prompts = [
        f"What is {rng.integers(10 ** (d - 1), 10**d)} + {rng.integers(10**d)}?" for d in digits
    ]
    return prompts, digits - 1, digits + rng.normal(0, 0.5, size=n)


prompts, level, difficulty = arithmetic(500)
_, heldout_level, heldout_difficulty = arithmetic(300)  # never trained on


class Policy:
    """Stand-in for your trainer: rollouts, a training step and a held-out evaluation."""

    def __init__(self) -> None:
        self.skill = np.r_[1.0, np.zeros(6)]  # [shared, one per digit count]
        self.rng = np.random.default_rng(1)

    def pass_rate(self, levels: np.ndarray, diffs: np.ndarray) -> np.ndarray:
        """Chance that one rollout of a prompt is correct."""
        return 1 / (1 + np.exp(-2 * (self.skill[0] + self.skill[1 + levels] - diffs)))

    def rollout_and_score(self, ids: np.ndarray, n: int) -> np.ndarray:
        """n rollouts per prompt, reward 1 for a correct answer: shape (len(ids) * n,)."""
        p = self.pass_rate(level[ids], difficulty[ids])
        return (self.rng.random((ids.size, n)) < p[:, None]).astype(np.float64).ravel()

    def train(self, ids: np.ndarray, rewards: np.ndarray) -> None:
        """One GRPO step: advantage r - group mean times d log p(r) / d skill, averaged over
        the batch's rollouts, then a step of fixed length LR along it (Adam-like)."""
        r = rewards.reshape(ids.size, ROLLOUTS)
        advantage = r - r.mean(axis=1, keepdims=True)  # zero for all-equal groups
        dlogp = 2 * (r - self.pass_rate(level[ids], difficulty[ids])[:, None])
        per_prompt = (advantage * dlogp).mean(axis=1)
        grad = np.zeros_like(self.skill)
        grad[0] = per_prompt.sum()
        np.add.at(grad, 1 + level[ids], per_prompt)
        norm = np.linalg.norm(grad)
        if norm > 0:  # a batch of only zero-variance groups gives no direction
            self.skill += LR * grad / norm

    def held_out(self) -> float:
        """Expected pass@1 on prompts never trained on."""
        return float(self.pass_rate(heldout_level, heldout_difficulty).mean())


def run(name: str, pool: TaskPool) -> tuple[float, int]:
    """Train with selector `name`; save, load and check it resumes exactly.
    Returns (held-out score, rollouts spent)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)  # main() printed them once
        sel = make_selector(name, pool, seed=0)
    policy, rollouts = Policy(), 0
    for step in range(STEPS):
        ids = sel.select_window(BATCH)  # the prompts it keeps among uniform's next BATCH
        rewards = policy.rollout_and_score(ids, n=ROLLOUTS)  # flat: len(ids) * ROLLOUTS rewards
        sel.update(Feedback(task_ids=np.repeat(ids, ROLLOUTS), rewards=rewards, step=step))
        sel.flush()  # fold this step in now, so metrics() sees it
        policy.train(ids, rewards)
        rollouts += rewards.size
        if step % 20 == 0 or step == STEPS - 1:
            etr = sel.metrics()["feedback/effective_task_ratio"]  # share of mixed groups
            print(
                f"{name:8s} step {step:3d}  held-out {policy.held_out():.3f}  "
                f"mixed groups {etr:.2f} (a diagnostic, not a verdict)"
            )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "selector.npz"
        save_selector(sel, path)  # atomic
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)
            resumed = load_selector(path)  # the pool is saved with it; pass pool=... otherwise
        assert np.array_equal(resumed.select_window(BATCH), sel.select_window(BATCH))  # exact
    return policy.held_out(), rollouts


def main() -> None:
    pool = TaskPool(num_tasks=len(prompts), prompts=prompts)
    with warnings.catch_warnings(record=True) as said:  # what skip derives, said once
        warnings.simplefilter("always", EvidenceWarning)
        make_selector("skip", pool, seed=0)
    for w in said:
        print("evidence:", w.message)
    results = {name: run(name, pool) for name in ("uniform", "skip")}
    for name, (score, rollouts) in results.items():
        print(f"{name}: held-out {score:.3f} after {rollouts} rollouts")
    print("judge a selector by held-out score per rollout on your own run (docs/ab_test.md)")
    print("both selectors were saved, loaded and resumed exactly")


if __name__ == "__main__":
    main()
