"""The tinker adapter's facts for the one plan (`integrations.plan`), apart from tinker.py so
that they load without tinker-cookbook (the plan's table test, `frontier` checks)."""

from __future__ import annotations

from frontier_rft.integrations.plan import STEP_ROLLOUTS, TrainerFacts, adapter_plan
from frontier_rft.sampling.step_plan import StepPlan, StepRows

__all__ = ["TINKER", "tinker_step_plan"]

TINKER = TrainerFacts(
    name="tinker",
    rollouts=STEP_ROLLOUTS,
    kept="the cookbook's sync loop (do_sync_training)",
    length=("the cookbook's batches (len of the dataset)",),
    clashes=("kept+async",),
)
"""What the tinker cookbook's loops can do with a step (integrations.plan asks it): full
batches or only the tasks kept in each, no `auto`."""


def tinker_step_plan(rollouts: str, batch_size: int) -> StepPlan:
    """A tinker run's step as every door's plan (`plan.adapter_plan`), what its dataset holds
    and reads each batch from: `rollouts` (full, or kept: the tasks the selector keeps in
    uniform's window; the cookbook's losses are sums over tokens, so a kept step is
    FewerRollouts' `loss_scale: batch`), its rows `batch_size` groups a batch in one call
    (the group size is the builders', not the adapter's)."""
    return adapter_plan(rollouts, "batch", rows=StepRows(batch_size))
