"""FrontierConfig: the selector and how the TRL adapter reads rows, rewards and metrics;
FrontierScriptArguments: what the `trl.grpo` script adds (reward functions, trainer, data).

A dataclass that TRL's `TrlParser` (and transformers' `HfArgumentParser`) reads from the
same YAML file as `GRPOConfig`: no field name clashes with TRL's or transformers' own.

```yaml
# grpo.yaml: TRL's fields and frontier-rft's side by side
output_dir: runs/grpo-bots
num_generations: 8
selector: sec
selector_config: {tau: 0.5}
category_columns: [source]
```
"""

from __future__ import annotations

import copy
import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal

from frontier_rft.core.config import check, check_least, help_from_docstrings
from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.integrations.plan import FEWER_STEPS, check_sampler, shadow_rules
from frontier_rft.integrations.pool import PoolColumns, SelectorSpec, reward_pair
from frontier_rft.integrations.trl.driver_kinds import SHORTHAND, driver_kind, spelled
from frontier_rft.integrations.trl.dynamic_config import (
    ZERO_VARIANCE_TOL,
    mode_of,
    sampling_config,
    short_repr,
)
from frontier_rft.integrations.trl.fewer_config import TRL, settings_problems, spec_problems
from frontier_rft.metrics_log import METRICS_PREFIX, VERBOSITIES
from frontier_rft.sampling.dynamic_sampling import DynamicSampling, DynamicSamplingConfig
from frontier_rft.sampling.fewer_rollouts import (
    FewerRollouts,
    FewerRolloutsConfig,
    fewer_rollouts_from_run,
)
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.selectors.registry import SELECTORS, check_selector_name
from frontier_rft.shadow.rule import ShadowConfig, check_shadow_rules

__all__ = [
    "DATA_BUILDERS",
    "REWARDS",
    "SELF_EMBEDDINGS",
    "FrontierConfig",
    "FrontierScriptArguments",
    "answer_match",
]

SELF_EMBEDDINGS = ("auto", "on", "off")


