"""One TRL step driver for every step sampler: a generation step of GRPOTrainer run as the
rounds of a `frontier_rft.sampling` sampler, and the batch TRL trains on laid out from the
groups it trains.

TRL generates, scores and computes the advantages of one generation batch in
`GRPOTrainer._generate_and_score_completions` (private). With a step sampler on (DAPO's
dynamic sampling, `dynamic_sampling`; fewer rollouts, `rollouts: kept` / `screen: k`), the
trainer's override hands the step to `StepDriver.step`, which calls the sampler's
`sample(step, B, n, rollout)`: each round the sampler asks for is its prompts' rows (B =
generation_batch_size / num_generations, `num_generations` rows a prompt, or a screen's k
or n - k: TRL's `num_generations` is set to the call's), split evenly over the processes as
TRL splits a batch and handed to TRL's own method, so generation (vLLM too), reward
functions, reference and old log-probabilities and advantages are TRL's. The reward taps
give each round's combined rewards, gathered over the processes. Each group rolled out
carries a payload through the sampler (`Rolled`): a handle into this step's TRL output
(`GroupRows`: the round, the group's rows in it, TRL's rewards of them), opaque to
`sampling/`. The sampler decides the rounds and the groups to train on and hands back every
part of a trained group (`FilteredBatch.payload_parts`: a screened group's k, then its
n - k); the driver lays out the rows the handles name (exchanged between processes when a
group was generated on another one; a group joined from several parts gets TRL's advantages
over its whole n) for TRL (`_lay_out`: the trained groups' rows only, balanced across the
processes and padded with masked filler rows only to TRL's micro-batches, layout.plan_rows),
so TRL's steps, epochs, learning-rate schedule and progress bar are unchanged.

What differs between samplers is data, one `DriverKind` row a kind (`driver_kinds.KINDS`):
the trainer's counters it keeps, its metrics and their summary, the words of its messages, and
what a step that trains no group does (dynamic sampling stops training with a message, as
DAPO's own code stops with an error; fewer rollouts skips that generation's optimizer steps).
How the policy gradient is scaled is the sampler's own answer (`StepSamples.loss_scale`). A kind
with no row of its own gets the generic one (`driver_kind`: its counters and metrics under its
own name, an empty step skipped), so a new kind runs on TRL with its module alone; the two
named rows keep the counter and metric names TRL runs and checkpoints already hold. The kinds
TRL's step cannot hold are refused when the driver is built (`UNDRIVEN` says why, from the
facts on their classes: groups of several sizes in one step, groups held over steps). A
held group cannot be driven because its payload is a handle into one generation's TRL
output: TRL builds each generation's batch afresh and drops its tensors (completions, old
and reference log-probabilities) once that generation is trained, and a sampler's store
saves payloads in a checkpoint only as token lists (`sampling/store.py`), so a handle means
nothing at a later step or after a resume; `_lay_out` refuses one from another step.

The loss of a step that trains G of its B groups is normalised by how TRL's `loss_type`
normalises (dynamic_config.LOSS_NORMALISATION; `_normalise`). First TRL's whole loss, policy
gradient and `beta` x KL, is made the mean over the trained groups, as a full batch's is
over its B:

- per row (grpo, sapo, dr_grpo, luspo): TRL's loss is a mean over a micro-batch's rows, here
  R / S of them where uniform's has generation_batch_size / (P S): the factor
  (R / that) x (B / G) makes the step's loss the trained rows' mean
  (`FrontierGRPOTrainer._compute_loss`).
- per token of the generation batch (dapo, TRL's default; cispo, vespo): TRL divides by
  `num_items_in_batch`, which the driver sets to the trained tokens: the mean over the
  trained groups' tokens.
- bnpo normalises each micro-batch by its own tokens, which fillers change at random: refused
  (dynamic_config.trl_problems, fewer_config.fewer_problems).

Then a sampler whose `StepSamples.loss_scale` is G / B (fewer rollouts' `loss_scale: batch`)
has the advantages multiplied by it (`pg_scale`, in `_compute_loss`): every policy loss of
those types is linear in the advantages for a positive factor (PPO's clipped minimum of c x
A is c x that of A; SAPO's temperatures, VESPO's weights and the off-policy mask read only
the sign), so the policy gradient is G / B of the trained groups' (the skipped groups as
groups of zero advantage, as the reference trainer's `pg_scale`), while the KL stays the
trained rows' mean (the skipped groups' KL counted at the kept ones' mean;
benchmarks/results/kept_kl.md). Others (dynamic sampling; `loss_scale: kept`) leave the
advantages as they are: a short dynamic sampling step's loss is the mean over the groups it
found (DAPO's own code never trains short).

TRL's entropy bonus (`entropy_coef`) is a mean over each micro-batch's trained tokens, which
the fillers leave unweighted; the trainer weights it per micro-batch (`entropy_weight`) so
the step's bonus is the trained rows' mean under either scaling, as the KL is.
`use_adaptive_entropy` (TRL changes `entropy_coef` inside the loss) is refused.

Per-group advantages do not depend on the other groups with TRL's default scaling
(`scale_rewards: group` or `none`, `sum_then_normalize`), which is why other settings are
refused (dynamic_config.trl_problems).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from frontier_rft.core.feedback import Feedback, to_unit_range
from frontier_rft.integrations.trl.driver_kinds import (
    UNDRIVEN,
    driver_kind,
    why_undriven,
)
from frontier_rft.integrations.trl.dynamic_config import (
    TESTED_TRL,
    normalisation,
    zero_variance_groups,
)
from frontier_rft.integrations.trl.layout import plan_rows
from frontier_rft.integrations.trl.rewards import (
    RewardTap,
    check_combined_rewards,
    combine_rewards,
)
from frontier_rft.integrations.trl.seam_check import trl_version
from frontier_rft.sampling.filtered_batch import FilteredBatch
from frontier_rft.sampling.step import Rolled, Sampler, StepSamples

__all__ = ["AdapterSeam", "GroupRows", "StepDriver", "filler_groups"]

_log = logging.getLogger(__name__)

LEFT_PADDED = ("prompt_ids", "prompt_mask")
"""Output keys TRL pads on the left (prompts)."""
RIGHT_PADDED = (
    "completion_ids",
    "completion_mask",
    "old_per_token_logps",
    "ref_per_token_logps",
    "sampling_per_token_logps",
    "importance_sampling_ratio",
    "tool_mask",
)
"""Output keys with one row per completion, padded on the right (per-token, or (B, 1))."""
ROW_KEYS = ("advantages",)
"""Output keys with one value per completion."""
_RECOMPUTED = ("num_items_in_batch",)
_KNOWN = frozenset(LEFT_PADDED + RIGHT_PADDED + ROW_KEYS + _RECOMPUTED)


def filler_groups(groups: int, group_size: int, processes: int) -> int:
    """Fewest extra groups making a round split into equal rows per process (TRL gathers
    rewards across processes and needs the same number of rows on each)."""
    extra = 0
    while ((groups + extra) * group_size) % processes:
        extra += 1
    return extra


Gather = Callable[
    [NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.int64] | None],
    tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.int64] | None],
]


@dataclass(frozen=True)
class AdapterSeam:
    """The adapter's own parts of the trainer that a generation step uses, handed over by
    the trainer; everything else it reads is TRL's public trainer API (`args`,
    `num_generations`, `accelerator`, `reward_weights`, ...)."""

    counters: dict[str, int]
    """The trainer's counters (the same dict: the step adds its generations and rollouts)."""
    rows: NDArray[np.int64]
    """Dataset row of each task id."""
    tap: RewardTap
    """The reward taps: the per-function rewards of each TRL call."""
    gather: Gather
    """Every process's (ids, rewards, scored, lengths), in process order, the same on each."""


