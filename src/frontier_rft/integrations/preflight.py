"""What the TRL, verl and SkyRL pre-flight checks share: a report, the selector part of a
config (its options, and the metadata it cannot run without against what the data gives it),
and a data file's columns read without loading the file.

Imports neither torch nor a trainer, so `frontier check-config` runs on any machine.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from frontier_rft.core.config import config_problems
from frontier_rft.integrations.data_columns import DataColumns, read_data_columns
from frontier_rft.integrations.pool import SelectorSpec, judge_problem
from frontier_rft.selectors.registry import SELECTORS

__all__ = [
    "SAMPLER_POOL_KEYS",
    "DataColumns",
    "Report",
    "apply_overrides",
    "dotted_get",
    "read_data_columns",
    "requirement_problems",
    "sampler_pool_fields",
    "selector_problems",
    "selector_reward_bounds",
    "shadow_bounds_note",
    "shown",
]

_REPR = reprlib.Repr()  # attributes, not keywords: Python 3.11's Repr takes none
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 80, 80
_REPR.maxlist = _REPR.maxdict = 6


def shown(value: Any) -> str:
    """`value` as a problem line quotes it: repr, cut short (a value may be 1 MiB)."""
    return _REPR.repr(value)


@dataclass
class Report:
    """A pre-flight verdict: `problems` must be fixed; `notes` say what was not checked;
    `choices` what an `auto` setting will mean for these settings; `rollouts` what a set
    `rollouts` will do with the run's length; `shadows` what an unset `shadows` will follow;
    `sampler` the step sampler a `sampler:` key names; `plan` the run's step as its trainer
    resolves it (`StepPlan.words`); `currency` what a step costs on the
    run's device (step_cost.advice); `start` the least-regret start in the trainer's keys
    (integrations/batch_settings.start_advice)."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)
    rollouts: list[str] = field(default_factory=list)
    shadows: list[str] = field(default_factory=list)
    sampler: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    currency: list[str] = field(default_factory=list)
    start: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set, repr=False, compare=False)
    """The lines of `problems` added through `add`: a set, so a file with 70,000 unknown
    keys is checked in linear time (a list lookup per line was quadratic)."""

    def add(self, where: str, problems: list[str]) -> None:
        """Record `problems`, each prefixed with `where` (a config path) when given, once."""
        for problem in problems:
            line = f"{where}: {problem}" if where else problem
            if line not in self._seen:
                self._seen.add(line)
                self.problems.append(line)

    def render(self, what: str) -> str:
        """The verdict as text: a headline naming `what` was checked, then one line per
        problem, then the notes."""
        if self.problems:
            count = len(self.problems)
            lines = [f"{what}: {count} problem{'s' * (count > 1)} to fix before the run:"]
            lines += [f"  - {p}" for p in self.problems]
        else:
            lines = [f"{what}: the frontier-rft settings are valid"]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  auto: {c}" for c in self.choices]
        lines += [f"  rollouts: {r}" for r in self.rollouts]
        lines += [f"  shadows: {s}" for s in self.shadows]
        lines += [f"  sampler: {s}" for s in self.sampler]
        lines += [f"  plan: {p}" for p in self.plan]
        lines += [f"  currency: {c}" for c in self.currency]
        lines += [f"  {s}" for s in self.start]  # 'start plan: ...', 'set for your trainer: ...'
        return "\n".join(lines)


def selector_problems(name: Any, overrides: Any, judge: Any = None) -> list[str]:
    """Mistakes in a selector's config overrides (every one, with close matches) and in an
    adapter's judge option; [] when make_selector would accept them. An unknown `name` is
    left to the adapter's config class, which names it (its overrides cannot be judged)."""
    if not isinstance(name, str) or name not in SELECTORS:
        return []
    out = []
    if isinstance(overrides, Mapping) and overrides:  # another type: the adapter's config says
        found = config_problems(SELECTORS[name].config_class, overrides)
        out += [f"selector_config for {name!r}: {p}" for p in found]
    if judge is None or isinstance(judge, str):
        problem = judge_problem(name, judge)
        out += [problem] if problem else []
    return out


def _spec(name: Any, overrides: Any, judge: Any = None) -> SelectorSpec | None:
    """The spec of selector `name` with `overrides`, or None where `name` is unknown or the
    overrides are no mapping (the adapter's config class names either)."""
    if not isinstance(name, str) or name not in SELECTORS:
        return None
    if overrides is not None and not isinstance(overrides, Mapping):
        return None
    return SelectorSpec.read(name, overrides, judge if isinstance(judge, str) else None)


def requirement_problems(
    name: Any, overrides: Any, given: set[str], options: Mapping[str, str]
) -> list[str]:
    """`SelectorSpec.requirement_problems` of selector `name` with config `overrides`; []
    where they cannot be judged (an unknown name, refused overrides: other checks say so).
    The selector would refuse the pool the same way, after the model loads."""
    spec = _spec(name, overrides)
    return [] if spec is None else spec.requirement_problems(given, options)


