"""Weak/strong reference pass rates of the training pool, for BOTS's interpolation plug-in.

BOTS (arXiv:2510.26374, section 3) infers unselected tasks' pass rates by placing the current
policy between a weaker and a stronger reference model: `p~ = mu * strong + (1 - mu) * weak`.
`measure_references` samples both models on the training pool and stores per-task success
rates with the tasks' canonical keys; `load_references` re-derives the pool and refuses a
file measured on different tasks, so rates can never be attached to the wrong prompts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.tasks.base import TaskItem
from frontier_rft.tasks.suite import load_task, task_key, train_split
from frontier_rft.training.config import TrainConfig

__all__ = ["load_references", "measure_references", "write_references"]

FORMAT = "frontier-rft/reference-pass-rates/v1"


def measure_references(
    weak_dir: str | os.PathLike[str],
    strong_dir: str | os.PathLike[str],
    config: TrainConfig,
    samples: int = 8,
    seed: int = 0,
    progress: Any = None,
) -> dict[str, Any]:
    """Success rates (reward >= 1) of both models on `config`'s training pool, `samples` each
    at `config`'s temperature and top_p; `progress(line)` gets a line per model, after a
    progress bar of its sampling."""
    import torch

    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.training.evaluate import rollout_scores

    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    suite = load_task(config.task, config.format_reward)
    items = train_split(suite, config.train_size, config.train_seed, config.levels)
    rates = {}
    for name, path in (("weak", weak_dir), ("strong", strong_dir)):
        model, tokenizer = load_lm(path)
        torch.manual_seed(seed)
        scores, _ = rollout_scores(
            model,
            tokenizer,
            items,
            suite.verifier,
            config.rollout_sampling(samples),
            progress=progress is not None,
            desc=f"{name} reference",
        )
        rates[name] = (scores >= 1.0).mean(axis=1)
        if progress is not None:
            progress(f"{name} reference {path}: mean pass rate {rates[name].mean():.3f}")
    return {
        "format": FORMAT,
        "task": config.task,
        "levels": config.levels,
        "train_size": config.train_size,
        "train_seed": config.train_seed,
        "samples": samples,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "weak_model": str(weak_dir),
        "strong_model": str(strong_dir),
        "keys": [task_key(it) for it in items],
        "weak": rates["weak"].tolist(),
        "strong": rates["strong"].tolist(),
    }


def write_references(path: str | os.PathLike[str], data: dict[str, Any]) -> None:
    """Atomic JSON write (tmp file + rename)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, out)


def load_references(path: str | os.PathLike[str], items: Sequence[TaskItem]) -> np.ndarray:
    """(N, 2) weak/strong pass rates aligned with `items`; errors name any mismatch."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(
            f"reference pass rates {file} not found; measure them with `frontier "
            "measure-references --weak DIR --strong DIR --out FILE` (same --levels, "
            "--train-size, --train-seed as the training run)"
        )
    data = load_json_file(file, f"a reference pass-rate file (format {FORMAT})")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{file} is not a reference pass-rate file (format {FORMAT})")
    missing = [k for k in ("keys", "weak", "strong") if not isinstance(data.get(k), list)]
    if missing:
        raise ValueError(f"{file}: no {missing[0]!r} list; measure the file again")
    keys = [task_key(it) for it in items]
    if data["keys"] != keys:
        raise ValueError(
            f"{file} was measured on another training pool (levels {data.get('levels')!r}, "
            f"train_size {data.get('train_size')}, train_seed {data.get('train_seed')}); "
            "measure it again with this run's --levels, --train-size and --train-seed"
        )
    try:
        rates = np.stack([np.asarray(data[k], float) for k in ("weak", "strong")], axis=1)
    except (TypeError, ValueError):
        rates = np.zeros((0, 2))
    if rates.shape != (len(items), 2) or not np.all((rates >= 0) & (rates <= 1)):
        raise ValueError(f"{file}: weak/strong rates must be {len(items)} numbers in [0, 1] each")
    return rates
