"""Selector metrics: one naming scheme for every trainer, and sinks (JSONL, TensorBoard, W&B).

Every trainer (`frontier train`, TRL, verl) logs a selector's metrics under one prefix,
`curriculum/`, beside its own keys: `curriculum/feedback/effective_task_ratio`,
`curriculum/bots/posterior_mean`, and the adapter's own `curriculum/trl/...` or
`curriculum/verl/...`. Trainer logs get a short summary by default (`SUMMARY_KEYS`, the
`evidence/...` keys and the adapter's lag); `verbosity="all"` sends everything, and the
JSONL files always hold everything.

Numbers per step only: messages for people go through the `frontier_rft` logger
(frontier_rft.logs), progress through frontier_rft.progress.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from frontier_rft.core.jsonsafe import loads_bounded

__all__ = [
    "METRICS_PREFIX",
    "SUMMARY_KEYS",
    "VERBOSITIES",
    "JsonlLogger",
    "MetricsSink",
    "curriculum_metrics",
    "read_metrics_jsonl",
]

METRICS_PREFIX = "curriculum/"
"""Prefix of every selector metric in a trainer's logs."""
MAX_LINE_CHARS = 1 << 20
"""Longest metrics.jsonl line read (a step's record is ~2 KB)."""
MAX_LINE_DEPTH = 16
"""Deepest nesting read in one line (records are flat): a deeper line is refused, never a
RecursionError."""
SUMMARY_KEYS = (
    "feedback/effective_task_ratio",
    "feedback/mean_abs_advantage",
    "feedback/steps",
    "tasks/distinct_selected",
    "tasks/distinct_trained",
    "select/overhead_ms",
    "trl/feedback_lag",
    "trl/rollouts_delivered",
    "verl/max_feedback_lag",
    "verl/epoch",
)
"""What a trainer log shows by default, plus every `evidence/...` key (which metadata the
selector reads): the share of informative groups, the signal they carry, coverage of the
pool, the selector's cost, how far its feedback lags and, with TRL, the rollouts spent (an
A/B's x-axis; `feedback/rollouts` trails it by the rounds not yet folded in) and, with
verl, the passes over the data (the A/B's count of them)."""
VERBOSITIES = ("summary", "all")


def curriculum_metrics(
    metrics: dict[str, float], verbosity: str = "summary", prefix: str = METRICS_PREFIX
) -> dict[str, float]:
    """Selector (and adapter) metrics under `prefix`; "summary" keeps the default set."""
    if verbosity not in VERBOSITIES:
        raise ValueError(f"verbosity must be one of {VERBOSITIES}, got {verbosity!r}")
    keep = (
        metrics
        if verbosity == "all"
        else {k: v for k, v in metrics.items() if k in SUMMARY_KEYS or k.startswith("evidence/")}
    )
    return {prefix + k: float(v) for k, v in keep.items()}


def _clean(value: float) -> float | None:
    # JSON has no NaN/inf; None keeps the key so columns stay aligned.
    return value if math.isfinite(value) else None


class JsonlLogger:
    """Append one JSON object per call to a file; each line is flushed so a crash loses nothing."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def log(self, metrics: dict[str, float], step: int, **extra: Any) -> None:
        record: dict[str, Any] = {"step": int(step), "time": time.time(), **extra}
        record.update({k: _clean(float(v)) for k, v in metrics.items()})
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonlLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MetricsSink:
    """Fan selector metrics out to JSONL plus TensorBoard and W&B where installed and enabled.

    `tensorboard_dir=None` and `wandb_run=None` turn those off; a W&B run is passed in (the
    user owns its lifecycle), TensorBoard's writer is created lazily from torch. A resumed
    run passes `purge_step` (its checkpoint's step + 1): TensorBoard then discards the
    events the interrupted run logged from that step on, so no step shows twice.
    """

    def __init__(
        self,
        jsonl_path: str | os.PathLike[str],
        tensorboard_dir: str | os.PathLike[str] | None = None,
        wandb_run: Any = None,
        purge_step: int | None = None,
    ):
        self.jsonl = JsonlLogger(jsonl_path)
        self._tb: Any = None
        if tensorboard_dir is not None:
            from torch.utils.tensorboard import SummaryWriter  # optional: the train extra

            self._tb = SummaryWriter(str(tensorboard_dir), purge_step=purge_step)
        self._wandb = wandb_run

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.jsonl.log(metrics, step)
        finite = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
        if self._tb is not None:
            for key, value in finite.items():
                self._tb.add_scalar(key, value, step)
        if self._wandb is not None:
            self._wandb.log(finite, step=step)

    def close(self) -> None:
        self.jsonl.close()
        if self._tb is not None:
            self._tb.close()


def read_metrics_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Records of a metrics.jsonl, each also holding its `curriculum/` keys unprefixed.

    A last line that is not a complete record was torn by a crash mid-write and is
    skipped; an unreadable line anywhere else raises ValueError naming it.
    """
    lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = loads_bounded(line, max_chars=MAX_LINE_CHARS, max_depth=MAX_LINE_DEPTH)
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            if number == len(lines):
                break  # torn by a crash mid-write
            raise ValueError(f"{path}: line {number} is not a metrics record ({exc})") from exc
        row.update(
            {k[len(METRICS_PREFIX) :]: v for k, v in row.items() if k.startswith(METRICS_PREFIX)}
        )
        records.append(row)
    return records
