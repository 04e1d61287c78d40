"""`rollouts: auto`'s length and decision helpers, kept under this name for users' imports:
they live in `integrations.plan`, the one plan every adapter asks."""

from __future__ import annotations

from frontier_rft.integrations.plan import (
    AUTO_DOC,
    SHADOWS_FOLLOW_UNIFORM,
    RowCount,
    auto_choice,
    auto_log,
    dataset_rows,
    keeps_full,
    planned_epochs,
    positive_number,
    resolve_auto,
)

__all__ = [
    "AUTO_DOC",
    "SHADOWS_FOLLOW_UNIFORM",
    "RowCount",
    "auto_choice",
    "auto_log",
    "dataset_rows",
    "keeps_full",
    "planned_epochs",
    "positive_number",
    "resolve_auto",
]
