"""Shared fixtures and hooks of tests/ (the helpers they use live in helpers.py, imported by
name: a test module that wrote `from helpers import ...` would get tests/integration's
conftest when both folders run in one session)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontier_rft import SELECTORS, TaskPool
from helpers import REPO, world_pool


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`selector_name` runs over every registered selector, read when a test is collected:
    a selector that a plugin registered (`pytest -p test_new_selector`) is included."""
    if "selector_name" in metafunc.fixturenames:
        metafunc.parametrize("selector_name", sorted(SELECTORS))


@pytest.fixture
def pool() -> TaskPool:
    return world_pool()


@pytest.fixture(scope="module")
def sft_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's tiny SFT model (test_training_model.tiny_models: built once, then reused),
    the starting point of every reference-trainer test; skipped without torch or transformers."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_training_model import tiny_models

    return tiny_models(tmp_path_factory)[1]


@pytest.fixture(scope="module")
def ray_session(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A local Ray (loopback, temp dir in the repo) for one test module."""
    ray = pytest.importorskip("ray")
    from frontier_rft.integrations.ray.local import init_local

    old = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ours = not ray.is_initialized()  # another module's local Ray is reused, not shut down
    if ours:
        # A 180 s start-up timeout, 3 attempts, a failed attempt's processes stopped before
        # the next (a busy 2-core machine: integrations/ray/local.py); Ray's AF_UNIX
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


@pytest.fixture
def sample_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The class name of each sampler (PassThrough, DynamicSampling) whose `sample` is called
    during the test, in order: the trainer and the simulator drive the same loop."""
    from frontier_rft.sampling import DynamicSampling, PassThrough

    calls: list[str] = []
    for cls in (PassThrough, DynamicSampling):
        original = cls.sample

        def spy(self: Any, *args: Any, _original: Any = original, _name: str = cls.__name__,
                **kwargs: Any) -> Any:  # fmt: skip
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "sample", spy)
    return calls


@pytest.fixture
def no_accelerate_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No accelerate default config from this machine's cache (1 process unless a test says),
    and the test's own working directory."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.chdir(tmp_path)
