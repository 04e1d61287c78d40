"""verl v1 trainer seam: a custom replay buffer that wires FrontierSampler into the v1 trainer.

Turn it on with `trainer.v1.sampler.custom_sampler.path=pkg://frontier_rft.integrations.verl.v1`
and `name=FrontierReplayBuffer` (or `FrontierReplayBufferAsync` for the async trainers);
`trainer.v1.sampler.sampler_kwargs` holds VerlSamplerConfig fields (selector, seed, ...).

verl 0.9's v1 trainer builds its train dataloader with a fixed sampler and gives the
replay buffer no handle on it, only `refill_fn`, a method of the trainer. So this buffer
(1) wraps the trainer's `_init_dataloader` to rebuild the train dataloader over a
FrontierSampler, and (2) after verl's own `sample()` picks a training batch, reads each
trajectory's task id (`index`) and reward (`rm_scores`, or the `reward_key` entry of its
`reward_extra_info`) from TransferQueue, reports them, and adds the selector's metrics to
the metrics `sample()` returns, which the trainer logs with its own. Both touch verl
internals, so construction checks they exist and names what changed.

DAPO's filter (`algorithm.filter_groups`): verl 0.9.1 hands its settings only to its own
buffers ("custom implementations own their filtering semantics"), so this buffer reads them
from the trainer's config as verl's `_build_replay_buffer` does: without that, the filter
was silently off with a custom sampler. The groups verl's filter drops (zero-variance ones,
and the surplus it discards) are cleared from TransferQueue inside `sample()`, so they
never reach the trained batch; `_clear_groups` reports them to the selector first, so it
sees every finished rollout once, as it does without the filter. verl's
`trainer.v1.sampler.sync_refill_failed_groups` is read the same way, with the filter on or off.

`rollouts: auto` (the default) is resolved at construction, before the dataloader is
rebuilt: kept with this sync buffer where verl's settings allow it, else full with one
warning naming why (`auto.auto_rollouts`, which `frontier check-config verl` asks too).

`rollouts: kept` (sync trainer only): the rebuilt dataloader draws one window of uniform's
batch per fetch (`FrontierSampler.batches()`), so a step submits only the K <= B prompts the
selector keeps, and `sample()` asks verl's buffer for those K groups instead of
train_batch_size (which it would wait for forever). verl's own `_balance_batch` then pads
the K x n trajectories with no-op samples (`upsample_batch_to_divisible_size`, response mask
0) to a multiple of lcm(data-parallel size, ppo_mini_batch_size x n), so every rank gets the
same number of rows and every mini-batch its full size: the same padding verl uses when
multi-turn rollouts vary in number.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np
from torchdata.stateful_dataloader import StatefulDataLoader
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

from frontier_rft.integrations.plan import kept_line, message
from frontier_rft.integrations.preflight import dotted_get
from frontier_rft.integrations.verl.auto import VERL_DEFAULT_BATCH, resolved_plan, verl_rows
from frontier_rft.integrations.verl.config import VERL, VerlSamplerConfig, _to_plain
from frontier_rft.integrations.verl.kept_step import kept_loss_problems
from frontier_rft.integrations.verl.sampler import FrontierSampler, resume_refusal
from frontier_rft.integrations.verl.v1_kept import KeptStep
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.selectors.registry import SELECTORS

__all__ = ["FrontierReplayBuffer", "FrontierReplayBufferAsync", "report_sampled_batch"]

_log = logging.getLogger(__name__)
tq: Any = importlib.import_module("transfer_queue")  # verl[verl-core]; untyped


def _with_filter_groups(kwargs: dict[str, Any], *, sync: bool) -> dict[str, Any]:
    """`kwargs` with the settings verl gives its own buffers (verl 0.9.1's
    `_build_replay_buffer`): the DAPO filter's, read from the trainer's
    `algorithm.filter_groups`, and `trainer.v1.sampler.sync_refill_failed_groups`, each
    honoured without the other; unchanged when verl passed them itself or both are off."""
    if "filter_groups_metric" in kwargs:
        return kwargs
    trainer = _trainer_of(kwargs.get("refill_fn"))
    resolve = getattr(trainer, "_resolve_filter_groups_metric", None)
    filter_groups = trainer.config.algorithm.get("filter_groups", None)
    enabled = bool(filter_groups is not None and filter_groups.get("enable", False))
    sampler = trainer.config.trainer.v1.sampler
    refill_failed = bool(sampler.get("sync_refill_failed_groups", False))
    if not enabled and not refill_failed:
        return kwargs
    if enabled and not callable(resolve):
        raise RuntimeError(
            "algorithm.filter_groups is on, but this verl's trainer has no "
            "_resolve_filter_groups_metric (verl 0.9.x has it); FrontierReplayBuffer cannot "
            "turn verl's filter on: set algorithm.filter_groups.enable=false"
        )
    metric = resolve() if enabled and callable(resolve) else None
    out = {**kwargs, "filter_groups_metric": metric, "sync_refill_failed_groups": refill_failed}
    if sync:  # as verl's own sync buffer: refills come prompt by prompt
        out.update(
            train_batch_size=trainer.config.data.train_batch_size,
            gen_batch_size=1,
            max_inflight_gen_batches=filter_groups.get("max_inflight_gen_batches", 1)
            if enabled
            else 1,
        )
    return out


def _trainer_of(refill_fn: Callable[..., Any] | None) -> Any:
    trainer = getattr(refill_fn, "__self__", None)
    if not callable(getattr(trainer, "_init_dataloader", None)) or not hasattr(trainer, "config"):
        raise RuntimeError(
            "FrontierReplayBuffer needs verl's v1 PPOTrainer (refill_fn bound to the trainer, "
            "with _init_dataloader and config); this verl version differs from 0.9.x"
        )
    return trainer


def _sampler_config(sampler_kwargs: Any, batch_size: int) -> VerlSamplerConfig:
    """VerlSamplerConfig from `trainer.v1.sampler.sampler_kwargs`, names and types checked."""
    return VerlSamplerConfig.from_fields(sampler_kwargs, batch_size, "sampler_kwargs")


def _batch_size(trainer: Any) -> int:
    """Prompts a dataloader batch holds, as verl's own _init_dataloader sizes it
    (data.gen_batch_size, else data.train_batch_size, else verl's default)."""
    config = trainer.config
    batch = dotted_get(config, "data.gen_batch_size") or dotted_get(config, "data.train_batch_size")
    return int(batch or VERL_DEFAULT_BATCH)


def _install_sampler(
    trainer: Any, sampler_kwargs: Mapping[str, Any], hold: list[Any], plan: StepPlan
) -> None:
    """Wrap trainer._init_dataloader so the train dataloader draws from a FrontierSampler that
    holds the run's `plan`."""
    original = trainer._init_dataloader

    def init_dataloader() -> None:
        original()
        old = trainer.train_dataloader
        config = _sampler_config(sampler_kwargs, _batch_size(trainer))
        # verl sizes its fetches anew after the buffer is built where its own filter refills
        # them (gen_batch_size 1): the plan's rows follow the dataloader verl builds
        rows = plan.rows if plan.shape().prompts == config.batch_size else None
        shaped = plan.with_rows(rows or verl_rows(config, trainer.config))
        sampler = FrontierSampler(trainer.train_dataset, config=config, plan=shaped)
        sampler.logs_to_trainer = True  # sample() returns its metrics to verl's logger
        # Same arguments as verl's _init_dataloader, with the sampler swapped in; with
        # rollouts: kept one batch per window, of 1 to batch_size prompts.
        picks: dict[str, Any] = (
            {"batch_sampler": sampler.batches()}
            if shaped.rollouts == "kept"
            else {"batch_size": old.batch_size, "drop_last": old.drop_last, "sampler": sampler}
        )
        trainer.train_dataloader = _FrontierLoader(
            sampler,
            dataset=trainer.train_dataset,
            num_workers=old.num_workers,
            collate_fn=old.collate_fn,
            **picks,
        )
        trainer.train_dataloader_it = None
        hold[:] = [sampler]

    trainer._init_dataloader = init_dataloader


class _FrontierLoader(StatefulDataLoader):  # type: ignore[misc]
    """verl's train dataloader rebuilt over a FrontierSampler, refusing in one line a
    checkpoint (verl's data.pt) of another selector or rollouts: torchdata keeps the
    sampler's state in one place for full batches and in another for kept ones, so a
    resume under the other would restart the curriculum silently (kept into full) or fail
    unclearly (full into kept); `rollouts: auto` can change between runs with the settings."""

    def __init__(self, frontier: FrontierSampler, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.frontier = frontier

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        rollouts, saved = _saved_curriculum(state_dict)
        if saved is not None:
            selector = saved.get("selector") if isinstance(saved.get("selector"), dict) else {}
            name = selector.get("selector") if isinstance(selector, dict) else None
            now = (self.frontier.selector.name, self.frontier.plan.rollouts)
            if isinstance(name, str) and (name, rollouts) != now:
                raise ValueError(resume_refusal((name, rollouts), now))
        super().load_state_dict(state_dict)


def _saved_curriculum(state: Any) -> tuple[str | None, dict[str, Any] | None]:
    """(rollouts, the FrontierSampler state) in a train dataloader's state_dict: kept where
    the window batch sampler holds it, full where torchdata's batch iterator wraps it; (None,
    None) where neither (main process or workers' snapshot alike)."""
    if not isinstance(state, dict):
        return None, None
    snapshot = state.get("_snapshot")
    main = snapshot.get("_main_snapshot") if isinstance(snapshot, dict) else state
    if not isinstance(main, dict):
        return None, None
    index, batches = main.get("_index_sampler_state"), main.get("_sampler_iter_state")
    if isinstance(index, dict) and "selector" in index:
        return "kept", index
    if isinstance(batches, dict) and isinstance(batches.get("sampler_state"), dict):
        return "full", batches["sampler_state"]
    return None, None


CANONICAL_REWARDS = (None, "rm_scores", "token_level_scores")
"""reward_key values meaning the reward function's score (v1 stores it as rm_scores)."""


def report_sampled_batch(sampler: FrontierSampler, batch: Any) -> int:
    """Report the rewards of a batch verl's replay buffer sampled (a KVBatchMeta).

    Reads `index`, `uid` and the reward of each non-padding trajectory from TransferQueue:
    `rm_scores` summed over tokens, or with `reward_key` set to another name, that entry of
    its `extra_fields.reward_extra_info` (as verl's own DAPO filter reads it); and each
    trajectory's length from the `response_len` tag verl's agent loop gives it (its response
    tokens; none where a tag lacks it), for the shadows. Returns the number of rollouts
    reported.
    """
    real = [
        (k, tag) for k, tag in zip(batch.keys, batch.tags, strict=True) if not tag.get("is_padding")
    ]
    if not real:
        return 0
    keys = [k for k, _ in real]
    sizes = [tag.get("response_len") for _, tag in real]
    lengths = None if any(size is None for size in sizes) else sizes
    reward_key = sampler.config.reward_key
    canonical = reward_key in CANONICAL_REWARDS
    field = "rm_scores" if canonical else "extra_fields"
    data = tq.kv_batch_get(
        keys=keys, partition_id=batch.partition_id, select_fields=["index", "uid", field]
    )
    ids = np.asarray([_scalar(v) for v in data["index"]])
    uids = np.asarray([str(_scalar(v)) for v in data["uid"]])
    if canonical:
        rewards = np.asarray([float(v.float().sum().item()) for v in data["rm_scores"]])
    else:
        rewards = np.asarray([_extra_reward(v, str(reward_key)) for v in data["extra_fields"]])
    sampler.report(ids, rewards, uids, lengths=lengths)
    return len(keys)


def _extra_reward(value: Any, key: str) -> float:
    extra = getattr(value, "data", value)
    info = extra.get("reward_extra_info", {}) if isinstance(extra, dict) else {}
    if key not in info:
        raise ValueError(
            f"reward_key {key!r} is not in the trajectory's reward_extra_info (it has "
            f"{sorted(info)}); set reward_key to one of them, or unset it for rm_scores"
        )
    return float(info[key])


def _scalar(value: Any) -> Any:
    value = getattr(value, "data", value)  # NonTensorData
    return value.item() if hasattr(value, "item") else value


class _FrontierMixin:
    """Shared by the sync and async buffers: install the sampler, report sampled batches."""

    frontier_sampler: FrontierSampler | None
    _kept = False
    """`rollouts: kept`: each fetch is a window's kept prompts; sample() takes all submitted."""

    # Placed before verl's buffer in the bases, so these wrap its __init__ and sample.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs = _with_filter_groups(kwargs, sync=not isinstance(self, ReplayBufferAsync))
        super().__init__(*args, **kwargs)
        self._frontier_init(kwargs.get("sampler_kwargs"), kwargs.get("refill_fn"))

    def _clear_groups(self, partition_id: str, uids: set[str]) -> None:
        """Report the finished groups verl's filter drops (evicted, or surplus) before they
        are cleared: they were rolled out, so the selector learns from them."""
        if partition_id == "train" and uids and getattr(self, "_holder", None):
            done = set(uids) & set(self.finished_keys[partition_id])  # type: ignore[attr-defined]
            part = self.partitions[partition_id]  # type: ignore[attr-defined]
            keys = [k for k in part if k.split("_")[0] in done]
            if keys:
                dropped = SimpleNamespace(
                    partition_id=partition_id, keys=keys, tags=[part[k] for k in keys]
                )
                report_sampled_batch(self.frontier, dropped)
        super()._clear_groups(partition_id, uids)  # type: ignore[misc]

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> Any:
        if partition_id == "train" and self._kept:
            batch_size = min(batch_size, self._submitted(partition_id))
        batch, metrics = super().sample(  # type: ignore[misc]
            global_steps, partition_id, batch_size
        )
        if partition_id == "train":
            self._frontier_report(partition_id, batch)
            metrics = {**metrics, **self.frontier.log_metrics()}  # the trainer logs these
        return batch, metrics

    def _submitted(self, partition_id: str) -> int:
        """Prompts in TransferQueue's partition, generating or done: with `rollouts: kept`
        the step's kept prompts, all of which the sync step trains (verl asks for
        train_batch_size and would wait for groups never submitted)."""
        self._sync_metadata_from_transfer_queue()  # type: ignore[attr-defined]
        statuses = (self.pending_keys, self.running_keys, self.finished_keys, self.failure_keys)  # type: ignore[attr-defined]
        count = len(set().union(*(keys[partition_id] for keys in statuses)))
        if count == 0:
            raise RuntimeError(
                "rollouts: kept: the step submitted no prompt to sample (is this verl's sync "
                "trainer, whose step submits its batch before sampling?)"
            )
        return count

    def _frontier_init(self, sampler_kwargs: Any, refill_fn: Any) -> None:
        kwargs = _to_plain(sampler_kwargs) or {}
        _sampler_config(kwargs, 1)  # a misspelt or mistyped field fails here, first
        trainer = _trainer_of(refill_fn)
        config = _sampler_config(kwargs, _batch_size(trainer))
        # the run's step, decided once before the dataloader is rebuilt (and the model loads)
        plan = resolved_plan(
            config,
            trainer.config,
            selector=SELECTORS[config.selector],
            legacy=False,
            async_buffer=isinstance(self, ReplayBufferAsync),
        )
        if config.rollouts == "kept":  # set by hand: say what it does and what it cost
            _log.info(kept_line(VERL, SELECTORS[config.selector]))
        self.plan = plan
        """The run's step (`auto.resolved_plan`): its rollouts and rows, which the sampler holds
        too."""
        self._kept = plan.rollouts == "kept"
        if self._kept:
            _check_kept(self)
            problems = kept_loss_problems(_trainer_of(refill_fn).config, config.loss_scale)
            if problems:
                raise ValueError(problems[0])
        if getattr(self, "filter_groups_metric", None) is not None:
            if config.shadows:
                raise ValueError(message(VERL, "shadows+filter"))
            config = config.without_default_shadows()
            kwargs = {**kwargs, "shadows": list(config.shadows or ())}
        data = trainer.config.data
        gen_batch_size = data.get("gen_batch_size", None)
        if self._kept and gen_batch_size not in (None, data.train_batch_size):
            raise ValueError(message(VERL, "kept+gen_batch_size", gen_batch_size=gen_batch_size))
        self._holder: list[Any] = []
        _install_sampler(trainer, kwargs, self._holder, plan)
        self.kept_step = (
            KeptStep(trainer, config.loss_scale, config.metrics_prefix) if self._kept else None
        )
        """With rollouts: kept, the step's layout and loss (v1_kept): kept rows, no more."""

    @property
    def frontier(self) -> FrontierSampler:
        """The FrontierSampler drawing the trainer's prompts (after the trainer's init)."""
        if not self._holder:
            raise RuntimeError("the trainer has not built its dataloader yet")
        sampler: FrontierSampler = self._holder[0]
        return sampler

    def _frontier_report(self, partition_id: str, batch: Any) -> None:
        if partition_id == "train":
            report_sampled_batch(self.frontier, batch)


def _check_kept(buffer: Any) -> None:
    """ValueError (one line) where `rollouts: kept` cannot shrink verl's step: the async
    trainers, verl's DAPO filter (which refills every batch to train_batch_size) and its
    refill of failed groups (a fetch is a whole window)."""
    if isinstance(buffer, ReplayBufferAsync):
        raise ValueError(message(VERL, "kept+async"))
    if getattr(buffer, "filter_groups_metric", None) is not None:
        raise ValueError(message(VERL, "kept+filter"))
    if getattr(buffer, "sync_refill_failed_groups", False):
        raise ValueError(message(VERL, "kept+refill"))


class FrontierReplayBuffer(_FrontierMixin, ReplayBuffer):  # type: ignore[misc]
    """verl's sync ReplayBuffer whose trainer draws prompts from a frontier-rft selector."""


class FrontierReplayBufferAsync(_FrontierMixin, ReplayBufferAsync):  # type: ignore[misc]
    """verl's async ReplayBuffer (colocate/separate async trainers) with a frontier-rft selector."""
