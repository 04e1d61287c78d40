"""SkyRL's `RayPPOTrainer` (and `FullyAsyncRayPPOTrainer`: its class docstring) with a
frontier-rft selector choosing its prompts (skyrl 0.3).

Seams (SkyRL's own, checked by `check_skyrl_hooks` before anything is built):
- selection: `_build_train_dataloader_and_compute_training_steps`, which SkyRL documents as
  the hook to override, builds the `StatefulDataLoader` with verl's `FrontierSampler` as its
  batch sampler: each dataloader batch is one `selector.select(train_batch_size)`;
- feedback: with `trainer.algorithm.dynamic_sampling.type` set, `handle_dynamic_sampling`
  sees every sampling round, the groups it then drops included; without it,
  `postprocess_generator_output` sees each step's rollouts. Each round is reported once,
  at the first of the two that sees it. Token-level rewards are summed per rollout (as
  SkyRL's filter does); step-wise rollouts count once, with their last step's reward (as
  SkyRL's reward metrics do);
- state: SkyRL saves the dataloader's `state_dict` (the sampler's) in `data.pt`; this
  trainer also writes it to its own file (`OWN_STATE_FILE`) in the same folder and reads
  that back on resume, since SkyRL only warns when `data.pt` fails;
- metrics: `curriculum/...` join SkyRL's metrics for the step (its tracker logs them).

`rollouts: auto` (the default) is resolved by the entrypoint before Ray starts, else when the
trainer is built (`config.skyrl_auto_rollouts`): kept with `FrontierRayPPOTrainer` without
dynamic sampling, full with the fully-async trainer or beside it (a warning naming why).

`rollouts: kept`: each dataloader batch is `selector.select_window(train_batch_size)`, the
K prompts (1 <= K <= train_batch_size) the selector keeps among uniform's next batch;
SkyRL's steps and epochs stay (the dataloader's length is uniform's). Two of SkyRL's hooks
assume full batches and are extended for it: `_remove_tail_data` would cut K to a multiple of
its data-parallel stride (dropping kept prompts), so all K are generated and SkyRL's own
padding (loss-masked rows, in `convert_to_training_input` and per mini-batch when staged)
evens the shards; `convert_to_training_input` asserts train_batch_size prompts when it cuts
the batch into mini-batches, so the K prompts are cut here, policy_mini_batch_size (and
critic_mini_batch_size) prompts each, the last one shorter.

Task ids: SkyRL's `PromptDataset` gives each prompt the uid `str(row position)`; the stable
task id is the data column `task_id_key` (default `index`) when the file has it, else that
position (which shifts if SkyRL's max_prompt_length filter drops other rows).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import threading
import typing
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray


def _import_skyrl_types() -> None:
    """Import skyrl.tinker.types, which every SkyRL trainer import reaches, on Python 3.11.

    skyrl 0.3.0 declares Python >= 3.11, but that module puts a `typing.TypedDict` in a
    pydantic model, which pydantic refuses before Python 3.12 ("use typing_extensions.
    TypedDict"). For that one import `typing.TypedDict` is typing_extensions' (identical
    at run time); it is restored at once.
    """
    if sys.version_info >= (3, 12) or "skyrl.tinker.types" in sys.modules:
        return
    import typing_extensions

    saved = typing.TypedDict
    typing.TypedDict = typing_extensions.TypedDict
    try:
        import skyrl.tinker.types  # noqa: F401
    finally:
        typing.TypedDict = saved


_import_skyrl_types()

from skyrl.backends.skyrl_train.utils.io import io as skyrl_io  # noqa: E402
from skyrl.train.dataset.preprocess import compute_prompt_boundaries  # noqa: E402
from skyrl.train.entrypoints.main_base import BasePPOExp  # noqa: E402
from skyrl.train.fully_async_trainer import FullyAsyncRayPPOTrainer  # noqa: E402
from skyrl.train.trainer import RayPPOTrainer  # noqa: E402
from torch.utils.data import Dataset, Sampler  # noqa: E402
from torchdata.stateful_dataloader import StatefulDataLoader  # noqa: E402

from frontier_rft.core.selector import Selector  # noqa: E402
from frontier_rft.integrations.plan import dataset_rows, message  # noqa: E402
from frontier_rft.integrations.skyrl.config import (  # noqa: E402
    DEFAULT_TASK_ID_KEY,
    FULLY_ASYNC,
    GROUP_SIZE,
    OWN_STATE_FILE,
    SKYRL,
    SKYRL_SETTING,
    kept_advantage_factors,
    kept_loss_problem,
    resolved_plan,
    skyrl_planned_epochs,
)
from frontier_rft.integrations.verl.config import VerlSamplerConfig  # noqa: E402
from frontier_rft.integrations.verl.sampler import FrontierSampler  # noqa: E402
from frontier_rft.integrations.verl.task_ids import as_task_ids  # noqa: E402
from frontier_rft.sampling.step_plan import StepPlan  # noqa: E402

__all__ = [
    "FrontierFullyAsyncRayPPOTrainer",
    "FrontierPPOExp",
    "FrontierRayPPOTrainer",
    "SkyRLSampler",
    "check_skyrl_hooks",
    "kept_mini_batches",
    "pick_uid",
    "rollout_rewards",
    "skyrl_task_ids",
    "trainer_class",
]

TESTED = "skyrl 0.3.0"
"""The SkyRL release whose hooks this adapter is tested against (tests_skyrl)."""

# Each hook this adapter overrides or calls, with the leading parameters it relies on, per
# SkyRL trainer class it subclasses.
_HOOKS: dict[str, tuple[str, ...]] = {
    "_build_train_dataloader_and_compute_training_steps": ("self",),
    "handle_dynamic_sampling": ("self", "generator_output", "uids"),
    "postprocess_generator_output": ("self", "generator_output", "uids"),
    "save_checkpoints": ("self",),
    "load_checkpoints": ("self",),
    "_remove_tail_data": ("self", "entries"),
    "convert_to_training_input": ("self", "generator_output", "uids"),
    "_normalize_advantages": ("self", "data", "mini_batch_boundaries"),
}
_ASYNC_HOOKS: dict[str, tuple[str, ...]] = {
    "_build_train_dataloader_and_compute_training_steps": ("self",),
    "_collect_generation_mini_batch": (
        "self",
        "generation_output_group_buffer",
        "all_generators_done",
    ),
    "save_checkpoints": ("self",),
    "load_checkpoints": ("self",),
}


def check_skyrl_hooks(trainer_class: type = RayPPOTrainer) -> None:
    """RuntimeError, one line, when SkyRL's trainer (RayPPOTrainer or FullyAsyncRayPPOTrainer)
    lacks a hook the adapter uses or its parameters changed (a SkyRL release other than the
    tested one)."""
    hooks = _ASYNC_HOOKS if issubclass(trainer_class, FullyAsyncRayPPOTrainer) else _HOOKS
    for name, leading in hooks.items():
        hook = getattr(trainer_class, name, None)
        if hook is None:
            raise RuntimeError(
                f"SkyRL's {trainer_class.__name__} has no {name}: frontier-rft's SkyRL adapter "
                f"is tested on {TESTED}; install it (pip install skyrl==0.3.0)"
            )
        params = tuple(inspect.signature(hook).parameters)[: len(leading)]
        if params != leading:
            raise RuntimeError(
                f"SkyRL's {trainer_class.__name__}.{name} takes ({', '.join(params)}), not "
                f"({', '.join(leading)}): frontier-rft's SkyRL adapter is tested on {TESTED}; "
                "install it (pip install skyrl==0.3.0)"
            )


def skyrl_task_ids(dataset: Any, key: str) -> NDArray[np.int64]:
    """Stable task id of each dataset position: column `key` of SkyRL's training data, or
    the position where the data has no such column and `key` is the default."""
    n = len(dataset)
    frame = getattr(dataset, "dataframe", None)
    columns = list(getattr(frame, "column_names", ()) or ())
    if frame is None or key not in columns:
        if key != DEFAULT_TASK_ID_KEY:
            raise ValueError(
                f"{SKYRL_SETTING}.task_id_key {key!r} is not a column of the training data "
                f"(columns: {sorted(columns)}); name the column of each row's stable id, or "
                f"leave it unset to use the row position"
            )
        return np.arange(n, dtype=np.int64)
    ids = as_task_ids(
        list(frame[key]), key, "row", fix=f"fix column {key!r} or set {SKYRL_SETTING}.task_id_key"
    )
    uniq, counts = np.unique(ids, return_counts=True)
    if uniq.size != ids.size:
        raise ValueError(
            f"column {key!r} repeats {int((counts > 1).sum())} task id(s) (first "
            f"{int(uniq[counts > 1][0])}); give every row a unique id, or set "
            f"{SKYRL_SETTING}.task_id_key to a column that has one"
        )
    return ids


class SkyRLSampler(FrontierSampler):
    """verl's FrontierSampler, its messages naming SkyRL, and one prompt at a time for SkyRL's
    fully-async trainer (`picks`)."""

    trainer_name = "SkyRL"
    reward_range_setting = f"{SKYRL_SETTING}.reward_range"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The fully-async trainer saves checkpoints in a thread while its generation workers
        # draw on the event loop: a draw and a state snapshot must not interleave.
        self._lock = threading.RLock()
        self._replay: list[tuple[int, int]] = []

    def picks(self) -> Iterator[tuple[int, int]]:
        """(position, draw step) of each prompt, one at a time, `len(self)` an epoch: SkyRL's
        fully-async trainer generates one group per prompt. After `replay_unreported`, the
        prompts drawn but not reported come first, then the draws go on."""
        with self._lock:
            self._start_iteration()
            replay, self._replay = self._replay, []
        yield from replay
        while True:
            with self._lock:
                if not self._pending:
                    if self._in_epoch >= self._batches_per_epoch:
                        return
                    self._pending = deque(int(i) for i in self._draw())
                pick = (self._pending.popleft(), self._draws - 1)  # pending: the last draw's
            yield pick

    def replay_unreported(self) -> None:
        """After load_state_dict: `picks` yields again every prompt drawn but not reported
        (oldest draw first), as SkyRL's fully-async trainer regenerates, on resume, what it
        had not trained on; the rest of the last draw (pending) is among them."""
        with self._lock:
            self._replay = [(int(p), step) for step, ids in self._outstanding for p in ids]
            self._pending = deque()

    def pick_rank(self, position: int, draw: int | None) -> tuple[int, int]:
        """Where an unreported pick stands in draw order: (draw step, its index among that
        draw's unreported prompts); (-1, -1) when not outstanding (the report names it)."""
        for step, ids in self._outstanding:
            if step == draw:
                hits = np.flatnonzero(ids == position)
                if hits.size:
                    return step, int(hits[0])
        return -1, -1

    def state_dict(self) -> dict[str, Any]:
        with self._lock:
            return super().state_dict()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_lock", None)  # not picklable; rebuilt by __setstate__
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()


def rollout_rewards(
    generator_output: Any, uids: Sequence[str], step_wise: bool
) -> tuple[list[str], NDArray[np.float64]]:
    """(uid, reward) of each rollout in a SkyRL generator output: token-level rewards summed,
    step-wise trajectories once, with the reward of their last step."""
    rewards = list(generator_output["rewards"])
    uid_list = list(uids)
    if len(rewards) != len(uid_list):
        raise ValueError(f"SkyRL gave {len(rewards)} rewards for {len(uid_list)} uids")
    if step_wise:
        last = generator_output.get("is_last_step")
        if last is None:
            raise ValueError("SkyRL's step-wise output has no is_last_step")
        keep = [i for i, flag in enumerate(last) if flag]
        rewards = [rewards[i] for i in keep]
        uid_list = [uid_list[i] for i in keep]
    values = [float(np.sum(r)) if isinstance(r, list | tuple) else float(r) for r in rewards]
    return uid_list, np.asarray(values, dtype=np.float64)


class _FrontierTrainer(RayPPOTrainer):  # type: ignore[misc]
    """What both frontier-rft SkyRL trainers share: the checks, the sampler, the reports and
    the own state file (module docstring: seams)."""

    _skyrl_trainer: type = RayPPOTrainer
    """The SkyRL trainer whose hooks this class extends (check_skyrl_hooks reads them)."""

    def __init__(
        self,
        *args: Any,
        frontier_config: VerlSamplerConfig,
        selector: Selector | None = None,
        frontier_plan: StepPlan | None = None,
        **kwargs: Any,
    ) -> None:
        check_skyrl_hooks(self._skyrl_trainer)
        cfg = kwargs["cfg"] if "cfg" in kwargs else args[0]
        batch = cfg.trainer.train_batch_size
        if frontier_config.batch_size != batch:
            raise ValueError(
                f"the frontier config's batch_size {frontier_config.batch_size} is not SkyRL's "
                f"trainer.train_batch_size {batch}; build it with skyrl_sampler_config"
            )
        plan = frontier_plan or resolved_plan(  # unless the entrypoint decided it
            frontier_config,
            fully_async=self._skyrl_trainer is FullyAsyncRayPPOTrainer,
            dynamic_sampling=cfg.trainer.algorithm.dynamic_sampling.type,
            selector=type(selector) if selector is not None else None,
            epochs=skyrl_planned_epochs(
                cfg.trainer.epochs,
                cfg.trainer.max_training_steps,
                cfg.trainer.train_batch_size,
                dataset_rows(kwargs.get("train_dataset", args[3] if len(args) > 3 else None)),
            ),
            policy_loss_type=cfg.trainer.algorithm.policy_loss_type,
            advantage_estimator=cfg.trainer.algorithm.advantage_estimator,
            group_size=cfg.generator.n_samples_per_prompt,
        )
        if plan.shape().prompts != batch:
            raise ValueError(
                f"the plan's {plan.shape().prompts} prompts a step are not SkyRL's "
                f"trainer.train_batch_size {batch}; build it with skyrl_sampler_config"
            )
        frontier_config = dataclasses.replace(frontier_config, rollouts=plan.rollouts)
        if self._skyrl_trainer is FullyAsyncRayPPOTrainer or (
            cfg.trainer.algorithm.dynamic_sampling.type is not None
        ):  # groups reported in parts: the default shadows are dropped, set ones refused
            frontier_config = frontier_config.without_default_shadows()
        self.frontier_plan = plan
        """The run's step, decided once: its rollouts (kept or full) and rows, which the sampler
        holds too and every kept step reads."""
        self._frontier_refuse(cfg, frontier_config)
        frontier_config.shadow_configs(cfg.generator.n_samples_per_prompt, GROUP_SIZE)
        # Read by _build_train_dataloader_and_compute_training_steps, which SkyRL's
        # __init__ calls.
        self.frontier_config = frontier_config
        self._frontier_selector = selector
        self.frontier_sampler: SkyRLSampler | None = None
        self._frontier_prompts: list[tuple[int, int]] = []  # a kept step's prompts' rows
        super().__init__(*args, **kwargs)

    def _frontier_refuse(self, cfg: Any, config: VerlSamplerConfig) -> None:
        """ValueError, one line, for settings this trainer cannot honour."""
        dynamic_sampling = cfg.trainer.algorithm.dynamic_sampling.type is not None
        if config.shadows and dynamic_sampling:
            raise ValueError(message(SKYRL, "shadows+filter"))
        if self.frontier_plan.rollouts == "kept" and dynamic_sampling:
            raise ValueError(message(SKYRL, "kept+filter"))
        loss = kept_loss_problem(
            cfg.trainer.algorithm.policy_loss_type,
            config.loss_scale,
            cfg.trainer.algorithm.advantage_estimator,
        )
        if self.frontier_plan.rollouts == "kept" and loss is not None:
            raise ValueError(loss)

    def _frontier_new_sampler(self) -> SkyRLSampler:
        """The sampler over SkyRL's training data (the selector's own, or the config's)."""
        if self.train_dataset is None:
            raise ValueError(
                "the frontier-rft SkyRL trainer selects from a training dataset: set "
                "data.train_data"
            )
        config = self.frontier_config
        sampler = SkyRLSampler(
            self.train_dataset,
            config=config,
            selector=self._frontier_selector,
            task_ids=skyrl_task_ids(self.train_dataset, config.task_id_key),
            plan=self.frontier_plan,
        )
        sampler.logs_to_trainer = config.metrics_jsonl is None  # SkyRL's tracker logs them
        self.frontier_sampler = sampler
        return sampler

    def _frontier_report(self, uids: Sequence[str], rewards: NDArray[np.float64]) -> None:
        """Each rollout's reward (one per uid) to the selector, with its stable task id (and
        its draw step, where the uid carries it: `pick_uid`)."""
        sampler = self.frontier_sampler
        assert sampler is not None  # built in __init__
        positions = _positions(uids, sampler.task_ids.size)
        steps = [_draw_of(uid) for uid in uids]
        known = None if any(s is None for s in steps) else steps
        sampler.report(sampler.task_ids[positions], rewards, np.asarray(uids), known)
        if sampler.logs_to_trainer:
            self.all_metrics.update(sampler.log_metrics())

    # ------------------------------------------------------------------ state
    def save_checkpoints(self) -> str:
        folder: str = super().save_checkpoints()
        assert self.frontier_sampler is not None
        # Written after SkyRL's own files: SkyRL's data.pt holds the same state (not with the
        # fully-async trainer), and SkyRL only warns when it cannot write or read it. Through
        # SkyRL's io, as data.pt: ckpt_path may be a cloud path.
        with skyrl_io.open_file(os.path.join(folder, OWN_STATE_FILE), "wb") as f:
            torch.save(self.frontier_sampler.state_dict(), f)
        return folder

    def load_checkpoints(self) -> Any:
        # (step, path) from RayPPOTrainer; the fully-async trainer returns more after them.
        loaded = super().load_checkpoints()
        step, path = loaded[0], loaded[1]
        assert self.frontier_sampler is not None
        own = os.path.join(path, OWN_STATE_FILE) if path else None
        if own is not None and skyrl_io.exists(own):
            with skyrl_io.open_file(own, "rb") as f:
                self.frontier_sampler.load_state_dict(torch.load(f, weights_only=False))
        elif step > 0 and self._skyrl_trainer is FullyAsyncRayPPOTrainer:
            raise ValueError(
                f"SkyRL resumes from {path}, which has no {OWN_STATE_FILE}: its fully-async "
                "trainer keeps no dataloader state, so the selector cannot continue; resume "
                "from a checkpoint this adapter wrote, or set trainer.resume_mode=none"
            )
        return loaded


class FrontierRayPPOTrainer(_FrontierTrainer):
    """RayPPOTrainer whose prompts a frontier-rft selector picks (module docstring: seams)."""

    # ------------------------------------------------------------------ selection
    def _build_train_dataloader_and_compute_training_steps(self) -> None:
        sampler = self._frontier_new_sampler()
        dataset = self.train_dataset
        workers = self.cfg.data.dataloader.num_workers
        # As SkyRL's build_dataloader, with the selector's batches instead of a shuffle.
        self.train_dataloader = StatefulDataLoader(
            dataset,
            batch_sampler=sampler.batches(),
            collate_fn=dataset.collate_fn,
            num_workers=workers,
            persistent_workers=self.cfg.data.dataloader.persistent_workers,
            multiprocessing_context="spawn" if workers > 0 else None,
        )
        self.total_training_steps = len(self.train_dataloader) * self.cfg.trainer.epochs
        if self.cfg.trainer.max_training_steps is not None:
            self.total_training_steps = min(
                self.total_training_steps, self.cfg.trainer.max_training_steps
            )

    # ------------------------------------------------------------- rollouts: kept
    def _remove_tail_data(self, entries: Any) -> Any:
        # SkyRL cuts a batch to a multiple of its data-parallel stride; with rollouts: kept
        # that would drop prompts the selector kept (K is anything from 1 to the batch size),
        # so every kept prompt is generated and SkyRL's loss-masked padding evens the shards.
        if self.frontier_plan.rollouts == "kept":
            return entries
        return super()._remove_tail_data(entries)

    def convert_to_training_input(
        self, generator_output: Any, uids: Any, *args: Any, **kwargs: Any
    ) -> Any:
        if self.frontier_plan.rollouts != "kept":
            return super().convert_to_training_input(generator_output, uids, *args, **kwargs)
        prompts = compute_prompt_boundaries(list(uids))
        trainer = self.cfg.trainer
        sizes = ("train_batch_size", "policy_mini_batch_size", "critic_mini_batch_size")
        saved = {name: getattr(trainer, name) for name in sizes}
        # SkyRL's mini-batch cut asserts a batch of train_batch_size prompts: it cuts these
        # K prompts as one mini-batch, and kept_mini_batches recuts them below.
        for name in sizes:
            setattr(trainer, name, len(prompts))
        try:
            data = super().convert_to_training_input(generator_output, uids, *args, **kwargs)
        finally:
            for name, value in saved.items():
                setattr(trainer, name, value)
        for model in ("policy", "critic"):
            key = f"{model}_mini_batch_boundaries"
            if key in data.metadata:
                data.metadata[key] = kept_mini_batches(prompts, saved[f"{model}_mini_batch_size"])
        self._frontier_prompts = prompts
        return data

    def _normalize_advantages(
        self, data: Any, mini_batch_boundaries: Any, *args: Any, **kwargs: Any
    ) -> Any:
        # SkyRL puts its loss reduction on each mini-batch's advantages (the policy loss is
        # their sum); loss_scale batch scales each by its share of a full mini-batch.
        data = super()._normalize_advantages(data, mini_batch_boundaries, *args, **kwargs)
        if self.frontier_plan.rollouts != "kept":
            return data
        starts = [start for start, _ in self._frontier_prompts]
        counts = [sum(1 for s in starts if lo <= s < hi) for lo, hi in mini_batch_boundaries]
        factors = kept_advantage_factors(
            counts, self.cfg.trainer.policy_mini_batch_size, self.frontier_config.loss_scale
        )
        prefix = self.frontier_config.metrics_prefix + "fewer_rollouts/"
        self.all_metrics.update(
            {
                prefix + "trained_rows": float(mini_batch_boundaries[-1][1]),
                prefix + "loss_scale": sum(factors) / len(factors),
            }
        )
        advantages = data["advantages"]
        for (lo, hi), factor in zip(mini_batch_boundaries, factors, strict=True):
            if factor != 1.0:
                advantages[lo:hi] = advantages[lo:hi] * factor
        data["advantages"] = advantages
        return data

    # ------------------------------------------------------------------ feedback
    def handle_dynamic_sampling(
        self, generator_output: Any, uids: Any, *args: Any, **kwargs: Any
    ) -> Any:
        # Every sampling round passes here, before SkyRL drops its zero-variance groups.
        self._frontier_report_output(generator_output, uids)
        return super().handle_dynamic_sampling(generator_output, uids, *args, **kwargs)

    def postprocess_generator_output(
        self, generator_output: Any, uids: Any, *args: Any, **kwargs: Any
    ) -> Any:
        # With dynamic sampling on, these rollouts were reported in handle_dynamic_sampling.
        # The rest of the signature (it changed twice in 2026) is passed through.
        if self.cfg.trainer.algorithm.dynamic_sampling.type is None:
            self._frontier_report_output(generator_output, uids)
        return super().postprocess_generator_output(generator_output, uids, *args, **kwargs)

    def _frontier_report_output(self, generator_output: Any, uids: Any) -> None:
        uid_list, rewards = rollout_rewards(
            generator_output, uids, bool(self.cfg.generator.step_wise_trajectories)
        )
        self._frontier_report(uid_list, rewards)


def kept_mini_batches(
    prompts: Sequence[tuple[int, int]], mini_batch_size: int
) -> list[tuple[int, int]]:
    """(start, end) rows of each mini-batch of a step's K kept prompts (`prompts`: each
    prompt's rows, in order): mini_batch_size prompts each, the last one shorter, as SkyRL
    cuts a full batch into train_batch_size / mini_batch_size."""
    return [
        (prompts[i][0], prompts[min(i + mini_batch_size, len(prompts)) - 1][1])
        for i in range(0, len(prompts), mini_batch_size)
    ]


def _positions(uids: Sequence[str], n: int) -> NDArray[np.int64]:
    """Dataset positions of SkyRL's prompt uids (PromptDataset: `str(position)`; the
    fully-async trainer's: `position@draw`, see `pick_uid`)."""
    out = np.empty(len(uids), dtype=np.int64)
    for i, uid in enumerate(uids):
        text = str(uid).split(_DRAW_MARK, 1)[0]
        if not text.isdigit() or int(text) >= n:
            raise ValueError(
                f"SkyRL prompt uid {str(uid)[:40]!r} is not a row position of the training "
                "data: the adapter needs SkyRL's PromptDataset (uid = str(row)) or a dataset "
                "that does the same"
            )
        out[i] = int(text)
    return out


_DRAW_MARK = "@"


def _draw_of(uid: str) -> int | None:
    """The draw step a `pick_uid` carries; None for SkyRL's own uids."""
    _, mark, draw = str(uid).partition(_DRAW_MARK)
    return int(draw) if mark and draw.isdigit() else None


def pick_uid(position: int, draw: int) -> str:
    """The uid of a prompt the fully-async trainer generates: its row and its draw step.
    SkyRL's fully-async trainer never generates a uid twice in an epoch (it skips consumed
    uids, and asserts on a repeat); the selector may pick a row again within SkyRL's epoch
    (GRESO's walk wraps around), so the draw tells the two picks apart."""
    return f"{position}{_DRAW_MARK}{draw}"


class _PickedPrompts(Dataset[Any]):
    """SkyRL's dataset read at `(position, draw)` picks: its rows, each uid `pick_uid`."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, pick: tuple[int, int]) -> tuple[Any, tuple[int, int]]:
        return self.dataset[pick[0]], pick

    def collate_fn(self, items: list[tuple[Any, tuple[int, int]]]) -> Any:
        """The dataset's collate_fn, each row's uid replaced by its pick's."""
        rows = self.dataset.collate_fn([item for item, _ in items])
        for row, (_, (position, draw)) in zip(rows, items, strict=True):
            row["uid"] = pick_uid(position, draw)
        return rows


class _OnePickBatches(Sampler[list[tuple[int, int]]]):
    """A SkyRLSampler's `picks` as a batch sampler of one prompt each. No state_dict on
    purpose: SkyRL's fully-async trainer resets its dataloader to the initial state at every
    epoch end and on resume, which would reset the selector; its state is the own file's."""

    def __init__(self, sampler: SkyRLSampler) -> None:
        self.sampler = sampler

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        return ([pick] for pick in self.sampler.picks())


class FrontierFullyAsyncRayPPOTrainer(_FrontierTrainer, FullyAsyncRayPPOTrainer):  # type: ignore[misc]
    """SkyRL's FullyAsyncRayPPOTrainer whose prompts a frontier-rft selector picks.

    - selection: its dataloader yields one prompt at a time (SkyRL's generation workers each
      pull one and generate its group), `selector.select(train_batch_size)` every
      train_batch_size prompts; uids are `pick_uid` (row and draw step);
    - feedback: `_collect_generation_mini_batch` hands over every group the trainer takes
      from the generation buffer, in the order generation finished, the groups SkyRL drops
      under `fully_async.sample_full_batch` included: each is reported once. The generation
      workers draw ahead of training (up to `max_staleness_steps`), so a group's rewards
      arrive after later draws: the sampler matches them to their draw and counts the lag
      (`verl/max_feedback_lag`);
    - state: only in the own file (SkyRL resets this trainer's dataloader at every epoch end
      and on resume). On resume the prompts drawn but not reported (generating or buffered at
      the checkpoint, which SkyRL regenerates) are yielded again first, then the draws go on.
    """

    _skyrl_trainer = FullyAsyncRayPPOTrainer

    def _frontier_refuse(self, cfg: Any, config: VerlSamplerConfig) -> None:
        super()._frontier_refuse(cfg, config)
        if self.frontier_plan.rollouts == "kept":
            raise ValueError(message(SKYRL, "kept+async"))
        if config.shadows:
            raise ValueError(message(SKYRL, "shadows+async"))

    def _build_train_dataloader_and_compute_training_steps(self) -> None:
        sampler = self._frontier_new_sampler()
        if sampler.selector.allows_repeats:
            raise ValueError(
                f"selector {sampler.selector.name!r} may pick a prompt twice in one batch; "
                f"SkyRL's fully-async trainer ({FULLY_ASYNC}) generates each prompt uid once: "
                "use a selector that picks distinct prompts"
            )
        picked = _PickedPrompts(self.train_dataset)
        workers = self.cfg.data.dataloader.num_workers
        # As SkyRL's build_dataloader(is_fully_async=True): one prompt a batch.
        self.train_dataloader = StatefulDataLoader(
            picked,
            batch_sampler=_OnePickBatches(sampler),
            collate_fn=picked.collate_fn,
            num_workers=workers,
            persistent_workers=self.cfg.data.dataloader.persistent_workers,
            multiprocessing_context="spawn" if workers > 0 else None,
        )
        # As SkyRL's: mini-batches of train_batch_size prompts (SkyRL asserts they are equal).
        self.num_steps_per_epoch = len(self.train_dataloader) // self.mini_batch_size
        self.total_training_steps = self.num_steps_per_epoch * self.cfg.trainer.epochs
        if self.cfg.trainer.max_training_steps is not None:
            self.total_training_steps = min(
                self.total_training_steps, self.cfg.trainer.max_training_steps
            )

    async def _collect_generation_mini_batch(
        self, generation_output_group_buffer: Any, all_generators_done: Any, *args: Any, **kw: Any
    ) -> Any:
        kept, dropped, exhausted = await super()._collect_generation_mini_batch(
            generation_output_group_buffer, all_generators_done, *args, **kw
        )
        # Every group leaves the buffer here once: trained, dropped (sample_full_batch), or
        # discarded with an epoch's last partial mini-batch.
        step_wise = bool(self.cfg.generator.step_wise_trajectories)
        sampler = self.frontier_sampler
        assert sampler is not None  # built in __init__
        # In draw order, as the synchronous trainer reports them: a step's groups reach the
        # selector in one order whatever order generation finished them in.
        groups = sorted(
            [*kept, *dropped],
            key=lambda g: sampler.pick_rank(
                _positions([g.uid], sampler.task_ids.size)[0], _draw_of(g.uid)
            ),
        )
        uids: list[str] = []
        rewards: list[NDArray[np.float64]] = []
        for group in groups:
            rows = len(group.generator_output["response_ids"])
            group_uids, group_rewards = rollout_rewards(
                group.generator_output, [group.uid] * rows, step_wise
            )
            uids += group_uids
            rewards.append(group_rewards)
        if uids:
            self._frontier_report(uids, np.concatenate(rewards))
        return kept, dropped, exhausted

    def load_checkpoints(self) -> Any:
        loaded = super().load_checkpoints()
        if loaded[0] > 0:
            assert self.frontier_sampler is not None
            self.frontier_sampler.replay_unreported()
        return loaded


def trainer_class(cfg: Any) -> type[_FrontierTrainer]:
    """The frontier-rft trainer for a SkyRL config: the fully-async one when
    `trainer.fully_async.enabled` (the key SkyRL's own fully-async example reads)."""
    if bool(cfg.trainer.fully_async.enabled):
        return FrontierFullyAsyncRayPPOTrainer
    return FrontierRayPPOTrainer


class FrontierPPOExp(BasePPOExp):  # type: ignore[misc]
    """SkyRL's experiment, its trainer a FrontierRayPPOTrainer, or with
    `trainer.fully_async.enabled` a FrontierFullyAsyncRayPPOTrainer (SkyRL's get_trainer
    pattern)."""

    def __init__(
        self, cfg: Any, frontier_config: VerlSamplerConfig, plan: StepPlan | None = None
    ) -> None:
        self.frontier_config = frontier_config
        self.frontier_plan = plan
        """The run's step as the entrypoint decided it (None: the trainer decides it)."""
        super().__init__(cfg)

    def get_trainer(
        self,
        cfg: Any,
        tracker: Any,
        tokenizer: Any,
        train_dataset: Any,
        eval_dataset: Any,
        inference_engine_client: Any,
        generator: Any,
        colocate_pg: Any,
    ) -> _FrontierTrainer:
        return trainer_class(cfg)(
            cfg=cfg,
            tracker=tracker,
            tokenizer=tokenizer,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            inference_engine_client=inference_engine_client,
            generator=generator,
            colocate_pg=colocate_pg,
            frontier_config=self.frontier_config,
            frontier_plan=self.frontier_plan,
        )