@help_from_docstrings  # the docstrings below are TrlParser's --help
@dataclass(frozen=True)
class FrontierConfig:
    """How the TRL adapter builds its selector and maps dataset rows, rewards and metrics."""

    _argument_group_name: ClassVar[str] = "frontier-rft: the selector and the columns it reads"
    """The heading of these fields in an HfArgumentParser's --help (its convention)."""

    selector: str = "uniform"
    """Registered selector name (`frontier selectors`); uniform trains TRL's whole batches,
    with skip followed as a shadow (`shadows`); skip with rollouts kept saves completions at
    a measured cost where the policy learns fast (docs/selectors/fewer_rollouts.md). Unused
    when a Selector is passed."""
    selector_config: dict[str, Any] | str | None = None
    """Selector config overrides, e.g. {lam: 0.2} (on the command line: a JSON string)."""
    selector_seed: int | None = None
    """Selector seed; None: the trainer's seed (the same on every process, as it must be)."""
    selector_judge: str | None = None
    """'heuristic': METIS's packaged non-LLM judge; no other selector takes one."""
    task_id_column: str = "task_id"
    """Column of each row's TaskPool index; without it the adapter numbers rows 0..N-1."""
    prompt_column: str = "prompt"
    """Column of the prompt (text or chat messages), the default evidence of every selector."""
    category_columns: list[str] | None = None
    """Columns whose values are categories (SEC's arms), e.g. [source] or [source, level]."""
    difficulty_column: str | None = None
    """Numeric column, larger = harder (offline, adcl); without it difficulty is observed."""
    pass_rate_columns: list[str] | None = None
    """Two columns [weak, strong]: reference models' pass rates in [0, 1] (bots, dots)."""
    features_column: str | None = None
    """Column of per-row embedding vectors; replaces the text features and self-embeddings."""
    self_embeddings: Literal["auto", "on", "off"] = "auto"
    """The policy's own mean-pooled hidden states as task features: auto = when the selector
    reads features and no features_column is given (one forward pass per prompt, once)."""
    self_embeddings_refresh_steps: int = 0
    """Recompute the self-embeddings every this many optimizer steps (0 = never)."""
    self_embeddings_batch_size: int = 16
    """Prompts per forward pass when computing self-embeddings."""
    self_embeddings_max_length: int = 1024
    """Prompt tokens read per prompt (longer prompts are truncated) for self-embeddings."""
    reward_range: list[float] | None = None
    """[lo, hi] (or a tuple) of the combined reward, mapped onto [0, 1] and clipped; None: as
    is. Required with two or more reward functions unless the selector reads any scale."""
    metrics_verbosity: Literal["summary", "all"] = "summary"
    """Selector metrics in TRL's logs: a short summary, or all (the JSONL file has all)."""
    metrics_prefix: str = METRICS_PREFIX
    """Prefix of the selector's metrics in TRL's logs and the JSONL file."""
    jsonl_path: str | None = None
    """JSONL metrics file; None: `<output_dir>/frontier_metrics.jsonl`."""
    check_sync: bool = True
    """With several processes, compare the selector's state digest across them at each save."""
    sampler: str | None = None
    """The step sampler inside each generation step by its kind, as `frontier train --sampler`
    and TrainConfig.sampler name it: passthrough (TRL's own generation), dynamic_sampling or
    fewer_rollouts (allocation, pilot_commit and cgrpo run in the reference trainer and the
    simulator); None: the shorthand keys below say it (dynamic_sampling, rollouts, screen)."""
    sampler_config: dict[str, Any] | str | None = None
    """The sampler's config fields to set, e.g. {max_rounds: 20} for dynamic_sampling or
    {skip: false, screen: 4} for fewer_rollouts; the rest keep their defaults (on the command
    line: a JSON string)."""
    dynamic_sampling: Literal["off", "fixed", "adaptive", "greso", "dapo"] = "off"
    """DAPO's filter (GRPO only): roll out more prompts than a step trains on, train on the groups
    whose rewards differ; fixed = rounds of 3x the open slots, adaptive = sized from the measured
    zero-variance share, greso = GRESO's recipe, dapo = DAPO's released code (every round 3x
    the batch)."""
    dynamic_sampling_config: dict[str, Any] | str | None = None
    """Overrides of the dynamic sampling settings, e.g. {max_rounds: 20, oversample: 2}."""
    dynamic_sampling_tol: float = ZERO_VARIANCE_TOL
    """A group counts as zero-variance when max - min of its rewards <= tol * max(1, max |r|)."""
    rollouts: Literal["auto", "full", "kept", "fewer_steps"] = "auto"
    """What a generation step generates: full = TRL's whole generation batch (uniform's
    bill); kept = only the prompts the selector keeps among it (GRPO; greso, skip, uniform):
    the same steps, epochs and learning-rate schedule, fewer completions; fewer_steps = whole
    batches of the prompts the selector keeps, the run ended once they have walked
    num_train_epochs passes over the prompts (fewer steps; the schedule follows the passes;
    docs/selectors/fewer_steps.md); auto = kept where the settings allow it, else full with a
    warning saying why."""
    screen: int = 0
    """Screening completions per prompt, k (0 = off; below num_generations): a prompt gets k
    first and the other num_generations - k only where its k rewards differ (our k-of-n screen)."""
    loss_scale: Literal["batch", "kept"] = "batch"
    """rollouts kept or screen: a step training G of its B groups has its policy gradient
    scaled by G / B (batch: the left-out groups count as zero-advantage ones) or is the mean
    over the G (kept); its KL and entropy bonus are the trained rows' means under either."""
    shadows: list[str] | None = None
    """Rules followed beside training without changing it, e.g. [greso, screen4, greso+screen4]:
    what each would have saved and lost, as curriculum/shadow/<rule>/... (docs/shadow.md).
    None: [skip] beside selector uniform's whole batches, else none; [] for none."""
    noise_every: int = 1
    """Meter the gradient noise scale every this many optimizer steps (0 = off), from the
    micro-batches of gradient accumulation (needs gradient_accumulation_steps >= 2): noise/...
    in TRL's logs (integrations/trl/noise.py); it reads gradients and changes nothing."""
    noise_ema: float = 0.9
    """Noise meter: weight of the past in its moving averages, per metered step, in [0, 1)."""
    plan_every: int = 100
    """Say the batch plan from the noise meter (the rows a step, in TRL's settings, and the
    learning-rate advice) every this many optimizer steps, as the run's end does (0 = at the
    end only)."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("selector", "prompt_column", "metrics_prefix"):
            value = getattr(self, name)
            check(isinstance(value, str), f"{name} must be a string, got {value!r}")
        check_selector_name(self.selector)  # a misspelt name fails here, not after model load
        for name in ("selector_judge", "difficulty_column", "features_column", "jsonl_path"):
            value = getattr(self, name)
            check(
                value is None or isinstance(value, str), f"{name} must be a string, got {value!r}"
            )
        seed = self.selector_seed
        check(
            seed is None
            or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0),
            f"selector_seed must be None or an int >= 0, got {seed!r}",
        )
        if seed is not None:
            set_(self, "selector_seed", int(seed))
        if isinstance(self.category_columns, str):  # YAML `category_columns: source`
            set_(self, "category_columns", [self.category_columns])
        for name in ("category_columns", "pass_rate_columns"):
            value = getattr(self, name)
            check(
                value is None
                or (isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)),
                f"{name} must be a list of column names, got {value!r}",
            )
        check(
            isinstance(self.task_id_column, str) and bool(self.task_id_column),
            f"task_id_column must be a non-empty column name, got {self.task_id_column!r}",
        )
        if isinstance(self.selector_config, str):  # from the command line
            try:
                text = self.selector_config.strip()  # bounded: it may be nested 50,000 deep
                parsed = loads_bounded(text, max_chars=1 << 20, max_depth=32) if text else {}
            except ValueError as exc:  # JSONDecodeError, or a bound
                raise ValueError(
                    f"selector_config must be a mapping (JSON on the command line, e.g. "
                    f"'{{\"lam\": 0.2}}'), got {short_repr(self.selector_config)}"
                ) from exc
            set_(self, "selector_config", parsed)
        check(
            self.selector_config is None or isinstance(self.selector_config, dict),
            f"selector_config must be a mapping, got {self.selector_config!r}",
        )
        if self.reward_range is not None:
            pair = reward_pair(self.reward_range)
            check(
                pair is not None,
                f"reward_range must be (lo, hi) with finite lo < hi, got {self.reward_range!r}; "
                "in YAML a list of two numbers: reward_range: [0, 2]",
            )
            set_(self, "reward_range", pair)
        check(
            self.self_embeddings in SELF_EMBEDDINGS,
            f"self_embeddings must be one of {SELF_EMBEDDINGS}, got {self.self_embeddings!r}",
        )
        check_least(self, ("self_embeddings_batch_size", "self_embeddings_max_length"), 1)
        check(
            isinstance(self.self_embeddings_refresh_steps, int)
            and self.self_embeddings_refresh_steps >= 0,
            "self_embeddings_refresh_steps must be >= 0 (0 = never), got "
            f"{self.self_embeddings_refresh_steps!r}",
        )
        check(
            not self.self_embeddings_refresh_steps
            or (self.self_embeddings != "off" and self.features_column is None),
            "self_embeddings_refresh_steps refreshes the policy's self-embeddings, which "
            "self_embeddings='off' or a features_column turn off; set it to 0 or drop those",
        )
        check(
            self.metrics_verbosity in VERBOSITIES,
            f"metrics_verbosity must be one of {VERBOSITIES}, got {self.metrics_verbosity!r}",
        )
        check(
            isinstance(self.metrics_prefix, str),
            f"metrics_prefix must be a string, got {self.metrics_prefix!r}",
        )
        self.columns()  # pass_rate_columns must be two
        named = self._read_sampler()
        self._check_dynamic_sampling()
        problems = settings_problems(
            self.rollouts, self.screen, self.loss_scale, self.selector, self.dynamic_sampling
        )
        if named is not None:  # what the named sampler itself asks of the selector
            problems += [p for p in spec_problems(named, self.selector) if p not in problems]
        check(not problems, "; ".join(problems))
        if isinstance(self.shadows, str):  # YAML `shadows: greso`
            set_(self, "shadows", [self.shadows])
        check(
            self.shadows is None or _strings(self.shadows),
            f"shadows must be a list of rules (greso, screen4, greso+screen4), got "
            f"{short_repr(self.shadows)}",
        )
        self.shadow_configs()
        check_least(self, ("noise_every", "plan_every"), 0)  # 0: the meter / the line off
        ema = self.noise_ema
        ok = isinstance(ema, int | float) and 0.0 <= ema < 1.0
        check(ok, f"noise_ema must be a number in [0, 1), got {ema!r}")

    @cached_property
    def selector_spec(self) -> SelectorSpec:
        """The selector options (selector, selector_config, selector_judge), read once: every
        check before the model loads answers from it, and the trainer builds from it."""
        overrides = self.selector_config if isinstance(self.selector_config, dict) else None
        return SelectorSpec.read(self.selector, overrides, self.selector_judge)

    def shadow_configs(
        self, num_generations: int | None = None, selector: str | None = None
    ) -> tuple[ShadowConfig, ...]:
        """The rules of `shadows` (unset: `plan.shadow_rules`' default for `selector`, the run's
        selector name, default this config's), checked as the reference trainer checks its
        own (a screen below `num_generations` once it is known); a ValueError naming the
        problem."""
        keys = spelled(self._sampler_spec)  # the step's settings, however they were given
        on = (keys["screen"] > 0, keys["dynamic_sampling"] != "off", keys["rollouts"] == "kept")
        names = ("screen", "dynamic_sampling", "rollouts: kept")
        partial = [name for name, is_on in zip(names, on, strict=True) if is_on]
        return check_shadow_rules(
            shadow_rules(self.shadows, selector or self.selector, partial),
            SELECTORS,
            group_size=num_generations,
            group_name="num_generations",
            partial=partial,
            example="e.g. shadows: [greso, screen4] beside rollouts: full",
        )

    def _check_dynamic_sampling(self) -> None:
        set_ = object.__setattr__
        set_(self, "dynamic_sampling", mode_of(self.dynamic_sampling))
        self._read_mapping("dynamic_sampling_config")
        tol = self.dynamic_sampling_tol
        check(
            isinstance(tol, numbers.Real)
            and not isinstance(tol, bool)
            and math.isfinite(tol)
            and 0 <= tol < 1,
            f"dynamic_sampling_tol must be a number in [0, 1) (default {ZERO_VARIANCE_TOL}), "
            f"got {short_repr(tol)}",
        )
        set_(self, "dynamic_sampling_tol", float(tol))
        _ = self._dynamic_sampling  # read once, here: every refused option, named

    @cached_property
    def _dynamic_sampling(self) -> DynamicSamplingConfig | None:
        """dynamic_sampling and its overrides, read once (after they are checked)."""
        overrides = self.dynamic_sampling_config
        return sampling_config(
            self.dynamic_sampling, overrides if isinstance(overrides, dict) else None
        )

    def dynamic_sampling_settings(self) -> DynamicSamplingConfig | None:
        """The DynamicSampling settings of this config (`sampler_spec`), or None when its step
        sampler is another."""
        settings: DynamicSamplingConfig | None = self._settings_of(DynamicSampling.kind)
        return settings

    def _settings_of(self, kind: str) -> Any:
        """The config of this config's step sampler where it is of `kind` (else None)."""
        spec = self.sampler_spec()
        return spec.config if spec.kind == kind else None

    def step_chosen(self) -> bool:
        """Whether the user chose the step whole: a `sampler:`, or a rollouts other than auto
        (`rollouts: auto` with the shorthand keys: the TRL resolution chooses it)."""
        return self.sampler is not None or self.rollouts != "auto"

    def resolved(self, rollouts: Literal["full", "kept"], spec: SamplerSpec) -> FrontierConfig:
        """This config with `rollouts: auto` replaced by what the TRL resolution chose
        (`rollouts`, its plan's `spec`): a copy that keeps the selector options as read
        (`selector_spec`) and reads `spec` as its step; nothing is checked again."""
        check(rollouts in ("full", "kept"), f"rollouts resolves to full or kept, not {rollouts!r}")
        resolved = copy.copy(self)
        object.__setattr__(resolved, "rollouts", rollouts)
        resolved.__dict__["_sampler_spec"] = spec
        return resolved

    def sampler_spec(self) -> SamplerSpec:
        """The step sampler inside each generation step, built once: `sampler` and
        `sampler_config` when set, else converted from the shorthand keys (one way: a
        `sampler:` is never written back into them). The TRL resolution (resolve.py) reads
        this one spec; unresolved, rollouts: auto reads as full."""
        return self._sampler_spec

    @cached_property
    def _sampler_spec(self) -> SamplerSpec:
        """TRL's one conversion of the shorthand keys into the spec (a named sampler is read
        in `_read_sampler`): dynamic_sampling's (with its overrides) when on; FewerRollouts
        where rollouts is kept or screen is set; else the pass-through."""
        if self._dynamic_sampling is not None:
            spec = SamplerSpec(DynamicSampling.kind, self._dynamic_sampling)
        elif self.rollouts != "kept" and not self.screen:
            spec = SamplerSpec()
        else:
            rollouts = "kept" if self.rollouts == "kept" else "full"
            fewer = fewer_rollouts_from_run(rollouts, self.screen, self.loss_scale)
            spec = SamplerSpec(FewerRollouts.kind, fewer)
        check_sampler(TRL, spec.kind)
        return spec

    def _read_mapping(self, name: str) -> dict[str, Any] | None:
        """The settings field `name` as a mapping (None: unset), read from the command line's
        JSON string where it is one and stored back; a ValueError naming it otherwise."""
        overrides = getattr(self, name)
        if isinstance(overrides, str):  # from the command line
            overrides = _json_mapping(name, overrides, '{"max_rounds": 20}')
            object.__setattr__(self, name, overrides)
        check(
            overrides is None or isinstance(overrides, dict),
            f"{name} must be a mapping, got {short_repr(overrides)}",
        )
        mapping: dict[str, Any] | None = overrides
        return mapping

    def _read_sampler(self) -> SamplerSpec | None:
        """`sampler` and `sampler_config`, when set, read once into the spec (None: unset); a
        kind TRL's step does not run is refused with the plan's text, a shorthand key set to
        another step names both keys. The shorthand keys keep what was given: the spec is the
        one the run reads."""
        overrides = self._read_mapping("sampler_config")
        if self.sampler is None:
            check(
                not overrides,
                "sampler_config is set but sampler is not: name the sampler it configures "
                "(sampler: dynamic_sampling or fewer_rollouts), or drop sampler_config",
            )
            return None
        check(
            isinstance(self.sampler, str),
            f"sampler must be a step sampler's kind, got {short_repr(self.sampler)}",
        )
        spec = SamplerSpec.read(self.sampler, overrides or {})
        check_sampler(TRL, spec.kind)
        row = driver_kind(spec.kind)
        assert row is not None  # check_sampler refuses a kind TRL's step cannot hold
        refused = row.refusals(spec.config, "sampler_config")  # TRL's own, in this key's words
        check(not refused, "; ".join(refused))
        says = spelled(spec)
        for key, default in SHORTHAND.items():  # a shorthand key beside it says the same
            given = getattr(self, key)
            ends = key == "rollouts" and given == FEWER_STEPS and _ends_by_passes(spec)
            if given not in (says[key], default) and not ends:
                raise ValueError(
                    f"sampler: {spec.kind} and {key}: {short_repr(given)} both set the step's "
                    f"sampler: keep sampler (its settings in sampler_config) and drop {key}, "
                    "or drop sampler and sampler_config"
                )
        self.__dict__["_sampler_spec"] = spec  # read once: sampler_spec() is this spec
        return spec

    def fewer_rollouts_settings(self) -> FewerRolloutsConfig | None:
        """The FewerRollouts settings of this config (`sampler_spec`); None when every
        generation step generates TRL's whole batch (rollouts: full, screen: 0)."""
        settings: FewerRolloutsConfig | None = self._settings_of(FewerRollouts.kind)
        return settings

    def pool_options(self) -> list[str]:
        """Options set away from their defaults that only matter when the adapter builds
        the selector (names, for an error when a ready selector is passed too)."""
        defaults = FrontierConfig()
        names = ("selector_config", "selector_seed", "selector_judge", "category_columns",
                 "difficulty_column", "pass_rate_columns", "features_column")  # fmt: skip
        out = [n for n in names if getattr(self, n) not in (getattr(defaults, n), {})]
        if self.self_embeddings == "on":
            out.append("self_embeddings")
        if self.self_embeddings_refresh_steps:
            out.append("self_embeddings_refresh_steps")
        return out

    def named_columns(self) -> list[tuple[str, str]]:
        """(option, column) for every dataset column this config names, prompt first."""
        out = [("prompt_column", self.prompt_column)]
        out += [("category_columns", c) for c in self.category_columns or ()]
        if self.difficulty_column is not None:
            out.append(("difficulty_column", self.difficulty_column))
        out += [("pass_rate_columns", c) for c in self.pass_rate_columns or ()]
        if self.features_column is not None:
            out.append(("features_column", self.features_column))
        return out

    def columns(self) -> PoolColumns:
        """The dataset columns the adapter builds its TaskPool from."""
        return PoolColumns(
            prompt=self.prompt_column,
            categories=tuple(self.category_columns or ()),
            difficulty=self.difficulty_column,
            pass_rates=tuple(self.pass_rate_columns or ()),
            features=self.features_column,
        )


def answer_match(completions: list[Any], answer: list[Any], **kwargs: Any) -> list[float]:
    """1.0 when the row's `answer` appears in the completion's text, else 0.0."""
    out = []
    for completion, expected in zip(completions, answer, strict=True):
        text = completion if isinstance(completion, str) else completion[-1]["content"]
        out.append(float(str(expected).strip() in text))
    return out


REWARDS: dict[str, Callable[..., list[float]]] = {"answer_match": answer_match}
"""Reward functions by name; any other entry is a dotted import path."""


DATA_BUILDERS = {"jsonl": "json", "json": "json", "csv": "csv", "parquet": "parquet"}
"""The datasets builder of each local data file suffix."""


def reward_name_problem(name: object) -> str | None:
    """Why `name` cannot name a reward function (None: it can): one of REWARDS, or a dotted
    path my.module.function importable from the working directory. A file path with a
    function (`rewards.py:score`, `./rewards.py:score`) is refused with the dotted path."""
    if isinstance(name, str) and name in REWARDS:
        return None
    if isinstance(name, str) and re.fullmatch(r"[\w./\\-]+\.py:\w+", name.strip()):
        file, _, func = name.strip().rpartition(":")
        module = re.sub(r"^\.[/\\]", "", file[:-3]).replace("/", ".").replace("\\", ".")
        return (
            f"reward function {name!r}: name it as a dotted path, {module}.{func} (the file "
            "importable from the working directory), not FILE.py:FUNCTION"
        )
    dotted = isinstance(name, str) and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", name)
    if not dotted:
        return (
            f"unknown reward function {short_repr(name)}: {', '.join(sorted(REWARDS))} or a "
            "dotted path my.module.function importable from the working directory"
        )
    return None


def _ends_by_passes(spec: SamplerSpec) -> bool:
    """Whether a run of step sampler `spec` may be ended by its passes (rollouts: fewer_steps
    beside it: how the run ends, not a second step), as the plan decides it (`StepPlan`)."""
    try:
        StepPlan(spec, ends_by="passes")
    except ValueError:
        return False
    return True


def _strings(value: object) -> bool:
    """Whether `value` is a list of strings (what TrlParser gives a list[str] field)."""
    return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)


