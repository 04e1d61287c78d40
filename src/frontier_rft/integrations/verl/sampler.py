"""verl adapter: a curriculum sampler that lets a frontier-rft selector choose verl's prompts.

`FrontierSampler` is a `torch.utils.data.Sampler` over a verl training dataset. Each
dataloader batch is one `selector.select(batch_size)` call; `update(batch)` takes verl's
`DataProto` after the step, reads every rollout's stable task id and sequence-level
reward, and hands them to the selector. Its `state_dict` holds the selector's whole
state, so verl's `StatefulDataLoader` checkpoint (`data.pt`) resumes the curriculum.

Seams in verl 0.9.x (see docs/integrations/verl.md):
- legacy trainer: `RayPPOTrainer(train_sampler=sampler, ...)`; rewards come back through
  the dataset's `on_batch_end(batch=...)` hook, which `install_feedback_hook` sets;
- v1 trainer: `trainer.v1.sampler.custom_sampler` -> `verl.v1.FrontierReplayBuffer`;
- verl <= 0.7: `data.sampler.class_path` (AbstractCurriculumSampler); the class then
  subclasses verl's own `AbstractCurriculumSampler` and verl calls `update(batch=...)`.

`rollouts: auto` (the default) reaches this class resolved by the v1 buffer or the SkyRL
trainer; built otherwise (the legacy trainer, verl <= 0.7, by hand) it means full batches,
with a warning where the selector skips (auto.py).

`rollouts: kept` (VerlSamplerConfig.rollouts): each dataloader batch is instead one
`selector.select_window(batch_size)`, only the prompts the selector keeps among uniform's next
batch_size, so a batch has 1 to batch_size prompts. A torch Sampler yields single ids that
the dataloader groups into full batches, so this mode is the batch sampler `batches()`
(FrontierReplayBuffer, v1 sync trainer); as a per-prompt sampler it is refused.

Task ids (task_ids.py): the selector's ids are dataset positions. Each position's stable task id
(`extra_info.index` in the data file, which verl's RLHFDataset copies to
`non_tensor_batch["index"]`) is read once at construction and must be unique; verl
silently uses 0 when it is missing, so an all-zero or duplicated column is an error.
"""

from __future__ import annotations

import logging
import math
import os
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from torch.utils.data import Sampler

from frontier_rft.core.feedback import Feedback, to_unit_range
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import check_keys, read_array, read_int
from frontier_rft.integrations.plan import default_shadows_line, message
from frontier_rft.integrations.verl.auto import resolved_plan, verl_rows
from frontier_rft.integrations.verl.config import VERL, VerlSamplerConfig
from frontier_rft.integrations.verl.pool import dataset_selector
from frontier_rft.integrations.verl.task_ids import (
    _check_unique,
    _shape,
    as_task_ids,
    read_task_ids,
)
from frontier_rft.metrics_log import JsonlLogger, curriculum_metrics
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.shadow.live import RunShadows

__all__ = [
    "FrontierSampler",
    "VerlSamplerConfig",
    "WindowBatches",
    "install_feedback_hook",
    "resume_refusal",
]

_log = logging.getLogger(__name__)

STATE_VERSION = 1
"""Layout version of FrontierSampler.state_dict."""


def _sampler_base() -> Any:
    # verl <= 0.7 checks isinstance(sampler, AbstractCurriculumSampler) before calling
    # update(batch=...); newer verl dropped the class, so a plain torch Sampler suffices.
    try:
        from verl.experimental.dataset.sampler import AbstractCurriculumSampler
    except ImportError:
        from torch.utils.data import Sampler

        return Sampler
    return AbstractCurriculumSampler


