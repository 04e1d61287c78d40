"""The currency a TRL run pays in (`frontier_rft.step_cost.advice`), from its GRPOConfig
values: `frontier check-config trl` and the trainer's start-up line say it the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frontier_rft.step_cost.advice import (
    currency_line,
    model_spec_from_config,
    model_spec_from_dict,
    run_currency,
)
from frontier_rft.step_cost.roofline import ModelSpec

__all__ = ["trl_currency_line"]


def _int(value: Any, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
    )


def trl_currency_line(values: Mapping[str, Any], model: Mapping[str, Any] | None = None) -> str:
    """One line: the currency of a run of these GRPOConfig values (TRL's defaults where unset),
    its model read from `model` (a loaded model's config) or a local model_name_or_path."""
    per_device = _int(values.get("per_device_train_batch_size"), 8)
    accumulate = _int(values.get("gradient_accumulation_steps"), 1)
    rows = per_device * _int(values.get("steps_per_generation"), accumulate)  # one process's call
    length = _int(values.get("max_completion_length"), 256)
    spec: ModelSpec | None = None
    if model is not None:
        spec = model_spec_from_dict(dict(model), str(model.get("_name_or_path", "the model")))
    elif isinstance(values.get("model_name_or_path"), str):
        spec = model_spec_from_config(values["model_name_or_path"])
    device = "cpu" if values.get("use_cpu") is True else "gpu"
    vllm = values.get("use_vllm") is True
    return currency_line(run_currency(rows, length, device=device, vllm=vllm, model=spec))