def _json_mapping(name: str, text: str, example: str) -> Any:
    """A mapping option given as JSON on the command line, read with bounds (it may be
    nested 50,000 deep); ValueError naming `name` and showing `example`."""
    try:
        text = text.strip()
        return loads_bounded(text, max_chars=1 << 20, max_depth=32) if text else {}
    except ValueError as exc:  # JSONDecodeError, or a bound
        raise ValueError(
            f"{name} must be a mapping (JSON on the command line, e.g. '{example}'), got "
            f"{short_repr(text)}"
        ) from exc


@dataclass
class FrontierScriptArguments:
    """What the `trl.grpo` script adds to TRL's ScriptArguments."""

    _argument_group_name: ClassVar[str] = "frontier-rft script: rewards, trainer, local data"
    """The heading of these fields in --help."""

    reward_funcs: list[str] = field(
        default_factory=lambda: ["answer_match"],
        metadata={"help": "Reward functions: answer_match, or dotted import paths (my.mod.fn)."},
    )
    trainer: Literal["grpo", "rloo"] = field(
        default="grpo", metadata={"help": "TRL trainer: grpo (GRPOConfig) or rloo (RLOOConfig)."}
    )
    dataset_files: list[str] | None = field(
        default=None,
        metadata={"help": "Local data files (json/jsonl/csv/parquet) instead of dataset_name."},
    )
    eval_dataset_files: list[str] | None = field(
        default=None,
        metadata={
            "help": "Local held-out files, scored by the reward functions at each eval "
            "(eval_strategy, eval_steps); with dataset_name, its dataset_test_split instead."
        },
    )

    def __post_init__(self) -> None:
        if self.trainer not in ("grpo", "rloo"):
            raise ValueError(f"trainer must be grpo or rloo, got {self.trainer!r}")
        if isinstance(self.reward_funcs, str):  # YAML `reward_funcs: answer_match`
            self.reward_funcs = [self.reward_funcs]
        if isinstance(self.dataset_files, str):
            self.dataset_files = [self.dataset_files]
        if isinstance(self.eval_dataset_files, str):
            self.eval_dataset_files = [self.eval_dataset_files]
        # Types first: a mapping would be iterated for its keys (`{answer_match: 1}` reads
        # as a weight but would be dropped), a number would raise a TypeError below.
        if not _strings(self.reward_funcs) or not self.reward_funcs:
            raise ValueError(
                "reward_funcs must be a reward function name or a list of them (answer_match, "
                f"my.module.fn), got {short_repr(self.reward_funcs)}; weights go in reward_weights"
            )
        for name in ("dataset_files", "eval_dataset_files"):
            value = getattr(self, name)
            if value is not None and not _strings(value):
                raise ValueError(
                    f"{name} must be a data file path or a list of them, got {short_repr(value)}"
                )
        for name in self.reward_funcs:
            problem = reward_name_problem(name)
            if problem is not None:
                raise ValueError(problem)
        for name in ("dataset_files", "eval_dataset_files"):
            for path in getattr(self, name) or ():
                if str(path).rsplit(".", 1)[-1].lower() not in DATA_BUILDERS:
                    raise ValueError(
                        f"{name}: {path!r} is not a .jsonl, .json, .csv or .parquet file"
                    )
