"""VerlSamplerConfig: how the verl adapter builds its selector and reads verl's batches.

Imports neither verl nor torch, so `frontier check-config verl` and the Hydra pre-flight
callback validate a config on any machine before Ray starts.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from frontier_rft.core.config import check, check_least
from frontier_rft.integrations.plan import (
    ROLLOUTS,
    TrainerFacts,
    message,
    rollouts_refusal,
    shadow_rules,
)
from frontier_rft.integrations.pool import reward_pair
from frontier_rft.metrics_log import METRICS_PREFIX, VERBOSITIES
from frontier_rft.sampling.fewer_rollouts import (
    LOSS_SCALES,
)
from frontier_rft.selectors.registry import SELECTORS, check_selector_name
from frontier_rft.shadow.rule import ShadowConfig, check_shadow_rules

__all__ = [
    "BATCH_SIZE_NOT_READ",
    "DYNAMIC_SAMPLING_ON_VERL",
    "KEPT_NEEDS_SYNC",
    "KEPT_NEEDS_V1",
    "KEPT_WITH_FILTER_GROUPS",
    "KEPT_WITH_REFILL",
    "LOSS_SCALES",
    "ROLLOUTS",
    "SHADOWS_WITH_FILTER_GROUPS",
    "VERL",
    "VerlSamplerConfig",
    "kept_gen_batch_size",
    "trl_only",
]

VERL = TrainerFacts(
    name="verl",
    kept="verl's v1 sync trainer (FrontierReplayBuffer)",
    filter="algorithm.filter_groups",
    length=("trainer.total_epochs", "trainer.total_training_steps", "data.train_batch_size",
            "data.train_max_samples"),
    clashes=("auto+shadows", "kept+legacy", "kept+async", "kept+filter", "kept+refill",
             "kept+gen_batch_size", "kept+loss"),
)  # fmt: skip
"""What verl's trainers can do with a step (integrations.plan asks it; its texts are there)."""
# The plan's refusal texts, named here for users' imports (the adapter asks the plan).
KEPT_NEEDS_V1 = message(VERL, "kept+legacy")
KEPT_NEEDS_SYNC = message(VERL, "kept+async")
KEPT_WITH_FILTER_GROUPS = message(VERL, "kept+filter")
KEPT_WITH_REFILL = message(VERL, "kept+refill")
SHADOWS_WITH_FILTER_GROUPS = message(VERL, "shadows+filter")


def kept_gen_batch_size(gen_batch_size: object) -> str:
    """Why `rollouts: kept` refuses a data.gen_batch_size other than train_batch_size."""
    return message(VERL, "kept+gen_batch_size", gen_batch_size=gen_batch_size)


BATCH_SIZE_NOT_READ = (
    "batch_size is not read: the sampler's batch size is verl's data.gen_batch_size "
    "(else data.train_batch_size); set that instead"
)
"""Why a batch_size among the sampler's fields is refused."""

DYNAMIC_SAMPLING_ON_VERL = message(VERL, "sampler:dynamic_sampling")
"""Why a TRL dynamic-sampling option among the sampler's fields is refused, and what to do
(the plan's text: verl does not run the dynamic_sampling step sampler)."""


def trl_only(fields: Mapping[Any, Any]) -> list[str]:
    """The TRL adapter's dynamic-sampling options among `fields` (dynamic_sampling,
    dynamic_sampling_config, dynamic_sampling_tol): refused with a pointer to verl's filter."""
    return [str(k) for k in fields if str(k).startswith("dynamic_sampling")]


