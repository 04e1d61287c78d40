"""Held-out evaluation: pass@k (unbiased estimator), average score, per-level rates, failures.

pass@k for a task with c successes among n samples is `1 - C(n-c, k) / C(n, k)` (Chen et al.
2021), computed as a stable product; the reported value is its mean over tasks. A success is
a reward of at least `success_threshold` (1.0: Countdown's 0.1 format reward is no success).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.lm.decoding import Sampling
from frontier_rft.lm.rollout import sample_texts
from frontier_rft.progress import progress_bar
from frontier_rft.tasks.base import TaskItem, Verifier
from frontier_rft.tasks.taxonomy import classify_countdown_failure

__all__ = [
    "EvalResult",
    "evaluate_items",
    "outcome_histogram",
    "pass_at_k",
    "rollout_scores",
    "write_eval",
]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task: 1 - C(n-c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@dataclass
class EvalResult:
    """Scores of one model on one split."""

    samples: int
    """Completions per task (n)."""
    scores: np.ndarray
    """(tasks, n) verifier rewards."""
    levels: np.ndarray
    """Level per task."""
    pass_at: dict[int, float]
    """k -> mean pass@k over tasks."""
    records: list[dict[str, Any]] = field(default_factory=list)
    """One record per completion: task, level, sample, reward, success, failure class, text."""

    @property
    def mean_score(self) -> float:
        """Average verifier reward over every completion."""
        return float(self.scores.mean())

    def summary(self, threshold: float = 1.0) -> dict[str, float]:
        """Flat metrics (eval/...): score, pass@k, per-level success rate, failure shares."""
        out = {"eval/mean_score": self.mean_score}
        out.update({f"eval/pass@{k}": v for k, v in sorted(self.pass_at.items())})
        success = self.scores >= threshold
        for level in np.unique(self.levels).tolist():
            out[f"eval/success_rate_level{level}"] = float(success[self.levels == level].mean())
        failures = Counter(r["failure"] for r in self.records if r["failure"] is not None)
        total = max(sum(failures.values()), 1)
        for name, count in sorted(failures.items()):
            out[f"eval/failure/{name}"] = count / total
        return out


def rollout_scores(
    model: Any,
    tokenizer: Any,
    items: Sequence[TaskItem],
    verifier: Verifier,
    sampling: Sampling,
    *,
    prompts_per_batch: int = 16,
    progress: bool = False,
    desc: str = "rollouts",
    leave: bool = True,
) -> tuple[np.ndarray, list[list[str]]]:
    """(tasks, samples) rewards and the completion texts, drawn per `sampling` in batches of
    `prompts_per_batch` prompts; `progress` shows a bar counting prompts."""
    scores = np.zeros((len(items), sampling.samples))
    texts: list[list[str]] = []
    with progress_bar(len(items), desc, unit="prompt", enabled=progress, leave=leave) as bar:
        for lo in range(0, len(items), prompts_per_batch):
            chunk = items[lo : lo + prompts_per_batch]
            _, _, rows = sample_texts(model, tokenizer, [it.prompt for it in chunk], sampling)
            for i, (item, row) in enumerate(zip(chunk, rows, strict=True)):
                scores[lo + i] = [verifier.score(item, t) for t in row]
            texts.extend(rows)
            bar.update(len(chunk))
    return scores, texts


def evaluate_items(
    model: Any,
    tokenizer: Any,
    items: Sequence[TaskItem],
    verifier: Verifier,
    sampling: Sampling,
    *,
    ks: Sequence[int] = (1, 4, 8),
    success_threshold: float = 1.0,
    progress: bool = False,
    desc: str = "eval",
    leave: bool = True,
) -> EvalResult:
    """Sample each task per `sampling`; pass@k, mean score and per-completion records
    (`progress`: a bar counting the tasks sampled)."""
    scores, texts = rollout_scores(
        model, tokenizer, items, verifier, sampling, progress=progress, desc=desc, leave=leave
    )
    success = scores >= success_threshold
    counts = success.sum(axis=1)
    pass_at = {
        k: float(np.mean([pass_at_k(sampling.samples, int(c), k) for c in counts])) for k in ks
    }
    # The failure taxonomy is Countdown's (RLOO paper, appendix B.4); no other task has one.
    classify = classify_countdown_failure if items and items[0].domain == "countdown" else None
    records = []
    for i, item in enumerate(items):
        for j, text in enumerate(texts[i]):
            failure = None
            if classify is not None and not success[i, j]:
                failure = classify(item, text)
            records.append(
                {
                    "task_id": item.task_id,
                    "level": item.level,
                    "sample": j,
                    "reward": float(scores[i, j]),
                    "success": bool(success[i, j]),
                    "failure": failure,
                    "completion": text,
                }
            )
    levels = np.array([it.level for it in items], dtype=np.int64)
    return EvalResult(sampling.samples, scores, levels, pass_at, records)


def outcome_histogram(scores: np.ndarray, threshold: float = 1.0) -> dict[str, Any]:
    """Start-state mix of a pool: tasks always / never / sometimes solved, and c-histogram."""
    success = scores >= threshold
    counts = success.sum(axis=1)
    n = scores.shape[1]
    return {
        "samples": int(n),
        "tasks": int(scores.shape[0]),
        "always_solved": float(np.mean(counts == n)),
        "never_solved": float(np.mean(counts == 0)),
        "mixed": float(np.mean((counts > 0) & (counts < n))),
        "nonzero_variance": float(np.mean(scores.var(axis=1) > 0)),
        "successes_histogram": np.bincount(counts, minlength=n + 1).tolist(),
        "mean_score": float(scores.mean()),
    }


def write_eval(result: EvalResult, out_dir: str | os.PathLike[str], **info: Any) -> None:
    """eval.json (summary + info) and eval_records.jsonl (one completion per line)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = {**info, **result.summary()}
    (out / "eval.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    with open(out / "eval_records.jsonl", "w", encoding="utf-8") as fh:
        for rec in result.records:
            fh.write(json.dumps(rec) + "\n")
