"""Where library messages go: the `frontier_rft` logger, which the entry points show.

Every module that has something to say logs to `logging.getLogger(__name__)`; the package
logger holds only a NullHandler (the stdlib's advice for libraries), so an application
decides what is shown. The entry points (`frontier`, `python -m
frontier_rft.integrations.trl.grpo`) show INFO and above on stderr, one plain line each;
`--log-level` or $FRONTIER_LOG_LEVEL changes the level. Warnings stay `warnings`, progress
stays tqdm (frontier_rft.progress), and per-step metrics go to frontier_rft.metrics_log.

In a script of your own: `logging.basicConfig(level=logging.INFO)`, or
`logging.getLogger("frontier_rft").setLevel(logging.INFO)` plus a handler.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["LOG_LEVELS", "LOG_LEVEL_ENV", "env_level", "show_messages"]

LOG_LEVELS = ("debug", "info", "warning", "error")
"""Values of --log-level (and of FRONTIER_LOG_LEVEL)."""
LOG_LEVEL_ENV = "FRONTIER_LOG_LEVEL"
"""Environment variable: the log level when --log-level is not given (default: info)."""


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is when a record is emitted (a test's capture, a
    redirect), not to the stream that was current when the handler was made."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


@contextlib.contextmanager
def show_messages(level: str) -> Iterator[None]:
    """Library messages (the `frontier_rft` logger) at `level` and above to stderr, one plain
    line each, while a command runs; the logger is as it was afterwards. For the entry
    points (`frontier`, the TRL script); a library user configures `logging` instead."""
    logger = logging.getLogger("frontier_rft")
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    before = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False  # a root handler of the caller's would print each line twice
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before[0])
        logger.propagate = before[1]


def env_level() -> str:
    """$FRONTIER_LOG_LEVEL (lower case), else info; ValueError naming the allowed values."""
    level = os.environ.get(LOG_LEVEL_ENV, "").strip().lower() or "info"
    if level not in LOG_LEVELS:
        raise ValueError(f"${LOG_LEVEL_ENV} must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    return level
