"""A run's step sampler as one spec, `SamplerSpec(kind, config)`, and the one table of the
kinds every door converts through (`KINDS`, a row each).

The doors each convert in one place: the reference trainer's flat flags
(`sampler_flags.SamplerFlags.spec`, and `.of_spec` back to the flat fields the ledger's
digests are taken from), TrainConfig (`TrainConfig.sampler_spec`), TRL's YAML
(`FrontierConfig.sampler_spec`) and the simulator's flags (`simulation.runner.sampler_spec`);
the bench's entry tables spell a spec by the flat flags, and both kinds of entry hold it. verl,
SkyRL and tinker-cookbook build no step sampler: their `rollouts: kept` walks the selector's
windows inside their own batches. Which kinds an adapter's trainer runs is the plan's
(`integrations.plan.SAMPLER_TRAINERS`), with its refusal texts. A new kind is its module, a row
here and a row there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import check, check_choice, config_from_dict
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.allocation import Allocation, AllocationConfig
from frontier_rft.sampling.base import WrapsSelector, config_dict
from frontier_rft.sampling.conformal_stop import ConformalStop, ConformalStopConfig
from frontier_rft.sampling.dynamic_sampling import DynamicSampling, DynamicSamplingConfig
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.pilot_commit import PilotCommit, PilotCommitConfig
from frontier_rft.sampling.step import Sampler

__all__ = ["KINDS", "KindRow", "SamplerSpec", "kind_row"]

Posterior = Callable[[NDArray[np.int64]], tuple[Any, Any]]


@dataclass(frozen=True)
class KindRow:
    """One step-sampler kind as every door sees it."""

    sampler: Callable[..., Sampler]
    """Its class, built as sampler(selector) without a config class, else
    sampler(selector, config, **extras)."""
    config: type[Any] | None = None
    """Its frozen config dataclass (None: it has no settings)."""
    flags: Mapping[str, str] = field(default_factory=dict)
    """The flat fields (`SamplerFlags`, `frontier train` flags) that spell its config: flat
    field -> config field ({}: none; it is named by TrainConfig.sampler and sampler_config)."""
    extras: tuple[str, ...] = ()
    """What its builder takes besides the selector and config: 'seed' (its own draws),
    'posterior' (the Beta posteriors an allocation reads)."""

    def fact(self, name: str, config: Any = None) -> bool:
        """A fact its class states (`WrapsSelector`): one of the kind, a class attribute
        (plain, uneven_groups, holds_groups, rescuable, rolls_fewer, frees_slots, replays), or
        one of the kind set by `config`, a classmethod of it (splits_groups, rolls_kept).
        Every door asks the row, never the name."""
        stated = getattr(self.sampler, name)
        return bool(stated(config) if callable(stated) else stated)

    def check_train(self, config: Any, **run: Any) -> None:
        """Its class's check of a reference-trainer run (`WrapsSelector.check_train`)."""
        cast(type[WrapsSelector], self.sampler).check_train(config, **run)


KINDS: dict[str, KindRow] = {
    PassThrough.kind: KindRow(PassThrough),
    DynamicSampling.kind: KindRow(
        DynamicSampling,
        DynamicSamplingConfig,
        {
            "oversample": "oversample",
            "adaptive_oversample": "adaptive",
            "dapo_max_rounds": "max_rounds",
            "dapo_round_rule": "round_rule",
        },
    ),
    Allocation.kind: KindRow(
        Allocation,
        AllocationConfig,
        {
            "rollout_budget": "budget",
            "min_rollouts": "min_rollouts",
            "max_rollouts": "max_rollouts",
            "allocation_value": "value",
            "pilot_rollouts": "pilot",
            "commit": "commit",
        },
        extras=("posterior",),
    ),
    # its flat `rollouts` ('kept' <-> skip) is fewer_rollouts_from_run's, in its module
    FewerRollouts.kind: KindRow(
        FewerRollouts, FewerRolloutsConfig, {"screen": "screen", "loss_scale": "loss_scale"}
    ),
    PilotCommit.kind: KindRow(
        PilotCommit,
        PilotCommitConfig,
        {
            f"pc_{name}": name
            for name in (
                "pilot",
                "candidates",
                "commit_low",
                "commit_high",
                "evict_at",
                "max_age",
                "buffer_pick",
                "max_rounds",
            )
        },
        extras=("seed",),
    ),
    # no flat flags: named by TrainConfig.sampler and sampler_config (--sampler cgrpo)
    ConformalStop.kind: KindRow(ConformalStop, ConformalStopConfig, extras=("seed",)),
}
"""Every step-sampler kind (its class's `kind`) and how each door reaches it, in the order
`frontier train --sampler` lists them."""


