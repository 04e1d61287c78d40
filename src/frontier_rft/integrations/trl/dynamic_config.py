"""DAPO dynamic sampling in the TRL adapter: its settings, the TRL settings it needs, and the
zero-variance test on TRL's combined reward.

Imports neither torch nor TRL: `FrontierConfig` validates with it and `frontier check-config
trl` names the same mistakes, before any model loads. The sampling loop itself is
`frontier_rft.sampling.DynamicSampling`; `step_driver.py` drives it from inside GRPOTrainer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import config_from_dict, config_problems
from frontier_rft.sampling.dynamic_sampling import MODES, DynamicSampling, DynamicSamplingConfig

__all__ = [
    "DYNAMIC_SAMPLING_MODES",
    "IMAGE_COLUMNS",
    "LOSS_NORMALISATION",
    "TESTED_TRL",
    "ZERO_VARIANCE_TOL",
    "StepRun",
    "dynamic_refusals",
    "dynamic_spelling",
    "dynamic_step_problems",
    "held_over_problems",
    "image_problems",
    "mode_of",
    "normalisation",
    "sampling_config",
    "short_repr",
    "trl_problems",
    "zero_variance_groups",
]

DYNAMIC_SAMPLING_MODES = ("off", *MODES)
"""off, or a mode of frontier_rft.sampling.dynamic_sampling.MODES: rounds of 3x the open
slots (fixed); rounds sized from the measured zero-variance share (adaptive, GRESO's rule);
GRESO's own recipe (greso); DAPO's released code, every round 3x the batch (dapo)."""

LOSS_NORMALISATION = {
    "grpo": "row",
    "sapo": "row",
    "dr_grpo": "row",
    "luspo": "row",
    "dapo": "token",
    "cispo": "token",
    "vespo": "token",
}
"""How TRL (1.16) normalises each loss_type, as the filler rows of a step sampler (mask zero:
a short dynamic sampling batch, fewer rollouts) meet it: 'row': each micro-batch's loss is a
mean over its rows (a filler row is a row of zero loss); 'token': the sum over the
generation batch's tokens divided by `num_items_in_batch`, which the adapter sets. bnpo (each
micro-batch by its own tokens) and any other type are refused."""

_TRL_LOSS_TYPE = "dapo"
"""TRL's default loss_type, for settings that do not name one."""

TESTED_TRL = ("1.16.0",)
"""TRL releases the dynamic-sampling tests ran on (GRPOTrainer._generate_and_score_completions
is private: another release is wrapped after a check of its signature and output keys)."""

ZERO_VARIANCE_TOL = 1e-5
"""Default relative tolerance of the zero-variance test: about 80 float32 roundings of a
reward of size 1 (TRL sums weighted rewards in float32), far below any real reward gap."""

_FIXED_BY_ADAPTER = ("adaptive", "round_rule", "max_surplus", "max_staleness")
"""DynamicSamplingConfig fields the TRL adapter sets itself (adaptive, round_rule: by the mode;
no surplus: a completion is never kept for a later step)."""


def mode_of(value: Any) -> str:
    """The dynamic_sampling mode of a FrontierConfig value (None and False: off, True: fixed);
    ValueError naming the choices otherwise."""
    if value is None or value is False:
        return "off"
    if value is True:
        return "fixed"
    if isinstance(value, str) and value.strip().lower() in DYNAMIC_SAMPLING_MODES:
        return value.strip().lower()
    raise ValueError(
        f"dynamic_sampling must be one of {', '.join(DYNAMIC_SAMPLING_MODES)} (DAPO's filter: "
        f"rounds of 3x the open slots, adaptive sizing, GRESO's recipe, or DAPO's full 3x "
        f"rounds), got {short_repr(value)}"
    )


