"""Shared fixtures of the integration tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ray_session(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A local Ray (loopback, temp dir in the repo) for one test module."""
    ray = pytest.importorskip("ray")
    from frontier_rft.integrations.ray.local import init_local

    old = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ours = not ray.is_initialized()  # another module's local Ray is reused, not shut down
    if ours:
        # Generous start-up timeouts and 3 attempts (a busy 2-core machine); Ray's AF_UNIX
        # socket paths must stay under ~107 characters: a short dir in the repo.
        init_local(REPO / ".ray_tmp" / "svc", num_cpus=2)
    # Workers cannot import a test module by name: ship its functions by value.
    ray.cloudpickle.register_pickle_by_value(request.module)
    try:
        yield ray
    finally:
        ray.cloudpickle.unregister_pickle_by_value(request.module)
        if ours:
            ray.shutdown()
        if old is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = old
