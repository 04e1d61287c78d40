"""What every TRL test module here shares (test_trl*.py, test_shadow_trl_summary.py): its
marks, one torch thread, and TRL's vLLM path with the engine stood in.

A module still opens with `pytest.importorskip("trl", ...)`: its own imports need TRL, and
without it the module is skipped with that reason. The tiny run it builds (the model, the
tokenizer, the GRPOConfig, the dataset of task ids and the planted pool's reward) is
tiny_lm.py's, importable by name from here and from the two-process workers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent

TRL_MARKS = (
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
)
"""Every TRL test: an integration test, TRL's and transformers' warnings ignored."""
REAL_MODEL = ("test_trl_smollm2.py",)
"""TRL modules that run a real model and keep torch's threads."""


def is_trl_module(path: Path) -> bool:
    """Whether `path` is one of this folder's TRL test modules."""
    return path.parent == HERE and "trl" in path.stem.split("_")


@pytest.hookimpl(tryfirst=True)  # before `-m` reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_trl_module(item.path):
            for mark in TRL_MARKS:
                item.add_marker(mark)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread(request: pytest.FixtureRequest) -> Iterator[None]:
    """The model is tiny: extra intra-op threads only contend on a shared 2-core machine."""
    path = request.path
    if not is_trl_module(path) or path.name in REAL_MODEL:
        yield
        return
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def vllm_standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """TRL's vLLM path with the engine stood in; colocate's environment writes undone."""
    import vllm_standin
    from two_ranks import free_port

    vllm_standin.install(monkeypatch)
    port = str(free_port())  # a fixed one fails whenever another run holds it
    for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}.items():  # fmt: skip
        monkeypatch.setenv(key, os.environ.get(key, value))
    vllm_standin.ENGINES.clear()
    yield vllm_standin
    vllm_standin.ENGINES.clear()
