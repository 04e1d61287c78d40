"""A run's step, decided once: `StepPlan`, frozen, the one object every door resolves its
settings into and every trainer builds its step from.

A plan holds the step sampler (`SamplerSpec`, a row of `KINDS`), the samplers around it as a
chain (`wraps`, innermost first, each a row of `WRAPS`), how the run ends (its steps, or its
passes over the prompts) and why it was chosen (`reason`, for the log and `frontier
check-config`). It is checked whole when made: a wrap states what it needs of the sampler it
wraps as facts of its class (`WrapsSampler.refusal`), so no wrap imports another, and a plan
that cannot run is a ValueError naming the clash before anything is built. `build(selector)`
is then the one builder, as optax's `chain` holds a whole transform: the sampler's `build`,
then each wrap's class around it with its settings.

A new wrap is its `sampling/` module (a `WrapsSampler` with its `name`, `settings` and
`refusal`) plus one `WRAPS` row; the contract suite finds it there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from frontier_rft.core.config import check, check_choice
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.backfill import Backfill
from frontier_rft.sampling.hard_groups import HardGroups
from frontier_rft.sampling.rescue import Rescue
from frontier_rft.sampling.spec import Posterior, SamplerSpec
from frontier_rft.sampling.step import Sampler
from frontier_rft.sampling.wraps_sampler import WrapsSampler

__all__ = ["ENDS", "WRAPS", "StepPlan", "Wrap"]

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