def sampling_config(mode: str, overrides: Mapping[str, Any] | None) -> DynamicSamplingConfig | None:
    """The DynamicSamplingConfig of `mode` with `overrides` (dynamic_sampling_config), or None
    when off; ValueError naming every option it refuses (one message, `; `-separated)."""
    overrides = dict(overrides or {})
    surplus = overrides.pop("max_surplus", 0)
    problems = held_over_problems("dynamic_sampling_config", surplus, False)
    for name in ("adaptive", "round_rule"):
        if name in overrides:
            overrides.pop(name)
            problems.append(
                f"dynamic_sampling_config: {name} is set by dynamic_sampling "
                f"({', '.join(MODES)}): drop it"
            )
    if "max_staleness" in overrides:
        overrides.pop("max_staleness")
        problems += held_over_problems("dynamic_sampling_config", 0, True)
    base = DynamicSamplingConfig.for_mode(mode if mode in MODES else "fixed")
    values = {k: v for k, v in asdict(base).items() if k not in _FIXED_BY_ADAPTER}
    values.update(overrides)
    fixed = {
        "adaptive": base.adaptive,
        "round_rule": base.round_rule,
        "max_surplus": 0,
        "max_staleness": 1,
    }
    # Every refused option and value at once (config_problems), not the first one only.
    found = config_problems(DynamicSamplingConfig, values, fixed=fixed)
    problems += [f"dynamic_sampling_config: {p}" for p in found]
    config = None
    if not found:
        config = config_from_dict(
            DynamicSamplingConfig, values, what="dynamic_sampling_config", fixed=fixed
        )
    if mode == "off" and overrides and not problems:  # (a refused mode reads as off here)
        problems.append(
            "dynamic_sampling_config is set but dynamic_sampling is off; set "
            f"dynamic_sampling: {', '.join(MODES)}, or drop dynamic_sampling_config"
        )
    if problems:
        raise ValueError("; ".join(problems))
    return None if mode == "off" else config


def held_over_problems(key: str, surplus: Any, staleness: bool) -> list[str]:
    """TRL's refusals of dynamic sampling settings that hold groups over steps, in the words
    of `key` (the option that set them): a surplus kept (`surplus` not 0), a staleness set
    (`staleness`; unused, as nothing is kept). TRL builds each step's batch afresh."""
    out = []
    if surplus != 0:
        out.append(
            f"{key}: max_surplus {short_repr(surplus)} is not supported by the TRL adapter (it "
            "keeps no completion for a later step; DAPO discards the surplus): drop it"
        )
    if staleness:
        out.append(f"{key}: max_staleness is unused here (no surplus is kept): drop it")
    return out


def dynamic_spelling(config: DynamicSamplingConfig) -> dict[str, Any]:
    """What TRL's shorthand keys say of `config` (`driver_kinds.DriverKind.spell`): the
    dynamic_sampling mode, its overrides away from that mode's settings, rollouts full."""
    rule = config.round_rule
    mode = rule if rule != "standard" else ("adaptive" if config.adaptive else "fixed")
    base = asdict(DynamicSamplingConfig.for_mode(mode))
    changed = {
        k: v
        for k, v in asdict(config).items()
        if k not in ("adaptive", "round_rule") and v != base[k]
    }
    return {
        "dynamic_sampling": mode,
        "dynamic_sampling_config": changed or None,
        "rollouts": "full",
    }


def dynamic_refusals(config: DynamicSamplingConfig, key: str) -> list[str]:
    """What TRL refuses of a DynamicSamplingConfig given whole (`sampler_config`: `key`)."""
    changed = dynamic_spelling(config)["dynamic_sampling_config"] or {}
    return held_over_problems(key, config.max_surplus, "max_staleness" in changed)


def _setting(values: Mapping[str, Any], name: str, default: Any) -> Any:
    value = values.get(name, default)
    return {True: "group", False: "none"}.get(value, value) if name == "scale_rewards" else value


def normalisation(loss_type: str) -> str:
    """'row' or 'token' (LOSS_NORMALISATION); ValueError (one line) for a refused type."""
    kind = LOSS_NORMALISATION.get(loss_type)
    if kind is None:
        raise ValueError(_loss_type_problem(loss_type, "a step sampler"))
    return kind


def _loss_type_problem(loss_type: Any, feature: str) -> str:
    """The line refusing a loss_type the filler rows of `feature` would mis-scale."""
    why = (
        "TRL normalises each micro-batch by its own tokens, which filler rows change"
        if loss_type == "bnpo"
        else "the adapter does not know how it normalises a batch with filler rows"
    )
    return (
        f"{feature} with loss_type: {loss_type}: {why}, so the loss of a step that trains "
        "fewer groups cannot be scaled right; use loss_type dapo (TRL's default), grpo, "
        "dr_grpo, sapo, luspo, cispo or vespo"
    )


