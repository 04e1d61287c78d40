"""The outcome mix of a model on the training pool before RL: always / never / mixed solved.

What `frontier sft --measure-pool N` reports: selection only helps where some tasks are
mixed, so this is the first number to look at before a selector comparison.
"""

from __future__ import annotations

from typing import Any

from frontier_rft.training.config import TrainConfig

__all__ = ["format_start_state", "measure_start_state"]


def measure_start_state(
    model_dir: str, config: TrainConfig, tasks: int, samples: int, progress: bool = False
) -> dict[str, Any]:
    """Outcome mix (always / never / mixed solved, per level) on the training pool's first
    tasks, sampled as `config`'s rollouts are (`progress`: a bar counting the tasks sampled)."""
    import numpy as np
    import torch

    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.tasks.suite import load_task, train_split
    from frontier_rft.training.evaluate import outcome_histogram, rollout_scores

    model, tokenizer = load_lm(model_dir)
    suite = load_task(config.task)
    items = train_split(suite, config.train_size, config.train_seed, config.levels)[:tasks]
    torch.manual_seed(config.seed)
    scores, _ = rollout_scores(
        model, tokenizer, items, suite.verifier, config.rollout_sampling(samples),
        progress=progress, desc="start state",
    )  # fmt: skip
    levels = np.array([it.level for it in items])
    report: dict[str, Any] = {"levels": config.levels, "all": outcome_histogram(scores)}
    for level in np.unique(levels).tolist():
        report[f"level{level}"] = outcome_histogram(scores[levels == level])
    return report


def format_start_state(report: dict[str, Any]) -> str:
    """Markdown table of `measure_start_state`'s report."""
    lines = [
        f"start state ({report['all']['samples']} samples per task, levels {report['levels']}):"
    ]
    lines.append("| split | tasks | always solved | never solved | mixed | mean score |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for key, h in report.items():
        if isinstance(h, dict):
            lines.append(
                f"| {key} | {h['tasks']} | {h['always_solved']:.2f} | {h['never_solved']:.2f} "
                f"| {h['mixed']:.2f} | {h['mean_score']:.3f} |"
            )
    return "\n".join(lines)
