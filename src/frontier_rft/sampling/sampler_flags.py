"""A run's step sampler as one name and one config (`TrainConfig.sampler`, `.sampler_config`),
and the flat fields that spelled it before (`SamplerFlags`).

The flat fields stay as sugar: they are the `frontier train` flags (--dynamic-sampling,
--rollout-budget, --screen, --pc-pilot, ...), the keys of run.json, spec.json and --config
files written before the pair, and the spelling of the bench's entry definitions and testbed
settings, whose digests key the ledger. `SamplerFlags.spec()` turns them into the step
sampler's spec (`sampling.spec.SamplerSpec`; `.sampler()` into the pair) and
`SamplerFlags.of_spec()` (`.of()`) turns a spec back into them; `legacy_train_fields` is the one
place an old TrainConfig dict is translated. Which flag sets which config field is the kind's
row of `sampling.spec.KINDS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import check, check_choice
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.allocation import COMMITS, VALUES
from frontier_rft.sampling.dynamic_sampling import TRAIN_ROUND_RULES
from frontier_rft.sampling.fewer_rollouts import (
    LOSS_SCALES,
    ROLLOUTS,
    FewerRollouts,
    fewer_rollouts_from_run,
)
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.spec import KINDS, SamplerSpec, kind_row
from frontier_rft.sampling.step import Sampler

__all__ = [
    "FLAG_NAMES",
    "SAMPLER_NAMES",
    "TRAIN_ROUND_RULES",
    "SamplerFlags",
    "build_sampler",
    "flat_train_fields",
    "legacy_train_fields",
    "sampler_settings",
]

SAMPLER_NAMES = tuple(KINDS)
"""TrainConfig.sampler values: the `kind` each step sampler declares (passthrough = plain
GRPO, dynamic_sampling, allocation, fewer_rollouts, pilot_commit)."""


def sampler_settings(name: str, config: Mapping[str, Any]) -> Any:
    """The config dataclass of step sampler `name` built from `config` (its fields to set,
    the rest default); None for passthrough, which has none. ValueError naming the field."""
    return SamplerSpec.read(name, config).config


def build_sampler(
    name: str,
    config: Mapping[str, Any] | Any,
    selector: Selector,
    *,
    seed: int = 0,
    posterior: Callable[[NDArray[np.int64]], tuple[Any, Any]] | None = None,
) -> Sampler:
    """Step sampler `name` with `config` (its fields, or its config dataclass) around
    `selector`: `SamplerSpec.build` of that spec."""
    config_class = kind_row(name).config
    given = config_class is not None and isinstance(config, config_class)
    spec = SamplerSpec(name, config) if given else SamplerSpec.read(name, config)
    return spec.build(selector, seed=seed, posterior=posterior)


def _flagged() -> dict[str, Mapping[str, str]]:
    """Flag -> the field of its sampler's config it sets, by kind (the kinds with flags)."""
    return {kind: row.flags for kind, row in KINDS.items() if row.flags}


