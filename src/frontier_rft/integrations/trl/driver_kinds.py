"""What TRL does differently per step sampler kind: one `DriverKind` row a kind (`KINDS`), the
generic row any other kind gets (`driver_kind`), and the kinds TRL's step cannot hold
(`UNDRIVEN`). A row holds what the step driver does (`step_driver.StepDriver` reads it) and
what TRL's door says of the kind: how its shorthand keys spell a config of it (`spell`), what
TRL refuses of its settings (`refusals`) and of a run's (`problems`), whether the driver runs
it at all (`drives`). The door asks the row, never the kind's name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from frontier_rft.core.selector import Selector
from frontier_rft.integrations.trl.dynamic_config import (
    StepRun,
    dynamic_refusals,
    dynamic_spelling,
    dynamic_step_problems,
)
from frontier_rft.integrations.trl.fewer_config import fewer_spelling, fewer_step_problems
from frontier_rft.sampling.dynamic_sampling import DynamicSampling
from frontier_rft.sampling.fewer_rollouts import FewerRollouts
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.spec import KINDS as SAMPLER_KINDS
from frontier_rft.sampling.spec import SamplerSpec

__all__ = [
    "COUNTERS",
    "DAPO_SUMMARY",
    "DYNAMIC_COUNTERS",
    "FEWER_COUNTERS",
    "FEWER_SUMMARY",
    "KINDS",
    "SHORTHAND",
    "UNDRIVEN",
    "VALUES",
    "DriverKind",
    "driver_kind",
    "spelled",
    "why_undriven",
]

SHORTHAND: dict[str, Any] = {
    "dynamic_sampling": "off",
    "dynamic_sampling_config": None,
    "rollouts": "auto",
    "screen": 0,
    "loss_scale": "batch",
}
"""TRL's shorthand keys of the step (FrontierConfig's), at their defaults."""


def _full(config: Any) -> dict[str, Any]:
    """What the shorthand keys say of a kind that generates TRL's whole batch: rollouts full."""
    return {"rollouts": "full"}


def _none(config: Any, key: str) -> list[str]:
    return []


def _no_problems(
    config: Any, run: StepRun, selector: type[Selector], check_seam: bool
) -> tuple[list[str], list[str]]:
    return [], []


VALUES = (
    "rollouts",
    "rollouts_step",
    "rollouts_per_trained_group",
    "rollouts_per_trained_group_cumulative",
    "trained_groups",
    "groups_trained",
    "padded_groups",
    "filler_rollouts",
    "empty_steps",
    "loss_scale",
    "rows_step",
)
"""What a kind's metrics may report (`StepDriver.values`): completions generated (all steps,
this step, this step's and the run's per trained group), groups trained (all steps, this
step), groups short of B (all steps), completions of filler groups, steps that trained no
group, this step's factor on the policy gradient, rows laid out this step."""


@dataclass(frozen=True)
class DriverKind:
    """What the one step driver does differently for one step sampler kind: data, one row a
    kind in `KINDS`."""

    label: str
    """The sampler as the driver's messages name it ("dynamic sampling")."""
    off: str
    """How the user turns it off, as a message's advice ("set dynamic_sampling: off")."""
    namespace: str
    """Prefix of its metrics ("dapo": `dapo/rollouts`, ...)."""
    counters: Mapping[str, str]
    """The trainer's counters it keeps (saved in checkpoints), in order, by what they count:
    rollouts, filler_rollouts, trained_groups, empty_steps and (optional) padded_groups."""
    metrics: Mapping[str, str]
    """Its metrics under `namespace`, in log order: key -> the value reported (VALUES)."""
    summary: tuple[str, ...]
    """Its keys in TRL's logs at metrics_verbosity: summary (the sampler's own included)."""
    on_empty: Literal["stop", "skip"]
    """A step that trains no group: 'stop' training there (that update skipped, a warning
    saying why and how to go on), or 'skip' that generation's optimizer steps and go on."""
    stop_fix: str = ""
    """How to go on after a 'stop', as the warning's advice."""
    end_line: str = ""
    """The line said at the run's end of what its steps generated, with {spent} (completions
    generated), {generations}, {share} (', 0.80x' of the whole batches) and {whole} (TRL's
    whole batches' completions); '' for none."""
    spell: Callable[[Any], dict[str, Any]] = _full
    """What TRL's shorthand keys (SHORTHAND) say of a config of the kind (a key not named:
    its default), to name a key that says otherwise beside a `sampler:` and what the shadows
    and a checkpoint's record read."""
    refusals: Callable[[Any, str], list[str]] = _none
    """What TRL refuses of a config of the kind given whole, in the words of its key
    (`sampler_config`), one line each."""
    problems: Callable[[Any, StepRun, type[Selector], bool], tuple[list[str], list[str]]] = (
        _no_problems
    )
    """What refuses a config of the kind on a run with a selector class, the seam checked or
    not: (its settings' problems, its data's), one line each."""
    drives: bool = True
    """Whether the plan's step of this kind runs through the driver (False: TRL's own
    generation, the pass-through; code may still drive it, `_frontier_drive`)."""


