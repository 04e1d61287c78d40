"""The Selector base class: input validation, feedback buffering, metrics and state handling.

A subclass implements four hooks and never re-validates input:

- `_select(n)` returns n task ids (distinct unless the config allows repeats);
- `_observe(batch)` folds one step's aggregated feedback into the learned state;
- `_state_dict()` / `_load_state_dict(d)` export and restore that learned state;
- `_metrics()` (optional) returns method-specific metrics.

Feedback is buffered by `update` and folded in, step by step in ascending step order,
at the start of the next `select` (or on `flush()`). So a step's feedback may arrive in
pieces, shuffled or late, and is still seen by the method as one group batch per step.
"""

from __future__ import annotations

import copy
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import MAX_ABS_VALUE, MAX_STEP, check_magnitude
from frontier_rft.core.config import SelectorConfig, config_to_dict
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import Feedback, GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.pool_diff import pool_mismatch
from frontier_rft.core.state_check import (
    check_keys,
    read_array,
    read_counts,
    read_float,
    read_int,
    read_keys,
)

__all__ = ["FORMAT_VERSION", "Rollout", "Selector"]

FORMAT_VERSION = 2
"""Version of the state_dict / saved-file layout; bumped on incompatible changes (2: refreshed
features in the base state, BOTS regression and candidate-mode state, prompts as UTF-8)."""
MAX_SEED = 2**256
"""Seeds are ints below this (a SHA-256 digest read as an int fits)."""
Rollout = Callable[[NDArray[np.int64], int], NDArray[np.float64]]
"""rollout(task_ids, n) -> n rewards per task, flattened in task order."""


def _copy_tree(obj: Any) -> Any:
    """Deep copy of a state tree whose leaves are numpy arrays or JSON values."""
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, dict):
        return {k: _copy_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_copy_tree(v) for v in obj]
    return copy.deepcopy(obj)


