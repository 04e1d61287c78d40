"""A logged step's shape: what one row of a run's metrics says its step generated and trained.

The reference trainer, the TRL driver and the bench all log a step's rollouts, its sampling
rounds, each wrap's added rollouts and its trained rows under the same names; this reads them
back as the `StepShape` a device's step-cost curve prices (`step_cost`). The trainer's
evaluation grid on projected seconds and the bench's projected-seconds axis both price a step
by it, so a step costs the same in the run and in its report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frontier_rft.sampling.step_plan import WRAPS
from frontier_rft.step_cost import StepShape

__all__ = ["step_shape"]


def step_shape(row: Mapping[str, Any], length: int) -> StepShape:
    """One logged step's shape: the sampler's own rollouts split over its sampling rounds, each
    wrap's added rollouts (`<name>/rollouts`) where its class generates them (more rows of the
    first call, or a call of their own: `WrapsSampler.generates`), and its trained rows, every
    call at `length` decode steps."""
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