@dataclass(frozen=True)
class SamplerFlags:
    """The step sampler as flat fields: `frontier train`'s flags and older runs' TrainConfig."""

    dynamic_sampling: bool = False
    """DAPO's dynamic sampling around the selector: roll out oversampled candidates, train
    only on groups with reward spread (selector uniform + this + dapo_round_rule dapo =
    DAPO's released code; sampler dynamic_sampling)."""
    oversample: float = 3.0
    """dynamic_sampling: candidates rolled out per open training slot (dapo_round_rule
    dapo: per batch slot, every round; DAPO: 3)."""
    adaptive_oversample: bool = False
    """dynamic_sampling: size each round from the measured zero-variance share (GRESO's
    rule, clamped to [1, 3] candidates per slot) instead of a fixed `oversample`."""
    dapo_max_rounds: int = 10
    """dynamic_sampling: most sampling rounds per step while the batch lacks mixed groups
    (DAPO's max_num_gen_batches)."""
    dapo_round_rule: str = "standard"
    """dynamic_sampling: standard (each round oversample x the open slots: mode fixed, or
    adaptive) or dapo (DAPO's released code: every round oversample x batch_size, the kept
    groups truncated to the batch; mode dapo)."""
    allocation: bool = False
    """Per-prompt rollout allocation around the selector: the step's budget of rollouts
    spread over its prompts where they are likeliest to give informative groups (untried
    prompts get group_size; docs/selectors/allocation.md; sampler allocation)."""
    rollout_budget: float = 1.0
    """allocation: rollouts per step as a multiple of batch_size x group_size (1 = uniform's)."""
    min_rollouts: int = 2
    """allocation: fewest rollouts of a selected prompt (Knapsack RL: 2)."""
    max_rollouts: int = 128
    """allocation: most rollouts of one prompt in a step (Knapsack RL: 128)."""
    allocation_value: str = "informative"
    """allocation: what a group is worth: informative (its chance of reward spread), signal
    (its expected mean |advantage|) or knapsack (Knapsack RL's weighting)."""
    pilot_rollouts: int = 0
    """allocation: two stages, a pilot of this many rollouts per tried prompt and the rest
    committed after it (0 = one stage)."""
    commit: str = "balance"
    """allocation with a pilot: balance (continue groups still all equal) or mixed
    (Pilot-Commit: continue the mixed pilots first)."""
    rollouts: str = "full"
    """What a step rolls out: 'full' (batch_size x group_size every step, uniform's bill; a
    skipping selector fills the batch with the prompts it keeps) or 'kept' (only the prompts
    the selector keeps among uniform's next batch_size: the same steps and epochs, fewer
    rollouts; greso, skip or uniform; docs/selectors/fewer_rollouts.md; sampler
    fewer_rollouts)."""
    screen: int = 0
    """Screening rollouts per prompt, k (0 = off): a prompt gets k rollouts first and the
    other group_size - k only if its k rewards are not all equal (a k-of-n screen, our own)."""
    loss_scale: str = "batch"
    """rollouts 'kept' or screening: a step that trains fewer than batch_size groups has its
    loss scaled by groups trained / batch_size ('batch': left-out groups count as zero-
    advantage ones) or averaged over the groups trained ('kept')."""
    pilot_commit: bool = False
    """Pilot-Commit as the step's sampler: each round pilots pc_candidates x batch_size
    prompts with pc_pilot rollouts, commits group_size - pc_pilot more to buffered pilots
    whose pass rate lies in [pc_commit_low, pc_commit_high], until batch_size groups; solved
    prompts are evicted (docs/selectors/pilot_commit.md; sampler pilot_commit)."""
    pc_pilot: int = 0
    """pilot_commit: pilot rollouts per candidate, k (0 = group_size // 4, at least 2: the
    paper's 16 of 64 and 32 of 128)."""
    pc_candidates: int = 3
    """pilot_commit: candidates piloted per round, as a multiple of batch_size (paper: 3)."""
    pc_commit_low: float = 0.125
    """pilot_commit: lowest pilot pass rate buffered for a commit (paper: 0.125)."""
    pc_commit_high: float = 0.75
    """pilot_commit: highest pilot pass rate buffered for a commit (paper: 0.75)."""
    pc_evict_at: float | None = 1.0
    """pilot_commit: a pilot pass rate at or above this evicts the prompt for good (paper:
    1.0, every pilot rollout solved; None = never)."""
    pc_max_age: int = 4
    """pilot_commit: buffered pilots more than this many steps old are dropped (paper: 4)."""
    pc_buffer_pick: str = "random"
    """pilot_commit: which buffered pilots a round commits when it holds more than it needs:
    random or max_variance (highest pilot std, newest first)."""
    pc_max_rounds: int = 10
    """pilot_commit: most rounds a step runs while it has fewer than batch_size groups (then
    it trains the groups it has)."""

    def kind(self) -> str:
        """The sampler these flags turn on; ValueError when they turn on two."""
        # a kind with a flag of its own name is turned on by it (fewer_rollouts: by its
        # rollouts 'kept' or a screen)
        on = [kind for kind in KINDS if kind in FLAG_NAMES and getattr(self, kind)]
        check_choice("rollouts", self.rollouts, ROLLOUTS)
        if self.rollouts == "kept" or self.screen:
            on.append(FewerRollouts.kind)
        check(
            len(on) <= 1,
            f"{' and '.join(_flag_names(on))} are each a step's sampler and do not combine: "
            "turn all but one off",
        )
        return on[0] if on else PassThrough.kind

    def sampler(self) -> tuple[str, dict[str, Any]]:
        """(TrainConfig.sampler, TrainConfig.sampler_config) of these flags: every field of
        the sampler's config, as its flags set it; ValueError naming the flag."""
        return self.spec().pair()

    def spec(self) -> SamplerSpec:
        """The step sampler these flags spell: the flat door's one conversion into the spec;
        ValueError naming the flag."""
        check_choice("dapo_round_rule", self.dapo_round_rule, TRAIN_ROUND_RULES)
        check(
            not (self.adaptive_oversample and self.dapo_round_rule == "dapo"),
            "dapo_round_rule dapo rolls out oversample x batch_size every round; "
            "adaptive_oversample sizes the standard rounds: turn one off",
        )
        check_choice("allocation_value", self.allocation_value, VALUES)
        check_choice("commit", self.commit, COMMITS)
        check_choice("loss_scale", self.loss_scale, LOSS_SCALES)
        kind = self.kind()
        chosen = SamplerSpec()
        flagged = _flagged()
        for other in flagged:  # a sampler's flags are checked even while it is off
            settings: Any
            try:
                if other == FewerRollouts.kind:  # the simulator's spelling too: one rule
                    settings = fewer_rollouts_from_run(self.rollouts, self.screen, self.loss_scale)
                else:
                    values = {field: getattr(self, flag) for flag, field in flagged[other].items()}
                    settings = sampler_settings(other, values)
            except ValueError as exc:
                raise ValueError(_flag_message(other, str(exc))) from None
            if other == kind:
                chosen = SamplerSpec(kind, settings)
        return chosen

    @classmethod
    def of(cls, name: str, config: Mapping[str, Any]) -> SamplerFlags:
        """The flags that spell sampler `name` with `config`; ValueError when one of its
        settings has no flag (set it through sampler_config)."""
        return cls.of_spec(SamplerSpec.read(name, config))

    @classmethod
    def of_spec(cls, spec: SamplerSpec) -> SamplerFlags:
        """The flags that spell `spec`: the conversion back to the flat fields the ledger's
        digests are taken from; ValueError when one of its settings has no flag (set it
        through sampler_config)."""
        name, settings = spec.kind, spec.config
        if spec.fact("plain"):  # every sampler's flag off
            return cls()
        check(
            bool(KINDS[name].flags),
            f"sampler {name!r} has no flags of its own: name it by sampler and sampler_config",
        )
        values = dataclasses.asdict(settings)
        flags = {flag: values.pop(field) for flag, field in KINDS[name].flags.items()}
        if name == FewerRollouts.kind:
            flags["rollouts"] = "kept" if values.pop("skip") else "full"
        else:
            flags[name] = True
        defaults = dataclasses.asdict(type(settings)())
        extra = sorted(k for k, v in values.items() if v != defaults[k])
        check(not extra, f"sampler {name!r}: {', '.join(extra)} has no flag of its own")
        return cls(**flags)

    def as_fields(self) -> dict[str, Any]:
        """These flags as the TrainConfig fields they were, in their order."""
        return dataclasses.asdict(self)

    def changed(self) -> dict[str, Any]:
        """The fields set otherwise than their defaults, in their order: how a bench or
        simulator entry spells its sampler in its records (the ledger's definitions)."""
        defaults = type(self)()
        return {k: v for k, v in self.as_fields().items() if v != getattr(defaults, k)}


