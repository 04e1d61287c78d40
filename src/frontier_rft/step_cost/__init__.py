"""Device cost model: a training step's seconds from its shape, per device, and the knee."""

from frontier_rft.step_cost.curve import (
    CURRENCIES,
    CURVES,
    Cell,
    Knee,
    StepCostCurve,
    StepShape,
    load_curve,
)

__all__ = ["CURRENCIES", "CURVES", "Cell", "Knee", "StepCostCurve", "StepShape", "load_curve"]