KINDS: dict[str, DriverKind] = {
    DynamicSampling.kind: DriverKind(
        label="dynamic sampling",
        off="set dynamic_sampling: off",
        namespace="dapo",
        counters={
            "rollouts": "dapo_rollouts",
            "filler_rollouts": "dapo_filler_rollouts",
            "trained_groups": "dapo_trained_groups",
            "padded_groups": "dapo_padded_groups",
            "empty_steps": "dapo_no_signal_steps",
        },
        metrics={
            "rollouts": "rollouts",
            "rollouts_step": "rollouts_step",
            "rollouts_per_trained_group": "rollouts_per_trained_group",
            "rollouts_per_trained_group_cumulative": "rollouts_per_trained_group_cumulative",
            "trained_groups": "trained_groups",
            "padded_groups": "padded_groups",
            "filler_rollouts": "filler_rollouts",
            "no_signal_steps": "empty_steps",
            "rows_step": "rows_step",
        },
        summary=(
            "dapo/rounds",
            "dapo/rollouts_per_trained_group",
            "dapo/filtered_share",
            "dapo/deficit",
        ),
        on_empty="stop",
        stop_fix=(
            "add prompts, raise dynamic_sampling_config.max_rounds, or set dynamic_sampling: off"
        ),
        spell=dynamic_spelling,
        refusals=dynamic_refusals,
        problems=lambda config, run, selector, seam: dynamic_step_problems(config, run, seam),
    ),
    FewerRollouts.kind: DriverKind(
        label="fewer rollouts",
        off="set rollouts: full and screen: 0",
        namespace="fewer_rollouts",
        counters={
            "rollouts": "fewer_rollouts",
            "filler_rollouts": "fewer_filler_rollouts",
            "trained_groups": "fewer_trained_groups",
            "empty_steps": "fewer_empty_steps",
        },
        metrics={
            "rollouts": "rollouts",
            "rollouts_step": "rollouts_step",
            "groups_trained": "groups_trained",
            "trained_groups": "trained_groups",
            "loss_scale": "loss_scale",
            "filler_rollouts": "filler_rollouts",
            "empty_steps": "empty_steps",
            "rows_step": "rows_step",
        },
        summary=(
            "fewer_rollouts/rollouts_step",
            "fewer_rollouts/groups_trained",
            "fewer_rollouts/loss_scale",
        ),
        on_empty="skip",
        end_line=(
            "rollouts: kept generated {spent} completions in {generations} generation steps"
            "{share} of TRL's whole batches' {whole}; the steps and schedule were TRL's"
        ),
        spell=fewer_spelling,
        problems=fewer_step_problems,
    ),
    PassThrough.kind: DriverKind(
        label="the passthrough step",
        off="leave generation to TRL (no step sampler)",
        namespace="passthrough",
        counters={
            "rollouts": "passthrough_rollouts",
            "filler_rollouts": "passthrough_filler_rollouts",
            "trained_groups": "passthrough_trained_groups",
            "empty_steps": "passthrough_empty_steps",
        },
        metrics={
            "rollouts": "rollouts",
            "rollouts_step": "rollouts_step",
            "trained_groups": "trained_groups",
            "filler_rollouts": "filler_rollouts",
            "rows_step": "rows_step",
        },
        summary=("passthrough/rollouts_step",),
        on_empty="skip",
        drives=False,
    ),
}
"""The step samplers the driver runs, by `Sampler.kind`. FrontierConfig turns on dynamic
sampling (`dynamic_sampling`) and fewer rollouts (`rollouts: kept`, `screen`); PassThrough
(plain GRPO's step through the driver) is reachable from code (`_frontier_drive`)."""