def trl_problems(
    values: Mapping[str, Any],
    trainer: str = "grpo",
    feature: str = "dynamic_sampling",
    off: str = "dynamic_sampling: off",
) -> list[str]:
    """What in TRL's settings (`values`: GRPOConfig fields, TRL's defaults when absent)
    a step sampler inside GRPOTrainer (`feature`: dynamic sampling, or fewer rollouts, turned
    off by `off`) cannot run with, one line each. Both may train a step on fewer groups than
    the batch, with filler rows (mask zero) whose loss the adapter scales per loss_type."""
    if trainer != "grpo":
        return [
            f"{feature} runs inside TRL's GRPOTrainer; trainer {trainer!r} is not "
            f"supported: set trainer: grpo, or {off}"
        ]
    out = []
    scale = _setting(values, "scale_rewards", "group")
    if scale == "batch":
        out.append(
            f"{feature} with scale_rewards: batch: TRL would scale by the std of every "
            "group generated, not of the batch trained on; use scale_rewards: group (TRL's "
            "default) or none"
        )
    aggregation = _setting(values, "multi_objective_aggregation", "sum_then_normalize")
    if aggregation != "sum_then_normalize":
        out.append(
            f"{feature} with multi_objective_aggregation: {aggregation}: TRL normalizes "
            "each reward over every group generated, not the batch trained on; use "
            "sum_then_normalize (TRL's default)"
        )
    loss_type = values.get("loss_type", _TRL_LOSS_TYPE)
    if loss_type not in LOSS_NORMALISATION:
        out.append(_loss_type_problem(loss_type, feature))
    if values.get("use_adaptive_entropy") is True:
        out.append(
            f"{feature} with use_adaptive_entropy: TRL updates entropy_coef inside each "
            "micro-batch's loss, where the adapter weights the entropy bonus for the filler "
            "rows; set use_adaptive_entropy: false (a fixed entropy_coef is weighted right)"
        )
    return out


IMAGE_COLUMNS = ("image", "images")
"""Columns of an image dataset, which dynamic sampling cannot regroup."""


def image_problems(names: list[str] | tuple[str, ...]) -> list[str]:
    """An image dataset (an `image` or `images` column) under dynamic sampling."""
    if not set(IMAGE_COLUMNS) & set(names):
        return []
    return [
        "dynamic_sampling does not support image datasets (an image or images column); set "
        "dynamic_sampling: off"
    ]


class StepRun(Protocol):
    """What a TRL run's step is refused for, beside its sampler (`resolve.TrlRun` is one)."""

    @property
    def settings(self) -> Mapping[str, Any]: ...  # TRL's settings (GRPOConfig fields)
    @property
    def trainer(self) -> str: ...  # grpo or rloo
    @property
    def columns(self) -> tuple[str, ...]: ...  # the training data's column names
    @property
    def seam(self) -> Callable[[str, int], str | None] | None: ...  # why this TRL lacks the seam


def dynamic_step_problems(
    config: DynamicSamplingConfig, run: StepRun, check_seam: bool
) -> tuple[list[str], list[str]]:
    """What refuses dynamic sampling (`config`) on `run`: (its settings' problems, its data's),
    the seam this TRL lacks (`check_seam`) the one problem said where it lacks it."""
    if run.trainer != "grpo":
        return trl_problems({}, run.trainer), []
    found = run.seam(DynamicSampling.kind, 0) if check_seam and run.seam is not None else None
    if found is not None:
        return [found], []
    return trl_problems(run.settings, run.trainer), image_problems(list(run.columns))


def zero_variance_groups(rewards: NDArray[np.float64], tol: float) -> NDArray[np.bool_]:
    """(k,) True where a (k, n) row of combined rewards is constant up to float noise:
    max - min <= tol * max(1, max |r|). An exact `std == 0` test would keep groups that
    differ only by float32 rounding, whose GRPO advantages are noise scaled up by 1/std."""
    r = np.asarray(rewards, dtype=np.float64)
    spread = r.max(axis=1) - r.min(axis=1)
    scale = np.maximum(1.0, np.abs(r).max(axis=1))
    out: NDArray[np.bool_] = spread <= tol * scale
    return out


def short_repr(value: object) -> str:
    """repr(value), cut to 80 characters: a bad value quoted in a one-line error."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
