"""SkyRL's `RayPPOTrainer` with a frontier-rft selector choosing its prompts (skyrl 0.3).

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

import inspect
import os
import sys
import typing
from collections.abc import Sequence
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
from skyrl.train.trainer import RayPPOTrainer  # noqa: E402
from torchdata.stateful_dataloader import StatefulDataLoader  # noqa: E402

from frontier_rft.core.selector import Selector  # noqa: E402
from frontier_rft.integrations.skyrl.config import (  # noqa: E402
    DEFAULT_TASK_ID_KEY,
    GROUP_SIZE,
    KEPT_WITH_DYNAMIC_SAMPLING,
    OWN_STATE_FILE,
    SHADOWS_WITH_DYNAMIC_SAMPLING,
    SKYRL_SETTING,
)
from frontier_rft.integrations.verl.config import VerlSamplerConfig  # noqa: E402
from frontier_rft.integrations.verl.sampler import FrontierSampler, as_task_ids  # noqa: E402

__all__ = [
    "FrontierPPOExp",
    "FrontierRayPPOTrainer",
    "SkyRLSampler",
    "check_skyrl_hooks",
    "kept_mini_batches",
    "rollout_rewards",
    "skyrl_task_ids",
]

TESTED = "skyrl 0.3.0"
"""The SkyRL release whose hooks this adapter is tested against (tests_skyrl)."""

# Each hook this adapter overrides or calls, with the leading parameters it relies on.
_HOOKS: dict[str, tuple[str, ...]] = {
    "_build_train_dataloader_and_compute_training_steps": ("self",),
    "handle_dynamic_sampling": ("self", "generator_output", "uids"),
    "postprocess_generator_output": ("self", "generator_output", "uids"),
    "save_checkpoints": ("self",),
    "load_checkpoints": ("self",),
    "_remove_tail_data": ("self", "entries"),
    "convert_to_training_input": ("self", "generator_output", "uids"),
}


def check_skyrl_hooks(trainer_class: type = RayPPOTrainer) -> None:
    """RuntimeError, one line, when SkyRL's trainer lacks a hook the adapter uses or its
    parameters changed (a SkyRL release other than the tested one)."""
    for name, leading in _HOOKS.items():
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
    """verl's FrontierSampler, its messages naming SkyRL."""

    trainer_name = "SkyRL"
    reward_range_setting = f"{SKYRL_SETTING}.reward_range"


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