@dataclass(frozen=True, eq=False)
class GroupRows:
    """A group's payload in the driver (`Rolled`): a handle into TRL's output of this step,
    where the group's completions sit and TRL's rewards of them. The sampler carries it with
    the group, opaque, and hands back the handles of every part of a trained group
    (`FilteredBatch.payload_parts`), so the driver lays out whole groups from the sampler's
    join instead of finding their parts by round and position."""

    generation: int
    """The generation step whose TRL output holds the rows (a handle means nothing after it)."""
    round: int
    """The round of that step (its TRL call) the rows are in."""
    start: int
    """First row of the group in the round's rows (every process's, group by group)."""
    rewards: NDArray[np.float64]
    """(size,) TRL's combined reward of each row, NaN where no reward function scored it."""

    def rows(self) -> list[tuple[int, int]]:
        """(round, row) of each of the group's completions, in order."""
        return [(self.round, self.start + i) for i in range(self.rewards.shape[0])]


@dataclass
class _Round:
    """One round as this process saw it: TRL's output for its rows, and where they sit."""

    out: dict[str, Any]
    groups: int
    """Prompts of the round (fillers excluded)."""
    rows_per_process: int
    size: int
    """Completions of each prompt in this round (num_generations, or a screen's k or n - k)."""


class StepDriver:
    """Runs one generation step of a FrontierGRPOTrainer through a step sampler (see module)."""

    def __init__(
        self,
        trainer: Any,
        sampler: Sampler,
        parent: Callable[[list[dict[str, Any]]], dict[str, Any]],
        seam: AdapterSeam,
    ):
        kind = driver_kind(getattr(sampler, "kind", ""))
        if kind is None:
            name = getattr(sampler, "kind", type(sampler).__name__)
            why = why_undriven(name) or "it names no kind (Sampler.kind)"
            raise ValueError(
                f"the TRL step driver runs every step sampler but {', '.join(UNDRIVEN)}, "
                f"not {name!r}: {why}; use another, or the reference trainer (frontier train)"
            )
        self.kind = kind
        """What this sampler's kind makes differ (counters, metrics, the empty step)."""
        self.trainer = trainer
        self.seam = seam
        for counter in kind.counters.values():  # a kind the trainer did not count before
            seam.counters.setdefault(counter, 0)
        self.sampler = sampler
        """The step sampler (DynamicSampling, FewerRollouts, PassThrough)."""
        self._parent = parent  # TRL's own _generate_and_score_completions, bound
        self._unscorable: list[NDArray[np.bool_]] = []
        """Each round's unscorable rows (id-major), in the order the sampler sends the
        rounds' rewards to the selector, which leaves them out (`_scored_feedback`)."""
        self.last: dict[str, float] = {}
        self.skip_update = False
        """True while the current step trains on no group (its optimizer steps are skipped)."""
        self.loss_factor = 1.0
        """Factor on TRL's loss of the current generation (per-row loss types: the rows laid
        out over uniform's, times B / G for a step training G of its B groups), which the
        trainer's `_compute_loss` applies."""
        self.pg_scale = 1.0
        """Factor on the advantages of the current generation (the sampler's
        `StepSamples.loss_scale`, 1 for a step that trains no group): the policy gradient's
        alone, which the trainer's `_compute_loss` applies."""
        self.rows_laid_out = 0
        """Rows the current generation trains on, all processes, fillers included."""
        self.stop_reason: str | None = None
        """Why training stopped early (a kind that stops on a step training no group)."""

    def optimizer_step_done(self) -> None:
        """An optimizer step ended. A kind that stops on an empty step trains again after
        it; one that skips keeps `skip_update` for every optimizer step of the generation
        (set again at the next)."""
        if self.kind.on_empty == "stop":
            self.skip_update = False

    # ------------------------------------------------------------------ one step
    def _sample(self) -> tuple[StepSamples, list[_Round], int, int, int]:
        """This step's rounds sampled through the sampler: (samples, the rounds generated,
        groups B, group size n, rollouts spent). A round of groups of another size (counts)
        is one TRL call generating that many completions a prompt."""
        n = int(self.trainer.num_generations)
        batch = int(self.trainer.args.generation_batch_size) // n
        counters, spent = self.seam.counters, self.kind.counters["rollouts"]
        rounds: list[_Round] = []
        before = counters[spent]

        def rollout(ids: NDArray[np.int64], counts: NDArray[np.int64] | None = None) -> Rolled:
            size = n
            if counts is not None:
                sizes = np.unique(np.asarray(counts, dtype=np.int64))
                if sizes.shape[0] != 1:
                    raise RuntimeError(f"one TRL call generates one size of group, got {sizes}")
                size = int(sizes[0])
            return self._round(np.asarray(ids, dtype=np.int64), n, rounds, size=size)

        selector = self.trainer.frontier_selector
        update = selector.update
        self._unscorable.clear()

        def scored_only(feedback: Feedback, **kw: Any) -> None:
            update(self._scored_feedback(feedback), **kw)

        # The sampler sends each round's rewards to the selector right after rolling it out:
        # an unscorable completion is left out there, as TRL leaves it out of its pass rate,
        # while the filter reads it at its group's mean (no spread, as TRL's advantage).
        selector.update = scored_only
        try:
            samples = self.sampler.sample(counters["generations"], batch, n, rollout)
        finally:
            del selector.update
        return samples, rounds, batch, n, counters[spent] - before

    def _scored_feedback(self, feedback: Feedback) -> Feedback:
        """`feedback` of the round rolled out last without its unscorable completions."""
        drop = self._unscorable.pop(0) if self._unscorable else None
        ids = np.asarray(feedback.task_ids)
        if drop is None or not drop.any():
            return feedback
        if drop.shape != ids.shape:
            raise RuntimeError(
                f"the sampler sent {ids.shape[0]} rewards for a round of {drop.shape[0]}"
            )
        return Feedback(
            task_ids=ids[~drop],
            rewards=np.asarray(feedback.rewards)[~drop],
            step=feedback.step,
            policy_version=feedback.policy_version,
        )

    def step(self) -> dict[str, Any]:
        """Sample this step's rounds through the sampler and return TRL's training batch."""
        counters, names = self.seam.counters, self.kind.counters
        samples, rounds, batch, n, spent = self._sample()
        train = samples.train
        trained = train.num_groups
        self.pg_scale = samples.loss_scale if trained else 1.0
        out = self._lay_out(train, rounds, batch, n)
        counters["generations"] += 1
        counters[names["trained_groups"]] += trained
        if "padded_groups" in names:
            counters[names["padded_groups"]] += train.deficit
        self.last = {
            "rollouts": float(spent),
            "rollouts_per_trained_group": spent / trained if trained else math.nan,
            "groups_trained": float(trained),
            "loss_scale": samples.loss_scale,
            "rows_step": float(self.rows_laid_out),
        }
        if self.kind.on_empty == "skip":
            counters[names["empty_steps"]] += int(trained == 0)
            self.skip_update = trained == 0  # every optimizer step of this generation
        elif trained == 0:
            self._stop(samples.rollouts, len(samples.rounds))
        return out

    def _stop(self, rollouts: int, num_rounds: int) -> None:
        """No prompt of this step had mixed rewards: stop training, say why, change nothing."""
        tr = self.trainer
        self.seam.counters[self.kind.counters["empty_steps"]] += 1
        self.skip_update = True
        tr.control.should_training_stop = True
        message = (
            f"frontier-rft {self.kind.label}: no prompt with mixed rewards in {num_rounds} "
            f"rounds ({rollouts} rollouts) at step {int(tr.state.global_step)}: every group "
            "drawn was all-correct or all-wrong (solved or out of reach), so training stops "
            f"here with this step's update skipped. To go on: {self.kind.stop_fix}"
        )
        if tr.accelerator.is_main_process:
            _log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        self.stop_reason = message

    def values(self) -> dict[str, float]:
        """Every value a kind's metrics may report (VALUES), from the counters and this step."""
        c, names = self.seam.counters, self.kind.counters
        rollouts, trained = c[names["rollouts"]], c[names["trained_groups"]]
        padded = names.get("padded_groups")
        return {
            "rollouts": float(rollouts),
            "rollouts_step": self.last.get("rollouts", math.nan),
            "rollouts_per_trained_group": self.last.get("rollouts_per_trained_group", math.nan),
            "rollouts_per_trained_group_cumulative": rollouts / trained if trained else math.nan,
            "trained_groups": float(trained),
            "groups_trained": self.last.get("groups_trained", math.nan),
            "padded_groups": float(c[padded]) if padded else 0.0,
            "filler_rollouts": float(c[names["filler_rollouts"]]),
            "empty_steps": float(c[names["empty_steps"]]),
            "loss_scale": self.last.get("loss_scale", math.nan),
            "rows_step": self.last.get("rows_step", math.nan),
        }

    def metrics(self) -> dict[str, float]:
        """The adapter's metrics of this kind, under its namespace (`dapo/...`,
        `fewer_rollouts/...`); the sampler's own come from sampler.metrics()."""
        values, kind = self.values(), self.kind
        return {f"{kind.namespace}/{key}": values[value] for key, value in kind.metrics.items()}

    # ------------------------------------------------------------------ a round
    def _round(
        self, ids: NDArray[np.int64], n: int, rounds: list[_Round], size: int | None = None
    ) -> Rolled:
        """Generate and score `ids` (`size` completions each, default n) through TRL on every
        process; the round's rewards for the selector (all processes, id-major), mapped as
        the selector reads them, near-constant groups made exactly constant, with each
        group's payload: its rows in TRL's output (`GroupRows`). A size other
        than TRL's num_generations is TRL's own per-call number of generations: the trainer's
        `num_generations` is set to it for the call (TRL groups the call's rewards by it)."""
        tr = self.trainer
        acc = tr.accelerator
        procs, rank = int(acc.num_processes), int(acc.process_index)
        size = n if size is None else int(size)
        k = int(ids.shape[0])
        extra = filler_groups(k, size, procs)
        group_ids = np.concatenate([ids, np.repeat(ids[:1], extra)])
        row_ids = np.repeat(group_ids, size)
        per_proc = row_ids.shape[0] // procs
        local = row_ids[rank * per_proc : (rank + 1) * per_proc]
        dataset, rows = tr.train_dataset, self.seam.rows
        inputs = [dataset[int(rows[t])] for t in local.tolist()]
        self.seam.tap.take()  # nothing is pending between rounds; start clean
        configured = tr.num_generations
        tr.num_generations = size
        try:
            out = self._parent(inputs)
        finally:
            tr.num_generations = configured
        unknown = sorted(k for k in out if k not in _KNOWN)
        if unknown:
            raise ValueError(
                f"TRL {trl_version()}'s _generate_and_score_completions returned "
                f"{', '.join(unknown)}, which {self.kind.label} cannot regroup (images and "
                f"other inputs are not supported); it is tested with TRL "
                f"{', '.join(TESTED_TRL)} on text prompts: {self.kind.off}"
            )
        rounds.append(_Round(out, k, per_proc, size))

        taken = self.seam.tap.take()
        if taken is None:
            raise RuntimeError(f"the reward functions did not run for a {self.kind.label} round")
        per_func, seen, _ = taken  # no shadows beside a step sampler: no lengths read
        if per_func.shape[0] != local.shape[0] or (
            seen is not None and not np.array_equal(seen, local)
        ):
            raise RuntimeError(
                "reward functions scored a different batch than the round generated "
                f"({per_func.shape[0]} rewards for {local.shape[0]} rows)"
            )
        weights = np.asarray(tr.reward_weights.detach().cpu().numpy(), dtype=np.float64)
        combined = combine_rewards(per_func, weights)
        scored = np.asarray(~np.isnan(per_func).all(axis=1), dtype=np.bool_)
        every_id, raw, every_scored, _ = self.seam.gather(local, combined, scored, None)
        if not np.array_equal(every_id, row_ids):
            raise RuntimeError(
                f"processes proposed different prompts in one {self.kind.label} round: their "
                "selectors differ; build the selector with the same make_selector(name, pool, "
                "seed=...) call on every process"
            )
        names = self.kind.counters
        self.seam.counters[names["rollouts"]] += int(row_ids.shape[0])
        self.seam.counters[names["filler_rollouts"]] += extra * size
        trl_rewards = np.where(every_scored[: k * size], raw[: k * size], np.nan)
        generation, r = self.seam.counters["generations"], len(rounds) - 1
        handles = [
            GroupRows(generation, r, g * size, trl_rewards[g * size : (g + 1) * size])
            for g in range(k)
        ]
        rewards = self._selector_rewards(ids, raw[: k * size], every_scored[: k * size], size)
        return Rolled(rewards, handles)

    def _selector_rewards(
        self,
        ids: NDArray[np.int64],
        raw: NDArray[np.float64],
        scored: NDArray[np.bool_],
        n: int,
    ) -> NDArray[np.float64]:
        tr = self.trainer
        config, counters = tr.frontier_config, self.seam.counters
        k = int(ids.shape[0])
        task_per_row = np.repeat(ids, n)
        if scored.any():  # a bad reward is an error naming the task, as without the filter
            check_combined_rewards(
                task_per_row[scored],
                raw[scored],
                config.reward_range,
                tr.frontier_selector.reward_bounds,
            )
        grid, ok = raw.reshape(k, n), scored.reshape(k, n)
        counters["unscorable"] += int((~ok).sum())
        # A group no function scored is all equal to TRL (no advantage): to the filter and
        # the selector it is a zero-variance group at the lowest reward, so a prompt no
        # function scores stops being drawn instead of stopping the run.
        none: NDArray[np.bool_] = np.asarray(~ok.any(axis=1), dtype=np.bool_)
        low = float(config.reward_range[0]) if config.reward_range is not None else 0.0
        grid = np.where(none[:, None], low, grid)
        ok = ok | none[:, None]
        self._unscorable.append(np.asarray(~ok, dtype=np.bool_).ravel())
        # An unscorable completion (every function returned None) gets no advantage in TRL:
        # for the filter it counts as its group's mean; the selector never sees it.
        means = np.where(ok, grid, 0.0).sum(axis=1) / ok.sum(axis=1)
        grid = np.where(ok, grid, means[:, None])
        counters["rollouts"] += k * n
        rewards = grid
        if config.reward_range is not None:
            rewards = to_unit_range(grid, config.reward_range)
        constant = zero_variance_groups(grid, config.dynamic_sampling_tol)
        rewards = np.where(constant[:, None], rewards.mean(axis=1, keepdims=True), rewards)
        out: NDArray[np.float64] = np.ascontiguousarray(rewards, dtype=np.float64).ravel()
        return out

    # ------------------------------------------------------------------ the batch
    def _lay_out(
        self, train: FilteredBatch, rounds: list[_Round], batch: int, n: int
    ) -> dict[str, Any]:
        """This process's share of the training batch: the trained groups' rows only, each
        group whole as the sampler joined it (its parts' handles, `GroupRows`: a screened
        group's k rows then its n - k), balanced across the processes and padded with masked
        filler rows only as far as TRL's micro-batches need (layout.plan_rows)."""
        if train.from_surplus.any():  # max_surplus is 0 in the TRL adapter
            raise RuntimeError("the step sampler returned a surplus group the adapter never keeps")
        tr = self.trainer
        rows: list[tuple[int, int]] = []
        joined: dict[int, NDArray[np.float64]] = {}  # first row -> rewards of a joined group
        for g in range(train.num_groups):
            parts = self._parts(train, g)
            start = len(rows)
            for part in parts:
                rows += part.rows()
            if len(rows) - start != n:
                raise RuntimeError(f"a trained group has {len(rows) - start} rows, not {n}")
            if len(parts) > 1:
                joined[start] = np.concatenate([part.rewards for part in parts])
        acc = tr.accelerator
        procs, rank = int(acc.num_processes), int(acc.process_index)
        every = [(r, i) for r, rd in enumerate(rounds) for i in range(rd.groups * rd.size)]
        plan = plan_rows(rows, every, procs, int(tr.args.steps_per_generation))
        per = plan.per_process
        mine = slice(rank * per, (rank + 1) * per)
        sources, where = self._sources(rounds, plan.rows)
        out = _stack(sources, [where[row] for row in plan.rows[mine]], self._pad_values())
        trained = np.asarray(plan.trained[mine], dtype=np.int64)
        device = out["advantages"].device
        if joined:  # TRL advantaged each part alone: the group's are over its n rewards
            override = np.full(len(rows), np.nan)
            for start, rewards in joined.items():
                override[start : start + n] = self._advantages(rewards)
            local = torch.as_tensor(
                np.where(trained >= 0, override[np.maximum(trained, 0)], np.nan), device=device
            )
            adv = out["advantages"]
            out["advantages"] = torch.where(torch.isnan(local), adv, local.to(adv.dtype))
        keep = torch.as_tensor(trained >= 0, device=device)
        mask = out["completion_mask"]
        out["completion_mask"] = mask * keep[:, None].to(mask.dtype)
        out["advantages"] = out["advantages"] * keep.to(out["advantages"].dtype)
        self._normalise(out, train.num_groups, batch, per)
        self.rows_laid_out = per * procs
        return _trim(out, getattr(tr, "pad_to_multiple_of", None))

    def _parts(self, train: FilteredBatch, g: int) -> tuple[GroupRows, ...]:
        """The handles of trained group g's parts, as the sampler joined them; a
        RuntimeError for a part this step's TRL output does not hold (a group held from an
        earlier step: see the module on why the driver refuses holding kinds)."""
        parts = train.payload_parts(g)
        generation = self.seam.counters["generations"]
        for part in parts:
            if not isinstance(part, GroupRows) or part.generation != generation:
                raise RuntimeError(
                    f"trained group {g} has a part this step's TRL output does not hold "
                    f"({type(part).__name__}): TRL's step keeps no completions across steps"
                )
        return parts

    def _advantages(self, rewards: NDArray[np.float64]) -> NDArray[np.float64]:
        """TRL's group advantages (sum_then_normalize) of one group's combined rewards, NaN
        for an unscorable completion (its advantage is 0, as in TRL)."""
        r = torch.as_tensor(rewards, dtype=torch.float32)
        mean = torch.nanmean(r)
        adv = r - mean
        scale = {True: "group", False: "none"}.get(
            self.trainer.scale_rewards, self.trainer.scale_rewards
        )
        if scale == "group":
            ok = ~torch.isnan(r)
            count = int(ok.sum())
            std = (
                torch.sqrt(torch.nanmean((r - mean) ** 2) * count / (count - 1))
                if count > 1
                else torch.tensor(float("nan"))
            )
            adv = adv / (std + 1e-4)
        out: NDArray[np.float64] = torch.nan_to_num(adv, nan=0.0).numpy().astype(np.float64)
        return out

    def _full_rows(self) -> int:
        """Rows uniform lays out on each process: generation_batch_size / processes."""
        tr = self.trainer
        return int(tr.args.generation_batch_size) // int(tr.accelerator.num_processes)

    def _normalise(self, out: dict[str, Any], trained: int, batch: int, rows: int) -> None:
        """`num_items_in_batch` and the trainer's factors for a generation that lays out
        `rows` rows a process (uniform: generation_batch_size / processes), rows past its
        `trained` groups' fillers (mask zero), by how TRL's loss_type normalises
        (LOSS_NORMALISATION). TRL's loss (policy gradient, `beta` x KL) is made the mean over
        the trained groups, as a full batch's is over its B: per token, `num_items_in_batch`
        is the trained tokens; per row, TRL's loss is a mean over a micro-batch's rows, here
        rows / S of them where uniform's has full / S, and the factor (full / rows) x (B / G)
        makes the step's sum over its rows the trained rows' mean. The sampler's own
        `StepSamples.loss_scale` (G / B with fewer rollouts' `loss_scale: batch`) goes on
        the advantages alone (`pg_scale`, set by `step`; see the module)."""
        tr = self.trainer
        loss_mask = out["completion_mask"]
        if "tool_mask" in out:
            loss_mask = loss_mask * out["tool_mask"]
        out["num_items_in_batch"] = tr.accelerator.gather(loss_mask.sum()).sum()
        if normalisation(str(tr.loss_type)) == "token":
            self.loss_factor = 1.0
            return
        kept = batch / trained if trained else 1.0
        self.loss_factor = kept * rows / self._full_rows()

    def entropy_weight(self, completion_mask: torch.Tensor) -> float:
        """The factor on TRL's entropy bonus of one micro-batch of the current generation
        (`entropy_coef` x the mean entropy over the micro-batch's trained tokens) that makes
        the step's bonus the trained groups' mean, whatever `pg_scale` (as the KL is): the
        micro-batch weighs its live rows over uniform's (generation_batch_size / processes /
        steps_per_generation rows) times B / G, the trainer's factor on the whole loss
        divided out."""
        trained = self.last.get("groups_trained", 0.0)
        live = int((completion_mask.sum(dim=1) > 0).sum())
        if not live or not trained or math.isnan(trained):
            return 0.0  # no trained token: TRL's bonus is 0 already
        tr = self.trainer
        batch = int(tr.args.generation_batch_size) // int(tr.num_generations)
        share = live / (self._full_rows() / int(tr.args.steps_per_generation))
        return share * (batch / trained) / self.loss_factor

    def _pad_values(self) -> dict[str, float]:
        tr = self.trainer
        # TRL's own tokenizer is this one (it sets its pad token on it before training).
        tokenizer = getattr(tr.processing_class, "tokenizer", tr.processing_class)
        pad_id = tokenizer.pad_token_id
        return {"prompt_ids": pad_id, "completion_ids": pad_id, "tool_mask": 1}

    def _sources(
        self, rounds: list[_Round], rows: list[tuple[int, int]]
    ) -> tuple[list[dict[str, Any]], dict[tuple[int, int], tuple[int, int]]]:
        """Per round, the tensors of the rows any process trains on (this process's own
        output with one process), and where each (round, row) sits in them."""
        acc = self.trainer.accelerator
        procs = int(acc.num_processes)
        if procs == 1:
            src = [rd.out for rd in rounds]
            return src, {row: row for row in set(rows)}
        rank = int(acc.process_index)
        sources: list[dict[str, Any]] = []
        where: dict[tuple[int, int], tuple[int, int]] = {}
        for r, rd in enumerate(rounds):
            needed = sorted({g for rr, g in rows if rr == r})
            per = rd.rows_per_process
            counts = [sum(1 for g in needed if q * per <= g < (q + 1) * per) for q in range(procs)]
            width = max(counts)
            if width == 0:
                sources.append({})
                continue
            mine = [g - rank * per for g in needed if rank * per <= g < (rank + 1) * per]
            sources.append(_exchange(acc, rd.out, mine, counts, width, self._pad_values()))
            where.update({(r, g): (len(sources) - 1, i) for i, g in enumerate(needed)})
        return sources, where


