"""Fixtures for the tinker-cookbook adapter tests: its real training loop, offline.

These tests run in `.venv-tinker` (scripts/tinker_env.sh: tinker-cookbook's requirements do
not all resolve beside the main environment's); where tinker-cookbook is not installed they
are not collected.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

if importlib.util.find_spec("tinker_cookbook") is None:
    collect_ignore_glob = ["test_*.py"]  # run by `make test-tinker` in .venv-tinker


@pytest.fixture
def run_cookbook(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """run_cookbook(dataset, log_path, max_steps, async_lag=None, ...) -> what the service saw."""
    from tinker_run import cookbook_runner

    return cookbook_runner(monkeypatch)
