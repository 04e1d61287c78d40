"""Selector metrics to JSONL always, and to TensorBoard / W&B when the user has them."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["JsonlLogger", "MetricsSink"]


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
    user owns its lifecycle), TensorBoard's writer is created lazily from torch.
    """

    def __init__(
        self,
        jsonl_path: str | os.PathLike[str],
        tensorboard_dir: str | os.PathLike[str] | None = None,
        wandb_run: Any = None,
    ):
        self.jsonl = JsonlLogger(jsonl_path)
        self._tb: Any = None
        if tensorboard_dir is not None:
            from torch.utils.tensorboard import SummaryWriter  # optional: the train extra

            self._tb = SummaryWriter(str(tensorboard_dir))
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