def _exchange(
    acc: Any,
    out: dict[str, Any],
    mine: list[int],
    counts: list[int],
    width: int,
    pads: dict[str, float],
) -> dict[str, Any]:
    """Every process's rows `mine` of `out`, gathered in process order (= global row order)."""
    result: dict[str, Any] = {}
    index = torch.as_tensor(mine, dtype=torch.long)
    for key in LEFT_PADDED + RIGHT_PADDED + ROW_KEYS:
        if key not in out:
            continue
        tensor = out[key]
        part = tensor[index.to(tensor.device)]
        left = key in LEFT_PADDED
        if part.dim() > 1:
            part = acc.pad_across_processes(part, dim=1, pad_index=pads.get(key, 0), pad_first=left)
        fill = part.new_zeros((width - part.shape[0], *part.shape[1:]))
        every = acc.gather(torch.cat([part, fill]).contiguous())
        result[key] = torch.cat([every[q * width : q * width + c] for q, c in enumerate(counts)])
    return result


def _stack(
    sources: list[dict[str, Any]], index: list[tuple[int, int]], pads: dict[str, float]
) -> dict[str, Any]:
    """Rows `index` = [(source, row)] of the sources, one tensor per key, each source padded
    to the widest (prompts on the left, the rest on the right)."""
    used = sorted({s for s, _ in index})
    keys = [k for k in LEFT_PADDED + RIGHT_PADDED + ROW_KEYS if k in sources[used[0]]]
    offsets, total = {}, 0
    for s in used:
        offsets[s] = total
        total += int(sources[s]["advantages"].shape[0])
    flat = [offsets[s] + i for s, i in index]
    out: dict[str, Any] = {}
    for key in keys:
        parts = [sources[s][key] for s in used]
        if parts[0].dim() > 1:
            wide = max(int(p.shape[1]) for p in parts)
            left = key in LEFT_PADDED
            parts = [_pad(p, wide, pads.get(key, 0), left) for p in parts]
        joined = torch.cat(parts)
        out[key] = joined[torch.as_tensor(flat, dtype=torch.long, device=joined.device)]
    return out


