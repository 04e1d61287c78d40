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

Its constructor reads the arguments into one `StepPlan` before the model loads (resolve.py:
what `rollouts: auto` chooses, and every check of the chosen step), lets TRL build the
trainer, then builds from that plan (`frontier_plan`); `frontier check-config trl` prints the
same plan from a YAML file.

What it changes, and where:

- Sampler (`_get_train_sampler`): `FrontierRepeatSampler` keeps TRL's RepeatSampler layout
  and asks the selector for each chunk of prompts (see sampler.py).
- Feedback: each reward function is wrapped (a reward model gets a forward hook); after
  the training step that generated, the rewards are combined as TRL combines them
  (weighted nansum), gathered across processes with their task ids and sent to
  `selector.update` as one Feedback per generation round. TRL reads the next batch before
  these rewards exist; the selector folds them in at the select after that (a lag of one
  round or more, shown in `curriculum/trl/feedback_lag`).
- Checkpoints (`_save_checkpoint`, the seam TRL uses for its own extra state; checkpoints.py):
  the selector and sampler state are written into each checkpoint directory;
  `train(resume_from_checkpoint=...)` restores them before training resumes.
- The run's reward functions and `reward_weights` (TRL keeps the weights only in its pickled
  `training_args.bin`) are recorded at the start of `train()` in the output dir's
  `frontier_rewards.json`, where `frontier shadow replay` weighs TRL's completions table's
  reward columns by them (shadow/run_rewards.py).
