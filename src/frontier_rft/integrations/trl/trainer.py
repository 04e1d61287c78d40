"""TRL adapter: GRPOTrainer / RLOOTrainer whose prompts come from a frontier-rft selector.

```python
from frontier_rft import TaskPool, make_selector
from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer

sel = make_selector("bots", TaskPool(num_tasks=len(ds)), seed=0)   # ds has a task_id column
trainer = FrontierGRPOTrainer(model=..., reward_funcs=[...], args=GRPOConfig(...),
                              train_dataset=ds, processing_class=tok, selector=sel)
trainer.train()                                  # or train(resume_from_checkpoint=True)
```

What it changes, and where:

- Sampler (`_get_train_sampler`): `FrontierRepeatSampler` keeps TRL's RepeatSampler layout
  and asks the selector for each chunk of prompts (see sampler.py).
- Feedback: each reward function is wrapped (a reward model gets a forward hook); after
  the training step that generated, the rewards are combined as TRL combines them
  (weighted nansum), gathered across processes with their task ids and sent to
  `selector.update` as one Feedback per generation round. TRL reads the next batch before
  these rewards exist; the selector folds them in at the select after that (a lag of one
  round or more, shown in `curriculum/trl/feedback_lag`).
- Checkpoints (`_save_checkpoint`, the seam TRL uses for its own extra state): the
  selector and sampler state are written into each checkpoint directory;
  `train(resume_from_checkpoint=...)` restores them before training resumes.
- Logs (`log`): selector metrics, prefixed `curriculum/`, join TRL's logs (so TensorBoard,
  W&B or any `report_to` backend gets them) and are appended to a JSONL file.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from torch import nn
from trl.trainer import grpo_trainer, rloo_trainer
from trl.trainer.utils import is_async_callable

from frontier_rft.core.config import check
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.metrics_log import JsonlLogger
from frontier_rft.integrations.trl.rewards import RewardTap, combine_rewards
from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler
from frontier_rft.integrations.trl.state import load_state, save_state, state_digest

__all__ = [
    "FrontierConfig",
    "FrontierGRPOTrainer",
    "FrontierRLOOTrainer",
    "FrontierRepeatSampler",
    "FrontierTrainerMixin",
    "task_rows",
]


@dataclass(frozen=True)
class FrontierConfig:
    """How the TRL adapter maps dataset rows, rewards and metrics to the selector."""

    task_id_column: str = "task_id"
    """Dataset column holding each row's TaskPool index (a permutation of 0..N-1)."""
    reward_range: tuple[float, float] | None = None
    """(lo, hi) of the combined reward, mapped linearly onto [0, 1] and clipped; None: as is."""
    metrics_prefix: str = "curriculum/"
    """Prefix of the selector's metrics in TRL's logs and the JSONL file."""
    jsonl_path: str | None = None
    """JSONL metrics file; None: `<output_dir>/frontier_metrics.jsonl`."""
    check_sync: bool = True
    """With several processes, compare the selector's state digest across them at each save."""

    def __post_init__(self) -> None:
        check(
            isinstance(self.task_id_column, str) and bool(self.task_id_column),
            f"task_id_column must be a non-empty column name, got {self.task_id_column!r}",
        )
        if self.reward_range is not None:
            lo, hi = self.reward_range
            check(
                math.isfinite(lo) and math.isfinite(hi) and lo < hi,
                f"reward_range must be (lo, hi) with finite lo < hi, got {self.reward_range!r}",
            )
        check(
            isinstance(self.metrics_prefix, str),
            f"metrics_prefix must be a string, got {self.metrics_prefix!r}",
        )


