"""Shadows beside a TRL run (FrontierConfig.shadows; docs/shadow.md): the run's shadows
(frontier_rft.integrations.shadows) with their state in each checkpoint
(`frontier_shadow<i>.npz`), beside the selector's; metrics under `shadow/<rule>/...`."""

from __future__ import annotations

from frontier_rft.integrations.shadows import SHADOW_FILE, RunShadows

__all__ = ["SHADOW_FILE", "TrlShadows"]


class TrlShadows(RunShadows):
    """The shadows of one TRL run, each saved to its own file in a checkpoint (`save`, `load`)."""