def spelled(spec: SamplerSpec) -> dict[str, Any]:
    """Every shorthand key (SHORTHAND) as step sampler `spec` spells it (its row's `spell`)."""
    row = driver_kind(spec.kind)
    return {**SHORTHAND, **(row.spell if row is not None else _full)(spec.config)}


TRL_CANNOT_HOLD = {
    "uneven_groups": "its groups differ in size within a step, and TRL's batch trains groups "
    "of num_generations rows",
    "holds_groups": "it continues groups at a later step, and TRL's step keeps no completions "
    "across steps",
}
"""Why TRL's step cannot hold a kind, by the fact on its class (`WrapsSelector`)."""


def why_undriven(name: str) -> str:
    """Why TRL's step cannot hold step-sampler kind `name`, from the facts on its class
    ('' when it can, or when `name` is no kind)."""
    row = SAMPLER_KINDS.get(name)
    reasons = [why for fact, why in TRL_CANNOT_HOLD.items() if row is not None and row.fact(fact)]
    return reasons[0] if reasons else ""


UNDRIVEN: dict[str, str] = {kind: why for kind in SAMPLER_KINDS if (why := why_undriven(kind))}
"""Why the driver does not run these kinds of the spec's table, from the facts on their
classes (every other kind runs, by its own row or the generic one, `driver_kind`)."""


def driver_kind(name: str) -> DriverKind | None:
    """The row of step sampler kind `name`: its own in `KINDS`, else the generic row (its
    counters and metrics under its own name, as PassThrough's, an empty step skipped); None
    for a kind TRL's step cannot hold (`UNDRIVEN`)."""
    if name in KINDS:
        return KINDS[name]
    if not name or why_undriven(name):
        return None
    return DriverKind(
        label=f"step sampler {name!r}",
        off="leave generation to TRL (no step sampler)",
        namespace=name,
        counters={
            value: f"{name}_{value}"
            for value in ("rollouts", "filler_rollouts", "trained_groups", "empty_steps")
        },
        metrics={
            value: value
            for value in (
                "rollouts",
                "rollouts_step",
                "trained_groups",
                "groups_trained",
                "loss_scale",
                "filler_rollouts",
                "empty_steps",
                "rows_step",
            )
        },
        summary=(f"{name}/rollouts_step", f"{name}/groups_trained", f"{name}/loss_scale"),
        on_empty="skip",
    )


DAPO_SUMMARY = KINDS[DynamicSampling.kind].summary
"""Dynamic sampling keys in TRL's logs at metrics_verbosity: summary."""
DYNAMIC_COUNTERS = tuple(KINDS[DynamicSampling.kind].counters.values())
"""The adapter's dynamic sampling counters (saved in checkpoints with the others)."""
FEWER_SUMMARY = KINDS[FewerRollouts.kind].summary
"""Fewer-rollouts keys in TRL's logs at metrics_verbosity: summary."""
FEWER_COUNTERS = tuple(KINDS[FewerRollouts.kind].counters.values())
"""The adapter's fewer-rollouts counters (saved in checkpoints with the others)."""
COUNTERS = DYNAMIC_COUNTERS + FEWER_COUNTERS
"""The step counters every TRL checkpoint holds (a driver of another kind adds its own)."""