def task_rows(dataset: Any, column: str, num_tasks: int) -> NDArray[np.int64]:
    """Row of each task id: validates that `column` holds a permutation of 0..num_tasks-1."""
    names = getattr(dataset, "column_names", None)
    if names is None or not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
        raise ValueError(
            "the frontier-rft TRL adapter needs a map-style datasets.Dataset as train_dataset "
            f"(got {type(dataset).__name__}); streaming datasets cannot be indexed by task"
        )
    if column not in names:
        raise ValueError(
            f"train_dataset has no {column!r} column (columns: {names}); add the TaskPool index "
            f"of each row, e.g. ds.map(lambda _, i: {{{column!r}: i}}, with_indices=True), or "
            "set FrontierConfig(task_id_column=...)"
        )
    raw = np.asarray(dataset[column])
    if raw.ndim != 1 or raw.dtype.kind not in "iu":
        raise ValueError(f"column {column!r} must hold one integer per row, got dtype {raw.dtype}")
    ids = raw.astype(np.int64)
    if ids.shape[0] != num_tasks:
        raise ValueError(
            f"train_dataset has {ids.shape[0]} rows but the selector's TaskPool has {num_tasks} "
            f"tasks; the {column!r} column must hold each pool id exactly once"
        )
    outside = (ids < 0) | (ids >= num_tasks)
    if outside.any():
        raise ValueError(
            f"column {column!r} has id {int(ids[np.argmax(outside)])} outside [0, {num_tasks})"
        )
    rows = np.full(num_tasks, -1, dtype=np.int64)
    rows[ids] = np.arange(num_tasks, dtype=np.int64)
    if (rows < 0).any():
        counts = np.bincount(ids, minlength=num_tasks)
        raise ValueError(
            f"column {column!r} must be a permutation of 0..{num_tasks - 1}: id "
            f"{int(np.argmax(counts > 1))} appears {int(counts.max())} times and id "
            f"{int(np.argmin(counts))} is missing"
        )
    return rows


