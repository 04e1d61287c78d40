"""A run's step, decided once: `StepPlan`, frozen, the one object every door resolves its
settings into and every trainer builds its step from.

A plan holds the step sampler (`SamplerSpec`, a row of `KINDS`), the samplers around it as a
chain (`wraps`, innermost first, each a row of `WRAPS`), how the run ends (its steps, or its
passes over the prompts), why it was chosen (`reason`, for the log and `frontier
check-config`) and, where a door decided them, the step's rows (`StepRows`: prompts a call,
rollouts a prompt, calls a step, rows an update trains), which the trainer holding the plan
reads its batch from. It is checked whole when made: a wrap states what it needs of the sampler it
wraps as facts of its class (`WrapsSampler.refusal`), so no wrap imports another, and a plan
that cannot run is a ValueError naming the clash before anything is built. `build(selector)`
is then the one builder, as optax's `chain` holds a whole transform: the sampler's `build`,
then each wrap's class around it with its settings.

A new wrap is its `sampling/` module (a `WrapsSampler` with its `name`, `settings` and
`refusal`) plus one `WRAPS` row; the contract suite finds it there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from frontier_rft.core.bounds import MAX_STEP
from frontier_rft.core.config import check, check_choice
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.backfill import Backfill
from frontier_rft.sampling.hard_groups import HardGroups
from frontier_rft.sampling.rescue import Rescue
from frontier_rft.sampling.spec import Posterior, SamplerSpec
from frontier_rft.sampling.step import MAX_GROUP_SIZE, Sampler
from frontier_rft.sampling.wraps_sampler import WrapsSampler

__all__ = ["ENDS", "WRAPS", "StepPlan", "StepRows", "Wrap"]

WRAPS: dict[str, type[WrapsSampler]] = {
    HardGroups.name: HardGroups,
    Rescue.name: Rescue,
    Backfill.name: Backfill,
}
"""Every sampler around a sampler, by its name, innermost first: the order a plan wraps them
in (rescue extends the groups as the first call made them, larger or not; backfill replays the
groups as trained, rescued ones joined) and a saved state lists them."""

ENDS = ("steps", "passes")
"""How a run ends: after its steps, or once its selector has walked uniform's passes over the
prompts (`fewer_steps`: whole plain-GRPO steps of the kept prompts;
docs/selectors/fewer_steps.md)."""


@dataclass(frozen=True)
class Wrap:
    """One sampler around the step sampler: its `WRAPS` name and its settings."""

    name: str
    """A name of `WRAPS`: hard_groups, rescue, backfill."""
    settings: tuple[tuple[str, Any], ...] = ()
    """Its class's `settings`, each (name, value), in that order."""

    def __post_init__(self) -> None:
        check_choice("wrap", self.name, tuple(WRAPS))
        names = tuple(name for name, _ in self.settings)
        wanted = WRAPS[self.name].settings
        check(
            names == wanted,
            f"wrap {self.name!r} takes the settings {', '.join(wanted)}, in that order; got "
            f"{', '.join(names) or 'none'}",
        )
        # as its build checks them: a plan that cannot run is refused when made
        checked = WRAPS[self.name].checked_settings(**dict(self.settings))
        object.__setattr__(self, "settings", tuple((key, checked[key]) for key in wanted))

    @classmethod
    def of(cls, name: str, **settings: Any) -> Wrap:
        """The wrap `name` with `settings` by name; ValueError naming a missing or unknown one."""
        check_choice("wrap", name, tuple(WRAPS))
        wanted = WRAPS[name].settings
        check(
            set(settings) == set(wanted),
            f"wrap {name!r} takes the settings {', '.join(wanted)}; got {', '.join(settings)}",
        )
        return cls(name, tuple((key, settings[key]) for key in wanted))

    def build(self, sampler: Sampler) -> WrapsSampler:
        """This wrap's class around `sampler`, with its settings."""
        make: Callable[..., WrapsSampler] = WRAPS[self.name]  # each wrap's own constructor
        return make(sampler, **dict(self.settings))

    def words(self) -> str:
        """How a log line or `frontier check-config` names it: 'rescue (extra 8)'."""
        own = ", ".join(f"{key} {value}" for key, value in self.settings)
        return f"{self.name} ({own})" if own else self.name


