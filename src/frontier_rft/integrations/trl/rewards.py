"""Tap every reward TRL computes: wrap the reward functions, combine their outputs as TRL does.

TRL calls each reward function once per generation batch with the local completions and
the dataset columns (`task_id` among them). The wrappers return exactly what the user's
function returned, so training is unchanged, and record it. Reward models (torch modules)
are tapped with a forward hook on `logits[:, 0]`, which is what TRL reads from them.
The wrappers also record each completion's length in tokens, from the `completion_ids` TRL
passes every reward function (the tokens it generated, unpadded; the live shadows count
tokens with them). The trainer takes the record after the step that generated and combines
the functions' outputs with TRL's formula: the weighted sum over functions skipping None
(`nansum(w * r)`), a completion every function returned None (or NaN) for being
unscorable. An infinite reward is not unscorable: it is out of range (check_combined_rewards).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from frontier_rft.integrations.pool import refused_rewards
from frontier_rft.shadow.live import RunShadows

__all__ = ["RewardTap", "check_combined_rewards", "combine_rewards"]


def _as_float_array(values: Any) -> NDArray[np.float64]:
    if hasattr(values, "detach"):  # a torch tensor from a reward model
        values = values.detach().float().cpu().numpy()
    if values is None or isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise ValueError(
            f"a reward function returned {type(values).__name__}: it must return one reward "
            "per completion (a list of floats, None for a completion it does not score)"
        )
    values = list(values)
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        try:
            out[i] = np.nan if v is None else float(v)
        except (TypeError, ValueError):
            raise ValueError(
                f"a reward function returned a non-numeric reward at position {i}: "
                f"{type(v).__name__} {v!r:.40}"
            ) from None
    return out


def combine_rewards(
    per_func: NDArray[np.float64],
    weights: ArrayLike,
    clip_range: tuple[float, float] | None = None,
) -> NDArray[np.float64]:
    """TRL's combined reward per completion: nansum(weights * rewards), NaN when all are None.

    Computed in float32 like TRL's own tensors; `clip_range` is RLOO's `reward_clip_range`.
    """
    r = np.asarray(per_func, dtype=np.float32)
    w = np.asarray(weights, dtype=np.float32)
    if r.ndim != 2 or r.shape[1] != w.shape[0]:
        raise ValueError(f"{r.shape[1]} reward columns but {w.shape[0]} reward weights")
    with np.errstate(invalid="ignore"):  # inf - inf, inf * 0: check_combined_rewards says so
        combined = np.nansum(r * w[None, :], axis=1)
    if clip_range is not None:
        combined = np.clip(combined, clip_range[0], clip_range[1])
    combined[np.isnan(r).all(axis=1)] = np.nan
    out: NDArray[np.float64] = combined.astype(np.float64)
    return out


def check_combined_rewards(
    task_ids: NDArray[np.int64],
    rewards: NDArray[np.float64],
    reward_range: Sequence[float] | None,
    bounds: tuple[float, float] | None = None,
    shadows: RunShadows | None = None,
) -> None:
    """ValueError naming the task of the first combined reward the selector, or a shadow's
    selector among `shadows`, would refuse: checked before any of them moves.

    Called on scored completions only (not every function returned None). With a
    `reward_range` every number is mapped onto [0, 1] and clipped (an infinite reward to 0
    or 1), never dropped as unscorable; without one, a reward outside the selector's
    reward `bounds` (None: unbounded), inf included, is refused naming `reward_range`.
    NaN here means infinities that cancel (inf - inf, inf * 0 weight).
    """
    if shadows is None:
        (bad, need), who = refused_rewards(rewards, reward_range, bounds), "this selector"
    else:
        bad, who, need = shadows.refused(rewards, reward_range, bounds)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    task, value = int(task_ids[i]), float(rewards[i])
    if np.isnan(value):
        raise ValueError(
            f"the combined TRL reward of task {task} is NaN though a reward function scored "
            "it (infinite rewards that cancel, or inf times a zero weight); return finite "
            "rewards, or None for a completion a function does not score"
        )
    what = "not a finite reward" if np.isinf(value) else "out of range"
    raise ValueError(
        f"the combined TRL reward of task {task} is {value}, {what}: {who} needs "
        f"rewards {need}; return such rewards, or add the YAML line `reward_range: [lo, hi]` "
        "(in Python FrontierConfig(reward_range=(lo, hi))) with your rewards' range, which "
        "maps them onto [0, 1] (beyond it they clip to 0 or 1)"
    )


class RewardTap:
    """Records each reward function's output for the current training generation batch."""

    def __init__(self, num_funcs: int, task_id_column: str, recording: Callable[[], bool]):
        self.num_funcs = num_funcs
        self.task_id_column = task_id_column
        self._recording = recording
        self._outputs: list[NDArray[np.float64] | None] = [None] * num_funcs
        self._task_ids: NDArray[np.int64] | None = None
        self._lengths: NDArray[np.int64] | None = None

    def wrap(self, index: int, func: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
        """A reward function that calls `func`, records its output and returns it unchanged."""
        if is_async:

            @functools.wraps(func)
            async def tapped_async(*args: Any, **kwargs: Any) -> Any:
                out = await func(*args, **kwargs)
                self._record(index, out, kwargs)
                return out

            return tapped_async

        @functools.wraps(func)
        def tapped(*args: Any, **kwargs: Any) -> Any:
            out = func(*args, **kwargs)
            self._record(index, out, kwargs)
            return out

        return tapped

    def hook_module(self, index: int, module: Any) -> Any:
        """Record `output.logits[:, 0]` of a reward model on each forward; returns the handle."""

        def hook(_module: Any, _args: Any, output: Any) -> None:
            self._record(index, output.logits[:, 0], {})

        return module.register_forward_hook(hook)

    def _record(self, index: int, out: Any, kwargs: dict[str, Any]) -> None:
        if not self._recording():
            return  # evaluation batches are not training feedback
        if self._outputs[index] is not None:
            raise RuntimeError(
                f"reward function {index} ran twice for one generation batch before its rewards "
                "were delivered; frontier-rft expects one call per reward function per batch"
            )
        self._outputs[index] = _as_float_array(out)
        ids = kwargs.get(self.task_id_column)
        if ids is not None:
            self._task_ids = np.asarray(ids, dtype=np.int64)
        completions = kwargs.get("completion_ids")
        if isinstance(completions, list | tuple):  # a reward model's hook sees none
            self._lengths = np.asarray([len(c) for c in completions], dtype=np.int64)

    def take(
        self,
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None, NDArray[np.int64] | None] | None:
        """(rewards (n, num_funcs) with NaN for None, task ids the functions saw, each
        completion's generated tokens (its `completion_ids`; None when no reward function was
        passed them: only reward models)) or None.

        None when no reward function ran since the last take (the step reused buffered
        completions). Resets the record.
        """
        outputs, ids, lengths = self._outputs, self._task_ids, self._lengths
        self._outputs, self._task_ids, self._lengths = [None] * self.num_funcs, None, None
        if all(o is None for o in outputs):
            return None
        missing = [i for i, o in enumerate(outputs) if o is None]
        if missing:
            raise RuntimeError(f"reward functions {missing} did not run for this generation batch")
        rows = {o.shape[0] for o in outputs if o is not None}
        if len(rows) != 1:
            raise RuntimeError(f"reward functions returned different lengths {sorted(rows)}")
        if lengths is not None and lengths.shape[0] not in rows:
            raise RuntimeError(
                f"reward functions were passed {lengths.shape[0]} completion_ids for "
                f"{min(rows)} completions"
            )
        return np.stack([o for o in outputs if o is not None], axis=1), ids, lengths
