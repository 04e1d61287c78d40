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

import math
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from frontier_rft.sampling.step_plan import WRAPS
from frontier_rft.step_cost import StepCostCurve, StepShape, load_curve

__all__ = ["PROJECTED_DEVICES", "projected_axis", "projected_seconds", "step_shape"]

PROJECTED_DEVICES = ("h200", "cpu")
"""The shipped curves every bench report projects its runs onto (step_cost.CURVES)."""


@cache
def _curve(name: str) -> StepCostCurve:
    return load_curve(name)


def projected_axis(device: str) -> str:
    """The run-curve key of cumulative projected seconds on `device` at each evaluation."""
    return f"eval_projected_{device}"


def step_shape(row: Mapping[str, Any], length: int) -> StepShape:
    """One logged step's shape: the sampler's own rollouts split over its sampling rounds, each
    wrap's added rollouts (`<name>/rollouts`) where its class generates them (more rows of the
    first call, or a call of their own: `WrapsSampler.generates`), and its trained rows."""
    rollouts = _count(row, "train/rollouts")
    rounds = max(1, _count(row, "train/sampling_rounds", 1.0))
    own, first, more_calls = rollouts, 0, []
    for name, wrap in WRAPS.items():
        added = _count(row, f"{name}/rollouts") if wrap.generates != "nothing" else 0
        own -= added
        if wrap.generates == "in_first_call":
            first += added
        elif added:
            more_calls.append(added)
    base, spare = divmod(max(0, own), rounds)
    calls = [base + (1 if i < spare else 0) for i in range(rounds)]
    calls[0] += first
    trained = row.get("train/trained_rows")
    rows_trained = rollouts if trained is None else round(float(trained))
    return StepShape((*calls, *more_calls), max(1, length), rows_trained)


def _count(row: Mapping[str, Any], key: str, missing: float = 0.0) -> int:
    return round(float(row.get(key, missing) or missing))


def projected_seconds(
    train: Sequence[Mapping[str, Any]], info: Mapping[str, Any], device: str
) -> list[float]:
    """Cumulative projected seconds on `device` before step 0 and after each logged step."""
    config = info.get("config", {}) if isinstance(info.get("config"), Mapping) else {}
    length = int(config.get("max_new_tokens", 24) or 24)
    curve = _curve(device)
    out = [0.0]
    for row in train:
        seconds = curve.step_seconds(step_shape(row, length))
        out.append(out[-1] + (seconds if math.isfinite(seconds) else 0.0))
    return out