SAMPLER_POOL_KEYS = (
    ("categories", "category_keys"),
    ("difficulty", "difficulty_key"),
    ("reference_pass_rates", "pass_rate_keys"),
    ("features", "features_key"),
    ("features", "self_embeddings_model"),
)
"""(TaskPool field, VerlSamplerConfig field that gives it): what verl's and SkyRL's sampler
builds its pool from (the prompt text is always given: its column is required)."""


def sampler_pool_fields(values: Mapping[str, Any]) -> set[str]:
    """The TaskPool fields a VerlSamplerConfig with the fields `values` as given (verl's
    sampler kwargs, SkyRL's `frontier:` settings) builds its pool with: 'prompts' always, and
    each metadata field whose option is set (SAMPLER_POOL_KEYS); `requirement_problems`'s
    `given`."""
    given = {"prompts"}
    given |= {name for name, option in SAMPLER_POOL_KEYS if values.get(option)}
    return given


def selector_reward_bounds(
    name: Any, overrides: Any, given: set[str], judge: Any = None
) -> tuple[float, float] | None:
    """The reward range selector `name` accepts (None: any finite reward) over a pool holding
    the metadata fields in `given`, from the facts its class declares; (0, 1), the
    strictest, where the options are wrong (other checks say so)."""
    spec = _spec(name, overrides, judge)
    return (0.0, 1.0) if spec is None else spec.reward_bounds(given)


def shadow_bounds_note(
    values: Mapping[str, Any], given: set[str], setting: str, default_selector: str
) -> str | None:
    """A note when a shadow of the sampler fields `values` reads rewards in a range the run's
    selector does not hold them to, and no reward_range is set (`setting`: where the fields
    live): a step whose reward leaves that range is then refused (nothing moves), which a
    config cannot show, since it does not hold the rewards. None when there is nothing to say."""
    from frontier_rft.shadow.rule import ShadowConfig

    rules = values.get("shadows")
    if isinstance(rules, str):
        rules = [rules]
    if not isinstance(rules, Sequence) or values.get("reward_range") is not None:
        return None
    name = values.get("selector", default_selector)
    if not isinstance(name, str) or name not in SELECTORS:
        return None  # selector_problems names it
    if _spec(name, values.get("selector_config"), values.get("selector_judge")) is None:
        return None  # its options are refused: other checks say so
    if selector_reward_bounds(name, values.get("selector_config"), given) is not None:
        return None  # the selector checks the rewards itself
    for rule in rules:
        try:
            shadow = ShadowConfig.parse(rule).selector
        except (ValueError, TypeError):
            continue  # shadow_problems names it
        if not shadow or shadow not in SELECTORS:
            continue
        bounds = selector_reward_bounds(shadow, None, given)
        if bounds is not None:
            lo, hi = bounds
            at = f"{setting}." if setting else ""
            return (
                f"{at}shadows: shadow {rule!r} reads rewards in [{lo:g}, {hi:g}] and "
                f"selector {name!r} takes any: a step with a reward outside them is refused; "
                f"if the run's rewards can leave [{lo:g}, {hi:g}], set {at}reward_range"
            )
    return None


def apply_overrides(config: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """`config` (changed in place) with command-line overrides applied: `a.b=v`, and
    Hydra's `+a.b=v` / `++a.b=v`; v is read as YAML with the bounds of a config file
    (core/yamlsafe.py); text that is not YAML is a string, as Hydra reads it. ValueError
    for an item that is not KEY=VALUE, a key deeper than a config file may be, or a value
    the bounds refuse (an alias, deep nesting, a huge integer)."""
    import yaml

    from frontier_rft.core.yamlsafe import MAX_YAML_DEPTH, RefusedYAML, load_yaml

    out = config
    for item in overrides:
        key, sep, text = item.lstrip("+").partition("=")
        parts = key.strip().split(".")
        if not sep or not key.strip() or not all(parts):
            raise ValueError(f"an override is KEY=VALUE (a.b.c=1), got {item[:80]!r}")
        if len(parts) > MAX_YAML_DEPTH:
            raise ValueError(f"override {key[:40]}...: deeper than {MAX_YAML_DEPTH} levels")
        try:
            value = load_yaml(text) if text.strip() else None
        except RefusedYAML as exc:
            raise ValueError(f"override {key.strip()[:80]}: {exc.problem}") from None
        except yaml.YAMLError:
            value = text
        node = out
        *parents, last = parts
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[last] = value
    return out


def dotted_get(config: Any, dotted: str) -> Any:
    """config['a']['b'] for 'a.b' (a plain mapping or a trainer's DictConfig, whose values
    read resolved), or a flat 'a.b' key as on a command line; None where a level is missing
    or not a mapping."""
    if isinstance(config, Mapping) and dotted in config:
        return config[dotted]
    value = config
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value
