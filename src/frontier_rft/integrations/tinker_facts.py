"""The tinker adapter's facts for the one plan (`integrations.plan`), apart from tinker.py so
that they load without tinker-cookbook (the plan's table test, `frontier` checks)."""

from __future__ import annotations

from frontier_rft.integrations.plan import STEP_ROLLOUTS, TrainerFacts

__all__ = ["TINKER"]

TINKER = TrainerFacts(
    name="tinker",
    rollouts=STEP_ROLLOUTS,
    kept="the cookbook's sync loop (do_sync_training)",
    length=("the cookbook's batches (len of the dataset)",),
    clashes=("kept+async",),
)
"""What the tinker cookbook's loops can do with a step (integrations.plan asks it): full
batches or only the tasks kept in each, no `auto`."""
