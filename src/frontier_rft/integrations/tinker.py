"""tinker-cookbook adapter: a frontier-rft selector picks the prompts of each RL batch.

tinker-cookbook's RL loop (`tinker_cookbook.rl.train`) runs locally and calls the remote
tinker service to sample and train. It takes prompts from an `RLDataset` one batch at a
time (`get_batch(i)`, a list of `EnvGroupBuilder`s, one group of rollouts each) and scores
a group through `EnvGroupBuilder.compute_group_rewards`. Those are the two seams:

- `FrontierRLDataset.get_batch(i)` is one `selector.select(batch_size)` over the TaskPool;
  task t is your `EnvGroupBuilder` number t (or `make_group(t)`).
- each builder it hands out is wrapped in a `FeedbackGroupBuilder`, whose
  `compute_group_rewards` calls yours, reports the group's total rewards (the per-step
  rewards plus yours, what the cookbook's `get_total_rewards` adds up) to the selector as
  one `Feedback` of the batch it was picked in, and returns your result unchanged. The
  cookbook calls it before it drops constant-reward groups, so dropped groups are reported
  too, each once.

`rollouts="kept"` (TinkerFrontierConfig.rollouts): each `get_batch` is instead one
`selector.select_window(batch_size)`, only the tasks the selector keeps among uniform's next
batch_size: the cookbook's sync loop trains the groups it is given, so its steps stay and a
step rolls out fewer groups. Its async and streaming loops train groups_per_batch groups a
step whatever the batches hold, so there `get_batch` refuses (it reads which loop calls it).

State: the cookbook has no hook for dataset state in its checkpoints, but it resumes at the
batch index its last checkpoint names and asks `get_batch` for it. So the dataset writes
the selector's state (`save_selector` file) and its own counters to
`<state_dir>/frontier_tinker/batch_<i>/` as the state batch i is picked from, and the first
`get_batch(i)` of a process restores that state. In the sync loop it is exactly the state at
the cookbook's checkpoint i; in the async loop (`max_steps_off_policy`) it is the state when
batch i was first picked (see docs/integrations/tinker.md for what a resume loses there).

Shadows (`TinkerFrontierConfig.shadows`, docs/shadow.md) read a whole batch at once, in the
order drawn, but rewards arrive a group at a time: the dataset keeps each picked batch's
groups until the batch is complete, and feeds complete batches to the shadows in draw order.
A batch that never completes (a group lost, or forgotten with its batch) is counted and
passed over; the batches after it wait for it until then. With each group's rewards the
dataset keeps its trajectories' sampled tokens (the actions' tokens, as the cookbook's
`total_ac_tokens` counts them), so the shadows count tokens saved as well as rollouts.
"""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from tinker_cookbook import checkpoint_utils
from tinker_cookbook.rl.types import EnvGroupBuilder, RLDataset

from frontier_rft.core.feedback import Feedback, to_unit_range
from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.core.persistence import atomic_write_bytes
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.plan import (
    default_shadows_line,
    message,
    rollouts_refusal,
    shadow_rules,
)
from frontier_rft.integrations.pool import make_pool_selector, reward_pair
from frontier_rft.integrations.tinker_facts import TINKER, tinker_step_plan
from frontier_rft.metrics_log import (
    METRICS_PREFIX,
    VERBOSITIES,
    JsonlLogger,
    curriculum_metrics,
)
from frontier_rft.selectors.persistence import restore_selector, save_selector
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.shadow.live import RunShadows
from frontier_rft.shadow.rule import ShadowConfig, check_shadow_rules

__all__ = ["FeedbackGroupBuilder", "FrontierRLDataset", "TinkerFrontierConfig"]

_log = logging.getLogger(__name__)

