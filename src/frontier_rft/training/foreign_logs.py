"""The old home of the TRL and verl log readers, kept for users' imports: they live in
`frontier_rft.shadow.foreign_logs`."""

from __future__ import annotations

from frontier_rft.shadow.foreign_logs import (
    FORMATS,
    LENGTH_UNIT,
    MAX_ROWS,
    detect_format,
    read_foreign_log,
    regular_file,
    reward_names,
)

__all__ = [
    "FORMATS",
    "LENGTH_UNIT",
    "MAX_ROWS",
    "detect_format",
    "read_foreign_log",
    "regular_file",
    "reward_names",
]