class Selector(ABC):
    """Base class of every task selector (docs/contract.md states the contract)."""

    name: ClassVar[str]
    """Registered name, as used by make_selector."""
    config_class: ClassVar[type[SelectorConfig]] = SelectorConfig
    """Frozen dataclass holding this selector's hyperparameters."""
    collaborators: ClassVar[tuple[str, ...]] = ()
    """Constructor keyword arguments that are not serialisable (judges, estimators). A
    `judge` is a callable(list[str]) -> list[str] the selector cannot run without; a trainer
    that has a policy offers it as the judge and trains it on `pop_judge_records()`."""

    # Facts the CLI, the figures, the benchmarks, the simulator and the contract tests read
    # from the class, so that a new selector is its module and its test, nothing more. The
    # registry refuses a registered class that lacks needs, cost or color.
    needs: ClassVar[Needs]
    """What it reads and derives from prompts alone (`frontier selectors`)."""
    requires: ClassVar[Requires | None] = None
    """TaskPool metadata its default configuration cannot run without (None: rewards alone
    suffice); `requirement(config)` when it depends on the configuration."""
    cost: ClassVar[Cost]
    """Per-step cost class the overhead benchmark holds it to."""
    color: ClassVar[str]
    """Its fixed '#rrggbb' colour in every figure."""
    linestyle: ClassVar[str] = "-"
    """Its line style in figures: '-.' where a similar colour could hide its curve."""
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = ()
    """Config overrides the contract suites run besides the defaults (nested state parts)."""
    passes_over: ClassVar[bool] = True
    """Whether `select_window` can leave a walked prompt out (uniform's never does, so an
    adapter's `rollouts: auto` keeps full batches for it: `kept` would change nothing)."""
    kept_loses: ClassVar[str | None] = None
    """Measured evidence that `rollouts: kept` costs held-out score with this selector, so
    an adapter's `rollouts: auto` keeps full batches for it (None: none measured)."""
    kept_saves: ClassVar[str | None] = None
    """The measured saving of `rollouts: kept` with this selector, said where a run or config
    sets kept (None: none measured)."""
    fewer_steps_saves: ClassVar[str | None] = None
    """The measured saving and cost of `rollouts: fewer_steps` with this selector (full steps
    of the prompts it keeps, the run ended by its passes), said where `rollouts: auto` names
    the mode whose saving shows in a device's seconds (None: none measured)."""
    kept_level_epochs: ClassVar[float | None] = None
    """With `kept_loses`: the longest run, in passes over the prompts, over which `rollouts:
    kept` was measured within noise with uniform; `rollouts: auto` keeps kept for a run up to it and
    full batches for a longer one (None: kept_loses holds at every length)."""

    @classmethod
    def measured(cls, field: str) -> tuple[str | None, str]:
        """(`field`'s measured figures, whose they are): the figures of `kept_loses`,
        `kept_saves` or `fewer_steps_saves` and the name of the selector they were measured
        with, which is this one's only where it sets them itself (a subclass inherits its
        parent's rule, not its parent's figures); (None, name) where none were measured."""
        for klass in cls.__mro__:
            if field in vars(klass):
                value = vars(klass)[field]
                name = getattr(klass, "name", cls.name)
                return (value, name) if value else (None, cls.name)
        return None, cls.name

    @classmethod
    def default_collaborators(cls, rollout: Rollout | None = None) -> dict[str, Any]:
        """The collaborators a caller without its own gets (simulator, tests, benchmarks).

        `rollout(task_ids, n)`, when given, returns n rewards per task flattened in task
        order from the policy being trained; none by default.
        """
        return {}

    @classmethod
    def requirement(cls, config: SelectorConfig) -> Requires | None:
        """TaskPool metadata this configuration cannot run without (None: rewards alone)."""
        return cls.requires

    @classmethod
    def reads_features(cls, config: SelectorConfig, given: frozenset[str]) -> bool:
        """Whether this configuration, over a pool holding the metadata fields `given`
        (`TaskPool.given`), reads task features: the pool's, else derived from its prompts
        (what an adapter's self-embeddings would replace)."""
        return False

    @classmethod
    def reward_bounds_for(
        cls, config: SelectorConfig, given: frozenset[str]
    ) -> tuple[float, float] | None:
        """The rewards this configuration accepts over a pool holding the metadata fields
        `given` (None: any finite reward); what `reward_bounds` answers once built."""
        return (0.0, 1.0)

    def __init__(self, pool: TaskPool, config: SelectorConfig | None = None, *, seed: int = 0):
        if not isinstance(pool, TaskPool):
            raise ValueError(f"pool must be a frontier_rft.TaskPool, got {type(pool).__name__}")
        if config is None:
            config = self.config_class()
        if type(config) is not self.config_class:
            raise ValueError(
                f"{type(self).__name__} expects a {self.config_class.__name__}, "
                f"got {type(config).__name__}"
            )
        if (
            isinstance(seed, bool)
            or not isinstance(seed, (int, np.integer))
            or not 0 <= seed < MAX_SEED
        ):
            raise ValueError(f"seed must be an int in [0, 2**256), got {seed!r}")
        # One rule for every selector: refused here, before any work, or built in full.
        need = self.requirement(config)
        if need is not None and all(getattr(pool, f) is None for f in need.fields):
            raise ValueError(need.refusal(self.name))
        self.pool = pool
        self.config = config
        self.seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self.seed))
        n = pool.num_tasks
        # Learned bookkeeping shared by all selectors (part of state_dict).
        self.select_calls = 0
        self.latest_step = -1
        self._pending: list[tuple[NDArray[np.int64], NDArray[np.float64], int, int]] = []
        # Delivered (step, task) pairs of recent steps: step -> sorted unique task ids.
        self._seen: dict[int, NDArray[np.int64]] = {}
        self._times_selected = np.zeros(n, dtype=np.uint8)  # saturating at 255; 0 = never
        self._trained = np.zeros(n, dtype=np.bool_)
        self._totals = {
            "rollouts": 0,
            "groups": 0,
            "mixed_groups": 0,
            "duplicates_dropped": 0,
            "steps_observed": 0,
        }
        self._last = {
            "effective_task_ratio": float("nan"),
            "mean_abs_advantage": float("nan"),
            "reward_mean": float("nan"),
        }
        self._last_select_seconds = float("nan")
        # What the selector reads and where it came from, e.g. {"features": "text"}: filled
        # by subclasses at construction, reported by metrics() as evidence/<what>/<source>.
        self.evidence: dict[str, str] = {}
        self._refreshed: NDArray[np.float64] | None = None  # features set by refresh_features
        self._initial_features: tuple[Any, str] = (None, "")

    # ------------------------------------------------------------------ contract
    @property
    def num_tasks(self) -> int:
        return self.pool.num_tasks

    @property
    def reward_bounds(self) -> tuple[float, float] | None:
        """Allowed reward range checked on update; None for unbounded continuous rewards."""
        return self.reward_bounds_for(self.config, self.pool.given())

    @property
    def allows_repeats(self) -> bool:
        """Whether one select call may return the same task more than once."""
        return False

    def select(self, batch_size: int) -> NDArray[np.int64]:
        """Return `batch_size` task ids to roll out next (distinct unless repeats are allowed)."""
        self._check_batch_size(batch_size, "batch_size")
        ids = self._guarded(self._select, int(batch_size))
        self._check_selection(ids, int(batch_size))
        return self._hand_out(ids)

    @classmethod
    def walks_windows(cls) -> bool:
        """Whether it can pass over prompts within uniform's step (`select_window`)."""
        return cls._select_window is not Selector._select_window

    def select_window(self, positions: int) -> NDArray[np.int64]:
        """The prompts to roll out among the next `positions` of the selector's walk: uniform's
        step with the prompts it passes over left out (at least one id, at most
        `positions`). A run of S steps then walks uniform's S x B prompts and rolls out
        fewer; `select(B)` instead walks on until B are taken (full batches).

        A ValueError for a selector that does not walk the data (see `walks_windows`)."""
        if not self.walks_windows():
            raise ValueError(
                f"{self.name!r} does not walk the data, so it has no window of uniform's step "
                "to pass over prompts in: use a selector that skips (greso, skip) or uniform"
            )
        self._check_batch_size(positions, "positions")
        ids = self._guarded(self._select_window, int(positions))
        if not 1 <= ids.shape[0] <= positions:
            raise RuntimeError(
                f"{self.name}: _select_window returned {ids.shape[0]} ids for {positions} positions"
            )
        self._check_selection(ids, ids.shape[0])
        return self._hand_out(ids)

    def keeps(self, ids: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Which of `ids`, a window of positions another walk drew (a run's batch), this
        selector would roll out: the keep rule `select_window` applies, with its RNG, walk
        and clock moved as a window of len(ids) positions moves them. Nothing is handed out
        and nothing is walked on to when it keeps none. What a shadow asks (shadow/rule.py);
        all True for a selector that passes over nothing (uniform). A ValueError, changing
        nothing, for ids that are not distinct ids of the pool, or for a selector that does
        not walk the data (see `walks_windows`)."""
        if not self.walks_windows():
            raise ValueError(
                f"{self.name!r} does not walk the data, so it passes over no prompt of a "
                "window: only selectors that skip (greso, skip) or uniform decide per prompt"
            )
        arr = np.asarray(ids)
        if arr.ndim != 1 or arr.shape[0] == 0 or arr.dtype.kind not in "iu":
            raise ValueError(f"keeps expects a non-empty 1-d array of int ids, got {arr!r:.80}")
        if arr.min() < 0 or arr.max() >= self.num_tasks or np.unique(arr).size != arr.size:
            raise ValueError(f"keeps expects distinct ids in [0, {self.num_tasks})")
        window = arr.astype(np.int64)
        self.flush()
        rng_state = self.rng.bit_generator.state
        try:
            mask = np.asarray(self._keeps(window), dtype=np.bool_)
        except Exception:
            self.rng.bit_generator.state = rng_state
            raise
        if mask.shape != window.shape:
            raise RuntimeError(f"{self.name}: _keeps returned shape {mask.shape}")
        return mask

    def passes_walked(self) -> float:
        """Passes over the pool its walk has made, fractional: prompts handed out and passed
        over / pool size (uniform's epochs after as many steps). What ends a run set by
        passes (`fewer_steps`): a skip taking full batches of the prompts it keeps walks
        uniform's passes in fewer steps. A ValueError for a selector that does not walk the
        data (see `walks_windows`)."""
        if not self.walks_windows():
            raise ValueError(
                f"{self.name!r} does not walk the data, so a run of it cannot end by its passes "
                "over the prompts: use a selector that skips (greso, skip) or uniform"
            )
        return float(self._passes_walked())

    def _check_batch_size(self, batch_size: Any, what: str) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
            raise ValueError(f"{what} must be an int, got {batch_size!r}")
        if batch_size <= 0:
            raise ValueError(f"{what} must be positive, got {batch_size}")
        if batch_size > self.num_tasks and not self.allows_repeats:
            raise ValueError(
                f"{what} {batch_size} is larger than the pool ({self.num_tasks} tasks); "
                "lower the batch size or add tasks"
            )

    def _guarded(self, choose: Any, n: int) -> NDArray[np.int64]:
        """choose(n), with the selector as it was (RNG included) when it raises."""
        # A user's collaborator (a METIS judge, an ADCL estimator) may raise inside _select:
        # then the feedback folded in just before is undone too, so the retry folds it with
        # the step's later pieces as one batch and the selector is as it was.
        backup = self.state_dict() if self._pending and self._uses_collaborator() else None
        self.flush()
        rng_state = self.rng.bit_generator.state
        start = time.perf_counter()
        try:
            ids = np.asarray(choose(n), dtype=np.int64)
        except Exception:
            if backup is not None:
                self.load_state_dict(backup)
            else:
                self.rng.bit_generator.state = rng_state
            raise
        self._last_select_seconds = time.perf_counter() - start
        return ids

    def _hand_out(self, ids: NDArray[np.int64]) -> NDArray[np.int64]:
        self.select_calls += 1
        counts = self._times_selected[ids]
        self._times_selected[ids] = np.minimum(counts.astype(np.int64) + 1, 255).astype(np.uint8)
        return np.array(ids, dtype=np.int64)

    def _uses_collaborator(self) -> bool:
        """Whether this instance holds a collaborator (user code that may raise in select)."""
        return any(getattr(self, name, None) is not None for name in self.collaborators)

    def update(self, feedback: Feedback, *, idempotent: bool = False) -> None:
        """Record rollout rewards; folded into the method at the next select (or flush).

        With `idempotent=True`, rollouts of a (step, task) pair that was already delivered
        are dropped, so a retried delivery is not double-counted; deliver each task's
        group whole when using it. Pairs are remembered for `config.dedupe_window` steps.
        """
        if not isinstance(feedback, Feedback):
            raise ValueError(
                f"update expects a frontier_rft.Feedback, got {type(feedback).__name__}"
            )
        ids, rewards = feedback.validated(self.num_tasks, self.reward_bounds)
        step = int(feedback.step)
        version = -1 if feedback.policy_version is None else int(feedback.policy_version)
        seen = self._seen.get(step, _EMPTY_I)
        if idempotent:
            keep = ~np.isin(ids, seen)
            self._totals["duplicates_dropped"] += int((~keep).sum())
            ids, rewards = ids[keep], rewards[keep]
            if ids.shape[0] == 0:
                return
        self._seen[step] = np.union1d(seen, ids)
        self._prune_seen()
        self._pending.append((ids, rewards, step, version))

    def flush(self) -> None:
        """Fold all buffered feedback into the method, one group batch per step, oldest first."""
        if not self._pending:
            return
        ids = np.concatenate([p[0] for p in self._pending])
        rewards = np.concatenate([p[1] for p in self._pending])
        steps = np.concatenate([np.full(p[0].shape[0], p[2], np.int64) for p in self._pending])
        versions = np.concatenate([np.full(p[0].shape[0], p[3], np.int64) for p in self._pending])
        self._pending = []
        for step in np.unique(steps):
            m = steps == step
            self.fold(GroupBatch.from_rollouts(int(step), ids[m], rewards[m], versions[m]))

    def fold(self, batch: GroupBatch) -> None:
        """Fold one already-validated step batch into the method now (flush calls this).

        For wrappers that validate and group feedback themselves (the DAPO filter);
        everyone else calls update and lets select fold feedback in.
        """
        self._record_batch(batch)
        self._observe(batch)

    def metrics(self) -> dict[str, float]:
        """Namespaced scalar metrics: `select/`, `feedback/`, `tasks/`, `evidence/`, `<name>/`.

        They describe the feedback folded in so far (what is only buffered shows in
        `feedback/pending_rollouts`). metrics() never folds, so logging cannot change a
        run; call `flush()` once a step's feedback is complete to log it right away.
        `evidence/<what>/<source>` is 1.0 for each metadata source in use, e.g.
        `evidence/features/text` when features were derived from the prompt text.
        """
        t = self._totals
        out = {
            "select/calls": float(self.select_calls),
            "select/overhead_ms": 1e3 * self._last_select_seconds,
            "feedback/rollouts": float(t["rollouts"]),
            "feedback/groups": float(t["groups"]),
            "feedback/steps": float(t["steps_observed"]),
            "feedback/pending_rollouts": float(sum(p[0].shape[0] for p in self._pending)),
            "feedback/duplicates_dropped": float(t["duplicates_dropped"]),
            "feedback/effective_task_ratio": self._last["effective_task_ratio"],
            "feedback/effective_task_ratio_cumulative": (
                t["mixed_groups"] / t["groups"] if t["groups"] else float("nan")
            ),
            "feedback/mean_abs_advantage": self._last["mean_abs_advantage"],
            "feedback/reward_mean": self._last["reward_mean"],
            "tasks/distinct_selected": float(np.count_nonzero(self._times_selected)),
            "tasks/distinct_trained": float(np.count_nonzero(self._trained)),
            "tasks/pool_size": float(self.pool.num_tasks),
        }
        for what, source in self.evidence.items():
            out[f"evidence/{what}/{source}"] = 1.0
        for key, value in self._metrics().items():
            out[f"{self.name}/{key}"] = float(value)
        return out

    def run_summary(self) -> str:
        """One line a trainer prints at the end of a run: what the selector saved and what it
        estimates that cost ('' for a selector with nothing to say)."""
        return ""

    def pop_judge_records(self) -> list[Any]:
        """Scored judgments of its `judge` collaborator not yet handed out, oldest first,
        removed from the selector: what a trainer trains its policy-as-judge on (METIS's
        judge loss); [] for a selector without a judge."""
        return []

    def refresh_features(self, features: NDArray[Any]) -> bool:
        """Replace the task features this selector reads (e.g. re-computed policy
        self-embeddings); learned state is kept. Returns False, changing nothing, for a
        selector that reads no features after construction. Same shape as before: a
        changed dimension is a ValueError."""
        raw = np.asarray(features)
        if raw.dtype.kind not in "biuf":  # complex parts, strings or objects: not features
            raise ValueError(
                f"refresh_features expects a real-valued numeric array, got dtype {raw.dtype}"
            )
        arr = np.array(raw, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[0] != self.num_tasks or arr.shape[1] == 0:
            raise ValueError(
                f"refresh_features expects an array of shape ({self.num_tasks}, d), got {arr.shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError("refresh_features: features contain NaN or inf")
        check_magnitude(arr, "refresh_features: features", "rescale them (standardise)")
        dim = self._feature_dim()
        if dim is not None and arr.shape[1] != dim:
            raise ValueError(
                f"{self.name}: refresh_features got {arr.shape[1]} feature columns, the "
                f"selector reads {dim}; keep the dimension (same embedding model and layer)"
            )
        initial = (getattr(self, "_features", None), self.evidence.get("features", ""))
        if not self._refresh_features(arr):
            return False
        if self._refreshed is None:
            self._initial_features = initial  # what a rejected load_state_dict restores
        self._refreshed = arr
        self.evidence["features"] = "refreshed"
        return True

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: config, RNG, buffers and learned state."""
        pending = self._pending
        base = {
            "select_calls": self.select_calls,
            "latest_step": self.latest_step,
            "pending_ids": np.concatenate([p[0] for p in pending]) if pending else _EMPTY_I,
            "pending_rewards": np.concatenate([p[1] for p in pending]) if pending else _EMPTY_F,
            "pending_meta": np.array(
                [[p[0].shape[0], p[2], p[3]] for p in pending], np.int64
            ).reshape(-1, 3),
            "seen_steps": np.concatenate(
                [np.full(self._seen[s].shape[0], s, np.int64) for s in sorted(self._seen)]
                or [_EMPTY_I]
            ),
            "seen_tasks": np.concatenate([self._seen[s] for s in sorted(self._seen)] or [_EMPTY_I]),
            "times_selected": self._times_selected,
            "trained": self._trained,
            "totals": dict(self._totals),
            "last": dict(self._last),
            "features": _EMPTY_F2 if self._refreshed is None else self._refreshed,
        }
        state: dict[str, Any] = _copy_tree(
            {
                "format_version": FORMAT_VERSION,
                "selector": self.name,
                "config": config_to_dict(self.config),
                "seed": self.seed,
                "pool_fingerprint": self.pool.fingerprint,
                "pool_summary": self.pool.summary(),
                "rng": self.rng.bit_generator.state,
                "base": base,
                "algo": self._state_dict(),
            }
        )
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict; on any error the selector is left exactly as it was.

        The state may come from an untrusted file: every field is type- and range-checked
        here or in the method's `_load_state_dict`, and whatever else goes wrong while
        reading it (a missing key, a wrong type) is raised as a ValueError naming it.
        """
        self._check_state_header(state)
        backup = self.state_dict()
        try:
            self._apply_state(_copy_tree(state))
        except Exception as exc:
            self._apply_state(backup)
            if isinstance(exc, ValueError):
                raise
            if isinstance(exc, KeyError):
                raise ValueError(f"{self.name} state: missing field {exc}") from exc
            if isinstance(exc, TypeError | AttributeError | IndexError | OverflowError):
                raise ValueError(f"{self.name} state: malformed field ({exc})") from exc
            raise

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _select(self, n: int) -> NDArray[np.int64]:
        """Choose n task ids; may use self.rng and must not raise after mutating state."""

    def _select_window(self, positions: int) -> NDArray[np.int64]:
        """The ids to roll out among the walk's next `positions` (1 to `positions` of them);
        only selectors that walk the data define it (see `select_window`)."""
        raise NotImplementedError

    def _keeps(self, ids: NDArray[np.int64]) -> NDArray[np.bool_]:
        """The keep rule of `_select_window` on a window another walk drew (see `keeps`);
        every selector that defines `_select_window` defines it too."""
        raise NotImplementedError

    def _passes_walked(self) -> float:
        """Its walk's passes, fractional (see `passes_walked`); every selector that defines
        `_select_window` defines it too."""
        raise NotImplementedError

    @abstractmethod
    def _observe(self, batch: GroupBatch) -> None:
        """Fold one step's aggregated feedback into the learned state."""

    @abstractmethod
    def _state_dict(self) -> dict[str, Any]:
        """Learned state as a tree of numpy arrays and JSON values."""

    @abstractmethod
    def _load_state_dict(self, state: dict[str, Any]) -> None:
        """Inverse of _state_dict."""

    def _metrics(self) -> dict[str, float]:
        """Method-specific metrics (keys are prefixed with the selector name)."""
        return {}

    def _feature_dim(self) -> int | None:
        """Columns of the features this selector reads now (None: none, or a wrapper whose
        inner selector checks); refresh_features refuses any other dimension. By default
        those of the `_features` array a subclass reads, if it has one."""
        features = getattr(self, "_features", None)
        return int(features.shape[1]) if isinstance(features, np.ndarray) else None

    def _refresh_features(self, features: NDArray[np.float64]) -> bool:
        """Start reading `features` (validated, (N, d), of `_feature_dim()` columns);
        False if features are not read.

        Raise ValueError, changing nothing, when the new dimension cannot be used."""
        return False

    # ------------------------------------------------------------------ internals
    def _record_batch(self, batch: GroupBatch) -> None:
        mixed = batch.mixed
        t = self._totals
        t["rollouts"] += int(batch.counts.sum())
        t["groups"] += batch.num_groups
        t["mixed_groups"] += int(mixed.sum())
        t["steps_observed"] += 1
        self._last["effective_task_ratio"] = float(mixed.mean())
        self._last["mean_abs_advantage"] = float(
            np.average(batch.mean_abs_advantage("grpo"), weights=batch.counts)
        )
        self._last["reward_mean"] = float(batch.rewards.mean())
        self._trained[batch.task_ids[mixed]] = True
        self.latest_step = max(self.latest_step, batch.step)

    def _prune_seen(self) -> None:
        newest = max(self._seen)
        for s in [s for s in self._seen if s <= newest - self.config.dedupe_window]:
            del self._seen[s]

    def _check_selection(self, ids: NDArray[np.int64], n: int) -> None:
        # A violation here is a bug in the selector, not bad user input.
        if ids.shape != (n,):
            raise RuntimeError(f"{self.name}: _select returned shape {ids.shape}, expected ({n},)")
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_tasks):
            raise RuntimeError(f"{self.name}: _select returned ids outside [0, {self.num_tasks})")
        if not self.allows_repeats and np.unique(ids).size != n:
            raise RuntimeError(f"{self.name}: _select returned repeated ids")

    def _check_state_header(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or "format_version" not in state:
            raise ValueError("not a frontier_rft selector state (no format_version)")
        if not _equal(state["format_version"], FORMAT_VERSION):
            raise ValueError(
                f"state format version {state['format_version']} is not supported "
                f"(this frontier_rft reads version {FORMAT_VERSION})"
            )
        if not _equal(state.get("selector"), self.name):
            raise ValueError(
                f"state was saved by selector {state.get('selector')!r}, not {self.name!r}"
            )
        if not _equal(state.get("pool_fingerprint"), self.pool.fingerprint):
            mismatch = pool_mismatch(
                state.get("pool_fingerprint"), state.get("pool_summary"), self.pool
            )
            raise ValueError(mismatch)
        if isinstance(state.get("config"), dict):
            known = config_to_dict(self.config)
            check_keys(state["config"], f"{self.name} state: config", (), optional=known)
        if not _equal(state.get("config"), config_to_dict(self.config)):
            raise ValueError(
                "state was saved with a different config; construct the selector with the "
                "saved config first (load_selector does this)"
            )
        check_keys(state, f"{self.name} state", (), optional=_STATE_KEYS)

    def _apply_state(self, state: dict[str, Any]) -> None:
        n, who = self.num_tasks, "selector"
        base = read_keys(state, "base", who, _BASE_KEYS)
        times_selected = read_array(base, "times_selected", who, np.uint8, shape=(n,))
        trained = read_array(base, "trained", who, np.bool_, shape=(n,))
        pids = read_array(base, "pending_ids", who, np.int64, lo=0, hi=n - 1)
        prew = read_array(base, "pending_rewards", who, np.float64, finite=True)
        meta = read_array(base, "pending_meta", who, np.int64, shape=(None, 3), lo=-1)
        lengths, steps, versions = meta[:, 0], meta[:, 1], meta[:, 2]
        bounds = self.reward_bounds or (-MAX_ABS_VALUE, MAX_ABS_VALUE)
        if (
            pids.shape != prew.shape
            or np.any(lengths < 0)
            or int(lengths.sum()) != pids.shape[0]
            or np.any(steps < 0)
            or np.any(meta[:, 1:] > MAX_STEP)
        ):
            raise ValueError("selector state: pending feedback is inconsistent")
        if np.any((prew < bounds[0]) | (prew > bounds[1])):
            raise ValueError(
                f"selector state: pending rewards lie outside [{bounds[0]:g}, {bounds[1]:g}], "
                "which this selector's settings require"
            )
        starts = np.cumsum(lengths) - lengths
        pending = [
            (pids[a : a + k], prew[a : a + k], int(step), int(version))
            for a, k, step, version in zip(starts, lengths, steps, versions, strict=True)
        ]
        seen_steps = read_array(base, "seen_steps", who, np.int64, lo=0, hi=MAX_STEP)
        seen_tasks = read_array(base, "seen_tasks", who, np.int64, lo=0, hi=n - 1)
        if seen_steps.shape != seen_tasks.shape:
            raise ValueError("selector state: seen_steps and seen_tasks differ in length")
        seen = {int(s): np.unique(seen_tasks[seen_steps == s]) for s in np.unique(seen_steps)}
        totals = read_counts(base, "totals", who, tuple(self._totals))
        # reward_mean came later: a state saved before it loads with NaN (nothing reads it)
        last = check_keys(base["last"], f"{who} state: last", _LAST_KEYS, optional=("reward_mean",))
        last = {k: read_float(last, k, who) for k in (*_LAST_KEYS, "reward_mean") if k in last}
        last.setdefault("reward_mean", float("nan"))
        rng = np.random.Generator(np.random.PCG64())
        rng_state = read_keys(state, "rng", who, _RNG_KEYS)  # numpy ignores unknown keys
        rng_state["state"] = check_keys(rng_state["state"], f"{who} state: rng/state", _PCG_KEYS)
        rng.bit_generator.state = rng_state
        seed = read_int(state, "seed", who, hi=MAX_SEED - 1)
        select_calls = read_int(base, "select_calls", who)
        latest_step = read_int(base, "latest_step", who, lo=-1)
        refreshed = read_array(base, "features", who, np.float64, shape=(None, None), finite=True)
        if refreshed.size and refreshed.shape[0] != n:
            raise ValueError("selector state: refreshed features do not match the pool size")
        # Parse everything above before touching self, then the method's own state.
        if refreshed.size:
            if not self.refresh_features(refreshed):
                raise ValueError("state holds refreshed features this selector does not read")
        elif self._refreshed is not None:  # back to the features it was built with
            features, source = self._initial_features
            self._refresh_features(features)
            self._refreshed = None
            self.evidence["features"] = source
        known = tuple(self._state_dict())  # this config's keys (load_state_dict undoes on error)
        self._load_state_dict(state["algo"])
        # After the method's own checks, which name a mismatch more precisely.
        check_keys(state["algo"], f"{self.name} state: algo", (), optional=known)
        self.seed = seed
        self.rng = rng
        self.select_calls = select_calls
        self.latest_step = latest_step
        self._pending = pending
        self._seen = seen
        self._times_selected = times_selected
        self._trained = trained
        self._totals = totals
        self._last = last


def _equal(value: Any, expected: Any) -> bool:
    """value == expected for a header field; False (not numpy's "ambiguous" error) when an
    untrusted state puts an array, or anything else that compares oddly, in its place."""
    try:
        return bool(type(value) is type(expected) and value == expected)
    except (ValueError, TypeError):
        return False


_STATE_KEYS = (
    "format_version",
    "selector",
    "config",
    "seed",
    "pool_fingerprint",
    "pool_summary",
    "rng",
    "base",
    "algo",
)
_BASE_KEYS = (
    "select_calls",
    "latest_step",
    "pending_ids",
    "pending_rewards",
    "pending_meta",
    "seen_steps",
    "seen_tasks",
    "times_selected",
    "trained",
    "totals",
    "last",
    "features",
)
_LAST_KEYS = ("effective_task_ratio", "mean_abs_advantage")
"""The newest step's statistics every saved state holds (later ones are optional)."""
_RNG_KEYS = ("bit_generator", "state", "has_uint32", "uinteger")
_PCG_KEYS = ("state", "inc")
_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)
_EMPTY_F2 = np.zeros((0, 0), dtype=np.float64)
