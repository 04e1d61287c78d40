"""Fixtures for the verl adapter tests: real verl objects built offline.

These tests run in `.venv-verl` (verl pins its own transformers, see scripts/verl_env.sh);
where verl is not installed they are not collected. Data are a local parquet file and a
tokenizer built from a word list, so nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from verl_data import MAX_PROMPT_TOKENS, build_tokenizer, write_parquet

if importlib.util.find_spec("verl") is None:
    collect_ignore_glob = ["test_*.py"]  # run by `make test-verl` in .venv-verl


@pytest.fixture(autouse=True)
def _offline(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # files a sampler writes by default land in the test's folder
    cache = tmp_path_factory.getbasetemp() / "hf"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache / "datasets"))
    monkeypatch.setenv("HF_HOME", str(cache))


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    return build_tokenizer()


def data_config(tmp_path: Path, **extra: Any) -> Any:
    """verl's `data` config fields RLHFDataset and the sampler read."""
    from omegaconf import OmegaConf

    return OmegaConf.create(
        {
            "max_prompt_length": MAX_PROMPT_TOKENS,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": 1,
            "cache_dir": str(tmp_path / "verl_cache"),
            "prompt_key": "prompt",
            "truncation": "error",
            "shuffle": False,
            "train_batch_size": 4,
            "gen_batch_size": None,
            "dataloader_num_workers": 0,
            **extra,
        }
    )


@pytest.fixture
def make_dataset(tmp_path: Path, tokenizer: Any) -> Callable[..., Any]:
    from verl.utils.dataset.rl_dataset import RLHFDataset

    def build(num_rows: int = 48, **kwargs: Any) -> Any:
        path = write_parquet(tmp_path / f"train_{uuid.uuid4().hex[:6]}.parquet", num_rows, **kwargs)
        return RLHFDataset(data_files=str(path), tokenizer=tokenizer, config=data_config(tmp_path))

    return build
