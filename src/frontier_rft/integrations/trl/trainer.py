"""TRL adapter: GRPOTrainer / RLOOTrainer whose prompts come from a frontier-rft selector.

```python
from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer

trainer = FrontierGRPOTrainer(model=..., reward_funcs=[...], args=GRPOConfig(...),
                              train_dataset=ds, frontier=FrontierConfig(selector="bots"))
trainer.train()                                  # or train(resume_from_checkpoint=True)
```

The adapter builds the selector from `FrontierConfig` (a name, its config, the dataset's
prompt text and any metadata columns, and, when the selector reads task features, the
policy's own self-embeddings), or takes a ready one: `selector=make_selector(...)`.

What it changes, and where:

- Sampler (`_get_train_sampler`): `FrontierRepeatSampler` keeps TRL's RepeatSampler layout
  and asks the selector for each chunk of prompts (see sampler.py).
- Feedback: each reward function is wrapped (a reward model gets a forward hook); after
  the training step that generated, the rewards are combined as TRL combines them
  (weighted nansum), gathered across processes with their task ids and sent to
  `selector.update` as one Feedback per generation round. TRL reads the next batch before
  these rewards exist; the selector folds them in at the select after that (a lag of one
  round or more, shown in `curriculum/trl/feedback_lag`).
- Checkpoints (`_save_checkpoint`, the seam TRL uses for its own extra state): the
  selector and sampler state are written into each checkpoint directory;
  `train(resume_from_checkpoint=...)` restores them before training resumes.
- The run's reward functions and `reward_weights` (TRL keeps the weights only in its pickled
  `training_args.bin`) are recorded at the start of `train()` in the output dir's
  `frontier_rewards.json`, where `frontier shadow replay` weighs TRL's completions table's
  reward columns by them (shadow/run_rewards.py).
- Logs (`log`): a summary of the selector metrics, prefixed `curriculum/`, joins TRL's logs
  (so TensorBoard, W&B or any `report_to` backend gets them; `metrics_verbosity: all` sends
  every key); the JSONL file gets every key. Each evaluation's log (TRL's `eval_reward`,
  `eval_rewards/<func>/mean`, ...) also carries `curriculum/trl/rollouts_delivered` and
  `curriculum/tasks/distinct_trained`, the rollouts and distinct prompts trained so far,
  and goes into the JSONL file as well: what `frontier ab compare` reads.
- With `FrontierConfig(dynamic_sampling=...)` (GRPO only): `_generate_and_score_completions`
  runs each generation step as DAPO's rounds around the selector (step_driver.py); the train
  sampler then only paces TRL's loop (`StepTicks`) and the rewards reach the selector round
  by round, inside the step.
- `rollouts: auto` (the default) is `kept` where the settings allow it (a selector that walks
  the data, GRPO, no dynamic sampling or shadows, a loss TRL lets us rescale) and `full`
  otherwise, with a warning naming why; `trainer.frontier_config` holds the choice.
- With `FrontierConfig(rollouts="kept")` or `screen=k` (GRPO only): the same seam runs each
  generation step through `FewerRollouts` (step_driver.py): uniform's prompts for the step, only
  the kept (and, screening, the mixed) ones generated (through vLLM too), and only their
  rows trained (layout.py); TRL's schedule is unchanged.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray
from torch import nn
from transformers import TrainerCallback
from trl.trainer import grpo_trainer, rloo_trainer
from trl.trainer.utils import is_async_callable

from frontier_rft.core.feedback import Feedback, to_unit_range
from frontier_rft.core.selector import Selector
from frontier_rft.features.derive import relabel_evidence
from frontier_rft.integrations.embeddings import sharded_self_embeddings
from frontier_rft.integrations.plan import (
    auto_log,
    dataset_rows,
    default_shadows_line,
    kept_line,
    message,
)
from frontier_rft.integrations.pool import (
    build_pool,
    evidence_summary,
    prompt_text,
)
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.currency import trl_currency_line
from frontier_rft.integrations.trl.driver_kinds import COUNTERS
from frontier_rft.integrations.trl.dynamic_config import (
    IMAGE_COLUMNS,
    TESTED_TRL,
    image_problems,
    trl_problems,
)
from frontier_rft.integrations.trl.fewer_config import (
    TRL,
    auto_rollouts,
    fewer_problems,
)
from frontier_rft.integrations.trl.fewer_steps import (
    EndAtPasses,
    PassClock,
    follow_passes,
    planned_passes,
)
from frontier_rft.integrations.trl.preflight import (
    data_problems,
    local_model_path,
    pool_problems,
    reward_range_problems,
)
from frontier_rft.integrations.trl.rewards import (
    RewardTap,
    check_combined_rewards,
    combine_rewards,
)
from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler, StepTicks
from frontier_rft.integrations.trl.seam_check import check_screenable, check_wrappable, trl_version
from frontier_rft.integrations.trl.state import (
    FEWER_DEFAULTS,
    check_fewer_settings,
    load_state,
    load_step_sampler,
    save_state,
    save_step_sampler,
    state_digest,
)
from frontier_rft.integrations.trl.step_driver import AdapterSeam, StepDriver
from frontier_rft.metrics_log import JsonlLogger, curriculum_metrics
from frontier_rft.sampling.dynamic_sampling import DynamicSampling
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.step import Sampler
from frontier_rft.shadow.live import RunShadows
from frontier_rft.shadow.run_rewards import write_run_rewards

__all__ = ["FrontierGRPOTrainer", "FrontierRLOOTrainer", "FrontierTrainerMixin", "task_rows"]

_log = logging.getLogger(__name__)


def _with_task_ids(dataset: Any, column: str) -> Any:
    """The dataset with a `column` of row numbers added when it has none (a datasets.Dataset)."""
    names = getattr(dataset, "column_names", None)
    if names is None or column in names or not hasattr(dataset, "add_column"):
        return dataset
    return dataset.add_column(column, list(range(len(dataset))))


def _check_before_model(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    config: FrontierConfig,
    selector: Selector | None,
) -> tuple[Any, ...]:
    """What TRL would find only after loading the model (or at the first step): a mistyped
    local model path; the metadata the selector `config` names cannot run without; several
    reward functions without the reward_range the selector needs; the columns TRL, the
    selector's pool (none for a ready `selector`) and the reward functions read. Returns
    `args` (and updates `kwargs`) with a `~` in the model path expanded."""
    if isinstance(kwargs.get("model"), str):
        kwargs["model"] = local_model_path(kwargs["model"], "model")
    elif args and isinstance(args[0], str):
        args = (local_model_path(args[0], "model"), *args[1:])
    funcs = kwargs.get("reward_funcs", args[1] if len(args) > 1 else None)
    funcs = funcs if isinstance(funcs, list) else [funcs]
    training = _training_args(args, kwargs)
    names_of = [getattr(f, "__name__", type(f).__name__) for f in funcs]
    problems = [] if selector is not None else pool_problems(config)
    problems += reward_range_problems(
        config, names_of, getattr(training, "reward_weights", None), selector
    )
    if problems:
        raise ValueError("; ".join(problems))
    dataset = kwargs.get("train_dataset")
    names = getattr(dataset, "column_names", None)
    if not isinstance(names, list):
        return args  # not a map-style Dataset: task_rows says so
    rewards = {f.__name__: f for f in funcs if inspect.isfunction(f)}
    problems = data_problems(names, None if selector is not None else config, None, rewards)
    if problems:
        raise ValueError(f"train_dataset (columns: {', '.join(names)}): {'; '.join(problems)}")
    return args


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def task_rows(dataset: Any, column: str, num_tasks: int) -> NDArray[np.int64]:
    """Row of each task id: validates that `column` holds a permutation of 0..num_tasks-1."""
    names = getattr(dataset, "column_names", None)
    if names is None or not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
        raise ValueError(
            "the frontier-rft TRL adapter needs a map-style datasets.Dataset as train_dataset "
            f"(got {type(dataset).__name__}); streaming datasets cannot be indexed by task"
        )
    if len(dataset) == 0:
        raise ValueError("train_dataset is empty: give the trainer at least one prompt")
    if column not in names:
        raise ValueError(
            f"train_dataset has no {column!r} column (columns: {names}); add the TaskPool index "
            f"of each row, e.g. ds.map(lambda _, i: {{{column!r}: i}}, with_indices=True), set "
            "FrontierConfig(task_id_column=...), or let the adapter build the selector "
            "(FrontierConfig(selector=NAME), no selector=...)"
        )
    raw = np.asarray(dataset[column])
    if raw.ndim != 1 or raw.dtype.kind not in "iu":
        raise ValueError(
            f"column {column!r} must hold the TaskPool index (an integer) of each row, got "
            f"dtype {raw.dtype}; if it is your own id column, rename it or set "
            "FrontierConfig(task_id_column=...) to an unused name"
        )
    ids = raw.astype(np.int64)
    if ids.shape[0] != num_tasks:
        raise ValueError(
            f"train_dataset has {ids.shape[0]} rows but the selector's TaskPool has {num_tasks} "
            f"tasks; the {column!r} column must hold each pool id exactly once"
        )
    outside = (ids < 0) | (ids >= num_tasks)
    if outside.any():
        raise ValueError(
            f"column {column!r} has id {int(ids[np.argmax(outside)])} outside [0, {num_tasks})"
        )
    rows = np.full(num_tasks, -1, dtype=np.int64)
    rows[ids] = np.arange(num_tasks, dtype=np.int64)
    if (rows < 0).any():
        counts = np.bincount(ids, minlength=num_tasks)
        raise ValueError(
            f"column {column!r} must be a permutation of 0..{num_tasks - 1}: id "
            f"{int(np.argmax(counts > 1))} appears {int(counts.max())} times and id "
            f"{int(np.argmin(counts))} is missing"
        )
    return rows


def _frontier_columns(kwargs: dict[str, Any]) -> list[str]:
    """The train dataset's column names, from the trainer's keyword arguments ([] if none)."""
    return list(getattr(kwargs.get("train_dataset"), "column_names", None) or [])


def _training_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The trainer's GRPOConfig as the caller passed it, by keyword or third (None: none)."""
    return kwargs.get("args", args[2] if len(args) > 2 else None)


