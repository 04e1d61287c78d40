"""A logged run's steps costed on a named device's step-cost curve (projected seconds).

Every step of a record is costed by its shape: the rows it generated in each call to generate
(`train/rollouts` over `train/sampling_rounds` calls of equal size, one for a plain step; a
wrap's added rollouts in the first call or in one call more, as its class says), every call at
the run's completion cap (a batched generate decodes until its longest row stops, and some row
of a large batch reaches the cap: an upper bound for short answers), and the rows trained
(`train/trained_rows`; a record without that column trained what it generated). Evaluation
and the first embedding are left out, as `eval_seconds` leaves out evaluation. The result is a
projection: what the same steps would cost on that device with the measured model, not a
measurement of this run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from frontier_rft.sampling.logged_shape import step_shape
from frontier_rft.step_cost import StepCostCurve, load_curve
from frontier_rft.training.eval_grid import projected_step_seconds

__all__ = ["PROJECTED_DEVICES", "projected_axis", "projected_seconds", "step_shape"]

PROJECTED_DEVICES = ("h200", "cpu")
"""The shipped curves every bench report projects its runs onto (step_cost.CURVES)."""


@cache
def _curve(name: str) -> StepCostCurve:
    return load_curve(name)


def projected_axis(device: str) -> str:
    """The run-curve key of cumulative projected seconds on `device` at each evaluation."""
    return f"eval_projected_{device}"


def projected_seconds(
    train: Sequence[Mapping[str, Any]], info: Mapping[str, Any], device: str
) -> list[float]:
    """Cumulative projected seconds on `device` before step 0 and after each logged step."""
    config = info.get("config", {}) if isinstance(info.get("config"), Mapping) else {}
    length = int(config.get("max_new_tokens", 24) or 24)
    out = [0.0]
    for row in train:
        out.append(out[-1] + projected_step_seconds(device, step_shape(row, length)))
    return out
