"""FewerRollouts: uniform's schedule, a smaller bill. A step walks what uniform's step walks
and rolls out less, so a run set by epochs or steps generates fewer rollouts.

Two ways a step spends less than uniform's B x n; they combine:

- **The skip, in uniform's window** (`skip=True`): the step's prompts are those the selector
  keeps among the next B positions of its walk (`Selector.select_window`, at least one);
  the prompts it passes over are not rolled out and not replaced. S steps walk uniform's
  S x B prompts: the user's epochs and steps mean what they mean under uniform. (Selecting
  B kept prompts instead, `select(B)`, keeps every step's cost: the sampler `PassThrough`.)
- **Screening** (`screen=k`, 0 < k < n; a k-of-n screen of our own, after SPEED-RL, arXiv
  2506.09016): every prompt of the step first gets k rollouts; a prompt whose k rewards are
  not all equal gets the other n - k, and its group of n is trained; a group all equal after
  k is not continued and not trained (its GRPO advantage is zero), its k rollouts counted.
  It is not SPEED-RL's shape (4+20 or 8+16 in groups of 24, screening on accuracy, a
  screened prompt continued in the next generation call; no preset here): a step screens
  its own B prompts on the reward and continues them at once, so the schedule stays
  uniform's (docs/selectors/fewer_rollouts.md).

The loss of a step that trains fewer than B groups (`loss_scale`):

- 'batch' (default): the policy-gradient term scaled by (groups trained) / B, as if the
  prompts passed over or screened out had been rolled out and had come back all equal (zero
  advantage): where that prediction is right, it is uniform's own (with token_mean
  aggregation the missing completions count at the trained ones' mean length). A KL or
  entropy term is not zero on those groups: the reference trainer keeps it the trained rows'
  mean (they count at the trained ones' mean; benchmarks/results/kept_kl.md).
- 'kept': the mean over the groups trained (DAPO's normalisation): every step's update has
  full weight however few groups it trains, a larger step per group when many are left out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import bounded_int
from frontier_rft.core.config import check, check_choice
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.base import WrapsSelector
from frontier_rft.sampling.step import (
    MAX_GROUP_SIZE,
    RolloutFn,
    Round,
    StepSamples,
    check_rollout,
    fresh_batch,
    split_rolled,
)

__all__ = [
    "LOSS_SCALES",
    "ROLLOUTS",
    "RUN_FIELDS",
    "FewerRollouts",
    "FewerRolloutsConfig",
    "fewer_rollouts_from_run",
]

I64 = NDArray[np.int64]
LOSS_SCALES = ("batch", "kept")
"""FewerRolloutsConfig.loss_scale: how a step that trains fewer than B groups is normalised."""
ROLLOUTS = ("full", "kept")
"""A run's `rollouts`: every step B x n ('full'), or only the kept prompts of each window."""
RUN_FIELDS = ("rollouts", "screen", "loss_scale")
"""How a run (TrainConfig, a bench or simulator entry) spells these settings."""


@dataclass(frozen=True)
class FewerRolloutsConfig:
    """How a step spends fewer rollouts than uniform's B x n on uniform's schedule."""

    skip: bool = True
    """Roll out only the prompts the selector keeps among uniform's next B (its walk's
    window); False: the selector's B prompts, every one rolled out (screening alone)."""
    screen: int = 0
    """Screening rollouts per prompt, k (0 = off, else 2 <= k < n): only a prompt whose k
    rewards are not all equal gets the other n - k (a k-of-n screen of our own, not
    SPEED-RL's 4+20 or 8+16 of 24)."""
    loss_scale: Literal["batch", "kept"] = "batch"
    """'batch': a step's policy-gradient term scaled by groups trained / B (left-out groups
    count as the zero-advantage groups they were predicted to be; KL and entropy stay the
    trained rows' means); 'kept': the mean over trained groups."""

    def __post_init__(self) -> None:
        check(isinstance(self.skip, bool), f"skip must be True or False, got {self.skip!r}")
        check(
            not isinstance(self.screen, bool)
            and isinstance(self.screen, int)
            and (self.screen == 0 or self.screen >= 2),
            "screen must be 0 (off) or a number of screening rollouts >= 2 (one reward is never "
            f"mixed, so a screen of 1 would train nothing), got {self.screen!r}",
        )
        check_choice("loss_scale", self.loss_scale, LOSS_SCALES)
        check(
            self.skip or self.screen > 0,
            "fewer rollouts needs the skip in uniform's window (skip=True), screening "
            "(screen=k), or both; with neither a step is uniform's: use no sampler",
        )

    def check_group_size(self, group_size: int) -> None:
        """ValueError unless screening leaves rollouts to continue with: 0 < k < n."""
        if self.screen and not self.screen < group_size:
            raise ValueError(
                f"screen {self.screen} must be below group_size {group_size}: a prompt is "
                f"screened with k rollouts and continued with the other n - k (e.g. 4 of 8)"
            )


def fewer_rollouts_from_run(
    rollouts: str = "full", screen: int = 0, loss_scale: str = "batch"
) -> FewerRolloutsConfig | None:
    """The FewerRolloutsConfig of a run's RUN_FIELDS; None when every step rolls out
    uniform's B x n (rollouts 'full', no screening)."""
    check_choice("rollouts", rollouts, ROLLOUTS)
    if rollouts == "full" and not screen:
        return None
    return FewerRolloutsConfig(
        skip=rollouts == "kept",
        screen=screen,
        loss_scale=loss_scale,  # type: ignore[arg-type]  # checked in __post_init__
    )


