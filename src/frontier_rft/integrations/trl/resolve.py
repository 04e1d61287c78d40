"""A TRL run's step, resolved once: `resolve_step` turns what a run is given (its FrontierConfig,
TRL's settings, the trainer and its class, the data's columns and rows, a ready selector's
class) into a `StepPlan`, or the problems that stop it, one line each.

Every decision about the step is made here, in this order, each once: what `rollouts: auto`
means (`fewer_config.auto_rollouts`, then whether this TRL has the seam a kept step wraps and
is a tested release, `TESTED_TRL`); then what the chosen step is refused for (TRL's settings,
the seam, image columns, a selector that cannot walk the data); then how the run ends
(`rollouts: fewer_steps`: by its passes over the prompts, unless `max_steps` sets it). The
trainer asks it before its model loads (`FrontierTrainerMixin.__init__`) and `frontier
check-config trl` asks it with what a YAML file gives, so the plan a file's check prints is
the plan its run builds. Imports neither torch nor TRL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from frontier_rft.core.selector import Selector
from frontier_rft.integrations.plan import FEWER_STEPS, RowCount, message
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.dynamic_config import (
    IMAGE_COLUMNS,
    TESTED_TRL,
    image_problems,
    trl_problems,
)
from frontier_rft.integrations.trl.fewer_config import TRL, auto_rollouts, fewer_problems
from frontier_rft.integrations.trl.seam_check import seam_problem
from frontier_rft.sampling.dynamic_sampling import DynamicSampling
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, fewer_rollouts_from_run
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.sampling.step_plan import StepPlan

__all__ = ["SETTINGS", "Resolution", "TrlRun", "resolve_step"]

SETTINGS = ("scale_rewards", "multi_objective_aggregation", "loss_type", "num_generations",
            "use_adaptive_entropy", "use_vllm", "vllm_mode", "use_cpu", "num_train_epochs",
            "max_steps", "per_device_train_batch_size", "gradient_accumulation_steps",
            "num_iterations")  # fmt: skip
"""The GRPOConfig fields the resolution reads of a trainer's training arguments (a YAML file
gives it all of its values; absent: TRL's defaults)."""


