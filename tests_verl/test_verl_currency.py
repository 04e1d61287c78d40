"""verl's currency line: its written defaults are the installed verl's, and the Hydra
pre-flight at start-up (verl's composed config) prints the line `frontier check-config verl`
prints for the file as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from verl_data import write_parquet

from frontier_rft.integrations.preflight import dotted_get
from frontier_rft.integrations.verl.currency import VERL_DEFAULTS, _defaults
from frontier_rft.integrations.verl.hydra_preflight import FrontierPreflight
from frontier_rft.integrations.verl.preflight import check_verl_config
from frontier_rft.integrations.verl.verl_keys import _schemas

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "verl"


def test_the_written_defaults_are_the_installed_verls() -> None:
    """Every default the line reads is in the installed verl's generated config, equal."""
    found = _schemas("ppo_trainer")
    assert not isinstance(found, str), found
    version, _, _, (generated,) = found
    assert version == "0.9.1"
    for key, value in VERL_DEFAULTS.items():
        assert dotted_get(generated, key) == value, key
    assert _defaults("ppo_trainer") == (VERL_DEFAULTS, "verl 0.9.1's")


def test_the_start_up_line_is_check_configs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hydra import compose, initialize_config_dir

    from frontier_rft.core.yamlsafe import load_yaml
    from frontier_rft.integrations.preflight import apply_overrides

    data = write_parquet(tmp_path / "train.parquet", 48)
    overrides = [f"data.train_files={data}", "data.train_batch_size=8",
                 "actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct"]  # fmt: skip
    with initialize_config_dir(config_dir=str(EXAMPLES), version_base=None):
        cfg = compose("skip", overrides=overrides, return_hydra_config=True)
    FrontierPreflight().on_job_start(cfg)
    started = [
        ln.removeprefix("frontier-rft pre-flight: currency: ")
        for ln in capsys.readouterr().err.splitlines()
        if ln.startswith("frontier-rft pre-flight: currency: ")
    ]
    written = load_yaml((EXAMPLES / "skip.yaml").read_text(encoding="utf-8"))
    apply_overrides(written, overrides)
    assert started == check_verl_config(written).currency
    assert started[0].startswith("steps: an engine decodes 16 rows a call")  # 8 x 8 over 4
