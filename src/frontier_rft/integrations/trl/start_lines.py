"""The least-regret start a TRL run is told before the meter reads anything: the trainer logs
it at start-up and `frontier check-config trl` prints it, from one function."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frontier_rft.integrations.batch_settings import DEFAULT_MAX_PROMPTS, start_for_call
from frontier_rft.integrations.trl.fewer_config import trl_optimizer_step
from frontier_rft.step_cost.advice import Currency, DeviceHint

__all__ = ["trl_start_lines"]


def trl_start_lines(
    values: Mapping[str, Any],
    currency: Currency | None,
    *,
    processes: int = 1,
    max_prompts: int | None = None,
    hint: DeviceHint | None = None,
) -> list[str]:
    """The start from this run's optimizer step (`trl_optimizer_step`) up to `max_prompts`
    (the pool's prompts where known) in TRL's keys (`start_for_call`), on the curve
    `currency` was read from; one line saying why where there is none."""
    step = trl_optimizer_step(values, processes)
    if isinstance(step, str):
        return [f"start plan: none, {step}"]
    prompts, k, per_device = step
    return start_for_call(
        "trl",
        currency,
        prompts=prompts,
        rollouts=k,
        lr=values.get("learning_rate"),
        hint=hint,
        processes=processes,
        per_device=per_device,  # the run's micro-batch: a plan keeps it
        max_prompts=max_prompts or DEFAULT_MAX_PROMPTS,
    )
