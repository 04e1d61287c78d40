"""The least-regret start said by verl's and SkyRL's pre-flights (`frontier check-config`, and
at start-up): read from each trainer's own keys, priced on the curve its currency was read
from, said in its keys as `frontier plan-batch` says it; none, saying why and what to measure,
where no measured curve applies (a projected knee, an unread model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from frontier_rft.cli.main import main
from frontier_rft.integrations.batch_settings import DEFAULT_MAX_PROMPTS, plan_lines, start_run
from frontier_rft.integrations.skyrl.currency import skyrl_start_lines
from frontier_rft.integrations.verl.currency import verl_start_lines
from frontier_rft.step_cost.advice import DeviceHint
from test_plan_batch_cli import LINEAR  # t(r) = 1 + 0.01 r seconds at 100 tokens

VERL = {
    "data": {"train_batch_size": 16, "max_response_length": 100},
    "actor_rollout_ref": {"rollout": {"n": 8}, "actor": {"optim": {"lr": 1e-6}}},
}
SKYRL = {
    "trainer": {"train_batch_size": 16, "policy": {"optimizer_config": {"lr": 1e-6}}},
    "generator": {"n_samples_per_prompt": 8, "sampling_params": {"max_generate_length": 100}},
}


@pytest.fixture
def curve(tmp_path: Path) -> str:
    path = tmp_path / "linear.json"
    path.write_text(json.dumps(LINEAR), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("trainer", "config", "lines"), [
    ("verl", VERL, verl_start_lines), ("skyrl", SKYRL, skyrl_start_lines)])  # fmt: skip
def test_the_start_reads_the_trainers_keys_and_its_own_curve(
    trainer: str, config: dict, lines: object, curve: str
) -> None:
    got = lines(config, DeviceHint(curve=curve))  # type: ignore[operator]
    start = start_run(curve, length=100, prompts=16, rollouts=8, max_prompts=DEFAULT_MAX_PROMPTS)
    assert got == plan_lines(start, trainer, lr=1e-6)
    assert got[0].startswith("start plan: ") and "the configured step, 128 rows" in got[0]
    assert "measured curve, curve linear" in got[0]


@pytest.mark.parametrize("lines", [verl_start_lines, skyrl_start_lines])
def test_no_measured_curve_says_none_and_what_to_measure(lines: object) -> None:
    got = lines(VERL if lines is verl_start_lines else SKYRL)  # type: ignore[operator]
    assert len(got) == 1 and got[0].startswith("start plan: none: no measured step-cost curve")
    assert "the model's size is unread" in got[0] and "benchmarks/step_cost.py" in got[0]


def test_check_config_prints_the_start_after_the_currency(
    tmp_path: Path, curve: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        **VERL,
        "trainer": {"v1": {"sampler": {"custom_sampler": {
            "path": "pkg://frontier_rft.integrations.verl.v1", "name": "FrontierReplayBuffer"}}}},
    }  # fmt: skip
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    main(["check-config", "verl", str(path), "--step-cost", curve])
    out = capsys.readouterr().out.splitlines()
    at = [i for i, line in enumerate(out) if line.startswith("  start plan: ")]
    assert at and out[at[0] - 1].startswith("  currency: ")
    assert out[at[0] + 1].startswith("  set for your trainer: verl: data.train_batch_size=")