class FrontierSampler(_sampler_base()):  # type: ignore[misc]
    """Yields the dataset positions a frontier-rft selector picks, one select() per batch.

    Two ways to build it: `FrontierSampler(dataset, config=VerlSamplerConfig(...))` (or
    with a ready `selector=`), and verl's curriculum-sampler signature
    `FrontierSampler(data_source=dataset, data_config=config.data)`.
    """

    trainer_name = "verl"
    """Who reports the rewards, as error messages name it (the SkyRL adapter reuses this class)."""
    reward_range_setting = "VerlSamplerConfig.reward_range"
    """Where a user sets reward_range, as error messages name it."""

    def __init__(
        self,
        data_source: Any,
        data_config: Any = None,
        *,
        config: VerlSamplerConfig | None = None,
        selector: Selector | None = None,
        task_ids: Sequence[int] | NDArray[np.integer[Any]] | None = None,
        plan: StepPlan | None = None,
    ) -> None:
        if (data_config is None) == (config is None):
            raise ValueError("pass exactly one of data_config (verl's data config) or config=")
        if config is None:
            config = VerlSamplerConfig.from_verl_data_config(data_config)
        if plan is None:  # no buffer resolved it (the legacy trainer, verl <= 0.7, by hand):
            # rollouts: auto means full batches there (auto.py)
            cls = type(selector) if selector is not None else SELECTORS[config.selector]
            plan = resolved_plan(config, {}, selector=cls, legacy=True)
        if plan.rows is None:  # a plan made without verl's config: one call of its batch
            plan = plan.with_rows(verl_rows(config, {}))
        if plan.shape().prompts != config.batch_size:
            raise ValueError(
                f"the plan's {plan.shape().prompts} prompts a step are not the sampler's "
                f"batch_size {config.batch_size}: build both from verl's config"
            )
        self.plan = plan
        """The run's step, decided once: its rollouts (kept or full) and its rows, which every
        draw reads."""
        self.config = replace(config, rollouts=plan.rollouts)  # the plan's, for its checks
        self.data_source = data_source
        n = len(data_source)
        if n == 0:
            raise ValueError(
                "the training dataset is empty (did verl's filter_overlong_prompts remove every "
                "prompt? raise data.max_prompt_length)"
            )
        if task_ids is not None and _shape(task_ids) != (n,):
            got = _shape(task_ids) or "a ragged nest"
            raise ValueError(f"task_ids must have one id per dataset item ({n}), got {got}")
        ids = (
            read_task_ids(data_source, self.config.task_id_key)
            if task_ids is None
            else as_task_ids(task_ids, "task_ids", fix="fix the task_ids given to FrontierSampler")
        )
        _check_unique(ids)
        self.task_ids = ids
        self._order = np.argsort(ids, kind="stable")
        self._sorted_ids = ids[self._order]
        if selector is None:
            selector = dataset_selector(data_source, self.config)
        elif selector.num_tasks != n:
            raise ValueError(
                f"selector's pool has {selector.num_tasks} tasks but the dataset has {n}; "
                "build the TaskPool in dataset order with one task per dataset item"
            )
        self._kept = self.plan.rollouts == "kept"
        if self._kept and not selector.walks_windows():
            raise ValueError(message(VERL, "kept+selector", selector=selector.name))
        if self.batch_size > n:
            raise ValueError(f"batch_size {self.batch_size} exceeds the dataset ({n} prompts)")
        self.selector = selector
        self.shadows = RunShadows(
            self.config.shadow_configs(selector=selector.name), selector, self.config.seed
        )
        """Rules followed beside the run (VerlSamplerConfig.shadows), on their own selectors."""
        if self.config.shadows is None and self.shadows.shadows:
            _log.info(default_shadows_line([s.config.name for s in self.shadows.shadows]))
        self._batches_per_epoch = n // self.batch_size
        # Position of the live iteration: draws so far (= feedback step of the next
        # draw), batches drawn in the current epoch, ids of the current batch not yet yielded.
        self._draws = 0
        self._epoch = -1
        self._in_epoch = 0
        self._pending: deque[int] = deque()
        self._resume = False
        # Drawn batches whose rewards have not all arrived: (draw step, positions), oldest first.
        self._outstanding: list[tuple[int, NDArray[np.int64]]] = []
        self._stats = {"updates": 0, "rollouts": 0, "max_lag": 0, "forgotten_draws": 0}
        self._last_kept = math.nan  # prompts in the last window (rollouts: kept; metrics)
        self._logger: JsonlLogger | None = None
        self.logs_to_trainer = False
        """Set by the v1 replay buffer, whose trainer logs `log_metrics()` with its own."""

    @property
    def batch_size(self) -> int:
        """Prompts a draw rolls out (with `rollouts: kept`, the window it keeps them from): the
        plan's rows."""
        return self.plan.shape().prompts

    # ------------------------------------------------------------------ Sampler
    def __len__(self) -> int:
        self._refuse_per_prompt()
        return self._batches_per_epoch * self.batch_size

    def __iter__(self) -> Iterator[int]:
        self._refuse_per_prompt()
        return self._iterate()

    def batches(self) -> WindowBatches:
        """This sampler as a dataloader's `batch_sampler`: one list of dataset positions per
        draw (with `rollouts: kept`, the prompts kept in one window of uniform's batch)."""
        return WindowBatches(self)

    def _refuse_per_prompt(self) -> None:
        # A dataloader given a per-prompt sampler groups its ids into full batches: the
        # windows' kept prompts would be packed into batch_size batches, walking the data
        # faster and spending uniform's rollouts per step, which is not what kept means.
        if self._kept:
            raise ValueError(message(VERL, "kept+legacy"))

    def _iterate(self) -> Iterator[int]:
        # Lazy: nothing changes until the first id is requested, so the iterator torchdata
        # creates (and drops) before load_state_dict has no side effects.
        self._start_iteration()
        while True:
            while self._pending:
                yield self._pending.popleft()
            if self._in_epoch >= self._batches_per_epoch:
                return
            self._pending = deque(int(i) for i in self._draw())

    def _iterate_batches(self) -> Iterator[list[int]]:
        """`_iterate` a draw at a time (`batches()`): one list per draw."""
        self._start_iteration()
        while True:
            if self._pending:  # the rest of a draw saved by a per-prompt iteration
                rest, self._pending = list(self._pending), deque()
                yield rest
            if self._in_epoch >= self._batches_per_epoch:
                return
            yield [int(i) for i in self._draw()]

    def _start_iteration(self) -> None:
        if self._resume:
            self._resume = False
        else:
            self._epoch += 1
            self._in_epoch = 0
            self._pending = deque()

    def _draw(self) -> NDArray[np.int64]:
        """The next batch's positions, remembered until their rewards arrive: select(B), or
        with `rollouts: kept` the kept prompts among the walk's next B (select_window)."""
        size = self.batch_size
        ids = self.selector.select_window(size) if self._kept else self.selector.select(size)
        self._outstanding.append((self._draws, ids))
        if len(self._outstanding) > self.config.max_outstanding_draws:
            self._outstanding.pop(0)
            self._stats["forgotten_draws"] += 1
        self._draws += 1
        self._in_epoch += 1
        if self._kept:
            self._last_kept = float(ids.shape[0])
        return ids

    # ------------------------------------------------------------------ feedback
    def update(self, batch: Any) -> None:
        """Feed one verl step's rewards (a DataProto, after the step) to the selector, and
        each response's generated tokens (its `response_mask` summed) to the shadows."""
        positions, rewards, uids, lengths = self._extract(batch)
        self._deliver(positions, rewards, uids, lengths=lengths)

    def report(
        self,
        task_ids: Any,
        rewards: Any,
        uids: Any = None,
        steps: Any = None,
        lengths: Any = None,
    ) -> None:
        """Feed rewards given as arrays: stable task id, sequence reward and optional prompt
        uid per rollout (the v1 replay buffer reads them from TransferQueue), optionally the
        draw step of each (where the trainer knows it: a task drawn again before its first
        group came back is then not mistaken for the older draw), and optionally each
        response's generated tokens (the shadows count tokens with them)."""
        ids = as_task_ids(task_ids, self.config.task_id_key)
        self._check_not_all_zero(ids, uids)
        positions = self.positions_of(ids)
        values = np.asarray(rewards, dtype=np.float64).reshape(-1)
        if values.shape != positions.shape:
            raise ValueError(f"got {values.size} rewards for {positions.size} task ids")
        drawn = None if steps is None else np.asarray(steps, dtype=np.int64).reshape(-1)
        if drawn is not None and drawn.shape != positions.shape:
            raise ValueError(f"got {drawn.size} draw steps for {positions.size} task ids")
        sizes = None if lengths is None else _response_lengths(lengths, positions.size)
        self._deliver(
            positions, values, None if uids is None else np.asarray(uids), drawn, lengths=sizes
        )

    def _deliver(
        self,
        positions: NDArray[np.int64],
        rewards: NDArray[np.float64],
        uids: Any,
        drawn: NDArray[np.int64] | None = None,
        *,
        lengths: NDArray[np.int64] | None = None,
    ) -> None:
        if positions.size == 0:
            raise ValueError("a report needs at least one rollout (task ids and rewards)")
        if uids is not None and np.asarray(uids).reshape(-1).shape != positions.shape:
            raise ValueError(f"got {np.asarray(uids).size} uids for {positions.size} task ids")
        steps = self._match_draws(positions, drawn)
        for step in np.unique(steps).tolist():  # a report may hold several draws (async)
            at = steps == step
            self._check_uids(positions[at], None if uids is None else np.asarray(uids)[at])
        self._check_rewards(positions, rewards)
        if self.config.reward_range is not None:
            # As the TRL adapter: the declared range maps onto [0, 1], beyond it clips.
            rewards = to_unit_range(rewards, self.config.reward_range)
        pieces = [
            (step, positions[steps == step], rewards[steps == step])
            for step in np.unique(steps).tolist()
        ]
        batches = [Feedback(task_ids=ids, rewards=r, step=step) for step, ids, r in pieces]
        # Every piece is checked before any is applied: a rejected report changes nothing,
        # so its retry is not counted twice (_check_rewards refused any reward it would).
        for fb, (_, ids, _) in zip(batches, pieces, strict=True):
            fb.validated(self.selector.num_tasks, self.selector.reward_bounds)
            self.shadows.check_group_size(_largest_group(ids))
        logger = self._jsonl()  # opened first too: a path it cannot open refuses the report
        for fb, (step, ids, r) in zip(batches, pieces, strict=True):
            self.selector.update(fb)
            self._stats["max_lag"] = max(self._stats["max_lag"], self._draws - 1 - step)
            # The shadows read what the selector reads, in the order drawn (verl reorders a
            # batch to balance ranks); they change nothing of the run.
            if self.shadows.shadows:
                order = self._draw_order(step, ids)
                sizes = None if lengths is None else lengths[steps == step][order]
                self.shadows.observe(step, ids[order], r[order], lengths=sizes)
        self._forget(positions, steps)
        self._stats["updates"] += 1
        self._stats["rollouts"] += int(positions.size)
        # A reported batch is a whole step: fold it in now (the next select would do the same,
        # identically), so the metrics logged for this step include it.
        self.selector.flush()
        if logger is not None:
            metrics = curriculum_metrics(self.metrics(), "all", self.config.metrics_prefix)
            logger.log(metrics, step=int(steps.max()))

    def _check_rewards(self, positions: NDArray[np.int64], rewards: NDArray[np.float64]) -> None:
        """ValueError naming the stable task id of the first NaN reward, or of the first one
        outside the range of the selector or a shadow's selector when no reward_range maps it
        (inf included): checked before any of them moves."""
        bad, who, want = self.shadows.refused(
            rewards, self.config.reward_range, self.selector.reward_bounds
        )
        if not bad.any():
            return
        i = int(np.flatnonzero(bad)[0])
        task, value, count = int(self.task_ids[positions[i]]), float(rewards[i]), int(bad.sum())
        if math.isnan(value):
            raise ValueError(
                f"{self.trainer_name} reported a NaN reward for task {task} ({count} bad "
                "reward(s) in this "
                "batch); fix the reward function so that it scores every rollout"
            )
        raise ValueError(
            f"{self.trainer_name} reported reward {value!r} for task {task} ({count} bad "
            f"reward(s) in this batch); {who} needs rewards {want}: set "
            f"{self.reward_range_setting}="
            "(low, high) to map your reward function's range onto [0, 1]"
        )

    def _jsonl(self) -> JsonlLogger | None:
        path = self.config.metrics_jsonl
        if path is None and not self.logs_to_trainer:
            path = "frontier_metrics.jsonl"  # this trainer has no metrics seam: never nowhere
            if self._logger is None:
                _log.info(f"frontier-rft: selector metrics go to {os.path.abspath(path)}")
        if path is not None and self._logger is None:
            try:
                self._logger = JsonlLogger(path)
            except OSError as exc:
                raise ValueError(
                    f"cannot write the selector metrics to {path} ({exc.strerror or exc}): set "
                    "metrics_jsonl to a file in a directory you can write"
                ) from None
        return self._logger if path is not None else None

    def positions_of(self, task_ids: Any, key: str | None = None) -> NDArray[np.int64]:
        """Dataset positions of stable task ids; ValueError naming ids the dataset lacks.
        `key` (default: task_id_key) is where the ids came from, for error messages."""
        ids = as_task_ids(task_ids, key or self.config.task_id_key)
        at = np.searchsorted(self._sorted_ids, ids)
        at_c = np.minimum(at, self._sorted_ids.size - 1)
        known = self._sorted_ids[at_c] == ids
        if not np.all(known):
            bad = np.unique(ids[~known])
            raise ValueError(
                f"{bad.size} task id(s) in the batch are not in the training dataset (first "
                f"{int(bad[0])}); the batch's {self.config.task_id_key!r} must be the rows' "
                "extra_info.index"
            )
        return self._order[at_c].astype(np.int64)

    def _extract(
        self, batch: Any
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], Any, NDArray[np.int64] | None]:
        non_tensor = getattr(batch, "non_tensor_batch", None)
        tensors = getattr(batch, "batch", None)
        if non_tensor is None:
            raise ValueError(f"update expects a verl DataProto, got {type(batch).__name__}")
        key = self.config.task_id_key
        if key in non_tensor:
            raw_ids = np.asarray(non_tensor[key])
        elif "extra_info" in non_tensor:
            key = "extra_info.index"
            raw_ids = np.array(
                [(e or {}).get("index") for e in non_tensor["extra_info"]], dtype=object
            )
            if any(v is None for v in raw_ids.tolist()):
                raise ValueError(
                    f"the batch has no {key!r} and some extra_info lack 'index': stable task "
                    "ids are required (extra_info.index per row)"
                )
        else:
            raise ValueError(
                f"the batch carries no task ids: non_tensor_batch has no {key!r} (keys: "
                f"{sorted(non_tensor)}); set VerlSamplerConfig.task_id_key"
            )
        uids = non_tensor.get("uid")
        ids = as_task_ids(raw_ids, key)
        self._check_not_all_zero(ids, uids)
        positions = self.positions_of(ids, key)
        rewards = self._rewards(non_tensor, tensors, positions.size)
        # Each response's generated tokens: verl's response_mask is 1 on the tokens the model
        # generated (not padding, nor a multi-turn rollout's tool outputs).
        lengths = None
        if tensors is not None and "response_mask" in tensors.keys():  # noqa: SIM118
            mask = tensors["response_mask"]
            lengths = _response_lengths(mask.sum(-1).cpu().numpy(), positions.size)
        return positions, rewards, uids, lengths

    @staticmethod
    def _check_not_all_zero(raw_ids: Any, uids: Any) -> None:
        if raw_ids.size > 1 and np.all(raw_ids == 0):
            n_prompts = len(set(np.asarray(uids).tolist())) if uids is not None else raw_ids.size
            if n_prompts > 1:
                raise ValueError(
                    f"every task id in the batch is 0 across {n_prompts} prompts: verl's default "
                    "when extra_info.index is missing. Give every row a unique extra_info.index"
                )

    def _rewards(self, non_tensor: Any, tensors: Any, n: int) -> NDArray[np.float64]:
        key = self.config.reward_key or "token_level_scores"
        if tensors is not None and key in tensors.keys():  # noqa: SIM118 - TensorDict
            value = tensors[key].detach().float()
            value = value.sum(-1) if value.dim() == 2 else value
            rewards: NDArray[np.float64] = value.cpu().numpy().astype(np.float64).reshape(-1)
        elif key in non_tensor:
            rewards = np.asarray(non_tensor[key], dtype=np.float64).reshape(-1)
        else:
            have = sorted(tensors.keys()) if tensors is not None else []
            raise ValueError(
                f"reward key {key!r} is in neither the batch's tensors ({have}) nor its "
                f"non-tensor fields ({sorted(non_tensor)}); call update after verl has "
                "computed rewards, or set VerlSamplerConfig.reward_key"
            )
        if rewards.shape != (n,):
            raise ValueError(f"got {rewards.shape[0]} rewards for {n} task ids")
        return rewards

    def _check_uids(self, positions: NDArray[np.int64], uids: Any) -> None:
        # verl gives each prompt a uid shared by its n rollouts: one uid, one task.
        if uids is None:
            return
        uid_arr = np.asarray(uids).astype(str)
        _, uid_idx = np.unique(uid_arr, return_inverse=True)
        pairs = np.unique(np.stack([uid_idx, positions]), axis=1)
        if np.unique(pairs[0]).size != pairs.shape[1]:
            raise ValueError(
                "one prompt uid carries several task ids: the task id key is not a per-prompt id"
            )
        if not self.selector.allows_repeats and np.unique(pairs[1]).size != pairs.shape[1]:
            raise ValueError(
                "several prompts (uids) in one batch share a task id, but the selector never "
                "draws a task twice per batch: task ids are not stable per row"
            )

    def _match_draws(
        self, positions: NDArray[np.int64], given: NDArray[np.int64] | None = None
    ) -> NDArray[np.int64]:
        """Draw step of every rollout: `given` where that outstanding draw holds the task,
        else the oldest outstanding draw holding it (a given draw may have been forgotten)."""
        steps = np.full(positions.size, -1, dtype=np.int64)
        for exact in [True, False] if given is not None else [False]:
            for step, drawn in self._outstanding:
                free = steps < 0
                if not free.any():
                    break
                hit = free & np.isin(positions, drawn)
                if exact:
                    hit &= given == step
                steps[hit] = step
        if np.any(steps < 0):
            missing = np.unique(positions[steps < 0])
            raise ValueError(
                f"{missing.size} task(s) in the batch were not drawn by this sampler or were "
                f"already reported (first task id {int(self.task_ids[missing[0]])}): is this "
                "sampler the trainer's train_sampler, and is each step reported once?"
            )
        return steps

    def _draw_order(self, step: int, positions: NDArray[np.int64]) -> NDArray[np.int64]:
        """The stable order that puts `positions` (rollouts of draw `step`) in drawn order."""
        drawn = next(ids for s, ids in self._outstanding if s == step)
        rank = np.full(self.task_ids.size, drawn.size, dtype=np.int64)
        rank[drawn] = np.arange(drawn.size)
        return np.argsort(rank[positions], kind="stable")

    def _forget(self, positions: NDArray[np.int64], steps: NDArray[np.int64]) -> None:
        kept = []
        for step, drawn in self._outstanding:
            done = positions[steps == step]
            left = drawn[~np.isin(drawn, done)] if done.size else drawn
            if left.size:
                kept.append((step, left))
        self._outstanding = kept

    # ------------------------------------------------------------------ metrics
    def log_metrics(self) -> dict[str, float]:
        """What goes into verl's logged metrics: `curriculum/...`, the summary or all of it,
        and every shadow's metrics whatever the verbosity (a user asked for them)."""
        finite = {k: v for k, v in self.metrics().items() if np.isfinite(v)}
        out = curriculum_metrics(finite, self.config.metrics_verbosity, self.config.metrics_prefix)
        shadow = {k: v for k, v in finite.items() if k.startswith("shadow/")}
        out.update(curriculum_metrics(shadow, "all", self.config.metrics_prefix))
        return out

    def metrics(self) -> dict[str, float]:
        """The selector's metrics plus `verl/` ones: lag, outstanding draws, updates."""
        out = self.selector.metrics()
        out.update(
            {
                "verl/draws": float(self._draws),
                "verl/updates": float(self._stats["updates"]),
                # passes over the data on the run's schedule (a kept window counts whole):
                # the steps fed back over the batches an epoch holds (frontier ab compare)
                "verl/epoch": self._stats["updates"] / max(1, self._batches_per_epoch),
                "verl/outstanding_draws": float(len(self._outstanding)),
                "verl/max_feedback_lag": float(self._stats["max_lag"]),
                "verl/forgotten_draws": float(self._stats["forgotten_draws"]),
            }
        )
        if self._kept:
            out["fewer_rollouts/kept"] = self._last_kept
        out.update(self.shadows.metrics())
        return out

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Selector state plus the sampler's position; torchdata stores it in data.pt."""
        return {
            "version": STATE_VERSION,
            "selector": self.selector.state_dict(),
            "task_ids": self.task_ids.copy(),
            "batch_size": self.batch_size,
            "draws": self._draws,
            "epoch": self._epoch,
            "in_epoch": self._in_epoch,
            "pending": list(self._pending),
            "outstanding_steps": [s for s, _ in self._outstanding],
            "outstanding_ids": [ids.copy() for _, ids in self._outstanding],
            "stats": dict(self._stats),
            "shadows": self.shadows.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore state_dict; the next iteration continues where the saved one stopped."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise ValueError("not a FrontierSampler state (or from another version)")
        # A state saved before shadows existed has no "shadows": it holds none.
        state = {"shadows": [], **state}
        keys = ("version", "task_ids", "batch_size", "shadows", *_STATE_KEYS)
        state = check_keys(state, "FrontierSampler state", keys)  # no field ignored silently
        saved_ids = np.asarray(state["task_ids"], dtype=np.int64)
        if saved_ids.shape != self.task_ids.shape or not np.array_equal(saved_ids, self.task_ids):
            raise ValueError(
                "the saved curriculum belongs to a different dataset (task ids differ in order "
                "or number; did filtering or the data files change?)"
            )
        if int(state["batch_size"]) != self.batch_size:
            raise ValueError(
                f"saved with batch_size {state['batch_size']}, resuming with "
                f"{self.batch_size}; keep data.train_batch_size unchanged"
            )
        saved = state["selector"].get("selector") if isinstance(state["selector"], dict) else None
        if isinstance(saved, str) and saved != self.selector.name:
            raise ValueError(resume_refusal((saved, None), (self.selector.name, None)))
        # Everything checked before anything changes (the selector last: it checks its own).
        who, n = "FrontierSampler", self.task_ids.size
        draws = read_int(state, "draws", who)
        epoch = read_int(state, "epoch", who, lo=-1)  # -1: no epoch started yet
        in_epoch = read_int(state, "in_epoch", who, hi=n)
        pending = read_array(
            {"pending": _int_list(state["pending"])}, "pending", who, np.int64, lo=0, hi=n - 1
        )
        steps = list(state["outstanding_steps"])
        chunks = list(state["outstanding_ids"])
        if len(steps) != len(chunks):
            raise ValueError(f"{who} state: outstanding_steps and outstanding_ids differ in length")
        outstanding = [
            (
                read_int({"step": s}, "step", who, hi=max(draws - 1, 0)),
                read_array({"ids": _int_list(ids)}, "ids", who, np.int64, lo=0, hi=n - 1),
            )
            for s, ids in zip(steps, chunks, strict=True)
        ]
        stats = state["stats"]
        if not isinstance(stats, dict) or set(stats) != set(self._stats):
            raise ValueError(f"{who} state: stats must hold {sorted(self._stats)}")
        stats = {k: read_int(stats, k, who) for k in self._stats}
        shadows = RunShadows(
            self.config.shadow_configs(selector=self.selector.name),
            self.selector,
            self.config.seed,
        )
        shadows.load_state_dict(state["shadows"])  # into fresh ones: raises, changing nothing
        self.selector.load_state_dict(state["selector"])  # raises, changing nothing, if bad
        self.shadows = shadows
        self._draws, self._epoch, self._in_epoch = draws, epoch, in_epoch
        self._pending = deque(pending.tolist())
        self._outstanding = outstanding
        self._stats = stats
        self._resume = True

    def __getstate__(self) -> dict[str, Any]:
        # Picklable (torch.save, dataloader workers) without the open metrics file.
        state = self.__dict__.copy()
        state["_logger"] = None
        return state


def resume_refusal(saved: tuple[str, str | None], now: tuple[str, str | None]) -> str:
    """The one line refusing to resume a curriculum saved by (selector, rollouts) `saved` with
    `now` (rollouts None where the checkpoint does not say), with how to resume it."""

    def spelt(selector: str, rollouts: str | None) -> str:
        return f"selector: {selector}" + (f" and rollouts: {rollouts}" if rollouts else "")

    fix = spelt(*saved)
    if saved == ("greso", "full"):
        fix += " (the former default)"
    elif saved == ("greso", None):
        fix += " (and rollouts: full, if it ran with the former default)"
    return (
        f"the checkpoint's curriculum was saved with {spelt(*saved)}, not {spelt(*now)}: resume "
        f"with {fix}, or start a fresh run"
    )


class WindowBatches(Sampler[list[int]]):
    """A FrontierSampler as a `batch_sampler`: one list of positions per draw, `__len__`
    draws per epoch; its state is the sampler's (torchdata saves it in data.pt)."""

    def __init__(self, sampler: FrontierSampler) -> None:
        self.sampler = sampler

    def __len__(self) -> int:
        return int(self.sampler._batches_per_epoch)

    def __iter__(self) -> Iterator[list[int]]:
        return self.sampler._iterate_batches()

    def state_dict(self) -> dict[str, Any]:
        """The sampler's state_dict."""
        return self.sampler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """The sampler's load_state_dict."""
        self.sampler.load_state_dict(state)


class _FeedbackHook:
    """`dataset.on_batch_end` that forwards verl's batch to the sampler.

    Dataloader workers get a pickled copy of the dataset; the copy drops the sampler (and
    its selector), since only the trainer process reports rewards.
    """

    def __init__(self, sampler: FrontierSampler, previous: Any = None) -> None:
        self.sampler: FrontierSampler | None = sampler
        self.previous = previous

    def __call__(self, batch: Any) -> None:
        if self.previous is not None:
            self.previous(batch=batch)
        if self.sampler is None:
            raise RuntimeError("the feedback hook was called in a dataloader worker")
        self.sampler.update(batch)

    def __getstate__(self) -> dict[str, Any]:
        return {"sampler": None, "previous": self.previous}


def install_feedback_hook(dataset: Any, sampler: FrontierSampler) -> None:
    """Make verl's `train_dataset.on_batch_end(batch=...)` call `sampler.update(batch)`.

    verl 0.9's RayPPOTrainer calls this hook after every step but the last; a hook the
    dataset already had still runs first.
    """
    if sampler.data_source is not dataset:
        raise ValueError("the sampler was built over a different dataset object")
    current = getattr(dataset, "on_batch_end", None)
    if isinstance(current, _FeedbackHook):
        raise ValueError("a frontier-rft feedback hook is already installed on this dataset")
    dataset.on_batch_end = _FeedbackHook(sampler, previous=current)


_STATE_KEYS = (
    "selector",
    "draws",
    "epoch",
    "in_epoch",
    "pending",
    "outstanding_steps",
    "outstanding_ids",
    "stats",
)


def _largest_group(task_ids: NDArray[np.int64]) -> int:
    """The most rollouts any one prompt has in `task_ids` (a step's group size)."""
    return int(np.unique(task_ids, return_counts=True)[1].max()) if task_ids.size else 0


def _int_list(values: Any) -> Any:
    """A saved list of ids as an int array (an empty list reads back as float64)."""
    arr = np.asarray(values)
    return np.zeros(0, dtype=np.int64) if arr.size == 0 else arr


def _response_lengths(values: Any, n: int) -> NDArray[np.int64]:
    """Each of `n` rollouts' generated tokens as an int array; a ValueError unless there is
    one whole number >= 0 per rollout."""
    sizes = np.asarray(values).reshape(-1)
    whole = sizes.dtype.kind in "iu" or (
        sizes.dtype.kind == "f" and bool(np.all(np.isfinite(sizes) & (sizes == np.round(sizes))))
    )
    if sizes.shape != (n,) or not whole or (sizes.size and sizes.min() < 0):
        raise ValueError(
            f"a report's lengths must be one token count (a whole number >= 0) per rollout "
            f"({n}); got {sizes.size} of dtype {sizes.dtype}"
        )
    return sizes.astype(np.int64)