def _trim(out: dict[str, Any], multiple: int | None) -> dict[str, Any]:
    """Without the padding columns no row uses (a dropped group's longer prompt or completion
    widened its round): leading prompt columns, trailing completion columns, kept at a
    multiple of TRL's `pad_to_multiple_of` when it is set."""

    def width(used: torch.Tensor) -> int:
        cols = torch.nonzero(used.any(dim=0)).flatten()
        return int(cols.max()) + 1 if cols.numel() else 1

    def rounded(w: int, full: int) -> int:
        return min(full, math.ceil(w / multiple) * multiple) if multiple else w

    full_p = int(out["prompt_mask"].shape[1])
    keep_p = rounded(width(out["prompt_mask"].flip(1).bool()), full_p)
    full_c = int(out["completion_mask"].shape[1])
    keep_c = rounded(width(out["completion_mask"].bool()), full_c)
    for key in LEFT_PADDED:
        if key in out:
            out[key] = out[key][:, full_p - keep_p :]
    for key in RIGHT_PADDED:
        if key in out and out[key].dim() > 1 and int(out[key].shape[1]) == full_c:
            out[key] = out[key][:, :keep_c]
    return out


def _pad(tensor: torch.Tensor, width: int, value: float, left: bool) -> torch.Tensor:
    missing = width - int(tensor.shape[1])
    if missing == 0:
        return tensor
    fill = torch.full(
        (tensor.shape[0], missing, *tensor.shape[2:]),
        value,
        dtype=tensor.dtype,
        device=tensor.device,
    )
    return torch.cat([fill, tensor] if left else [tensor, fill], dim=1)