class FrontierTrainerMixin:
    """Turns a TRL GRPO-family trainer into one whose prompts a frontier-rft selector picks.

    Put it first in the bases: `class T(FrontierTrainerMixin, GRPOTrainer)`. It relies on
    the trainer attributes GRPOTrainer and RLOOTrainer share: `reward_funcs`,
    `reward_weights`, `num_generations`, `num_iterations`, `args.generation_batch_size`,
    `args.steps_per_generation`.
    """

    # Attributes the TRL base class provides.
    args: Any
    model: Any
    state: Any
    accelerator: Any
    train_dataset: Any
    reward_funcs: list[Any]
    reward_weights: Any
    num_generations: int
    num_iterations: int

    def __init__(
        self,
        *args: Any,
        selector: Selector,
        frontier: FrontierConfig | None = None,
        **kwargs: Any,
    ):
        if not isinstance(selector, Selector):
            raise ValueError(
                "selector must be a frontier_rft Selector built with make_selector(name, pool, "
                f"seed=...), got {type(selector).__name__}"
            )
        config = FrontierConfig() if frontier is None else frontier
        if not isinstance(config, FrontierConfig):
            raise ValueError(f"frontier must be a FrontierConfig, got {type(config).__name__}")
        super().__init__(*args, **kwargs)
        if self.args.remove_unused_columns:
            raise ValueError(
                f"remove_unused_columns=True drops the {config.task_id_column!r} column the "
                "selector needs; set remove_unused_columns=False (TRL's default)"
            )
        if getattr(self.args.accelerator_config, "dispatch_batches", None):
            raise ValueError(
                "dispatch_batches=True makes only the main process read the sampler, so the "
                "other processes' selectors would drift; leave accelerator_config.dispatch_batches "
                "unset (the default for map-style datasets)"
            )
        self.frontier_config = config
        self.frontier_selector = selector
        self.frontier_sampler = FrontierRepeatSampler(
            selector,
            task_rows(self.train_dataset, config.task_id_column, selector.num_tasks),
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
        )
        self._frontier_tap = RewardTap(
            len(self.reward_funcs), config.task_id_column, lambda: bool(self.model.training)
        )
        self._frontier_hooks = []
        for i, func in enumerate(self.reward_funcs):
            if isinstance(func, nn.Module):
                self._frontier_hooks.append(self._frontier_tap.hook_module(i, func))
            else:
                wrapped = self._frontier_tap.wrap(i, func, is_async_callable(func))
                self.reward_funcs[i] = wrapped
        self._frontier_counters = {"generations": 0, "rollouts": 0, "unscorable": 0}
        self._frontier_jsonl: JsonlLogger | None = None

    # ------------------------------------------------------------------ sampling
    def _get_train_sampler(self, dataset: Any = None) -> FrontierRepeatSampler:
        if dataset is not None and len(dataset) != self.frontier_sampler.num_samples:
            raise ValueError(
                f"the training dataset changed size ({len(dataset)} rows, the selector's pool "
                f"has {self.frontier_sampler.num_samples})"
            )
        return self.frontier_sampler

    # ------------------------------------------------------------------ feedback
    def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> Any:
        loss = super().training_step(model, inputs, num_items_in_batch)  # type: ignore[misc]
        self._frontier_deliver(inputs)
        return loss

    def _frontier_deliver(self, inputs: list[dict[str, Any]]) -> None:
        """Send the rewards of the generation this step ran (if any) to the selector."""
        taken = self._frontier_tap.take()
        if taken is None:
            return  # this step reused buffered completions
        per_func, seen_ids = taken
        column = self.frontier_config.task_id_column
        if column not in inputs[0]:
            raise ValueError(
                f"the training batch has no {column!r} column; keep remove_unused_columns=False"
            )
        ids = np.asarray([row[column] for row in inputs], dtype=np.int64)
        if ids.shape[0] != per_func.shape[0] or (
            seen_ids is not None and not np.array_equal(seen_ids, ids)
        ):
            raise RuntimeError(
                "reward functions scored a different batch than the one this step trained on "
                f"({per_func.shape[0]} rewards for {ids.shape[0]} rows)"
            )
        weights = np.asarray(self.reward_weights.detach().cpu().numpy(), dtype=np.float64)
        clip = getattr(self, "reward_clip_range", None)  # RLOO clips the combined reward
        rewards = combine_rewards(per_func, weights, tuple(clip) if clip else None)
        ids, rewards = self._frontier_gather(ids, rewards)
        keep = np.isfinite(rewards)  # unscorable: every function returned None
        counters = self._frontier_counters
        counters["unscorable"] += int((~keep).sum())
        step = counters["generations"]
        counters["generations"] += 1
        if not keep.any():
            return
        rewards = rewards[keep]
        if self.frontier_config.reward_range is not None:
            lo, hi = self.frontier_config.reward_range
            rewards = np.clip((rewards - lo) / (hi - lo), 0.0, 1.0)
        try:
            self.frontier_selector.update(
                Feedback(
                    task_ids=ids[keep],
                    rewards=rewards,
                    step=step,
                    policy_version=int(self.state.global_step),
                )
            )
        except ValueError as exc:
            raise ValueError(
                f"{exc} (the combined TRL reward; set FrontierConfig(reward_range=(lo, hi)) "
                "to map it onto [0, 1])"
            ) from exc
        counters["rollouts"] += int(keep.sum())

    def _frontier_gather(
        self, ids: NDArray[np.int64], rewards: NDArray[np.float64]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """All processes' (ids, rewards) in process order, identical on every process."""
        if self.accelerator.num_processes == 1:
            return ids, rewards
        import torch

        local = torch.as_tensor(np.stack([ids.astype(np.float64), rewards], axis=1))
        both = self.accelerator.gather(local.to(self.accelerator.device)).cpu().numpy()
        return both[:, 0].astype(np.int64), both[:, 1]

    # ------------------------------------------------------------------ metrics
    def frontier_metrics(self) -> dict[str, float]:
        """The selector's metrics plus the adapter's own (`trl/...`), unprefixed."""
        out = self.frontier_selector.metrics()
        sampler, counters = self.frontier_sampler, self._frontier_counters
        out["trl/generations"] = float(counters["generations"])
        out["trl/rollouts_delivered"] = float(counters["rollouts"])
        out["trl/unscorable_dropped"] = float(counters["unscorable"])
        out["trl/chunks_selected"] = float(sampler.chunks_selected)
        out["trl/feedback_lag"] = float(sampler.feedback_lag)
        return out

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        is_eval = any(key.startswith("eval_") for key in logs)
        if self.model.training and not is_eval:
            metrics = self.frontier_metrics()
            prefix = self.frontier_config.metrics_prefix
            # TRL's loggers reject NaN (JSON); the JSONL file keeps the key as null.
            logs.update({prefix + k: v for k, v in metrics.items() if math.isfinite(v)})
            if self.accelerator.is_main_process:
                self._frontier_logger().log(
                    {prefix + k: v for k, v in metrics.items()}, step=int(self.state.global_step)
                )
        super().log(logs, start_time)  # type: ignore[misc]

    def _frontier_logger(self) -> JsonlLogger:
        if self._frontier_jsonl is None:
            path = self.frontier_config.jsonl_path or os.path.join(
                self.args.output_dir, "frontier_metrics.jsonl"
            )
            self._frontier_jsonl = JsonlLogger(path)
        return self._frontier_jsonl

    # ------------------------------------------------------------------ checkpoints
    def save_frontier_state(self, directory: str | os.PathLike[str]) -> None:
        """Write the selector and sampler state into `directory` (a checkpoint folder)."""
        save_state(
            directory, self.frontier_selector, self.frontier_sampler, self._frontier_counters
        )

    def load_frontier_state(self, directory: str | os.PathLike[str]) -> None:
        """Restore the selector and sampler state saved in `directory`."""
        counters = load_state(directory, self.frontier_selector, self.frontier_sampler)
        self._frontier_counters.update(counters)

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)  # type: ignore[misc]
        self._frontier_check_sync()
        if self.args.should_save:
            from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

            run_dir = self._get_output_dir(trial=trial)  # type: ignore[attr-defined]
            folder = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
            self.save_frontier_state(os.path.join(run_dir, folder))

    def _frontier_check_sync(self) -> None:
        """Raise if processes hold different selector states (they must select identically)."""
        if not self.frontier_config.check_sync or self.accelerator.num_processes == 1:
            return
        import torch.distributed as dist

        digests: list[str | None] = [None] * self.accelerator.num_processes
        dist.all_gather_object(digests, state_digest(self.frontier_selector.state_dict()))
        if len(set(digests)) != 1:
            raise RuntimeError(
                "the selector's state differs across processes; build it with the same "
                "make_selector(name, pool, seed=...) call on every process"
            )

    def train(
        self,
        resume_from_checkpoint: str | bool | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        checkpoint = resume_from_checkpoint
        if checkpoint is True:
            from transformers import trainer_utils

            last: Any = trainer_utils.get_last_checkpoint  # untyped upstream
            checkpoint = last(self.args.output_dir)  # None: the base class raises
        if isinstance(checkpoint, str | os.PathLike):
            self.load_frontier_state(checkpoint)
        try:
            return super().train(resume_from_checkpoint, *args, **kwargs)  # type: ignore[misc]
        finally:
            if self._frontier_jsonl is not None:
                self._frontier_jsonl.close()
                self._frontier_jsonl = None


# Typed as Any so the module type-checks the same with or without the trl extra installed.
_GRPOTrainer: Any = grpo_trainer.GRPOTrainer
_RLOOTrainer: Any = rloo_trainer.RLOOTrainer


class FrontierGRPOTrainer(FrontierTrainerMixin, _GRPOTrainer):  # type: ignore[misc]
    """GRPOTrainer whose training prompts are chosen by a frontier-rft selector."""


class FrontierRLOOTrainer(FrontierTrainerMixin, _RLOOTrainer):  # type: ignore[misc]
    """RLOOTrainer whose training prompts are chosen by a frontier-rft selector."""