FLAG_NAMES = tuple(f.name for f in dataclasses.fields(SamplerFlags))
"""The flat fields (and `frontier train` flags) of SamplerFlags."""


def _flag_names(kinds: list[str]) -> list[str]:
    names = {FewerRollouts.kind: "rollouts 'kept' or screening"}
    return [names.get(kind, kind) for kind in kinds]


def _flag_message(kind: str, text: str) -> str:
    """A config class's message with its field names as the flags spell them."""
    text = text.removeprefix(f"sampler {kind!r}: ")
    for flag, field in KINDS[kind].flags.items():
        if flag != field:
            text = text.replace(f"{field} must", f"{flag} must", 1)
            text = text.replace(f"need 0 <= {field}", f"need 0 <= {flag}", 1)
            text = text.replace(f"<= {field} <=", f"<= {flag} <=", 1)
    return text


def legacy_train_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A TrainConfig dict with the flat sampler fields of runs written before
    TrainConfig.sampler (run.json, spec.json, checkpoints) turned into sampler and
    sampler_config; a dict without them is returned as it is. ValueError when it holds both."""
    fields = dict(raw)
    flat = {k: fields.pop(k) for k in FLAG_NAMES if k in fields}
    if not flat:
        return fields
    check(
        "sampler" not in fields and "sampler_config" not in fields,
        f"a TrainConfig holds sampler/sampler_config and the older flat fields "
        f"{', '.join(sorted(flat))}: keep one spelling (sampler, sampler_config)",
    )
    fields["sampler"], fields["sampler_config"] = SamplerFlags(**flat).sampler()
    return fields


def flat_train_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A TrainConfig dict with sampler and sampler_config spelled as the flat fields, where
    they stood (the bench's testbed settings, whose digest keys the ledger)."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "sampler":
            out.update(SamplerFlags.of(value, fields["sampler_config"]).as_fields())
        elif key != "sampler_config":
            out[key] = value
    return out