STATE_DIR = "frontier_tinker"
"""Folder under `state_dir` that holds one saved state per batch index."""
SELECTOR_FILE = "frontier_selector.npz"
DATASET_FILE = "frontier_dataset.json"
STATE_VERSION = 1
"""Layout version of DATASET_FILE."""
_BATCH_DIR = re.compile(r"batch_(\d{6,})")
COOKBOOK_LOOPS = "tinker_cookbook.rl.train"
"""The cookbook's module whose loops call get_batch; only its do_sync_training takes kept."""
KEPT_NEEDS_SYNC = message(TINKER, "kept+async")
"""Why `rollouts: kept` is refused in the cookbook's other loops (docs/integrations/tinker.md;
the plan's text, named here for users' imports)."""


@dataclass(frozen=True)
class TinkerFrontierConfig:
    """The adapter's settings (the cookbook's own stay in its `rl.train.Config`)."""

    batch_size: int
    """Groups (prompts) per get_batch: the cookbook's groups per batch."""
    num_batches: int | None = None
    """len(dataset), the batches the cookbook may ask for; None: num_tasks // batch_size."""
    state_dir: str | None = None
    """The cookbook's log_path: states are saved beside its checkpoints. None: not saved."""
    reward_range: tuple[float, float] | None = None
    """(low, high) of your rewards, mapped onto [0, 1] for selectors that need that."""
    max_outstanding_batches: int = 64
    """Picked batches whose groups are still awaited; older ones are forgotten (and counted)."""
    metrics_jsonl: str | None = None
    """Selector metrics file; None: <state_dir>/frontier_metrics.jsonl (or no file without it)."""
    metrics_verbosity: str = "all"
    """'summary' (the default metric set) or 'all' of the selector's metrics in the file."""
    metrics_prefix: str = METRICS_PREFIX
    """Prefix of every metric name in the file."""
    rollouts: str = "full"
    """'full': each get_batch is the selector's batch_size tasks. 'kept': only the tasks it
    keeps among uniform's next batch_size (greso, skip, uniform): the cookbook's steps and
    epochs stay, fewer rollouts (its sync loop only; docs/integrations/tinker.md)."""
    shadows: Sequence[str] | None = None
    """Rules followed beside training without changing it, e.g. ("greso", "screen4"): what
    each would have saved and lost, as curriculum/shadow/<rule>/... (docs/shadow.md).
    None: ("skip",) beside selector uniform's whole batches, else none; () for none."""

    def __post_init__(self) -> None:
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int):
            raise ValueError(f"batch_size must be an int, got {self.batch_size!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.num_batches is not None and (
            isinstance(self.num_batches, bool)
            or not isinstance(self.num_batches, int)
            or self.num_batches < 1
        ):
            raise ValueError(
                f"num_batches must be a positive int or None, got {self.num_batches!r}"
            )
        if self.reward_range is not None:
            pair = reward_pair(self.reward_range)
            if pair is None:
                raise ValueError(
                    f"reward_range must be (low, high) with finite low < high, got "
                    f"{self.reward_range!r}"
                )
            object.__setattr__(self, "reward_range", pair)
        n = self.max_outstanding_batches
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"max_outstanding_batches must be an int >= 1, got {n!r}")
        if self.rollouts not in TINKER.rollouts:
            raise ValueError(rollouts_refusal(TINKER, self.rollouts))
        if self.metrics_verbosity not in VERBOSITIES:
            raise ValueError(
                f"metrics_verbosity must be one of {VERBOSITIES}, got {self.metrics_verbosity!r}"
            )
        rules = (self.shadows,) if isinstance(self.shadows, str) else self.shadows
        if rules is not None and (
            not isinstance(rules, Sequence) or not all(isinstance(r, str) for r in rules)
        ):
            raise ValueError(
                f"shadows must be a list of rules, e.g. ['greso', 'screen4'], got {self.shadows!r}"
            )
        object.__setattr__(self, "shadows", None if rules is None else tuple(rules))
        self.shadow_configs()

    def shadow_configs(
        self, group_size: int | None = None, selector: str = "uniform"
    ) -> tuple[ShadowConfig, ...]:
        """The rules of `shadows` (unset: `plan.shadow_rules`' default for `selector`, the run's
        selector name), checked as the other adapters check theirs (a screen below the group
        size, once a builder's make_envs shows it); a ValueError naming the problem.
        Refused beside rollouts 'kept' (a batch then holds only the kept tasks: the shadows
        would read another walk's batches), as verl and SkyRL refuse it."""
        partial = ["rollouts='kept'"] if self.rollouts == "kept" else []
        return check_shadow_rules(
            shadow_rules(self.shadows, selector, partial),
            SELECTORS,
            group_size=group_size,
            group_name="your builders' group size",
            partial=partial,
            example="e.g. shadows=['greso', 'screen4'] beside rollouts='full'",
        )