class FewerRollouts(WrapsSelector):
    """Uniform's steps, each rolling out only the kept prompts of its window and (with
    screening) continuing only the groups whose first k rollouts are mixed."""

    rescuable: ClassVar[bool] = True
    rolls_fewer: ClassVar[bool] = True
    frees_slots: ClassVar[bool] = True  # the skip and the screen each leave groups untrained

    kind: ClassVar[str] = "fewer_rollouts"
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = (
        {"loss_scale": "kept"},
        {"skip": False, "screen": 2},  # screening alone
        {"screen": 2},  # the skip and a screen
    )

    @classmethod
    def splits_groups(cls, config: Any) -> bool:
        """Screening splits each group in two rounds: k rollouts, then n - k for the mixed."""
        return bool(config.screen > 0)

    @classmethod
    def rolls_kept(cls, config: Any) -> bool:
        """The skip rolls out only the kept prompts of uniform's window."""
        return bool(config.skip)

    @classmethod
    def check_train(
        cls, config: Any, *, batch_size: int, group_size: int, selector: str, walks: bool
    ) -> None:
        """Screening's room in a group, and the skip's selector that walks the data."""
        config.check_group_size(group_size)
        check(
            not config.skip or walks,
            f"fewer_rollouts with skip (rollouts 'kept') rolls out the prompts a selector "
            f"keeps among uniform's next batch; {selector!r} does not walk the data: "
            "use greso, skip or uniform, or screening alone (skip false)",
        )

    def __init__(self, selector: Selector, config: FewerRolloutsConfig | None = None):
        if not isinstance(selector, Selector):
            raise ValueError(f"FewerRollouts wraps a built selector, got {type(selector).__name__}")
        cfg = config or FewerRolloutsConfig()
        if cfg.skip and not selector.walks_windows():
            raise ValueError(
                f"{selector.name!r} does not walk the data, so it has no window of uniform's "
                "step to skip in: use greso, skip or uniform, or screening alone (skip=False)"
            )
        self.inner = selector
        self.config = cfg
        self._last = {"kept": 0, "screened_out": 0}  # this step's (metrics)

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """Step `step`: the kept prompts of uniform's next `batch_size` (or the selector's
        `batch_size` prompts), screened with k rollouts when screening is on, the mixed ones
        continued to `group_size`. Invalid arguments change nothing (checked before the
        selector moves)."""
        step = bounded_int(step, "step")
        batch_size = bounded_int(batch_size, "batch_size", lo=1, hi=self.inner.num_tasks)
        n = bounded_int(group_size, "group_size", lo=2, hi=MAX_GROUP_SIZE)
        cfg = self.config
        cfg.check_group_size(n)
        check_rollout(rollout)
        start = time.perf_counter()
        ids = self.inner.select_window(batch_size) if cfg.skip else self.inner.select(batch_size)
        seconds = time.perf_counter() - start
        first_size = cfg.screen or n
        first = self._roll(step, ids, first_size, n, rollout, seconds)
        rounds = [first]
        tails: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {}
        picks = [(0, g) for g in range(ids.shape[0])]
        if cfg.screen:
            mixed = np.flatnonzero(first.mixed)
            if mixed.size:
                rounds.append(self._roll(step, ids[mixed], n - cfg.screen, n, rollout, 0.0))
                tails = {(0, int(g)): ((1, j),) for j, g in enumerate(mixed.tolist())}
            picks = [(0, int(g)) for g in mixed.tolist()]
        self.inner.flush()  # the step's sampling is over: fold it so metrics describe it
        batch = fresh_batch(tuple(rounds), picks, step, 0, tails)
        screened_out = ids.shape[0] - len(picks) if cfg.screen else 0
        self._last = {"kept": ids.shape[0], "screened_out": screened_out}
        nominal = batch_size if cfg.loss_scale == "batch" else 0
        return StepSamples(step, tuple(rounds), batch, nominal_groups=nominal)

    def _roll(
        self, step: int, ids: I64, size: int, n: int, rollout: RolloutFn, seconds: float
    ) -> Round:
        """`size` rollouts of each of `ids` (rollout(ids) when size is the group size, else
        rollout(ids, counts)), every reward sent to the selector once."""
        counts = None if size == n else np.full(ids.shape[0], size, dtype=np.int64)
        raw = rollout(ids) if counts is None else rollout(ids, counts)
        rewards, payloads = split_rolled(raw, ids.shape[0])
        if rewards.shape != (ids.shape[0] * size,):
            raise ValueError(
                f"rollout returned {rewards.shape} rewards for {ids.shape[0]} prompts; expected "
                f"{size} per prompt ({ids.shape[0] * size}), prompt-major"
            )
        start = time.perf_counter()
        self.inner.update(Feedback(task_ids=np.repeat(ids, size), rewards=rewards, step=step))
        return Round(ids, rewards, seconds + time.perf_counter() - start, counts, payloads)

    def metrics(self) -> dict[str, float]:
        """The selector's metrics and, under `fewer_rollouts/`, this step's prompts rolled
        out (`kept`) and groups screened out (all equal after k)."""
        return self._metrics_with("fewer_rollouts", self._last)