class FrontierTrainerMixin:
    """Turns a TRL GRPO-family trainer into one whose prompts a frontier-rft selector picks.

    Put it first in the bases: `class T(FrontierTrainerMixin, GRPOTrainer)`. It relies on
    the trainer attributes GRPOTrainer and RLOOTrainer share: `reward_funcs`,
    `reward_weights`, `num_generations`, `num_iterations`, `args.generation_batch_size`,
    `args.steps_per_generation`.

    Before the model loads it checks the model path, the selector's metadata, `reward_range`
    and the data's columns (`_check_before_model`); `frontier_checked=True` says its caller
    ran those checks on these very arguments already (the `trl.grpo` script: earlier, before
    reading the data, and fuller), so each runs once.
    """

    # Attributes the TRL base class provides.
    args: Any
    model: Any
    state: Any
    accelerator: Any
    train_dataset: Any
    processing_class: Any
    reward_funcs: list[Any]
    reward_weights: Any
    num_generations: int
    num_iterations: int

    def __init__(
        self,
        *args: Any,
        selector: Selector | None = None,
        frontier: FrontierConfig | None = None,
        frontier_checked: bool = False,
        **kwargs: Any,
    ):
        if selector is not None and not isinstance(selector, Selector):
            raise ValueError(
                "selector must be a frontier_rft Selector built with make_selector(name, pool, "
                f"seed=...) or None (built from FrontierConfig), got {type(selector).__name__}"
            )
        config = FrontierConfig() if frontier is None else frontier
        if not isinstance(config, FrontierConfig):
            raise ValueError(f"frontier must be a FrontierConfig, got {type(config).__name__}")
        if selector is not None:
            unused = config.pool_options()
            if unused:
                raise ValueError(
                    f"FrontierConfig {', '.join(unused)} apply when the adapter builds the "
                    "selector; with selector=... put that metadata in its TaskPool instead"
                )
        if not frontier_checked:
            args = _check_before_model(args, kwargs, config, selector)
        if config.rollouts == "auto":
            config = self._frontier_resolve_auto(args, kwargs, config, selector)
        elif config.rollouts == "kept":  # set by hand: say what it does and what it cost
            cls = type(selector) if selector is not None else config.selector_spec.cls
            _log.info(kept_line(TRL, cls))
        spec = config.sampler_spec()  # the one spec: the checks and the step driver read it
        if spec.kind == DynamicSampling.kind:
            self._frontier_check_dynamic(args, kwargs)
        elif spec.kind == FewerRollouts.kind:
            self._frontier_check_fewer(args, kwargs, spec.config, selector)
        passes = None
        if config.rollouts == "fewer_steps":
            cls = type(selector) if selector is not None else config.selector_spec.cls
            if not cls.walks_windows():
                raise ValueError(message(TRL, "rollouts:fewer_steps+selector", selector=cls.name))
            passes = planned_passes(_training_args(args, kwargs), cls)
        if selector is None:  # the adapter builds the pool: rows may number themselves
            kwargs["train_dataset"] = _with_task_ids(
                kwargs.get("train_dataset"), config.task_id_column
            )
        super().__init__(*args, **kwargs)
        if self.args.remove_unused_columns:
            raise ValueError(
                f"remove_unused_columns=True drops the {config.task_id_column!r} column the "
                "selector needs; set remove_unused_columns=False (TRL's default)"
            )
        if getattr(self.args.accelerator_config, "dispatch_batches", None):
            raise ValueError(
                "dispatch_batches=True makes only the main process read the sampler, so the "
                "other processes' selectors would drift; leave accelerator_config.dispatch_batches "
                "unset (the default for map-style datasets)"
            )
        self.frontier_config = config
        if self.accelerator.is_main_process:  # the currency this run pays in, as check-config
            model = getattr(getattr(self.model, "config", None), "to_dict", None)
            _log.info(
                "frontier-rft: currency: %s", trl_currency_line(vars(self.args), model and model())
            )
        self._frontier_counters = {
            "generations": 0,
            "rollouts": 0,
            "unscorable": 0,
            "embedding_refreshes": 0,
            **dict.fromkeys(COUNTERS, 0),
        }
        self.frontier_stop_reason: str | None = None
        """Why training stopped early (dynamic sampling found no signal), else None."""
        self._frontier_embedding_texts: list[str] | None = None
        self._frontier_refreshed_at = -1
        if selector is None:
            num_rows = len(self.train_dataset) if hasattr(self.train_dataset, "__len__") else 0
            rows = task_rows(self.train_dataset, config.task_id_column, num_rows)
            selector = self._frontier_build_selector(rows)
        else:
            rows = task_rows(self.train_dataset, config.task_id_column, selector.num_tasks)
        self.frontier_selector = selector
        self._frontier_rows = rows
        seed = int(self.args.seed if config.selector_seed is None else config.selector_seed)
        self.frontier_shadows = RunShadows(
            config.shadow_configs(self.num_generations, selector.name), selector, seed
        )
        """Rules followed beside the run (FrontierConfig.shadows), on their own selectors."""
        if config.shadows is None and self.frontier_shadows.shadows:
            names = [s.config.name for s in self.frontier_shadows.shadows]
            _log.info(default_shadows_line(names))
        self.frontier_sampler = FrontierRepeatSampler(
            selector,
            rows,
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
            passes=passes,
        )
        self.frontier_pass_clock: PassClock | None = None
        """Where training is in the data (rollouts: fewer_steps), which the schedule follows."""
        if passes is not None:
            per_generation = (
                self.num_iterations
                * self.args.steps_per_generation
                // max(1, self.args.gradient_accumulation_steps)
            )
            self.frontier_pass_clock = PassClock(self.frontier_sampler, per_generation)
            self.add_callback(EndAtPasses(self.frontier_sampler))  # type: ignore[attr-defined]
        self._frontier_tap = RewardTap(
            len(self.reward_funcs), config.task_id_column, lambda: bool(self.model.training)
        )
        self._frontier_hooks = []
        for i, func in enumerate(self.reward_funcs):
            if isinstance(func, nn.Module):
                self._frontier_hooks.append(self._frontier_tap.hook_module(i, func))
            else:
                wrapped = self._frontier_tap.wrap(i, func, is_async_callable(func))
                self.reward_funcs[i] = wrapped
        self._frontier_jsonl: JsonlLogger | None = None
        self.frontier_dynamic: StepDriver | None = None
        """The one step driver running each generation step through the step sampler around
        the selector (`FrontierConfig.sampler_spec`): DAPO's dynamic sampling or FewerRollouts
        (rollouts: kept, screen); None: TRL's own generation (the pass-through)."""
        if spec.kind != PassThrough.kind:
            self._frontier_drive(spec.build(selector))

    def _frontier_drive(self, sampler: Sampler) -> StepDriver:
        """Run every generation step through `sampler` (any kind but driver_kinds.UNDRIVEN),
        with the callback that skips the updates of a step that trains no group; a kind the
        driver does not run is refused, changing nothing."""
        parent = super()._generate_and_score_completions  # type: ignore[misc]
        seam = AdapterSeam(
            self._frontier_counters, self._frontier_rows, self._frontier_tap, self._frontier_gather
        )
        driver = StepDriver(self, sampler, parent, seam)
        self.frontier_dynamic = driver
        self.add_callback(_SkipEmptyUpdate(driver))  # type: ignore[attr-defined]
        return driver

    # ------------------------------------------------------------------ dynamic sampling
    def _frontier_check_dynamic(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Before the model loads: this TRL can be wrapped, and the trainer's settings and
        data are ones dynamic sampling runs with (one line naming each problem)."""
        kind = self._frontier_kind()
        problems = trl_problems({}, kind) if kind != "grpo" else []
        if not problems:
            check_wrappable(type(self))
            problems = trl_problems(self._frontier_settings(args, kwargs), kind)
            problems += image_problems(_frontier_columns(kwargs))
        if problems:
            raise ValueError("; ".join(problems))

    def _frontier_kind(self) -> str:
        """'grpo' or 'rloo': the TRL trainer this mixin is on, in the checks' words."""
        return "grpo" if isinstance(self, _GRPOTrainer) else "rloo"

    def _frontier_settings(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The GRPOConfig fields a step sampler's checks read (absent: TRL's defaults)."""
        training = _training_args(args, kwargs)
        names = ("scale_rewards", "multi_objective_aggregation", "loss_type", "num_generations",
                 "use_adaptive_entropy", "use_vllm", "num_train_epochs", "max_steps",
                 "per_device_train_batch_size", "gradient_accumulation_steps",
                 "num_iterations")  # fmt: skip
        return {n: getattr(training, n) for n in names if hasattr(training, n)}

    def _frontier_resolve_auto(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        frontier: FrontierConfig,
        selector: Selector | None,
    ) -> FrontierConfig:
        """`frontier` with `rollouts: auto` resolved (`fewer_config.auto_rollouts`, then
        whether this TRL has the seam kept wraps), said in one log line: a warning when
        settings keep a skipping selector from kept. Before the model loads; refuses nothing."""
        kind = self._frontier_kind()
        cls = type(selector) if selector is not None else frontier.selector_spec.cls
        columns = _frontier_columns(kwargs)
        training = _training_args(args, kwargs)
        step = frontier.sampler_spec()  # unresolved: read as full
        screen = step.config.screen if step.kind == FewerRollouts.kind else 0
        mode, why, warn = auto_rollouts(
            self._frontier_settings(args, kwargs),
            kind,
            selector=cls,
            dynamic_sampling=frontier.dynamic_sampling
            if step.kind == DynamicSampling.kind
            else "off",
            shadows=frontier.shadows,
            columns=columns,
            rows=dataset_rows(kwargs.get("train_dataset")),
            processes=int(getattr(training, "world_size", 1) or 1),
        )
        if mode == "kept":
            version = trl_version()
            try:
                check_wrappable(type(self))
                if screen:
                    check_screenable(type(self))
            except ValueError as exc:
                seam = str(exc).split(";")[0]
                mode, why, warn = "full", message(TRL, "auto+seam", seam=seam), True
            if mode == "kept" and version not in TESTED_TRL:
                tested = ", ".join(TESTED_TRL)
                mode, why, warn = "full", message(
                    TRL, "auto+version", tested=tested, version=version
                ), True  # fmt: skip
        auto_log(_log, TRL, mode, why, warn)
        return frontier.with_rollouts("kept" if mode == "kept" else "full")

    def _frontier_check_fewer(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        fewer: FewerRolloutsConfig,
        selector: Selector | None,
    ) -> None:
        """Before the model loads: this TRL can be wrapped (and, screening, generates a
        per-call number of completions), the trainer's settings are ones `fewer` (the run's
        FewerRollouts settings) runs with, and a ready selector walks the data for rollouts:
        kept (one line each)."""
        kind = self._frontier_kind()
        values = self._frontier_settings(args, kwargs)
        rollouts = "kept" if fewer.skip else "full"
        problems = fewer_problems(values, kind, rollouts, fewer.screen)
        if kind == "grpo" and not problems:
            check_wrappable(type(self), FewerRollouts.kind)
            if fewer.screen:
                check_screenable(type(self))
            if set(IMAGE_COLUMNS) & set(_frontier_columns(kwargs)):
                problems.append(
                    "rollouts: kept and screen do not support image datasets (an image or "
                    "images column); set rollouts: full and screen: 0"
                )
        if fewer.skip and selector is not None and not selector.walks_windows():
            problems.append(message(TRL, "kept+selector", selector=selector.name))
        if problems:
            raise ValueError("; ".join(problems))

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        """TRL's method, or with a step sampler on (dynamic sampling, fewer rollouts), while
        training: the step's rounds (the data loader's batch is a placeholder: the selector
        proposes each round)."""
        clock = self.frontier_pass_clock
        if clock is not None and self.model.training:
            column = self.frontier_config.task_id_column
            clock.generating([row[column] for row in inputs], int(self.state.global_step))
        if self.frontier_dynamic is None or not self.model.training:
            return super()._generate_and_score_completions(inputs)  # type: ignore[misc]
        return self.frontier_dynamic.step()

    # ------------------------------------------------------------------ the selector
    def _frontier_build_selector(self, rows: NDArray[np.int64]) -> Selector:
        """The configured selector over a TaskPool of the dataset's columns (task t = row
        rows[t]), with the policy's self-embeddings as features when it reads features."""
        config, ds = self.frontier_config, self.train_dataset
        spec = config.selector_spec  # read once, before the model loaded (pool_problems)
        columns = config.columns()
        names = list(ds.column_names)
        pool = build_pool(lambda c: ds[c], names, len(ds), columns, rows)
        seed = int(self.args.seed if config.selector_seed is None else config.selector_seed)
        # Whether it reads features is a fact of its class and config: no probe build.
        wanted = config.self_embeddings == "on" or (
            config.self_embeddings == "auto"
            and config.features_column is None
            and spec.judge is None
            and spec.reads_features(pool)
        )
        if config.self_embeddings_refresh_steps and not wanted:
            raise ValueError(
                f"self_embeddings_refresh_steps is set, but selector {spec.name!r} reads "
                "no task features here, so nothing would be refreshed; set it to 0, or "
                "self_embeddings='on' for a selector that reads features"
            )
        note = ""
        if wanted:
            raw = ds[config.prompt_column]
            self._frontier_embedding_texts = [self._frontier_policy_text(v) for v in raw]
            start = time.perf_counter()
            embeddings = self._frontier_embed()
            note = f"; self-embeddings of {len(raw)} prompts in {time.perf_counter() - start:.1f} s"
            pool = build_pool(lambda c: ds[c], names, len(ds), columns, rows, features=embeddings)
        selector = spec.build(pool, seed)
        if wanted:
            relabel_evidence(selector.evidence, "policy")
        if self.accelerator.is_main_process:
            _log.info(
                f"frontier-rft: selector {selector.name!r} over {pool.num_tasks} prompts; "
                f"evidence: {evidence_summary(selector)}{note}"
            )
        return selector

    def _frontier_policy_text(self, prompt: Any) -> str:
        """A prompt as the policy reads it: chat messages through the chat template."""
        if isinstance(prompt, str):
            return prompt
        from trl.data_utils import maybe_apply_chat_template

        tokenizer: Any = getattr(self.processing_class, "tokenizer", self.processing_class)
        if getattr(tokenizer, "chat_template", None) is None:
            return prompt_text(prompt)
        return str(maybe_apply_chat_template({"prompt": prompt}, tokenizer)["prompt"])

    def _frontier_embed(self) -> NDArray[np.float32]:
        """Self-embeddings of every dataset row (dataset order), the same on every process."""
        from accelerate.utils import gather_object

        texts = self._frontier_embedding_texts
        assert texts is not None
        config, acc = self.frontier_config, self.accelerator
        return sharded_self_embeddings(
            acc.unwrap_model(self.model),
            getattr(self.processing_class, "tokenizer", self.processing_class),
            texts,
            batch_size=config.self_embeddings_batch_size,
            max_length=config.self_embeddings_max_length,
            rank=acc.process_index,
            world=acc.num_processes,
            gather=gather_object,
            progress=acc.is_main_process,
        )

    def _frontier_maybe_refresh(self) -> None:
        """Every `self_embeddings_refresh_steps` optimizer steps: the current policy's
        self-embeddings replace the features the selector reads (same step on every process)."""
        every = self.frontier_config.self_embeddings_refresh_steps
        step = int(self.state.global_step)
        if self._frontier_embedding_texts is None or every <= 0 or step == 0:
            return
        if step % every or step == self._frontier_refreshed_at:
            return
        self._frontier_refreshed_at = step
        embeddings = self._frontier_embed()
        if self.frontier_selector.refresh_features(embeddings[self._frontier_rows]):
            self._frontier_counters["embedding_refreshes"] += 1
        else:  # the selector reads no features after construction: stop paying for them
            self._frontier_embedding_texts = None

    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        """TRL's schedule over its planned steps; with rollouts: fewer_steps, moved by the
        passes walked (`fewer_steps.follow_passes`), so it ends where uniform's ends."""
        fresh = getattr(self, "lr_scheduler", None) is None
        scheduler = super().create_scheduler(num_training_steps, optimizer)  # type: ignore[misc]
        clock, passes = self.frontier_pass_clock, self.frontier_sampler.passes
        if fresh and clock is not None and passes is not None:
            follow_passes(
                scheduler, clock, num_training_steps, passes, lambda: int(self.state.global_step)
            )
        return scheduler

    # ------------------------------------------------------------------ sampling
    def _get_train_sampler(self, dataset: Any = None) -> FrontierRepeatSampler | StepTicks:
        if dataset is not None and len(dataset) != self.frontier_sampler.num_samples:
            raise ValueError(
                f"the training dataset changed size ({len(dataset)} rows, the selector's pool "
                f"has {self.frontier_sampler.num_samples})"
            )
        if self.frontier_dynamic is not None:  # the rounds ask the selector, not the loader
            return StepTicks(len(self.frontier_sampler))
        return self.frontier_sampler

    # ------------------------------------------------------------------ feedback
    def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> Any:
        self._frontier_maybe_refresh()
        loss = super().training_step(model, inputs, num_items_in_batch)  # type: ignore[misc]
        self._frontier_deliver(inputs)
        return loss

    def _frontier_deliver(self, inputs: list[dict[str, Any]]) -> None:
        """Send the rewards of the generation this step ran (if any) to the selector."""
        taken = self._frontier_tap.take()
        if taken is None:
            return  # this step reused buffered completions
        per_func, seen_ids, lengths = taken
        column = self.frontier_config.task_id_column
        if column not in inputs[0]:
            raise ValueError(
                f"the training batch has no {column!r} column; keep remove_unused_columns=False"
            )
        ids = np.asarray([row[column] for row in inputs], dtype=np.int64)
        if ids.shape[0] != per_func.shape[0] or (
            seen_ids is not None and not np.array_equal(seen_ids, ids)
        ):
            raise RuntimeError(
                "reward functions scored a different batch than the one this step trained on "
                f"({per_func.shape[0]} rewards for {ids.shape[0]} rows)"
            )
        weights = np.asarray(self.reward_weights.detach().cpu().numpy(), dtype=np.float64)
        clip = getattr(self, "reward_clip_range", None)  # RLOO clips the combined reward
        rewards = combine_rewards(per_func, weights, tuple(clip) if clip else None)
        # Unscorable: every function returned None; any other NaN or inf is out of range.
        scored = np.asarray(~np.isnan(per_func).all(axis=1), dtype=np.bool_)
        ids, rewards, keep, lengths = self._frontier_gather(ids, rewards, scored, lengths)
        counters = self._frontier_counters
        if keep.any():  # a rejected batch raises here, before any counter changes
            rewards, reward_range = rewards[keep], self.frontier_config.reward_range
            selector, shadows = self.frontier_selector, self.frontier_shadows
            check_combined_rewards(
                ids[keep], rewards, reward_range, selector.reward_bounds, shadows
            )
            if reward_range is not None:
                rewards = to_unit_range(rewards, reward_range)
            feedback = Feedback(
                task_ids=ids[keep],
                rewards=rewards,
                step=counters["generations"],
                policy_version=int(self.state.global_step),
            )
            # The selector's checks too before any shadow moves (observe checks every shadow
            # before the first moves); the shadows read what the selector reads, and each
            # completion's generated tokens.
            feedback.validated(selector.num_tasks, selector.reward_bounds)
            shadows.observe(
                counters["generations"],
                ids[keep],
                rewards,
                self.num_generations,
                None if lengths is None else lengths[keep],
            )
            selector.update(feedback)
        counters["unscorable"] += int((~keep).sum())
        counters["generations"] += 1
        counters["rollouts"] += int(keep.sum())

    def _frontier_gather(
        self,
        ids: NDArray[np.int64],
        rewards: NDArray[np.float64],
        scored: NDArray[np.bool_],
        lengths: NDArray[np.int64] | None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.int64] | None]:
        """All processes' (ids, rewards, scored, lengths) in process order, identical on every
        process; lengths None where a process has none."""
        if self.accelerator.num_processes == 1:
            return ids, rewards, scored, lengths
        import torch

        sizes = np.full(ids.shape, -1.0) if lengths is None else lengths.astype(np.float64)
        columns = [ids.astype(np.float64), rewards, scored.astype(np.float64), sizes]
        local = torch.as_tensor(np.stack(columns, axis=1))
        every = self.accelerator.gather(local.to(self.accelerator.device)).cpu().numpy()
        every_size = None if np.any(every[:, 3] < 0) else every[:, 3].astype(np.int64)
        return every[:, 0].astype(np.int64), every[:, 1], every[:, 2] > 0.5, every_size

    # ------------------------------------------------------------------ metrics
    def frontier_metrics(self) -> dict[str, float]:
        """The selector's metrics plus the adapter's own (`trl/...`, and `dapo/...` with
        dynamic sampling), unprefixed."""
        dynamic = self.frontier_dynamic
        out = self.frontier_selector.metrics() if dynamic is None else dynamic.wrapper.metrics()
        sampler, counters = self.frontier_sampler, self._frontier_counters
        out["trl/generations"] = float(counters["generations"])
        out["trl/rollouts_delivered"] = float(counters["rollouts"])
        out["trl/unscorable_dropped"] = float(counters["unscorable"])
        out["trl/chunks_selected"] = float(sampler.chunks_selected)
        out["trl/feedback_lag"] = float(sampler.feedback_lag)
        out["trl/self_embedding_refreshes"] = float(counters["embedding_refreshes"])
        if dynamic is not None:
            out.update(dynamic.metrics())
        out.update(self.frontier_shadows.metrics())
        return out

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        is_eval = any(key.startswith("eval_") for key in logs)
        config = self.frontier_config
        if is_eval:
            # The A/B's x-axes beside the held-out scores, in every report_to backend.
            logs.update(self._frontier_budget())
        elif self.model.training:
            metrics = self.frontier_metrics()
            # TRL's loggers reject NaN (JSON); the JSONL file keeps every key, NaN as null.
            finite = {k: v for k, v in metrics.items() if math.isfinite(v)}
            logs.update(curriculum_metrics(finite, config.metrics_verbosity, config.metrics_prefix))
            if config.metrics_verbosity == "summary":  # the filter's own summary, when on
                own = () if self.frontier_dynamic is None else self.frontier_dynamic.kind.summary
                dapo = {k: v for k, v in finite.items() if k in own}
                logs.update(curriculum_metrics(dapo, "all", config.metrics_prefix))
                shadow = {k: v for k, v in finite.items() if k.startswith("shadow/")}
                logs.update(curriculum_metrics(shadow, "all", config.metrics_prefix))
            if self.accelerator.is_main_process:
                self._frontier_logger().log(
                    {
                        **curriculum_metrics(metrics, "all", config.metrics_prefix),
                        **self._frontier_trl_cost(),
                    },
                    step=int(self.state.global_step),
                )
        super().log(logs, start_time)  # type: ignore[misc]
        if is_eval and self.accelerator.is_main_process:
            # After TRL's log, which adds its eval_reward and eval_rewards/<func>/mean.
            held_out = {k: float(v) for k, v in logs.items() if _is_number(v)}
            self._frontier_logger().log(held_out, step=int(self.state.global_step))

    def _frontier_trl_cost(self) -> dict[str, float]:
        """TRL's own cost figures of the steps being logged (`num_tokens`: tokens seen so far,
        `step_time`: seconds a step), as TRL logs them, for frontier_metrics.jsonl; none that
        this TRL does not keep."""
        kept = getattr(self, "_metrics", {}).get("train", {})
        out = {}
        for key in ("num_tokens", "step_time"):
            values = kept.get(key) or []
            if values:
                out[key] = float(sum(values) / len(values))
        return out

    def _frontier_run_lines(self) -> list[str]:
        """What the run saved, said once at its end: the completions a kept step left out
        (rollouts: kept, screen), the steps a run ended by passes took (rollouts:
        fewer_steps), and the selector's own estimate of its loss (skip-audit)."""
        lines = []
        driver, counters = self.frontier_dynamic, self._frontier_counters
        if driver is not None and driver.kind.namespace == "fewer_rollouts":
            generations = int(counters["generations"])
            whole = generations * int(self.args.generation_batch_size)
            spent = int(driver.metrics()["fewer_rollouts/rollouts"])
            share = f", {spent / whole:.2f}x" if whole else ""
            lines.append(
                f"rollouts: kept generated {spent} completions in {generations} generation steps"
                f"{share} of TRL's whole batches' {whole}; the steps and schedule were TRL's"
            )
        sampler = self.frontier_sampler
        if sampler.passes is not None:
            lines.append(
                f"rollouts: fewer_steps walked {sampler.passes_trained:.2f} passes over the "
                f"prompts in {int(self.state.global_step)} steps (TRL planned "
                f"{int(self.state.max_steps)} for num_train_epochs={sampler.passes:g})"
            )
        if summary := self.frontier_selector.run_summary():  # e.g. skip-audit's estimated loss
            lines.append(summary)
        return lines

    def _frontier_budget(self) -> dict[str, float]:
        """What training has spent so far, under the metrics prefix: the rollouts sent to
        the selector, and the distinct prompts trained (groups with mixed rewards, as far
        as the selector has folded them in)."""
        prefix = self.frontier_config.metrics_prefix
        out = {prefix + "trl/rollouts_delivered": float(self._frontier_counters["rollouts"])}
        trained = self.frontier_selector.metrics().get("tasks/distinct_trained", math.nan)
        if math.isfinite(trained):  # TRL's loggers reject NaN
            out[prefix + "tasks/distinct_trained"] = float(trained)
        return out

    def _frontier_logger(self) -> JsonlLogger:
        if self._frontier_jsonl is None:
            path = self.frontier_config.jsonl_path or os.path.join(
                self.args.output_dir, "frontier_metrics.jsonl"
            )
            self._frontier_jsonl = JsonlLogger(path)
        return self._frontier_jsonl

    # ------------------------------------------------------------------ checkpoints
    def save_frontier_state(self, directory: str | os.PathLike[str]) -> None:
        """Write the step sampler's state (the record of the fewer-rollouts and dynamic
        sampling settings), then the selector and sampler state, into `directory`."""
        # The settings' record first: a save cut short is then refused for its missing
        # state, not mistaken for a run with other settings.
        save_step_sampler(directory, self._frontier_step_sampler())
        save_state(
            directory, self.frontier_selector, self.frontier_sampler, self._frontier_counters
        )
        self.frontier_shadows.save(directory)

    def _frontier_step_sampler(self) -> Sampler:
        """The step sampler around the selector: dynamic sampling's or FewerRollouts inside
        each generation step, else the pass-through (TRL's own generation: no state)."""
        if self.frontier_dynamic is None:  # the run's spec is the pass-through
            return self.frontier_config.sampler_spec().build(self.frontier_selector)
        return self.frontier_dynamic.wrapper

    def load_frontier_state(self, directory: str | os.PathLike[str]) -> None:
        """Restore the selector and sampler state (dynamic sampling's, the shadows') saved in
        `directory`; a refused checkpoint (other fewer-rollouts or dynamic sampling settings
        than this trainer's included) changes nothing."""
        check_fewer_settings(directory, self._frontier_fewer_record())
        restore = load_step_sampler(directory, self._frontier_step_sampler())  # checked first
        shadows = self.frontier_shadows.load(directory)  # read, not yet in place
        counters = load_state(directory, self.frontier_selector, self.frontier_sampler)
        restore()
        self.frontier_shadows.shadows = shadows
        self._frontier_counters.update(counters)

    def _frontier_fewer_record(self) -> dict[str, Any]:
        """This trainer's fewer-rollouts settings, as a checkpoint records them."""
        record = {key: getattr(self.frontier_config, key) for key in FEWER_DEFAULTS}
        if record["rollouts"] == "fewer_steps" and self.frontier_sampler.passes is None:
            record["rollouts"] = "full"  # set by max_steps: its steps are full batches
        return record

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)  # type: ignore[misc]
        self._frontier_check_sync()
        if self.args.should_save:
            from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

            run_dir = self._get_output_dir(trial=trial)  # type: ignore[attr-defined]
            folder = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
            self.save_frontier_state(os.path.join(run_dir, folder))

    def _init_training_state(self, *args: Any, **kwargs: Any) -> Any:
        """The Trainer's resume position decides whether the sampler replays the saved epoch
        (the Trainer skips the batches already trained in it) or starts a new one."""
        epochs_trained, skipped = super()._init_training_state(*args, **kwargs)  # type: ignore[misc]
        if getattr(self, "_frontier_resuming", False):
            self._frontier_resuming = False
            self.frontier_sampler.resume_mid_epoch(int(skipped) > 0)
        return epochs_trained, skipped

    def _frontier_record_rewards(self) -> None:
        """Write the run's reward functions (TRL's names: its completions table's reward
        columns), their weights and the shadows' seed to the output dir, for `frontier shadow
        replay`."""
        names = getattr(self, "reward_func_names", None)  # TRL's, GRPO's and RLOO's alike
        if names is not None and self.accelerator.is_main_process:
            # TRL's float32 weights, each as the shortest decimal that is it (0.1, not 0.1000...1)
            weights = [float(str(w)) for w in self.reward_weights.detach().cpu().numpy()]
            config = self.frontier_config  # the live shadows' seed, as __init__ gave them
            seed = self.args.seed if config.selector_seed is None else config.selector_seed
            write_run_rewards(self.args.output_dir, names, weights, seed=int(seed))

    def _frontier_check_sync(self) -> None:
        """Raise if processes hold different selector states (they must select identically)."""
        if not self.frontier_config.check_sync or self.accelerator.num_processes == 1:
            return
        import torch.distributed as dist

        digests: list[str | None] = [None] * self.accelerator.num_processes
        state = self._frontier_step_sampler().state_dict()  # the selector's nested
        dist.all_gather_object(digests, state_digest(state))
        if len(set(digests)) != 1:
            raise RuntimeError(
                "the selector's state differs across processes; build it with the same "
                "make_selector(name, pool, seed=...) call on every process"
            )

    def train(
        self,
        resume_from_checkpoint: str | bool | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        checkpoint = resume_from_checkpoint
        if checkpoint is True:
            from transformers import trainer_utils

            last: Any = trainer_utils.get_last_checkpoint  # untyped upstream
            checkpoint = last(self.args.output_dir)  # None: the base class raises
        if isinstance(checkpoint, str | os.PathLike):
            self.load_frontier_state(checkpoint)
            self._frontier_resuming = True
        self._frontier_record_rewards()
        try:
            result = super().train(resume_from_checkpoint, *args, **kwargs)  # type: ignore[misc]
            if self.accelerator.is_main_process:
                for line in self._frontier_run_lines():
                    _log.info("frontier-rft: %s", line)
            if self.frontier_shadows.shadows and self.accelerator.is_main_process:
                # the replay's table (`frontier shadow replay` reads it back), logged as the
                # start-up lines are: the library prints nothing itself
                _log.info(
                    "frontier-rft: shadows over the run:\n%s", self.frontier_shadows.summary()
                )
                record = self.frontier_shadows.summary_record()
                self._frontier_logger().log({}, step=int(self.state.global_step), **record)
            return result
        finally:
            if self._frontier_jsonl is not None:
                self._frontier_jsonl.close()
                self._frontier_jsonl = None


# Typed as Any so the module type-checks the same with or without the trl extra installed.
_GRPOTrainer: Any = grpo_trainer.GRPOTrainer
_RLOOTrainer: Any = rloo_trainer.RLOOTrainer
_TrainerCallback: Any = TrainerCallback


class _SkipEmptyUpdate(_TrainerCallback):  # type: ignore[misc]
    """A driven step that trained on no group makes no optimizer step: parameters
    without a gradient are skipped by torch's optimizers (momentum and weight decay too)."""

    def __init__(self, dynamic: StepDriver):
        self.dynamic = dynamic

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.dynamic.skip_update:
            for param in self.dynamic.trainer.model.parameters():
                param.grad = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.dynamic.optimizer_step_done()


class FrontierGRPOTrainer(FrontierTrainerMixin, _GRPOTrainer):  # type: ignore[misc]
    """GRPOTrainer whose training prompts are chosen by a frontier-rft selector."""

    entropy_coef: float
    _metrics: dict[str, Any]

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        """TRL's loss while training with a step sampler that trains G of B groups: the
        advantages times `pg_scale` (G / B with loss_scale batch: the policy gradient alone
        weighs G / B), the loss times the generation's factor (per-row loss types: B / G x
        the rows laid out over uniform's, so policy gradient and KL are the trained rows'
        mean), and TRL's entropy bonus (a mean over the micro-batch's trained tokens)
        weighted so the step's is the trained rows' mean (StepDriver.entropy_weight)."""
        sampler = self.frontier_dynamic
        if sampler is not None and self.model.training and sampler.pg_scale != 1.0:
            # a copy: TRL reuses the batch's advantages (num_iterations > 1, its logs)
            inputs = {**inputs, "advantages": inputs["advantages"] * sampler.pg_scale}
        if (
            sampler is not None
            and self.model.training
            and getattr(self, "_entropy_bonus_enabled", False)
        ):
            coef = self.entropy_coef
            logged = self._metrics["train"]["entropy_coef"]
            before = len(logged)
            self.entropy_coef = coef * sampler.entropy_weight(inputs["completion_mask"])
            try:
                loss = super()._compute_loss(model, inputs)
            finally:
                self.entropy_coef = coef
            if len(logged) > before:  # TRL logs the coefficient it applied: log the user's
                logged[-1] = coef
        else:
            loss = super()._compute_loss(model, inputs)
        factor = 1.0 if sampler is None else sampler.loss_factor
        if factor != 1.0 and self.model.training:
            loss = loss * factor
        return loss


class FrontierRLOOTrainer(FrontierTrainerMixin, _RLOOTrainer):  # type: ignore[misc]
    """RLOOTrainer whose training prompts are chosen by a frontier-rft selector."""