class FrontierRayPPOTrainer(RayPPOTrainer):  # type: ignore[misc]
    """RayPPOTrainer whose prompts a frontier-rft selector picks (module docstring: seams)."""

    def __init__(
        self,
        *args: Any,
        frontier_config: VerlSamplerConfig,
        selector: Selector | None = None,
        **kwargs: Any,
    ) -> None:
        check_skyrl_hooks()
        cfg = kwargs["cfg"] if "cfg" in kwargs else args[0]
        batch = cfg.trainer.train_batch_size
        if frontier_config.batch_size != batch:
            raise ValueError(
                f"the frontier config's batch_size {frontier_config.batch_size} is not SkyRL's "
                f"trainer.train_batch_size {batch}; build it with skyrl_sampler_config"
            )
        dynamic_sampling = cfg.trainer.algorithm.dynamic_sampling.type is not None
        if frontier_config.shadows and dynamic_sampling:
            raise ValueError(SHADOWS_WITH_DYNAMIC_SAMPLING)
        if frontier_config.rollouts == "kept" and dynamic_sampling:
            raise ValueError(KEPT_WITH_DYNAMIC_SAMPLING)
        frontier_config.shadow_configs(cfg.generator.n_samples_per_prompt, GROUP_SIZE)
        # Read by _build_train_dataloader_and_compute_training_steps, which SkyRL's
        # __init__ calls.
        self.frontier_config = frontier_config
        self._frontier_selector = selector
        self.frontier_sampler: SkyRLSampler | None = None
        super().__init__(*args, **kwargs)

    # ------------------------------------------------------------------ selection
    def _build_train_dataloader_and_compute_training_steps(self) -> None:
        if self.train_dataset is None:
            raise ValueError(
                "the frontier-rft SkyRL trainer selects from a training dataset: set "
                "data.train_data"
            )
        dataset = self.train_dataset
        config = self.frontier_config
        sampler = SkyRLSampler(
            dataset,
            config=config,
            selector=self._frontier_selector,
            task_ids=skyrl_task_ids(dataset, config.task_id_key),
        )
        sampler.logs_to_trainer = config.metrics_jsonl is None  # SkyRL's tracker logs them
        self.frontier_sampler = sampler
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
        if self.frontier_config.rollouts == "kept":
            return entries
        return super()._remove_tail_data(entries)

    def convert_to_training_input(
        self, generator_output: Any, uids: Any, *args: Any, **kwargs: Any
    ) -> Any:
        if self.frontier_config.rollouts != "kept":
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
        return data

    # ------------------------------------------------------------------ feedback
    def handle_dynamic_sampling(
        self, generator_output: Any, uids: Any, *args: Any, **kwargs: Any
    ) -> Any:
        # Every sampling round passes here, before SkyRL drops its zero-variance groups.
        self._frontier_report(generator_output, uids)
        return super().handle_dynamic_sampling(generator_output, uids, *args, **kwargs)

    def postprocess_generator_output(
        self, generator_output: Any, uids: Any, *args: Any, **kwargs: Any
    ) -> Any:
        # With dynamic sampling on, these rollouts were reported in handle_dynamic_sampling.
        # The rest of the signature (it changed twice in 2026) is passed through.
        if self.cfg.trainer.algorithm.dynamic_sampling.type is None:
            self._frontier_report(generator_output, uids)
        return super().postprocess_generator_output(generator_output, uids, *args, **kwargs)

    def _frontier_report(self, generator_output: Any, uids: Any) -> None:
        sampler = self.frontier_sampler
        assert sampler is not None  # built in __init__
        uid_list, rewards = rollout_rewards(
            generator_output, uids, bool(self.cfg.generator.step_wise_trajectories)
        )
        positions = _positions(uid_list, sampler.task_ids.size)
        sampler.report(sampler.task_ids[positions], rewards, np.asarray(uid_list))
        if sampler.logs_to_trainer:
            self.all_metrics.update(sampler.log_metrics())

    # ------------------------------------------------------------------ state
    def save_checkpoints(self) -> str:
        folder: str = super().save_checkpoints()
        assert self.frontier_sampler is not None
        # Written after SkyRL's own files: SkyRL's data.pt holds the same state, and SkyRL only
        # warns when it cannot write or read it. Through SkyRL's io, as data.pt: ckpt_path may
        # be a cloud path.
        with skyrl_io.open_file(os.path.join(folder, OWN_STATE_FILE), "wb") as f:
            torch.save(self.frontier_sampler.state_dict(), f)
        return folder

    def load_checkpoints(self) -> tuple[int, str | None]:
        step, path = super().load_checkpoints()
        assert self.frontier_sampler is not None
        own = os.path.join(path, OWN_STATE_FILE) if path else None
        if own is not None and skyrl_io.exists(own):
            with skyrl_io.open_file(own, "rb") as f:
                self.frontier_sampler.load_state_dict(torch.load(f, weights_only=False))
        return step, path


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
    """Dataset positions of SkyRL's prompt uids (PromptDataset: `str(position)`)."""
    out = np.empty(len(uids), dtype=np.int64)
    for i, uid in enumerate(uids):
        text = str(uid)
        if not text.isdigit() or int(text) >= n:
            raise ValueError(
                f"SkyRL prompt uid {text[:40]!r} is not a row position of the training data: "
                "the adapter needs SkyRL's PromptDataset (uid = str(row)) or a dataset that "
                "does the same"
            )
        out[i] = int(text)
    return out


class FrontierPPOExp(BasePPOExp):  # type: ignore[misc]
    """SkyRL's experiment, its trainer a FrontierRayPPOTrainer (SkyRL's get_trainer pattern)."""

    def __init__(self, cfg: Any, frontier_config: VerlSamplerConfig) -> None:
        self.frontier_config = frontier_config
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
    ) -> FrontierRayPPOTrainer:
        return FrontierRayPPOTrainer(
            cfg=cfg,
            tracker=tracker,
            tokenizer=tokenizer,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            inference_engine_client=inference_engine_client,
            generator=generator,
            colocate_pg=colocate_pg,
            frontier_config=self.frontier_config,
        )
