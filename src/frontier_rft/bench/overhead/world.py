"""The overhead benchmark's settings and its learner-free world: a task pool with
informative metadata (or prompt text only) and fixed pass rates, rewards drawn in advance so
that their generation is never timed (`frontier_rft.bench.overhead.runner` times selectors
on it)."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from frontier_rft import SELECTORS, Feedback, TaskPool

__all__ = [
    "FULL_SIZES",
    "Settings",
    "World",
    "default_steps",
    "derive_features",
    "make_world",
    "quick",
    "world_prompts",
]

NUM_CATEGORIES = 8
"""Arms of the world's categories (difficulty bands)."""
FEATURE_DIM = 14
"""Columns of the world's task features (the Countdown embedding's width)."""
FULL_SIZES = (10_000, 100_000, 1_000_000)
"""Pool sizes N of the committed table."""


@dataclass(frozen=True)
class Settings:
    """What one run of the overhead benchmark measures, and how long it may take."""

    sizes: tuple[int, ...] = FULL_SIZES
    batch: int = 256
    rollouts: int = 16
    steps: int | None = None
    """Timed steps per selector and size; None = default_steps(N)."""
    warmup: int = 10
    mem_steps: int = 72
    """Steps of the memory pass (> the default dedupe window of 64, so the base class's
    bookkeeping has reached its steady state)."""
    budget_s: float = 60.0
    """Wall-clock budget per selector and size for each pass; a slower one is cut short."""
    selectors: tuple[str, ...] = field(default_factory=lambda: tuple(SELECTORS))
    seed: int = 0
    given: str = "all"
    """What the pool carries: 'all' (every kind of metadata) or 'prompts' (prompt text only)."""


def default_steps(n: int) -> int:
    """More timed steps where a step is cheap: 200 at 1e4, 50 at 1e5, 20 at 1e6."""
    return max(20, min(200, round(5e6 / n)))


def quick(settings: Settings) -> Settings:
    """Tiny settings for a smoke test: N=1e3, batch 32, 4 rollouts, 3 timed steps."""
    return replace(settings, sizes=(1000,), batch=32, rollouts=4, steps=3, warmup=2, mem_steps=4)


@dataclass
class World:
    """A learner-free world: a task pool with informative metadata and fixed pass rates."""

    pool: TaskPool
    pass_rates: NDArray[np.float64]
    uniforms: NDArray[np.float64]
    """(steps, batch * rollouts) pre-drawn uniforms; a rollout succeeds if u < p(task)."""
    rollouts: int

    def feedback(self, ids: NDArray[np.int64], step: int) -> Feedback:
        task_ids = np.repeat(ids, self.rollouts)
        u = self.uniforms[step % self.uniforms.shape[0], : task_ids.shape[0]]
        rewards = (u < self.pass_rates[task_ids]).astype(np.float64)
        return Feedback(task_ids=task_ids, rewards=rewards, step=step)


def make_world(n: int, settings: Settings, steps: int) -> World:
    rng = np.random.default_rng([settings.seed, n])
    kind = rng.random(n)
    p = np.where(kind < 0.25, 1.0, np.where(kind < 0.5, 0.0, rng.uniform(0.02, 0.98, n)))
    hardness = np.clip(1.0 - p + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    features = rng.standard_normal((n, FEATURE_DIM))
    features[:, 0] += 3.0 * p
    weak = np.clip(p - 0.2 + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    strong = np.clip(p + 0.1 + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    keys = tuple(f"task-{i}" for i in range(n))
    if settings.given == "prompts":
        pool = TaskPool(num_tasks=n, prompts=tuple(world_prompts(rng, p)), keys=keys)
    else:
        pool = TaskPool(
            num_tasks=n,
            categories=np.minimum((hardness * NUM_CATEGORIES).astype(np.int64), NUM_CATEGORIES - 1),
            difficulty=hardness,
            features=features,
            reference_pass_rates=np.stack([weak, strong], axis=1),
            prompts=tuple(
                f"Problem {i}: reach the target using each number once." for i in range(n)
            ),
            keys=keys,
        )
    reward_rng = np.random.default_rng([settings.seed, n, 1])
    uniforms = reward_rng.random((steps, settings.batch * settings.rollouts))
    return World(pool=pool, pass_rates=p, uniforms=uniforms, rollouts=settings.rollouts)


_SYLLABLES = ("ka", "lo", "mi", "nu", "re", "sa", "ti", "vo", "ze", "bo", "da", "fi")
_WORDS = tuple(a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in ("", "n", "s"))
"""A 432-word vocabulary: the prompts' text has to carry more than a handful of tokens."""


def world_prompts(rng: np.random.Generator, p: NDArray[np.float64]) -> list[str]:
    """Distinct prompts of 8 words whose vocabulary loosely follows the task's difficulty."""
    n = p.shape[0]
    # words near a difficulty-dependent centre of the vocabulary, plus numbers
    centre = (p * (len(_WORDS) - 1)).astype(np.int64)
    idx = np.clip(centre[:, None] + rng.integers(-40, 41, size=(n, 8)), 0, len(_WORDS) - 1)
    nums = rng.integers(1, 1000, size=(n, 3))
    return [
        f"Problem {i}: " + " ".join(_WORDS[k] for k in idx[i]) + " " + " ".join(map(str, nums[i]))
        for i in range(n)
    ]


def derive_features(world: World, s: Settings) -> dict[str, float]:
    """Prompts only: derive the shared text features once (seconds, bytes per task)."""
    if s.given != "prompts":
        return {}
    from frontier_rft.features.derive import task_features

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        feats, _ = task_features(world.pool, "overhead")
    return {
        "featurize_s": time.perf_counter() - start,
        "features_bytes_per_task": feats.nbytes / world.pool.num_tasks,
        "features_dim": float(feats.shape[1]),
    }