@dataclass(frozen=True)
class TrlRun:
    """What a TRL run's step is resolved from, beside its FrontierConfig."""

    settings: Mapping[str, Any] = field(default_factory=dict)
    """TRL's settings (GRPOConfig fields; absent: TRL's defaults)."""
    trainer: str = "grpo"
    """The TRL trainer: grpo or rloo."""
    columns: tuple[str, ...] = ()
    """The training data's column names (() where unknown)."""
    rows: RowCount = None
    """The training data's rows, or how to count them (None: unknown)."""
    processes: int = 1
    """The processes the run is launched on (a max_steps run's length in epochs)."""
    seam: Callable[[str, int], str | None] | None = None
    """Why this TRL lacks the seam the step sampler of a kind (screening k) wraps, one line
    (None: it has it): `seam_check.seam_problem` on the trainer class, or
    `source_seam_problem` on TRL's source; None: not checked here."""
    version: str | None = None
    """The installed TRL's version (a kept step chosen by auto runs on `TESTED_TRL` only);
    None: not installed, not checked."""

    @classmethod
    def of_call(
        cls, trainer_cls: type, trainer: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> TrlRun:
        """What a trainer's constructor was given: its training arguments (by keyword or
        third), its train dataset, the trainer class and the installed TRL's version."""
        from frontier_rft.integrations.plan import dataset_rows
        from frontier_rft.integrations.trl.seam_check import trl_version

        training = kwargs.get("args", args[2] if len(args) > 2 else None)
        dataset = kwargs.get("train_dataset")
        return cls(
            settings={n: getattr(training, n) for n in SETTINGS if hasattr(training, n)},
            trainer=trainer,
            columns=tuple(getattr(dataset, "column_names", None) or ()),
            rows=dataset_rows(dataset),
            processes=int(getattr(training, "world_size", 1) or 1),
            seam=partial(seam_problem, trainer_cls),
            version=trl_version(),
        )


@dataclass(frozen=True)
class Resolution:
    """A resolved step: its plan, or the problems that stop it (then `plan` is None)."""

    plan: StepPlan | None
    """The run's step; None where `problems` or `data_problems` refuse it."""
    problems: tuple[str, ...] = ()
    """What in the settings refuses the step, one line each."""
    data_problems: tuple[str, ...] = ()
    """What in the training data's columns refuses the step, one line each."""
    chosen: bool = False
    """Whether `rollouts: auto` chose the plan's rollouts (its `reason` says why)."""
    warn: bool = False
    """Whether auto chose full because a setting is in the way of kept (said as a warning)."""

    def check(self) -> StepPlan:
        """The plan; a ValueError joining every problem (one line) where there is none."""
        if self.plan is None:
            raise ValueError("; ".join((*self.problems, *self.data_problems)))
        return self.plan


def resolve_step(
    frontier: FrontierConfig, run: TrlRun, selector: type[Selector] | None = None
) -> Resolution:
    """The step of a TRL run of `frontier` on `run` (see the module): `selector` is the class
    of a ready selector (None: the one `frontier` names)."""
    cls = selector if selector is not None else frontier.selector_spec.cls
    spec, reason, warn, seam_checked = frontier.sampler_spec(), "", False, False
    chosen = not frontier.step_chosen()
    if chosen:
        mode, reason, warn, seam_checked = _auto(frontier, run, cls, spec)
        if mode == "kept":
            screen = spec.config.screen if spec.kind == FewerRollouts.kind else 0
            fewer = fewer_rollouts_from_run("kept", screen, frontier.loss_scale)
            spec = SamplerSpec(FewerRollouts.kind, fewer)
    problems, data = _step_problems(spec, run, cls, seam=not seam_checked)
    if frontier.rollouts == FEWER_STEPS and not cls.walks_windows():
        problems.append(message(TRL, "rollouts:fewer_steps+selector", selector=cls.name))
    if problems or data:
        return Resolution(None, tuple(problems), tuple(data), chosen, warn)
    steps = run.settings.get("max_steps", -1)
    by_steps = isinstance(steps, int) and not isinstance(steps, bool) and steps > 0
    ends_by = "passes" if frontier.rollouts == FEWER_STEPS and not by_steps else "steps"
    return Resolution(StepPlan(spec, (), ends_by, reason), (), (), chosen, warn)


def _auto(
    frontier: FrontierConfig, run: TrlRun, cls: type[Selector], spec: SamplerSpec
) -> tuple[str, str, bool, bool]:
    """What `rollouts: auto` means here: (mode, why, whether to warn, whether the seam was
    checked): `auto_rollouts`' choice, then for kept this TRL's seam (`run.seam`) and
    its version (`run.version`), each turning kept into full with a warning naming it."""
    mode, why, warn = auto_rollouts(
        run.settings,
        run.trainer,
        selector=cls,
        dynamic_sampling=frontier.dynamic_sampling if spec.kind == DynamicSampling.kind else "off",
        shadows=frontier.shadows,
        columns=list(run.columns),
        rows=run.rows,
        processes=run.processes,
    )
    if mode != "kept":
        return mode, why, warn, False
    screen = spec.config.screen if spec.kind == FewerRollouts.kind else 0
    seam = run.seam(DynamicSampling.kind, screen) if run.seam is not None else None
    if seam is not None:
        return "full", message(TRL, "auto+seam", seam=seam.split(";")[0]), True, True
    if run.version is not None and run.version not in TESTED_TRL:
        tested = ", ".join(TESTED_TRL)
        return "full", message(TRL, "auto+version", tested=tested, version=run.version), True, True
    return mode, why, warn, True


def _step_problems(
    spec: SamplerSpec, run: TrlRun, cls: type[Selector], *, seam: bool
) -> tuple[list[str], list[str]]:
    """What refuses the step sampler `spec` here: (settings' problems, the data's). A seam
    this TRL lacks is the one problem said (`seam`: check it; False: auto checked it)."""
    settings, trainer = run.settings, run.trainer
    if spec.kind == DynamicSampling.kind:
        if trainer != "grpo":
            return trl_problems({}, trainer), []
        found = run.seam(spec.kind, 0) if seam and run.seam is not None else None
        if found is not None:
            return [found], []
        return trl_problems(settings, trainer), image_problems(list(run.columns))
    if spec.kind != FewerRollouts.kind:
        return [], []
    fewer = spec.config
    problems = fewer_problems(settings, trainer, "kept" if fewer.skip else "full", fewer.screen)
    data: list[str] = []
    if trainer == "grpo" and not problems:
        found = run.seam(spec.kind, fewer.screen) if seam and run.seam is not None else None
        if found is not None:
            return [found], []
        if set(IMAGE_COLUMNS) & set(run.columns):
            data.append(
                "rollouts: kept and screen do not support image datasets (an image or "
                "images column); set rollouts: full and screen: 0"
            )
    if fewer.skip and not cls.walks_windows():
        problems.append(message(TRL, "kept+selector", selector=cls.name))
    return problems, data