def kind_row(kind: str) -> KindRow:
    """The row of step-sampler `kind`; ValueError naming the kinds otherwise."""
    check_choice("sampler", kind, tuple(KINDS))
    return KINDS[kind]


@dataclass(frozen=True)
class SamplerSpec:
    """A run's step sampler: its kind and its config, the one vocabulary of every door."""

    kind: str = PassThrough.kind
    """A kind of `KINDS`: passthrough (plain GRPO), dynamic_sampling, allocation,
    fewer_rollouts, pilot_commit, cgrpo."""
    config: Any = None
    """The kind's config dataclass (None: its defaults; always None for a kind without one)."""

    def __post_init__(self) -> None:
        row = kind_row(self.kind)
        if row.config is None:
            check(
                self.config is None,
                f"sampler {self.kind!r} takes no settings, got {self.config!r}: name the "
                "sampler they belong to",
            )
            return
        if self.config is None:
            object.__setattr__(self, "config", row.config())
        check(
            isinstance(self.config, row.config),
            f"sampler {self.kind!r}: config must be a {row.config.__name__}, "
            f"got {type(self.config).__name__}",
        )

    @classmethod
    def read(cls, kind: str, fields: Mapping[str, Any]) -> SamplerSpec:
        """The spec of `kind` with `fields` of its config set (the rest default), as
        TrainConfig.sampler and sampler_config spell it; ValueError naming the field."""
        row = kind_row(kind)
        check(isinstance(fields, Mapping), "sampler_config must be a dict of the sampler's fields")
        if row.config is None:
            check(
                not fields,
                f"sampler {kind!r} takes no settings, got sampler_config {dict(fields)!r}: "
                "name the sampler they belong to",
            )
            return cls(kind)
        return cls(kind, config_from_dict(row.config, fields, what=f"sampler {kind!r}"))

    def fact(self, name: str) -> bool:
        """A fact of its kind set by its config (`KindRow.fact`): plain, splits_groups,
        frees_slots, rolls_kept, ..."""
        return KINDS[self.kind].fact(name, self.config)

    def fields(self) -> dict[str, Any]:
        """Every field of its config ({} for a kind without one): TrainConfig.sampler_config."""
        return config_dict(self.config)

    def pair(self) -> tuple[str, dict[str, Any]]:
        """(TrainConfig.sampler, TrainConfig.sampler_config) of this spec."""
        return self.kind, self.fields()

    def build(
        self, selector: Selector, *, seed: int = 0, posterior: Posterior | None = None
    ) -> Sampler:
        """The step sampler around `selector`: the one builder of the reference trainer, the
        simulator, TRL and the bench. `seed` draws a sampler's own picks (Pilot-Commit's, C-GRPO's);
        `posterior` replaces an allocation's Beta posteriors (the simulator's oracle)."""
        row = KINDS[self.kind]
        check(
            posterior is None or "posterior" in row.extras,
            f"posterior is an allocation's; sampler {self.kind!r} reads none",
        )
        if row.config is None:
            return row.sampler(selector)
        given = {"seed": seed, "posterior": posterior}
        sampler: Sampler = row.sampler(selector, self.config, **{k: given[k] for k in row.extras})
        return sampler
