"""`frontier demo`: every selector on one scripted, fixed-difficulty task pool.

This is a selection demo, not a learning simulation: each task has a fixed pass rate,
so the demo shows how well each method finds the prompts whose rollout groups carry
gradient signal (the effective task ratio), what it costs, and how many distinct
tasks it touches. (The simulated learners that show training speed-ups are built on
top of this in `frontier_rft.simulation`.)
"""

from __future__ import annotations

import io
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from frontier_rft.cli.progress import Progress
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.pool import TaskPool
from frontier_rft.selectors import SELECTORS, make_selector

__all__ = ["DemoResult", "demo_pool", "run_selection_demo"]


@dataclass(frozen=True)
class DemoResult:
    """Summary of one selector's run in the demo."""

    selector: str
    effective_task_ratio: float
    mean_abs_advantage: float
    distinct_tasks: int
    overhead_ms: float
    note: str = ""


def demo_pool(num_tasks: int, seed: int) -> tuple[TaskPool, np.ndarray]:
    """Four difficulty levels; most tasks are always solved or never solved, a few mixed."""
    rng = np.random.default_rng(seed)
    level = rng.integers(0, 4, size=num_tasks)
    solved_share = np.array([0.7, 0.35, 0.1, 0.0])[level]
    mixed_share = np.array([0.2, 0.35, 0.25, 0.1])[level]
    u = rng.random(num_tasks)
    pass_rate = np.where(u < solved_share, 1.0, 0.0)
    mixed = (u >= solved_share) & (u < solved_share + mixed_share)
    pass_rate[mixed] = rng.uniform(0.15, 0.85, size=int(mixed.sum()))
    # Metadata is informative but noisy, as in practice: a noisy skill coordinate, and
    # reference pass rates estimated from 8 rollouts of a weaker and a stronger model.
    skill = pass_rate + 0.35 * rng.standard_normal(num_tasks)
    features = np.concatenate([np.eye(4)[level], skill[:, None]], axis=1)
    weak = rng.binomial(8, np.clip(0.6 * pass_rate, 0, 1)) / 8
    strong = rng.binomial(8, np.clip(0.2 + pass_rate, 0, 1)) / 8
    ref = np.stack([weak, np.maximum(weak, strong)], axis=1)
    pool = TaskPool(
        num_tasks=num_tasks,
        categories=level,
        difficulty=level + 0.5 * rng.random(num_tasks),
        features=features,
        reference_pass_rates=ref,
        prompts=tuple(f"level {lv} puzzle {i}" for i, lv in enumerate(level)),
    )
    return pool, pass_rate


def _collaborators(name: str) -> tuple[dict[str, Any], str]:
    if name == "metis":
        from frontier_rft.selectors.metis import HeuristicJudge

        return {"judge": HeuristicJudge()}, "non-LLM heuristic judge"
    return {}, ""


def run_selection_demo(
    names: list[str] | None = None,
    steps: int = 100,
    batch: int = 32,
    rollouts: int = 8,
    num_tasks: int = 2000,
    seed: int = 0,
    show_progress: bool = True,
) -> list[DemoResult]:
    """Run each selector for `steps` steps on the demo pool; same rollout noise for all."""
    pool, pass_rate = demo_pool(num_tasks, seed)
    results = []
    for name in names if names is not None else sorted(SELECTORS):
        kwargs, note = _collaborators(name)
        sel = make_selector(name, pool, seed=seed, **kwargs)
        rng = np.random.default_rng(seed + 1)
        mixed = groups = 0
        abs_adv = 0.0
        seconds = 0.0
        stream: TextIO = sys.stderr if show_progress else io.StringIO()
        with Progress(steps, name, stream=stream) as bar:
            for t in range(steps):
                start = time.perf_counter()
                ids = sel.select(batch)
                seconds += time.perf_counter() - start
                task_ids = np.repeat(ids, rollouts)
                rewards = (rng.random(task_ids.size) < pass_rate[task_ids]).astype(float)
                per_task = rewards.reshape(batch, rollouts)
                spread = per_task.max(axis=1) > per_task.min(axis=1)
                mixed += int(spread.sum())
                groups += batch
                p = per_task.mean(axis=1)
                abs_adv += float((2 * np.sqrt(p * (1 - p))).sum())
                start = time.perf_counter()
                sel.update(Feedback(task_ids=task_ids, rewards=rewards, step=t))
                seconds += time.perf_counter() - start
                bar.advance()
        sel.flush()
        results.append(
            DemoResult(
                selector=name,
                effective_task_ratio=mixed / groups,
                mean_abs_advantage=abs_adv / groups,
                distinct_tasks=int(sel.metrics()["tasks/distinct_selected"]),
                overhead_ms=1e3 * seconds / steps,
                note=note,
            )
        )
    return results


def format_table(results: list[DemoResult]) -> str:
    """Markdown table, best effective task ratio first."""
    lines = [
        "| selector | effective task ratio | mean abs advantage | distinct tasks | ms/step "
        "| note |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in sorted(results, key=lambda r: -r.effective_task_ratio):
        lines.append(
            f"| {r.selector} | {r.effective_task_ratio:.3f} | {r.mean_abs_advantage:.3f} | "
            f"{r.distinct_tasks} | {r.overhead_ms:.2f} | {r.note} |"
        )
    return "\n".join(lines)