- Logs (`log`, run_log.py): a summary of the selector metrics, prefixed `curriculum/`, joins
  TRL's logs (so TensorBoard, W&B or any `report_to` backend gets them; `metrics_verbosity:
  all` sends every key); the JSONL file gets every key. Each evaluation's log (TRL's `eval_reward`,
  `eval_rewards/<func>/mean`, ...) also carries `curriculum/trl/rollouts_delivered` and
  `curriculum/tasks/distinct_trained`, the rollouts and distinct prompts trained so far,
  and goes into the JSONL file as well: what `frontier ab compare` reads.
- With `FrontierConfig(dynamic_sampling=...)` (GRPO only): `_generate_and_score_completions`
  runs each generation step as DAPO's rounds around the selector (step_driver.py); the train
  sampler then only paces TRL's loop (`StepTicks`) and the rewards reach the selector round
  by round, inside the step.
- `rollouts: auto` (the default) is `kept` where the settings allow it (a selector that walks
  the data, GRPO, no dynamic sampling or shadows, a loss TRL lets us rescale) and `full`
  otherwise, with a warning naming why (resolve.py); `trainer.frontier_config` holds the
  choice, `trainer.frontier_plan` the whole step.
- With `FrontierConfig(rollouts="kept")` or `screen=k` (GRPO only): the same seam runs each
  generation step through `FewerRollouts` (step_driver.py): uniform's prompts for the step, only
  the kept (and, screening, the mixed) ones generated (through vLLM too), and only their
  rows trained (layout.py); TRL's schedule is unchanged.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
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
from frontier_rft.integrations.plan import FEWER_STEPS, auto_log, default_shadows_line
from frontier_rft.integrations.pool import build_pool, evidence_summary, prompt_text
from frontier_rft.integrations.trl.arguments import (
    check_before_model,
    check_built,
    frontier_arguments,
    task_rows,
    training_args,
    with_task_ids,
)
from frontier_rft.integrations.trl.checkpoints import FrontierCheckpoints
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.currency import trl_currency
from frontier_rft.integrations.trl.driver_kinds import driver_kind
from frontier_rft.integrations.trl.fewer_config import TRL, trl_kept_line
from frontier_rft.integrations.trl.fewer_steps import (
    EndAtPasses,
    PassClock,
    check_pass_schedule,
    follow_passes,
)
from frontier_rft.integrations.trl.noise import NoiseCallback
from frontier_rft.integrations.trl.resolve import TrlRun, resolve_step
from frontier_rft.integrations.trl.rewards import RewardTap, check_combined_rewards, combine_rewards
from frontier_rft.integrations.trl.run_log import FrontierRunLog
from frontier_rft.integrations.trl.run_state import FrontierRun
from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler, StepTicks
from frontier_rft.integrations.trl.step_driver import AdapterSeam, StepDriver
from frontier_rft.sampling.step import Sampler
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.shadow.live import RunShadows
from frontier_rft.step_cost.advice import currency_line

__all__ = ["FrontierGRPOTrainer", "FrontierRLOOTrainer", "FrontierTrainerMixin", "task_rows"]

_log = logging.getLogger(__name__)


CHECKPOINTING_DEPRECATIONS = (
    r"`(is_gradient_checkpointing|gradient_checkpointing_enable|gradient_checkpointing_disable)` "
    "is deprecated"
)
"""transformers 5.24's FutureWarnings about the gradient checkpointing names TRL 1.16 calls on
every generation (`disable_gradient_checkpointing`): filtered at the adapter's call of TRL's
generation, where they would repeat each step (docs/integrations/trl.md)."""


class _OfRun:
    """A trainer's public name for a field of its run state (`frontier_run`): read-only."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = name.removeprefix("frontier_")

    def __get__(self, trainer: Any, owner: type | None = None) -> Any:
        return self if trainer is None else getattr(trainer.frontier_run, self.field)


class FrontierTrainerMixin(FrontierCheckpoints, FrontierRunLog):
    """Turns a TRL GRPO-family trainer into one whose prompts a frontier-rft selector picks.

    Put it first in the bases: `class T(FrontierTrainerMixin, GRPOTrainer)`. It relies on
    the trainer attributes GRPOTrainer and RLOOTrainer share: `reward_funcs`,
    `reward_weights`, `num_generations`, `num_iterations`, `args.generation_batch_size`,
    `args.steps_per_generation`.

    Before the model loads it checks the model path, the selector's metadata, `reward_range`
    and the data's columns (`arguments.check_before_model`), then resolves the run's step
    (resolve.py); `frontier_checked=True` says its caller ran the first checks on these very
    arguments already (the `trl.grpo` script: earlier, before reading the data, and fuller),
    so each runs once.
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

    frontier_run: FrontierRun
    """Everything frontier-rft adds to the trainer (run_state.py), built once in `__init__`."""
    frontier_config = _OfRun()
    frontier_plan = _OfRun()
    frontier_selector = _OfRun()
    frontier_shadows = _OfRun()
    frontier_sampler = _OfRun()
    frontier_pass_clock = _OfRun()
    frontier_driver = _OfRun()
    frontier_stop_reason = _OfRun()

    def __init__(
        self,
        *args: Any,
        selector: Selector | None = None,
        frontier: FrontierConfig | None = None,
        frontier_checked: bool = False,
        **kwargs: Any,
    ):
        config = frontier_arguments(selector, frontier)
        if not frontier_checked:
            args = check_before_model(args, kwargs, config, selector)
        cls = type(selector) if selector is not None else config.selector_spec.cls
        plan = self._frontier_plan(
            TrlRun.of_call(type(self), self._frontier_kind(), args, kwargs), config, cls
        )
        if config.rollouts == FEWER_STEPS:  # a schedule it could not move, refused now
            check_pass_schedule(training_args(args, kwargs))
        if selector is None:  # the adapter builds the pool: rows may number themselves
            kwargs["train_dataset"] = with_task_ids(
                kwargs.get("train_dataset"), config.task_id_column
            )
        super().__init__(*args, **kwargs)
        check_built(self.args, config)
        if not config.step_chosen():  # rollouts: auto, as the plan resolved it
            config = config.resolved("kept" if plan.rollouts == "kept" else "full", plan.sampler)
        model = getattr(getattr(self.model, "config", None), "to_dict", None)
        currency = trl_currency(
            vars(self.args),
            model and model(),
            processes=self.accelerator.num_processes,
            on_cpu=self.accelerator.device.type == "cpu",
        )
        if self.accelerator.is_main_process:  # the currency this run pays in, as check-config
            _log.info("frontier-rft: currency: %s", currency_line(currency))
        self.frontier_run = self._frontier_start(config, plan, selector)
        self.frontier_run.currency = currency  # the curve the start and the plans read
        if self.accelerator.is_main_process:  # where to start before the meter reads anything
            for line in self._frontier_start_plan():
                _log.info("frontier-rft: %s", line)
        row = driver_kind(plan.sampler.kind)  # does the driver run it, or TRL's generation?
        if row is not None and row.drives:
            self._frontier_drive(plan.build(self.frontier_run.selector))
        # the gradient noise meter: hooks that read each micro-batch's gradient (noise.py)
        self.frontier_noise = NoiseCallback(
            self, config.noise_every, config.noise_ema, plan_every=config.plan_every
        )
        self.add_callback(self.frontier_noise)  # type: ignore[attr-defined]

    def _frontier_kind(self) -> str:
        """'grpo' or 'rloo': the TRL trainer this mixin is on, in the checks' words."""
        return "grpo" if isinstance(self, _GRPOTrainer) else "rloo"

    def _frontier_plan(self, run: TrlRun, config: FrontierConfig, cls: type[Selector]) -> StepPlan:
        """The run's step (`resolve_step`), said in one line: what rollouts: auto chose and
        why (a warning when settings keep a skipping selector from kept), what a hand-set
        rollouts: kept does, or why a hand-set step's run ends as it does; a ValueError naming
        every problem, before the model loads."""
        resolution = resolve_step(config, run, cls)
        plan = resolution.check()
        if resolution.chosen:
            auto_log(_log, TRL, plan.rollouts, plan.reason, resolution.warn)
        elif plan.rollouts == "kept":  # set by hand: say what it does and what it cost
            _log.info(trl_kept_line(run.settings, run.processes, cls))
        elif plan.reason:  # how a hand-set step's run ends (rollouts: fewer_steps)
            say = _log.warning if resolution.warn else _log.info
            say("frontier-rft: rollouts: %s", plan.reason)
        return plan

    def _frontier_start(
        self,
        config: FrontierConfig,
        plan: StepPlan,
        selector: Selector | None,
    ) -> FrontierRun:
        """After TRL built the trainer, the run's state (run_state.py): the selector (built
        from the data, or the one given) over the dataset's rows, the shadows beside it, the
        repeat sampler, the pass clock of a run ended by its passes and the reward taps (the
        step driver of the plan is `_frontier_drive`'s)."""
        texts = None
        if selector is None:
            num_rows = len(self.train_dataset) if hasattr(self.train_dataset, "__len__") else 0
            rows = task_rows(self.train_dataset, config.task_id_column, num_rows)
            selector, texts = self._frontier_build_selector(config, rows)
        else:
            rows = task_rows(self.train_dataset, config.task_id_column, selector.num_tasks)
        # how the run ends is its plan's (resolve.py): here its passes, where they end it
        passes = float(self.args.num_train_epochs) if plan.ends_by == "passes" else None
        seed = int(self.args.seed if config.selector_seed is None else config.selector_seed)
        shadows = RunShadows(
            config.shadow_configs(self.num_generations, selector.name), selector, seed
        )
        if config.shadows is None and shadows.shadows:
            _log.info(default_shadows_line([s.config.name for s in shadows.shadows]))
        sampler = FrontierRepeatSampler(
            selector,
            rows,
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
            passes=passes,
        )
        clock = None
        if passes is not None:
            per_generation = (
                self.num_iterations
                * self.args.steps_per_generation
                // max(1, self.args.gradient_accumulation_steps)
            )
            clock = PassClock(sampler, per_generation)
            self.add_callback(EndAtPasses(sampler))  # type: ignore[attr-defined]
        tap, hooks = self._frontier_tap_rewards(config)
        return FrontierRun(config, plan, selector, rows, shadows, sampler, clock, tap, hooks, texts)

    def _frontier_tap_rewards(self, config: FrontierConfig) -> tuple[RewardTap, list[Any]]:
        """The taps recording each reward function's output for the selector, and the forward
        hooks among them: a reward model through a hook, any other function wrapped in place."""
        tap = RewardTap(
            len(self.reward_funcs), config.task_id_column, lambda: bool(self.model.training)
        )
        hooks = []
        for i, func in enumerate(self.reward_funcs):
            if isinstance(func, nn.Module):
                hooks.append(tap.hook_module(i, func))
            else:
                self.reward_funcs[i] = tap.wrap(i, func, is_async_callable(func))
        return tap, hooks

    def _frontier_drive(self, sampler: Sampler) -> StepDriver:
        """Run every generation step through `sampler` (any kind but driver_kinds.UNDRIVEN),
        with the callback that skips the updates of a step that trains no group; a kind the
        driver does not run is refused, changing nothing."""
        run = self.frontier_run
        parent = super()._generate_and_score_completions  # type: ignore[misc]
        seam = AdapterSeam(run.counters, run.rows, run.tap, self._frontier_gather)
        driver = StepDriver(self, sampler, parent, seam)
        run.driver = driver
        self.add_callback(_SkipEmptyUpdate(driver))  # type: ignore[attr-defined]
        return driver

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        """TRL's method, or with a step sampler on (dynamic sampling, fewer rollouts), while
        training: the step's rounds (the data loader's batch is a placeholder: the selector
        proposes each round)."""
        with warnings.catch_warnings():  # TRL 1.16 on transformers 5.24 warns every call
            warnings.filterwarnings("ignore", CHECKPOINTING_DEPRECATIONS, FutureWarning)
            return self._frontier_generate(inputs)

    def _frontier_generate(self, inputs: Any) -> Any:
        """`_generate_and_score_completions`' body: the pass clock told of the chunk, then
        the driver's step or TRL's own generation."""
        run = self.frontier_run
        if run.pass_clock is not None and self.model.training:
            column = run.config.task_id_column
            run.pass_clock.generating([row[column] for row in inputs], int(self.state.global_step))
        if run.driver is None or not self.model.training:
            return super()._generate_and_score_completions(inputs)  # type: ignore[misc]
        return run.driver.step()

    # ------------------------------------------------------------------ the selector
    def _frontier_build_selector(
        self, config: FrontierConfig, rows: NDArray[np.int64]
    ) -> tuple[Selector, list[str] | None]:
        """The selector `config` names over a TaskPool of the dataset's columns (task t = row
        rows[t]), with the policy's self-embeddings as features when it reads features; and
        the prompts as the policy reads them where it does (None: it does not)."""
        ds = self.train_dataset
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
        note, texts = "", None
        if wanted:
            raw = ds[config.prompt_column]
            texts = [self._frontier_policy_text(v) for v in raw]
            start = time.perf_counter()
            embeddings = self._frontier_embed(config, texts)
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
        return selector, texts

    def _frontier_policy_text(self, prompt: Any) -> str:
        """A prompt as the policy reads it: chat messages through the chat template."""
        if isinstance(prompt, str):
            return prompt
        from trl.data_utils import maybe_apply_chat_template

        tokenizer: Any = getattr(self.processing_class, "tokenizer", self.processing_class)
        if getattr(tokenizer, "chat_template", None) is None:
            return prompt_text(prompt)
        return str(maybe_apply_chat_template({"prompt": prompt}, tokenizer)["prompt"])

    def _frontier_embed(self, config: FrontierConfig, texts: list[str]) -> NDArray[np.float32]:
        """Self-embeddings of every dataset row (dataset order, `texts` as the policy reads
        them), the same on every process."""
        from accelerate.utils import gather_object

        acc = self.accelerator
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
        run = self.frontier_run
        every = run.config.self_embeddings_refresh_steps
        step = int(self.state.global_step)
        if run.embedding_texts is None or every <= 0 or step == 0:
            return
        if step % every or step == run.refreshed_at:
            return
        run.refreshed_at = step
        embeddings = self._frontier_embed(run.config, run.embedding_texts)
        if run.selector.refresh_features(embeddings[run.rows]):
            run.counters["embedding_refreshes"] += 1
        else:  # the selector reads no features after construction: stop paying for them
            run.embedding_texts = None

    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        """TRL's schedule over its planned steps; with rollouts: fewer_steps, moved by the
        passes walked (`fewer_steps.follow_passes`), so it ends where uniform's ends."""
        fresh = getattr(self, "lr_scheduler", None) is None
        scheduler = super().create_scheduler(num_training_steps, optimizer)  # type: ignore[misc]
        clock, passes = self.frontier_run.pass_clock, self.frontier_run.sampler.passes
        if fresh and clock is not None and passes is not None:
            follow_passes(
                scheduler, clock, num_training_steps, passes, lambda: int(self.state.global_step)
            )
        return scheduler

    # ------------------------------------------------------------------ sampling
    def _get_train_sampler(self, dataset: Any = None) -> FrontierRepeatSampler | StepTicks:
        run = self.frontier_run
        if dataset is not None and len(dataset) != run.sampler.num_samples:
            raise ValueError(
                f"the training dataset changed size ({len(dataset)} rows, the selector's pool "
                f"has {run.sampler.num_samples})"
            )
        if run.driver is not None:  # the rounds ask the selector, not the loader
            return StepTicks(len(run.sampler))
        return run.sampler

    # ------------------------------------------------------------------ feedback
    def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> Any:
        self._frontier_maybe_refresh()
        loss = super().training_step(model, inputs, num_items_in_batch)  # type: ignore[misc]
        self._frontier_deliver(inputs)
        return loss

    def _frontier_deliver(self, inputs: list[dict[str, Any]]) -> None:
        """Send the rewards of the generation this step ran (if any) to the selector."""
        run = self.frontier_run
        taken = run.tap.take()
        if taken is None:
            return  # this step reused buffered completions
        per_func, seen_ids, lengths = taken
        column = run.config.task_id_column
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
        counters = run.counters
        if keep.any():  # a rejected batch raises here, before any counter changes
            rewards, reward_range = rewards[keep], run.config.reward_range
            selector, shadows = run.selector, run.shadows
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
        run = self.frontier_run
        if isinstance(checkpoint, str | os.PathLike):
            self.load_frontier_state(checkpoint)
            run.resuming = True
        self._frontier_record_rewards()
        try:
            result = super().train(resume_from_checkpoint, *args, **kwargs)  # type: ignore[misc]
            if self.accelerator.is_main_process:
                for line in self._frontier_run_lines():
                    _log.info("frontier-rft: %s", line)
            if run.shadows.shadows and self.accelerator.is_main_process:
                # the replay's table (`frontier shadow replay` reads it back), logged as the
                # start-up lines are: the library prints nothing itself
                _log.info("frontier-rft: shadows over the run:\n%s", run.shadows.summary())
                record = run.shadows.summary_record()
                self._frontier_logger().log({}, step=int(self.state.global_step), **record)
            return result
        finally:
            if run.jsonl is not None:
                run.jsonl.close()
                run.jsonl = None


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
        sampler = self.frontier_driver
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