def _calling_loop() -> str | None:
    """The cookbook loop (function name) that asked for a batch; None for any other caller
    (your own loop). Datasets that wrap this one (the cookbook's EpochCycledRLDataset) call
    it from their own get_batch: those frames are passed over."""
    frame = sys._getframe(2)  # 0: this function, 1: FrontierRLDataset.get_batch
    while frame is not None and frame.f_code.co_name == "get_batch":
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None or frame.f_globals.get("__name__") != COOKBOOK_LOOPS:
        return None
    return frame.f_code.co_name


class FeedbackGroupBuilder(EnvGroupBuilder):  # type: ignore[misc]
    """Your EnvGroupBuilder for one picked task; reports its group's rewards once.

    Everything is your builder's: its environments, its rewards and metrics (returned
    unchanged), its cleanup and logging tags. Attributes it does not have are read from yours.
    """

    def __init__(
        self,
        inner: EnvGroupBuilder,
        dataset: FrontierRLDataset,
        task_id: int,
        step: int,
        position: int = 0,
    ) -> None:
        self.inner = inner
        self.task_id = task_id
        self.step = step
        """The selector's draw (batch) this group was picked in: its Feedback.step."""
        self.position = position
        """Its place in that batch, in the order drawn (what the shadows read it in)."""
        self._dataset: FrontierRLDataset | None = dataset
        self._reported = False

    async def make_envs(self) -> Sequence[Any]:
        """Your builder's environments (a shadow screening with as many rollouts or more is
        refused here, before any of them is sampled)."""
        envs: Sequence[Any] = await self.inner.make_envs()
        if self._dataset is not None:
            self._dataset._check_group_size(len(envs))
        return envs

    async def compute_group_rewards(
        self, trajectory_group: list[Any], env_group: Sequence[Any]
    ) -> list[tuple[float, Any]]:
        """Your builder's group rewards, unchanged, after reporting the totals to the selector."""
        result: list[tuple[float, Any]] = await self.inner.compute_group_rewards(
            trajectory_group, env_group
        )
        if self._dataset is None:
            raise RuntimeError(
                "frontier-rft: this group was rolled out in another process (a rollout "
                "executor); its rewards cannot reach the selector. Run rollouts in the "
                "training process (rollout_executor=None)"
            )
        pairs = list(result)
        if len(pairs) != len(trajectory_group):
            raise ValueError(
                f"compute_group_rewards returned {len(pairs)} rewards for "
                f"{len(trajectory_group)} trajectories (task {self.task_id})"
            )
        totals = [
            sum(float(t.reward) for t in traj.transitions) + float(pair[0])
            for traj, pair in zip(trajectory_group, pairs, strict=True)
        ]
        lengths = _sampled_tokens(trajectory_group)
        if self._reported:  # the same group scored twice (a retry): its rewards count once
            self._dataset._stats["duplicate_reports"] += 1
        else:
            self._dataset._report(
                self.task_id, self.step, np.asarray(totals, np.float64), self.position, lengths
            )
            self._reported = True
        return result

    async def cleanup(self) -> None:
        """Your builder's cleanup."""
        await self.inner.cleanup()

    def logging_tags(self) -> list[str]:
        """Your builder's logging tags."""
        tags: list[str] = self.inner.logging_tags()
        return tags

    def __getattr__(self, name: str) -> Any:
        # Only called for names this wrapper lacks: recipes that read their builder's fields.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __getstate__(self) -> dict[str, Any]:
        # Picklable for the cookbook's rollout executors; the copy cannot report (above).
        state = self.__dict__.copy()
        state["_dataset"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class FrontierRLDataset(RLDataset):  # type: ignore[misc]
    """An RLDataset whose batch i is the selector's pick over a TaskPool of your groups.

    `groups`: one EnvGroupBuilder per task (task t is `groups[t]`, handed out again each
    time t is picked), or a function `make_group(t)` that builds a fresh one. `selector`: a
    ready selector over a TaskPool of as many tasks, or a selector name (then `pool`, or a
    TaskPool of `len(groups)` tasks with `prompts` as its text, and `selector_config`, `seed`).
    """

    def __init__(
        self,
        groups: Sequence[EnvGroupBuilder] | Callable[[int], EnvGroupBuilder],
        config: TinkerFrontierConfig,
        selector: Selector | str = "uniform",
        *,
        pool: TaskPool | None = None,
        prompts: Sequence[str] | None = None,
        selector_config: dict[str, Any] | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(config, TinkerFrontierConfig):
            raise TypeError(f"config must be a TinkerFrontierConfig, got {type(config).__name__}")
        sized = not callable(groups)
        if isinstance(selector, str):
            if pool is None:
                if not sized:
                    raise ValueError(
                        "with make_group, pass pool=TaskPool(...) or a ready selector: the "
                        "number of tasks is not known"
                    )
                n = len(groups)  # type: ignore[arg-type]
                pool = TaskPool(num_tasks=n, prompts=tuple(prompts) if prompts else None)
            selector = make_pool_selector(selector, pool, seed, selector_config)
        elif pool is not None or prompts is not None or selector_config is not None:
            raise ValueError("pool, prompts and selector_config go with a selector name only")
        if sized and len(groups) != selector.num_tasks:  # type: ignore[arg-type]
            raise ValueError(
                f"{len(groups)} groups but the selector's pool has {selector.num_tasks} tasks; "  # type: ignore[arg-type]
                "give one EnvGroupBuilder per task, in TaskPool order"
            )
        self.plan = tinker_step_plan(config.rollouts, config.batch_size)
        """The run's step, decided once: its rollouts (kept or full) and rows, which every
        batch reads."""
        size = self.plan.shape().prompts
        if self.plan.rollouts == "kept" and not selector.walks_windows():
            raise ValueError(message(TINKER, "kept+selector", selector=selector.name))
        if size > selector.num_tasks and not selector.allows_repeats:
            raise ValueError(f"batch_size {size} exceeds the pool ({selector.num_tasks} tasks)")
        self.config = config
        self.selector = selector
        self._groups = groups
        self._num_batches = config.num_batches or max(selector.num_tasks // size, 1)
        # Draw steps so far (the Feedback.step of the next pick) and the batch index the
        # cookbook asks for next; None until the first get_batch of this process.
        self._draws = 0
        self._next_index: int | None = None
        # Picked batches still awaiting groups: draw step -> groups not reported yet.
        self._outstanding: dict[int, int] = {}
        self._stats = {
            "groups_reported": 0,
            "rollouts": 0,
            "constant_groups": 0,
            "late_groups": 0,
            "max_lag": 0,
            "duplicate_reports": 0,
            "forgotten_groups": 0,
            "resumes": 0,
        }
        self._dirty = True  # state changed since it was last saved
        self._last_kept = math.nan  # tasks of the last batch (rollouts: kept; metrics)
        self._logger: JsonlLogger | None = None
        self._seed = int(seed)
        shadows = config.shadow_configs(selector=selector.name)
        if config.shadows is None and not {"prompts", "features"} & selector.pool.given():
            shadows = ()  # the default skip reads prompt text or features: here it has neither
        self.shadows = RunShadows(shadows, selector, self._seed)
        """Rules followed beside the run (TinkerFrontierConfig.shadows), on their own selectors."""
        if config.shadows is None and self.shadows.shadows:
            _log.info(default_shadows_line([s.config.name for s in self.shadows.shadows]))
        # Picked batches the shadows have not read yet: draw step -> (task ids in the order
        # drawn, each position's rewards once reported, and its trajectories' sampled tokens
        # where known). Empty without shadows.
        self._shadow_batches: dict[int, _Held] = {}
        self._shadow_next = 0  # the draw step the shadows read next
        self._shadow_stats = {"fed": 0, "incomplete": 0}
        self._refusal: str | None = None  # a check a rollout strategy may have swallowed

    # ------------------------------------------------------------------ RLDataset
    def __len__(self) -> int:
        return self._num_batches

    def get_batch(self, index: int) -> list[FeedbackGroupBuilder]:
        """The selector's next `batch_size` tasks, as builders that report their rewards."""
        if isinstance(index, bool) or not isinstance(index, int | np.integer) or index < 0:
            raise ValueError(f"get_batch needs a batch index >= 0, got {index!r}")
        index = int(index)
        if self._refusal is not None:  # raised in a rollout the cookbook may have dropped
            raise ValueError(self._refusal)
        kept = self.plan.rollouts == "kept"
        if kept and _calling_loop() not in (None, "do_sync_training"):
            raise ValueError(message(TINKER, "kept+async"))  # before anything moves
        if self._next_index is None and index > 0:
            self._resume(index)  # the cookbook resumes at its last checkpoint's batch
        self._save(index)
        size = self.plan.shape().prompts
        ids = self.selector.select_window(size) if kept else self.selector.select(size)
        if kept:
            self._last_kept = float(ids.shape[0])
        step = self._draws
        self._draws += 1
        self._next_index = index + 1
        self._outstanding[step] = int(ids.shape[0])
        if self.shadows.shadows:
            size = int(ids.shape[0])
            self._shadow_batches[step] = (ids.tolist(), [None] * size, [None] * size)
        self._forget_old()
        self._dirty = True
        return [
            FeedbackGroupBuilder(self._group(int(t)), self, int(t), step, i)
            for i, t in enumerate(ids.tolist())
        ]

    def _check_group_size(self, n: int) -> None:
        """A shadow's screen must be below the group size: checked when the cookbook makes a
        group's environments; remembered, as a rollout strategy that tolerates errors would
        drop the group and go on (the next get_batch raises it)."""
        try:
            self.shadows.check_group_size(n)
        except ValueError as exc:
            self._refusal = str(exc)
            raise

    def _group(self, task: int) -> EnvGroupBuilder:
        if callable(self._groups):
            return self._groups(task)
        return self._groups[task]

    # ------------------------------------------------------------------ feedback
    def _report(
        self,
        task: int,
        step: int,
        rewards: NDArray[np.float64],
        position: int = 0,
        lengths: list[int] | None = None,
    ) -> None:
        """One group's total rewards, as Feedback of the draw it was picked in; `lengths`
        (each trajectory's sampled tokens, None: not known) for the shadows."""
        if rewards.size == 0:
            raise ValueError(f"task {task}: a group with no trajectories has no rewards to report")
        # The shadows' selectors read the same rewards: refused here, before anything changes.
        bad, who, want = self.shadows.refused(
            rewards, self.config.reward_range, self.selector.reward_bounds
        )
        if bad.any():
            value = float(rewards[int(np.flatnonzero(bad)[0])])
            fix = (
                "fix the reward function so that it scores every rollout"
                if math.isnan(value)
                else "set TinkerFrontierConfig.reward_range=(low, high) to map your rewards "
                "onto [0, 1]"
            )
            raise ValueError(f"task {task} got reward {value!r}; {who} needs rewards {want}: {fix}")
        values = to_unit_range(rewards, self.config.reward_range)
        self.selector.update(
            Feedback(task_ids=np.full(values.size, task, np.int64), rewards=values, step=step)
        )
        stats = self._stats
        stats["groups_reported"] += 1
        stats["rollouts"] += int(values.size)
        stats["constant_groups"] += int(np.all(rewards == rewards[0]))
        lag = self._draws - 1 - step  # batches picked after this group's
        stats["late_groups"] += int(lag > 0)
        stats["max_lag"] = max(stats["max_lag"], lag)
        self._dirty = True
        held = self._shadow_batches.get(step)
        if held is not None and 0 <= position < len(held[1]) and held[1][position] is None:
            held[1][position] = values.tolist()
            held[2][position] = lengths
        left = self._outstanding.get(step)
        if left is None:  # its batch was forgotten (counted then); the rewards still count
            return
        if left > 1:
            self._outstanding[step] = left - 1
            return
        del self._outstanding[step]
        self._feed_shadows()
        self.selector.flush()  # the batch is complete: fold it in so its metrics show it
        self._log_metrics(step)
        if step == self._draws - 1 and self._next_index is not None:
            # The newest batch is complete: this is the state the next batch is picked from
            # (saved now, as the run may end here; a group lost earlier does not hold it up).
            self._save(self._next_index)

    def _forget_old(self) -> None:
        forgot = False
        while len(self._outstanding) > self.config.max_outstanding_batches:
            oldest = min(self._outstanding)
            self._stats["forgotten_groups"] += self._outstanding.pop(oldest)
            forgot = True
        if forgot:
            self._feed_shadows()

    def _feed_shadows(self) -> None:
        """Feed the shadows every batch they can read next, in draw order: a complete batch
        (all its groups reported) is read whole; one no longer awaited that is not complete
        (a group lost, or forgotten with its batch) never will be: counted, passed over."""
        while self._shadow_next in self._shadow_batches:
            step = self._shadow_next
            ids, groups, lengths = self._shadow_batches[step]
            complete = all(g is not None for g in groups)
            if not complete and step in self._outstanding:
                return  # still awaited: the batches after it wait too
            del self._shadow_batches[step]
            self._shadow_next += 1
            if not complete:
                self._shadow_stats["incomplete"] += 1
                continue
            self._observe_batch(step, ids, groups, lengths)

    def _observe_batch(
        self,
        step: int,
        ids: list[int],
        groups: list[list[float] | None],
        lengths: list[list[int] | None],
    ) -> None:
        """One complete batch to the shadows, each position's group in the order drawn, with
        its trajectories' sampled tokens where every group's are known. The group size is the
        batch's largest group: a smaller group (a rollout strategy that keeps partial groups)
        is left out, as is a task picked twice in one batch."""
        sizes = [len(g or ()) for g in groups]
        rewards = np.asarray([r for g in groups for r in g or ()], dtype=np.float64)
        flat = np.repeat(np.asarray(ids, dtype=np.int64), sizes)
        known = all(n is not None for n in lengths)
        tokens = np.asarray([t for n in lengths for t in n or ()], np.int64) if known else None
        self.shadows.observe(step, flat, rewards, max(sizes), tokens)
        self._shadow_stats["fed"] += 1

    # ------------------------------------------------------------------ metrics
    def metrics(self) -> dict[str, float]:
        """The selector's metrics plus `tinker/` ones: draws, reports, lag, lost groups."""
        out = self.selector.metrics()
        s = self._stats
        out.update(
            {
                "tinker/draws": float(self._draws),
                "tinker/groups_reported": float(s["groups_reported"]),
                "tinker/rollouts": float(s["rollouts"]),
                "tinker/constant_groups": float(s["constant_groups"]),
                "tinker/late_groups": float(s["late_groups"]),
                "tinker/max_feedback_lag": float(s["max_lag"]),
                "tinker/outstanding_groups": float(sum(self._outstanding.values())),
                "tinker/duplicate_reports": float(s["duplicate_reports"]),
                "tinker/forgotten_groups": float(s["forgotten_groups"]),
                "tinker/resumes": float(s["resumes"]),
            }
        )
        if self.plan.rollouts == "kept":
            out["fewer_rollouts/kept"] = self._last_kept
        if self.shadows.shadows:
            out.update(
                {
                    "tinker/shadow_batches": float(self._shadow_stats["fed"]),
                    "tinker/shadow_incomplete_batches": float(self._shadow_stats["incomplete"]),
                    "tinker/shadow_waiting_batches": float(len(self._shadow_batches)),
                }
            )
            out.update(self.shadows.metrics())
        return out

    def log_metrics(self) -> dict[str, float]:
        """What goes into the metrics file: `curriculum/...`, the summary or all of it, and
        every shadow's metrics whatever the verbosity (a user asked for them)."""
        finite = {k: v for k, v in self.metrics().items() if np.isfinite(v)}
        cfg = self.config
        out = curriculum_metrics(finite, cfg.metrics_verbosity, cfg.metrics_prefix)
        shadow = {k: v for k, v in finite.items() if k.startswith("shadow/")}
        out.update(curriculum_metrics(shadow, "all", cfg.metrics_prefix))
        return out

    def _log_metrics(self, step: int) -> None:
        path = self.config.metrics_jsonl
        if path is None and self.config.state_dir is not None:
            path = str(Path(self.config.state_dir) / "frontier_metrics.jsonl")
        if path is None:
            return
        if self._logger is None:
            self._logger = JsonlLogger(path)
        self._logger.log(self.log_metrics(), step)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The adapter's own state (the selector's is saved in its own file)."""
        return {
            "version": STATE_VERSION,
            "num_tasks": self.selector.num_tasks,
            "batch_size": self.plan.shape().prompts,
            "draws": self._draws,
            "outstanding": {str(k): v for k, v in self._outstanding.items()},
            "stats": dict(self._stats),
            # The shadows' own state is in their files (frontier_shadow<i>.npz) beside this.
            "shadows": [s.name for s in self.shadows.shadows],
            "shadow_next": self._shadow_next,
            "shadow_batches": {
                str(k): {"ids": ids, "rewards": groups, "lengths": lengths}
                for k, (ids, groups, lengths) in self._shadow_batches.items()
            },
            "shadow_stats": dict(self._shadow_stats),
        }

    def _state_path(self, index: int) -> Path | None:
        if self.config.state_dir is None:
            return None
        return Path(self.config.state_dir) / STATE_DIR / f"batch_{index:06d}"

    def _save(self, index: int) -> None:
        """Write the state batch `index` is picked from, unless it is already there."""
        where = self._state_path(index)
        if where is None or (not self._dirty and (where / DATASET_FILE).is_file()):
            return
        where.mkdir(parents=True, exist_ok=True)
        save_selector(self.selector, where / SELECTOR_FILE, include_pool=False)
        self.shadows.save(where)
        text = json.dumps(self.state_dict(), sort_keys=True).encode()
        atomic_write_bytes(where / DATASET_FILE, lambda fh: fh.write(text))  # written last
        self._dirty = False
        self._prune(index)

    def _prune(self, index: int) -> None:
        """Drop saved states no checkpoint of the cookbook can resume from: those older than
        its newest checkpoint that no checkpoint names."""
        assert self.config.state_dir is not None
        records = checkpoint_utils.load_checkpoints_file(self.config.state_dir)
        named = {r.batch for r in records if r.batch is not None}
        if not named:
            return
        newest = max(named)
        root = Path(self.config.state_dir) / STATE_DIR
        for entry in root.iterdir():
            m = _BATCH_DIR.fullmatch(entry.name)
            if m and int(m.group(1)) < min(newest, index) and int(m.group(1)) not in named:
                shutil.rmtree(entry, ignore_errors=True)

    def _resume(self, index: int) -> None:
        where = self._state_path(index)
        if where is None:
            raise ValueError(
                f"the cookbook resumes at batch {index}, but TinkerFrontierConfig.state_dir is "
                "unset, so no selector state was saved: set state_dir to the cookbook's log_path"
            )
        if not (where / DATASET_FILE).is_file() or not (where / SELECTOR_FILE).is_file():
            raise ValueError(
                f"the cookbook resumes at batch {index}, but {where} holds no saved selector "
                "state: state_dir must be the log_path of the run being resumed"
            )
        try:  # bounded: a hostile file is refused by its size or depth, never a RecursionError
            state = load_json_file(where / DATASET_FILE, "a tinker sampler state", max_depth=16)
        except ValueError as exc:  # its message names the file and what is wrong
            raise ValueError(f"{exc}; start afresh") from None
        try:
            draws = int(state["draws"])
            outstanding = {int(k): int(v) for k, v in dict(state["outstanding"]).items()}
            stats = {k: int(state["stats"][k]) for k in self._stats}
            ok = state["version"] == STATE_VERSION and draws >= 0
            # A state saved before shadows existed holds none.
            names = [str(n) for n in state.get("shadows", [])]
            shadow_next = int(state.get("shadow_next", draws))
            held = {int(k): _held(v) for k, v in dict(state.get("shadow_batches", {})).items()}
            shadow_stats = {
                k: int(dict(state.get("shadow_stats", {})).get(k, 0)) for k in ("fed", "incomplete")
            }
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{where / DATASET_FILE} is damaged ({exc}); start afresh") from exc
        if not ok:
            raise ValueError(f"{where / DATASET_FILE}: not a state this version reads")
        if state["num_tasks"] != self.selector.num_tasks or state["batch_size"] != (
            self.plan.shape().prompts
        ):
            raise ValueError(
                f"{where} was saved with {state['num_tasks']} tasks and batch_size "
                f"{state['batch_size']}; resume with the same tasks and batch size"
            )
        want = [s.name for s in self.shadows.shadows]
        if names != want:
            raise ValueError(
                f"{where} holds the state of shadows {names or 'none'}, this run follows "
                f"{want or 'none'}: resume with the shadows of the run that saved it"
            )
        shadows = self.shadows.load(where)  # read, not yet in place: raises, changing nothing
        restore_selector(self.selector, where / SELECTOR_FILE)  # unchanged if it raises
        self.shadows.shadows = shadows
        # Groups awaited when the state was saved never report to this process; their
        # batches never complete for the shadows either (counted as they are passed over).
        stats["forgotten_groups"] += sum(outstanding.values())
        stats["resumes"] += 1
        self._draws, self._outstanding, self._stats = draws, {}, stats
        self._shadow_next, self._shadow_batches = shadow_next, held
        self._shadow_stats = shadow_stats
        self._feed_shadows()
        self._dirty = False
        _log.info(f"frontier-rft: selector state restored from {where}")


_Held = tuple[list[int], list[list[float] | None], list[list[int] | None]]
"""A picked batch the shadows have not read yet: its task ids in the order drawn, and each
position's rewards and its trajectories' sampled tokens (None: not reported, not known)."""


def _sampled_tokens(trajectory_group: Sequence[Any]) -> list[int] | None:
    """Each trajectory's sampled tokens (its actions', as the cookbook's `total_ac_tokens`
    counts them); None where a transition holds no action tokens."""
    out: list[int] = []
    for traj in trajectory_group:
        actions: list[Any] = [getattr(t.ac, "tokens", None) for t in traj.transitions]
        if any(tokens is None for tokens in actions):
            return None
        out.append(sum(len(tokens) for tokens in actions))
    return out


def _held(saved: Any) -> _Held:
    """A saved batch the shadows had not read (one saved before lengths were kept has none)."""
    groups = [_group(g) for g in saved["rewards"]]
    given = saved.get("lengths", [None] * len(groups))
    if not isinstance(given, list) or len(given) != len(groups):
        raise TypeError("a batch's lengths must be a list with one entry per position")
    lengths = [_tokens(n) for n in given]
    if any(n is not None and len(n) != len(g or ()) for n, g in zip(lengths, groups, strict=True)):
        raise TypeError("a group's lengths must be one per reward")
    return [int(t) for t in saved["ids"]], groups, lengths


def _group(rewards: object) -> list[float] | None:
    """A saved position's rewards (None: not reported yet)."""
    if rewards is None:
        return None
    if not isinstance(rewards, list):
        raise TypeError(f"a group's rewards must be a list, got {type(rewards).__name__}")
    return [float(r) for r in rewards]


def _tokens(lengths: object) -> list[int] | None:
    """A saved position's sampled tokens per trajectory (None: not reported, or not known)."""
    if lengths is None:
        return None
    if not isinstance(lengths, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in lengths
    ):
        raise TypeError("a group's lengths must be a list of token counts >= 0")
    return lengths
