"""The YAML snippets in docs/integrations/verl.md compose with verl's real Hydra config."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.integrations.verl import FrontierSampler, VerlSamplerConfig

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations" / "verl.md"


def yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)


def compose_snippet(tmp_path: Path, snippet: str, overrides: tuple[str, ...] = ()) -> Any:
    from hydra import compose, initialize_config_dir

    if "defaults:" not in snippet:  # a fragment: put it on top of verl's ppo_trainer
        head = "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\n\n"
        snippet = head + "defaults:\n  - ppo_trainer\n  - _self_\n\n" + snippet
    (tmp_path / "my_ppo.yaml").write_text(snippet)
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        return compose("my_ppo", overrides=list(overrides))


def test_v1_snippet_turns_on_the_custom_sampler(tmp_path: Path) -> None:
    cfg = compose_snippet(tmp_path, yaml_blocks()[0])
    custom = cfg.trainer.v1.sampler.custom_sampler
    assert custom.path == "pkg://frontier_rft.integrations.verl.v1"
    assert custom.name == "FrontierReplayBuffer"
    from verl.utils.import_utils import load_extern_object

    assert load_extern_object(custom.path, custom.name).__name__ == "FrontierReplayBuffer"
    kwargs = dict(cfg.trainer.v1.sampler.sampler_kwargs)
    config = VerlSamplerConfig(batch_size=cfg.data.train_batch_size, **kwargs)
    assert config.selector == "bots" and config.selector_config == {"lam": 0.1}


def test_old_interface_snippet_builds_the_sampler_from_data_config(
    tmp_path: Path, make_dataset: Any
) -> None:
    cfg = compose_snippet(tmp_path, yaml_blocks()[1], ("data.train_batch_size=8",))
    ds = make_dataset(48)
    sampler = FrontierSampler(data_source=ds, data_config=cfg.data)  # verl 0.7's call
    assert sampler.config.batch_size == cfg.data.train_batch_size
    assert sampler.selector.name == "bots" and sampler.selector.config.lam == 0.2
    assert cfg.data.sampler.class_path == "pkg://frontier_rft.integrations.verl"