@dataclass(frozen=True)
class StepRows:
    """A step's rows, decided once in its plan: the shape every door sizes its trainer by (the
    reference trainer's batch and groups, verl's and SkyRL's train_batch_size x n, tinker's
    groups per batch, TRL's generation batch over its processes)."""

    prompts: int
    """Prompts one call to generate rolls out."""
    rollouts: int | None = None
    """Rollouts each prompt gets, the group size; None where the door does not see it (tinker's
    builders make their own groups; a verl sampler built from verl's data config alone)."""
    calls: int = 1
    """Calls to generate a step's prompts are split over, `prompts` each: 1 where one call
    rolls out the step (the reference trainer's plain step, verl, SkyRL, tinker); TRL's
    processes where each generates its own share (no vLLM server gathering them)."""
    trained: int = 0
    """Rows one optimizer update trains (0: every row the step generates); fewer where one
    generation is trained over several updates (TRL's steps_per_generation): the step's rows
    are then a whole number of them. Only with `rollouts` known."""

    def __post_init__(self) -> None:
        for name, hi, what in (
            ("prompts", MAX_STEP, "prompts one call to generate rolls out"),
            ("rollouts", MAX_GROUP_SIZE, "rollouts each prompt gets; None: not known here"),
            ("calls", MAX_STEP, "calls to generate a step is split over"),
        ):
            value = getattr(self, name)
            check(
                (value is None and name == "rollouts")
                or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= hi),
                f"a step's {name} must be an int in [1, {hi}] ({what}), got {value!r}",
            )
        rows, trained = self.generated, self.trained
        check(
            isinstance(trained, int)
            and not isinstance(trained, bool)
            and (trained == 0 or (rows is not None and 0 <= trained <= rows)),
            f"a step's trained rows must be an int in [0, {rows}] (0: all it generates), got "
            f"{trained!r}"
            if rows is not None
            else f"a step's trained rows need its rollouts per prompt: got {trained!r} with none",
        )
        check(
            trained == 0 or rows is None or rows % trained == 0,
            f"a step's {rows} rows are trained over whole updates: trained {trained} must "
            "divide them",
        )
        if trained == 0 and rows is not None:
            object.__setattr__(self, "trained", rows)

    @property
    def batch(self) -> int:
        """Prompts a step rolls out, over all its calls: the selector's batch."""
        return self.prompts * self.calls

    @property
    def generated(self) -> int | None:
        """Rows a step generates, its prompts x their rollouts (None: rollouts not known)."""
        return None if self.rollouts is None else self.batch * self.rollouts

    @property
    def updates(self) -> int | None:
        """Optimizer updates a step's rows are trained over (None: rollouts not known)."""
        rows = self.generated
        return None if rows is None else rows // self.trained

    def group_size(self) -> int:
        """The rollouts each prompt gets; a ValueError where the door did not decide them."""
        if self.rollouts is None:
            raise ValueError("this step's rollouts per prompt are its trainer's, not its plan's")
        return self.rollouts

    def words(self) -> str:
        """'64 prompts x 8 rollouts a step (512 rows, 1 call, 1 update)'."""
        calls = f"{self.calls} call{'s' * (self.calls != 1)}"
        if self.rollouts is None:
            return f"{self.batch} prompts a step ({calls}; rollouts per prompt the trainer's)"
        updates = f"{self.updates} update{'s' * (self.updates != 1)}"
        return (
            f"{self.batch} prompts x {self.rollouts} rollouts a step ({self.generated} rows, "
            f"{calls}, {updates})"
        )


@dataclass(frozen=True)
class StepPlan:
    """A run's step: its sampler, the wraps around it, how the run ends, and why."""

    sampler: SamplerSpec = field(default_factory=SamplerSpec)
    """The step sampler around the selector (a kind of `KINDS` and its config)."""
    wraps: tuple[Wrap, ...] = ()
    """The samplers around it, innermost first, in `WRAPS`' order."""
    ends_by: str = "steps"
    """How the run ends: 'steps' (its step count) or 'passes' (its passes over the prompts)."""
    reason: str = ""
    """Why this plan was chosen, in one line ('' where the user set it whole)."""
    rows: StepRows | None = None
    """The step's rows, which every trainer that holds the plan reads its batch from (None:
    its caller sizes each step, as the simulator's runs and a bench entry's plan do)."""

    def __post_init__(self) -> None:
        check(
            isinstance(self.sampler, SamplerSpec),
            f"a plan's sampler must be a SamplerSpec, got {type(self.sampler).__name__}",
        )
        check(
            isinstance(self.wraps, tuple) and all(isinstance(w, Wrap) for w in self.wraps),
            "a plan's wraps must be a tuple of Wrap",
        )
        order = [list(WRAPS).index(w.name) for w in self.wraps]
        check(
            order == sorted(set(order)),
            f"wraps {[w.name for w in self.wraps]} must each appear once, innermost first as "
            f"WRAPS orders them ({', '.join(WRAPS)})",
        )
        check_choice("ends_by", self.ends_by, ENDS)
        check(isinstance(self.reason, str), "a plan's reason must be a str")
        check(
            self.rows is None or isinstance(self.rows, StepRows),
            f"a plan's rows must be StepRows, got {type(self.rows).__name__}",
        )
        for wrap in self.wraps:
            why = WRAPS[wrap.name].refusal(self.sampler.kind, self.sampler.config)
            check(why is None, str(why))
        check(
            self.ends_by == "steps" or (self.sampler.fact("plain") and not self.wraps),
            "a run ended by its passes trains whole plain-GRPO steps of the kept prompts: "
            f"sampler {self.sampler.kind!r}"
            + "".join(f" with {w.name}" for w in self.wraps)
            + " shapes its steps itself",
        )

    @property
    def rollouts(self) -> str:
        """The rollouts mode: 'kept' (only the prompts the selector keeps in uniform's window
        are rolled out), else 'full' (the whole batch)."""
        return "kept" if self.sampler.fact("rolls_kept") else "full"

    def with_rows(self, rows: StepRows) -> StepPlan:
        """This plan with the step's rows a door decided (`StepRows`), checked."""
        return replace(self, rows=rows)

    def shape(self) -> StepRows:
        """The step's rows; a ValueError where no door decided them (a plan sized by its
        caller)."""
        if self.rows is None:
            raise ValueError("this plan holds no rows: its caller sizes each step")
        return self.rows

    def build(
        self, selector: Selector, *, seed: int = 0, posterior: Posterior | None = None
    ) -> Sampler:
        """The step sampler around `selector`, inside its wraps (`SamplerSpec.build`'s `seed`
        and `posterior`)."""
        sampler = self.sampler.build(selector, seed=seed, posterior=posterior)
        for wrap in self.wraps:
            sampler = wrap.build(sampler)
        return sampler

    def words(self) -> str:
        """The plan in one line, as the log and `frontier check-config` print it."""
        wraps = "".join(f" with {w.words()}" for w in self.wraps)
        rollouts = f", rollouts {self.rollouts}" if self.rollouts != "full" else ""
        why = f" ({self.reason})" if self.reason else ""
        return f"sampler {self.sampler.kind}{wraps}{rollouts}, ended by {self.ends_by}{why}"
