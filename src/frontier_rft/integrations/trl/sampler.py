"""TRL's RepeatSampler layout with every chunk of prompts chosen by a frontier-rft selector.

TRL's `RepeatSampler` yields, per chunk of `batch_size` distinct prompts, the chunk
`repeat_count` times (= steps_per_generation * num_iterations), each prompt repeated
`mini_repeat_count` times (= num_generations) in place. This sampler yields exactly that
layout, but asks `selector.select(batch_size)` for each chunk instead of slicing a random
permutation. An epoch is `num_tasks // batch_size` chunks, as in TRL, so every length the
Trainer derives (steps per epoch, epochs for max_steps) is unchanged.

Resuming: the Trainer re-iterates the resumed epoch from its start and throws away the
batches it already trained on (`skip_first_batches`). So the chunks drawn in the current
epoch are kept and replayed, without calling the selector, up to the last one drawn before
the checkpoint; only later chunks are new selections. That keeps the selector's state and
the sampler's position consistent however far the data loader had read ahead. Whether the
epoch is resumed or a new one starts is the Trainer's own decision (`resume_mid_epoch`),
not whether every chunk was drawn.

Ended by passes (`rollouts: fewer_steps`, `passes` set): before it selects a chunk, the
sampler asks the selector whether its walk has made `passes` passes over the prompts; once it
has, the epoch's iteration ends there (`passes_done`) and the trainer's callback stops the run
at the epoch's end. Each yielded chunk's passes are kept until the trainer generates for it
(`passes_of`), so the learning-rate schedule can follow the passes trained, not the walk's
read-ahead position.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from torch.utils.data import Sampler

from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import check_keys, read_array, read_int

__all__ = ["FrontierRepeatSampler", "StepTicks"]

# Typed as Any so the module type-checks the same with or without torch installed.
_Sampler: Any = Sampler

_STATE_VERSION = 1


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


class FrontierRepeatSampler(_Sampler):  # type: ignore[misc]
    """Drop-in replacement for TRL's RepeatSampler whose chunks come from a selector.

    `row_of_task[t]` is the dataset row holding task t, so dataset order and task ids may
    differ. Every process builds the same sampler around an identically seeded selector
    fed the same (gathered) rewards, so all processes yield the same stream, as TRL needs.
    """

    def __init__(
        self,
        selector: Selector,
        row_of_task: ArrayLike,
        *,
        mini_repeat_count: int,
        batch_size: int,
        repeat_count: int,
        passes: float | None = None,
    ):
        if not isinstance(selector, Selector):
            raise ValueError(
                f"selector must be a frontier_rft Selector (make_selector(...)), "
                f"got {type(selector).__name__}"
            )
        rows = np.asarray(row_of_task, dtype=np.int64)
        if rows.shape != (selector.num_tasks,):
            raise ValueError(
                f"row_of_task must have one row per task ({selector.num_tasks}), got {rows.shape}"
            )
        self.selector = selector
        self.row_of_task = rows
        self.mini_repeat_count = _positive_int("mini_repeat_count", mini_repeat_count)
        self.batch_size = _positive_int("batch_size", batch_size)
        self.repeat_count = _positive_int("repeat_count", repeat_count)
        self.num_samples = int(rows.shape[0])
        if self.batch_size > self.num_samples:
            raise ValueError(
                f"each generation batch needs {self.batch_size} distinct prompts but the pool has "
                f"{self.num_samples}; lower generation_batch_size or raise num_generations"
            )
        self.chunks_per_epoch = self.num_samples // self.batch_size
        self._epoch_chunks: list[NDArray[np.int64]] = []
        self._continue_epoch = False
        self.chunks_selected = 0
        """select() calls made by this sampler (one per chunk, all epochs)."""
        self.selection_counts = np.zeros(self.num_samples, dtype=np.int64)
        """How often each task id was selected (every chunk, including read-ahead ones)."""
        self.select_log: deque[tuple[int, int]] = deque(maxlen=4096)
        """Recent (chunk index, newest feedback step folded in when it was selected)."""
        if passes is not None and not (isinstance(passes, (int, float)) and 0 < passes < 1e9):
            raise ValueError(f"passes must be a positive number of passes, got {passes!r}")
        self.passes = None if passes is None else float(passes)
        """Passes over the prompts after which no chunk is selected (None: TRL's epochs)."""
        self.passes_done = False
        """Whether an iteration ended because the walk had made `passes` passes."""
        self.passes_trained = 0.0
        """The walk's passes after the chunk the trainer last generated for (`passes_of`)."""
        self._epoch_passes: list[float] = []  # the walk's passes after each chunk of the epoch
        self._yielded: deque[tuple[frozenset[int], float]] = deque(maxlen=16)

    def __len__(self) -> int:
        return self.chunks_per_epoch * self.batch_size * self.mini_repeat_count * self.repeat_count

    def __iter__(self) -> Iterator[int]:
        if not self._continue_epoch:
            self._epoch_chunks, self._epoch_passes = [], []
        self._continue_epoch = False
        chunks = self._epoch_chunks
        for k in range(self.chunks_per_epoch):
            if k == len(chunks):
                if self.passes is not None and self.selector.passes_walked() >= self.passes - 1e-9:
                    self.passes_done = True  # the run's passes are walked: no more chunks
                    return
                chunks.append(self._select())
                walked = self.selector.passes_walked() if self.passes is not None else 0.0
                self._epoch_passes.append(walked)
            self._yielded.append((frozenset(chunks[k].tolist()), self._epoch_passes[k]))
            rows = self.row_of_task[chunks[k]].tolist()
            for _ in range(self.repeat_count):
                for row in rows:
                    for _ in range(self.mini_repeat_count):
                        yield row

    def resume_mid_epoch(self, mid_epoch: bool) -> None:
        """Where the Trainer resumes: inside the saved epoch (it skips the batches already
        trained, so the stored chunks are replayed, none selected again) or at a new one.
        Whether every chunk of the epoch was drawn says nothing about it: the data loader
        reads ahead of training."""
        self._continue_epoch = mid_epoch and bool(self._epoch_chunks)
        if not mid_epoch:
            self._epoch_chunks, self._epoch_passes = [], []

    def passes_of(self, task_ids: ArrayLike) -> float:
        """The walk's passes after the yielded chunk holding `task_ids` (the rows of the
        generation the trainer is about to train; a process's share of them), now
        `passes_trained`; that chunk and the ones yielded before it are forgotten. The data
        loader reads ahead, so the chunk is found among the last ones yielded, not the last."""
        ids = set(np.asarray(task_ids, dtype=np.int64).tolist())
        for i, (chunk, walked) in enumerate(self._yielded):
            if ids <= chunk:
                for _ in range(i + 1):
                    self._yielded.popleft()
                self.passes_trained = walked
                return walked
        raise RuntimeError(
            "the trainer generated for prompts no recent chunk of the sampler holds: the data "
            "loader does not read this sampler"
        )

    def _select(self) -> NDArray[np.int64]:
        ids = self.selector.select(self.batch_size)
        np.add.at(self.selection_counts, ids, 1)
        self.select_log.append((self.chunks_selected, self.selector.latest_step))
        self.chunks_selected += 1
        return ids

    @property
    def feedback_lag(self) -> int:
        """Generation rounds selected but not yet folded in when the last chunk was selected."""
        if not self.select_log:
            return 0
        chunk, folded = self.select_log[-1]
        return chunk - (folded + 1)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Position and records: the chunks of the current epoch, counters, selection counts."""
        chunks = (
            np.stack(self._epoch_chunks)
            if self._epoch_chunks
            else np.zeros((0, self.batch_size), dtype=np.int64)
        )
        return {
            "version": _STATE_VERSION,
            "layout": np.array(
                [self.num_samples, self.batch_size, self.mini_repeat_count, self.repeat_count],
                dtype=np.int64,
            ),
            "epoch_chunks": chunks,
            "chunks_selected": self.chunks_selected,
            "selection_counts": self.selection_counts.copy(),
            "ends_by_passes": np.asarray(self.passes is not None),
            "epoch_passes": np.asarray(self._epoch_passes, dtype=np.float64),
            "passes_trained": np.asarray(self.passes_trained, dtype=np.float64),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict; an unfinished epoch is continued by the next iteration.

        Everything is checked before anything changes: a rejected state leaves the sampler
        as it was."""
        # no field ignored silently; the passes are absent from checkpoints written before them
        state = check_keys(state, "sampler state", _STATE_KEYS, _PASSES_KEYS)
        version = np.asarray(state["version"])
        if version.shape != () or version.dtype.kind not in "iu" or int(version) != _STATE_VERSION:
            raise ValueError(f"sampler state version {state['version']!r} is not supported")
        layout = [int(v) for v in np.asarray(state["layout"]).tolist()]
        mine = [self.num_samples, self.batch_size, self.mini_repeat_count, self.repeat_count]
        if layout != mine:
            names = "(num_tasks, prompts per generation batch, num_generations, repeat_count)"
            raise ValueError(
                f"checkpoint sampler layout {tuple(layout)} != this trainer's {tuple(mine)} "
                f"{names}; resume with the same dataset, batch sizes and num_generations"
            )
        who = "sampler state"
        n = self.num_samples
        chunks = read_array(
            state, "epoch_chunks", who, np.int64, shape=(None, self.batch_size), lo=0, hi=n - 1
        )
        counts = read_array(state, "selection_counts", who, np.int64, lo=0, shape=(n,))
        if chunks.shape[0] > self.chunks_per_epoch:
            raise ValueError("sampler state: more chunks than an epoch holds")
        walked = np.zeros(chunks.shape[0])
        trained = 0.0
        ends_by_passes = bool(np.asarray(state.get("ends_by_passes", False)))
        if ends_by_passes != (self.passes is not None):
            raise ValueError(
                "sampler state: the checkpoint's run "
                + ("ended by its passes (rollouts: fewer_steps)" if ends_by_passes else "did not")
                + ", this one "
                + ("does not" if ends_by_passes else "does")
                + ": resume with the saved rollouts setting, or start a fresh run"
            )
        if "epoch_passes" in state:
            walked = read_array(
                state, "epoch_passes", who, np.float64, shape=(chunks.shape[0],), lo=0, hi=1e9
            )
            trained = float(
                read_array(state, "passes_trained", who, np.float64, shape=(), lo=0, hi=1e9)
            )
        selected = read_int(
            {"chunks_selected": _scalar(state["chunks_selected"])}, "chunks_selected", who
        )
        self._epoch_chunks = [row.copy() for row in chunks]
        self._epoch_passes = [float(v) for v in walked]
        self.passes_trained = trained
        self._yielded.clear()
        # A finished epoch is not replayed: the Trainer starts the next one without skipping.
        self._continue_epoch = chunks.shape[0] < self.chunks_per_epoch
        self.chunks_selected = selected
        self.selection_counts = counts.copy()
        self.select_log.clear()


class StepTicks(_Sampler):  # type: ignore[misc]
    """The train sampler with dynamic sampling on: TRL's loop still reads one generation batch
    per step, but each step's prompts come from the selector inside the step, so this yields
    row 0 as many times as FrontierRepeatSampler would yield rows (the Trainer's steps per
    epoch are unchanged) and asks the selector nothing."""

    def __init__(self, length: int):
        self.length = int(length)

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[int]:
        return itertools.repeat(0, self.length)


_STATE_KEYS = ("version", "layout", "epoch_chunks", "chunks_selected", "selection_counts")
_PASSES_KEYS = ("ends_by_passes", "epoch_passes", "passes_trained")


def _scalar(value: Any) -> Any:
    """A 0-d array read back from an .npz as the Python scalar it held."""
    arr = np.asarray(value)
    return arr.item() if arr.shape == () and arr.dtype.kind in "iub" else value