@dataclass(frozen=True)
class VerlSamplerConfig:
    """How FrontierSampler builds its selector and reads verl's batches."""

    trainer: ClassVar[TrainerFacts] = VERL
    """The trainer whose words its refusals use (SkyRL's settings are a subclass: SkyRL's)."""

    batch_size: int
    """Prompts per dataloader batch: verl's data.gen_batch_size, else data.train_batch_size."""
    selector: str = "uniform"
    """Registered selector name (see `frontier selectors`); uniform trains the trainer's whole
    batches, with skip followed as a shadow (`shadows`); skip with rollouts kept saves
    rollouts at a measured cost where the policy learns fast
    (docs/selectors/fewer_rollouts.md)."""
    selector_config: Mapping[str, Any] = field(default_factory=dict)
    """Selector config overrides, e.g. {"lam": 0.2} for bots."""
    seed: int = 0
    """Selector seed."""
    selector_judge: str | None = None
    """'heuristic': METIS's packaged non-LLM judge; no other selector takes one."""
    prompt_key: str | None = None
    """Dataset column of the prompt (chat messages or text); None: the dataset's prompt_key."""
    category_keys: Sequence[str] = ()
    """Columns (or column.field paths) of categories, e.g. [data_source] or [extra_info.level]."""
    difficulty_key: str | None = None
    """Numeric column, larger = harder (offline, adcl); e.g. extra_info.difficulty."""
    pass_rate_keys: Sequence[str] = ()
    """Two columns [weak, strong] of reference models' pass rates in [0, 1] (bots, dots)."""
    features_key: str | None = None
    """Column of per-row embedding vectors (your own, or precomputed self-embeddings)."""
    self_embeddings_model: str | None = None
    """Local model directory (the actor's start checkpoint): its mean-pooled hidden states
    become the task features, computed once here (verl's driver holds no model otherwise)."""
    self_embeddings_batch_size: int = 16
    """Prompts per forward pass when computing self-embeddings."""
    self_embeddings_max_length: int = 1024
    """Prompt tokens read per prompt for self-embeddings (longer prompts are truncated)."""
    task_id_key: str = "index"
    """non_tensor_batch key of each rollout's stable task id ('index': extra_info.index;
    another key: the training file's top-level column of that name)."""
    reward_key: str | None = None
    """Reward read per rollout. None: the reward function's score (legacy trainer:
    token_level_scores summed over tokens; v1: rm_scores). A name from reward_extra_info
    (e.g. 'acc') reads that value instead, in both trainers."""
    reward_range: tuple[float, float] | None = None
    """(low, high) of the reward function, mapped to [0, 1] (clipped beyond); None = in [0, 1]."""
    rollouts: str = "auto"
    """'auto': kept where the trainer and its settings allow it, else full with one warning
    naming why (integrations.plan.auto). 'full': every dataloader batch
    is the selector's batch_size prompts. 'kept': only the prompts it keeps among uniform's
    next batch_size (greso, skip, uniform): verl's steps, epochs and LR schedule stay, fewer
    rollouts (v1 sync trainer only; docs/integrations/verl.md, docs/integrations/skyrl.md)."""
    loss_scale: str = "batch"
    """With rollouts kept, a step's policy-gradient loss: 'batch' scales it by the share of
    uniform's rows the step trains (G / B with one update a step), as the reference trainer's
    measured default; 'kept': the mean over the kept groups (verl's token-mean as it stands).
    verl: kept_step.kept_loss; SkyRL: skyrl.kept_loss."""
    shadows: Sequence[str] | None = None
    """Rules followed beside the run without changing what trains (greso, skip, screenK,
    greso+screenK): each logs the rollouts it would have saved and the signal it would have
    lost, under shadow/<rule>/... (docs/shadow.md). Not with rollouts: kept. None: [skip]
    beside selector uniform's whole batches (none beside the trainer's filter or its
    fully-async trainer), else none; [] for none."""
    max_outstanding_draws: int = 64
    """Drawn batches remembered while their rewards are pending; older ones are forgotten."""
    metrics_verbosity: str = "summary"
    """Selector metrics merged into verl's logged metrics: summary, or all."""
    metrics_prefix: str = METRICS_PREFIX
    """Prefix of the selector's metrics in verl's logs and the JSONL file."""
    metrics_jsonl: str | None = None
    """Append all selector metrics to this JSONL file after every report. None: the v1
    trainer logs them with its own metrics; on the legacy trainer and verl <= 0.7 (which
    offer no such seam) they go to ./frontier_metrics.jsonl."""

    def __post_init__(self) -> None:
        check(
            isinstance(self.batch_size, int)
            and not isinstance(self.batch_size, bool)
            and self.batch_size > 0,
            f"batch_size must be a positive int (verl's data.train_batch_size), "
            f"got {self.batch_size!r}",
        )
        check(isinstance(self.selector, str), f"selector must be a name, got {self.selector!r}")
        check_selector_name(self.selector)
        check(
            isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0,
            f"seed must be a non-negative int, got {self.seed!r}",
        )
        check(self.rollouts in ROLLOUTS, rollouts_refusal(self.trainer, self.rollouts))
        check(
            self.loss_scale in LOSS_SCALES,
            f"loss_scale must be batch (the step's loss x the share of uniform's rows it "
            f"trains, the measured default) or kept (the mean over the kept groups), got "
            f"{self.loss_scale!r}",
        )
        cls = SELECTORS.get(self.selector)
        check(
            self.rollouts != "kept" or cls is None or cls.walks_windows(),
            message(self.trainer, "kept+selector", selector=self.selector),
        )
        if isinstance(self.shadows, str):  # YAML `shadows: greso`: one rule
            object.__setattr__(self, "shadows", (self.shadows,))
        check(
            self.shadows is None
            or (
                isinstance(self.shadows, Sequence)
                and not isinstance(self.shadows, bytes)
                and all(isinstance(v, str) for v in self.shadows)
            ),
            f"shadows must be a list of rules, e.g. [greso, screen4], got {self.shadows!r}",
        )
        if self.shadows is not None:
            object.__setattr__(self, "shadows", tuple(self.shadows))
        self.shadow_configs()
        check(
            isinstance(self.max_outstanding_draws, int)
            and not isinstance(self.max_outstanding_draws, bool)
            and self.max_outstanding_draws >= 1,
            f"max_outstanding_draws must be a positive int, got {self.max_outstanding_draws!r}",
        )
        if self.reward_range is not None:
            pair = reward_pair(self.reward_range)
            check(
                pair is not None,
                f"reward_range must be (low, high) with low < high, got {self.reward_range!r}",
            )
            object.__setattr__(self, "reward_range", pair)
        for name in ("selector", "task_id_key", "metrics_prefix", "metrics_verbosity"):
            value = getattr(self, name)
            check(isinstance(value, str), f"{name} must be a string, got {value!r}")
        for name in _OPTIONAL_STRINGS:
            value = getattr(self, name)
            check(
                value is None or isinstance(value, str), f"{name} must be a string, got {value!r}"
            )
        if isinstance(self.category_keys, str):  # YAML `category_keys: source`: one column
            object.__setattr__(self, "category_keys", (self.category_keys,))
        for name in ("category_keys", "pass_rate_keys"):
            value = getattr(self, name)
            if value is None:  # YAML `pass_rate_keys:` with nothing after it: no columns
                object.__setattr__(self, name, ())
                continue
            check(
                # a Sequence: YAML lists arrive as OmegaConf ListConfig from verl
                isinstance(value, Sequence)
                and not isinstance(value, str | bytes)
                and all(isinstance(v, str) for v in value),
                f"{name} must be a list of column names, e.g. [weak, strong], got {value!r}",
            )
        check(
            isinstance(self.selector_config, Mapping),
            f"selector_config must be a mapping, e.g. {{lam: 0.2}}, got {self.selector_config!r}",
        )
        object.__setattr__(self, "selector_config", dict(self.selector_config))
        object.__setattr__(self, "category_keys", tuple(self.category_keys))
        object.__setattr__(self, "pass_rate_keys", tuple(self.pass_rate_keys))
        check(
            len(self.pass_rate_keys) in (0, 2),
            f"pass_rate_keys must be two columns [weak, strong], got {list(self.pass_rate_keys)}",
        )
        check(
            self.metrics_verbosity in VERBOSITIES,
            f"metrics_verbosity must be one of {VERBOSITIES}, got {self.metrics_verbosity!r}",
        )
        check_least(self, ("self_embeddings_batch_size", "self_embeddings_max_length"), 1)

    def shadow_configs(
        self,
        group_size: int | None = None,
        group_name: str = "actor_rollout_ref.rollout.n",
        selector: str | None = None,
    ) -> tuple[ShadowConfig, ...]:
        """The rules of `shadows`, checked as the other adapters check theirs (a screen below
        the trainer's group size, `group_name` in its config, once it is known); a ValueError
        naming the problem. Unset, they are `plan.shadow_rules`' default for `selector`, the run's
        selector name, default this config's (`without_default_shadows` where the trainer
        rolls out partial groups)."""
        partial = ["rollouts: kept"] if self.rollouts == "kept" else []
        return check_shadow_rules(
            shadow_rules(self.shadows, selector or self.selector, partial),
            SELECTORS,
            group_size=group_size,
            group_name=group_name,
            partial=partial,
            example="e.g. shadows: [greso, screen4] beside rollouts: full",
        )

    def without_default_shadows(self) -> VerlSamplerConfig:
        """These settings with `shadows` left unset read as none: the default shadows are
        dropped, not refused, where the trainer reports a prompt's group in parts (a filter's
        rounds, a fully-async trainer's draws); rules the user set stay, to be refused."""
        return self if self.shadows is not None else replace(self, shadows=())

    @classmethod
    def from_verl_data_config(cls, data_config: Any) -> VerlSamplerConfig:
        """Read verl's `data` config: batch size as verl's dataloader uses it, the rest from
        `data.sampler.frontier` (any field of this class except batch_size)."""
        batch_size = _cfg_get(data_config, "gen_batch_size") or _cfg_get(
            data_config, "train_batch_size"
        )
        sampler_cfg = _cfg_get(data_config, "sampler") or {}
        frontier = _to_plain(_cfg_get(sampler_cfg, "frontier") or {})
        seed = _cfg_get(data_config, "seed")
        if isinstance(frontier, dict) and "seed" not in frontier and seed is not None:
            frontier["seed"] = int(seed)
        if batch_size is None:
            raise ValueError("verl's data config has neither gen_batch_size nor train_batch_size")
        return cls.from_fields(frontier, int(batch_size), "data.sampler.frontier")

    @classmethod
    def from_fields(cls, fields: Any, batch_size: int, what: str) -> VerlSamplerConfig:
        """Fields from a verl config section named `what` (every field but batch_size, which
        is verl's own), names and types checked."""
        from frontier_rft.core.config import config_from_dict

        if not isinstance(fields, Mapping):
            raise ValueError(f"{what} must be a mapping, got {fields!r}")
        if "batch_size" in fields:
            raise ValueError(f"{what}.{BATCH_SIZE_NOT_READ}")
        trl_keys = trl_only(fields)
        if trl_keys:
            raise ValueError(
                f"{what}.{trl_keys[0]} is the TRL adapter's option: {DYNAMIC_SAMPLING_ON_VERL}"
            )
        values = dict(fields)
        if isinstance(values.get("reward_range"), list):
            values["reward_range"] = tuple(values["reward_range"])
        return config_from_dict(cls, values, what=what, fixed={"batch_size": batch_size})


def _interpolated(value: Any) -> bool:
    """Whether `value` is a Hydra interpolation left unresolved (`${...}`)."""
    return isinstance(value, str) and "${" in value


def _cfg_get(cfg: Any, key: str) -> Any:
    if cfg is None:
        return None
    if isinstance(cfg, Mapping):
        return cfg.get(key)
    getter = getattr(cfg, "get", None)  # omegaconf DictConfig
    return getter(key) if callable(getter) else getattr(cfg, key, None)


def _to_plain(value: Any) -> Any:
    try:  # verl hands over omegaconf DictConfigs; omegaconf comes with verl
        omegaconf = importlib.import_module("omegaconf")
    except ImportError:
        omegaconf = None
    if omegaconf is not None and omegaconf.OmegaConf.is_config(value):
        return omegaconf.OmegaConf.to_container(value, resolve=True)
    return dict(value) if isinstance(value, Mapping) else value


_OPTIONAL_STRINGS = (
    "selector_judge",
    "prompt_key",
    "difficulty_key",
    "features_key",
    "self_embeddings_model",
    "reward_key",
    "metrics_jsonl",
)
