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
from frontier_rft.integrations.trl.driver_kinds import driver_kind, spelled
from frontier_rft.integrations.trl.dynamic_config import TESTED_TRL
from frontier_rft.integrations.trl.fewer_config import TRL, auto_rollouts
from frontier_rft.integrations.trl.seam_check import seam_problem
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, fewer_rollouts_from_run
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.sampling.step_plan import StepPlan

__all__ = ["SETTINGS", "Resolution", "TrlRun", "resolve_step"]

SETTINGS = ("scale_rewards", "multi_objective_aggregation", "loss_type", "num_generations",
            "use_adaptive_entropy", "use_vllm", "vllm_mode", "use_cpu", "num_train_epochs",
            "max_steps", "per_device_train_batch_size", "gradient_accumulation_steps",
            "num_iterations", "generation_batch_size", "steps_per_generation")  # fmt: skip
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
            fewer = fewer_rollouts_from_run("kept", spelled(spec)["screen"], frontier.loss_scale)
            spec = SamplerSpec(FewerRollouts.kind, fewer)
    problems, data = _step_problems(spec, run, cls, seam=not seam_checked)
    if frontier.rollouts == FEWER_STEPS and not cls.walks_windows():
        problems.append(message(TRL, "rollouts:fewer_steps+selector", selector=cls.name))
    if problems or data:
        return Resolution(None, tuple(problems), tuple(data), chosen, warn)
    ends_by = "steps"
    if frontier.rollouts == FEWER_STEPS:  # the run's end, decided here once
        ends_by, reason, warn = _fewer_steps_end(run.settings, cls)
    return Resolution(StepPlan(spec, (), ends_by, reason), (), (), chosen, warn)


def _fewer_steps_end(settings: Mapping[str, Any], cls: type[Selector]) -> tuple[str, str, bool]:
    """How a `rollouts: fewer_steps` run ends, and why, in one line (fewer_steps.py): by its
    passes over the prompts (num_train_epochs), or, where max_steps sets the run's length, by
    its steps (then a warning: it saves nothing)."""
    steps = settings.get("max_steps", -1)
    if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
        return "steps", (
            f"fewer_steps, but max_steps {steps} sets the run's length: it keeps its {steps} "
            f"steps of whole batches of the prompts {cls.name!r} keeps, so they walk further "
            "into the data (unset max_steps to end the run by num_train_epochs passes in fewer "
            "steps)"
        ), True  # fmt: skip
    epochs = settings.get("num_train_epochs", 3.0)
    shown = f"{epochs:g}" if isinstance(epochs, int | float) else str(epochs)
    return "passes", (
        f"fewer_steps: each step a whole batch of the prompts {cls.name!r} keeps, the run "
        f"ended once they have walked num_train_epochs={shown} passes over the prompts (fewer "
        "steps than TRL plans where it passes prompts over; the learning-rate schedule "
        "follows the passes; docs/selectors/fewer_steps.md)"
    ), False  # fmt: skip


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
        dynamic_sampling=spelled(spec)["dynamic_sampling"],
        shadows=frontier.shadows,
        columns=list(run.columns),
        rows=run.rows,
        processes=run.processes,
    )
    if mode != "kept":
        return mode, why, warn, False
    screen = spelled(spec)["screen"]
    seam = run.seam(FewerRollouts.kind, screen) if run.seam is not None else None
    if seam is not None:
        return "full", message(TRL, "auto+seam", seam=seam.split(";")[0]), True, True
    if run.version is not None and run.version not in TESTED_TRL:
        tested = ", ".join(TESTED_TRL)
        return "full", message(TRL, "auto+version", tested=tested, version=run.version), True, True
    return mode, why, warn, True


def _step_problems(
    spec: SamplerSpec, run: TrlRun, cls: type[Selector], *, seam: bool
) -> tuple[list[str], list[str]]:
    """What refuses the step sampler `spec` here: (settings' problems, the data's), as its
    kind's row says (`DriverKind.problems`). A seam this TRL lacks is the one problem said
    (`seam`: check it; False: auto checked it)."""
    row = driver_kind(spec.kind)
    return ([], []) if row is None else row.problems(spec.config, run, cls, seam)
