"""The least-regret start said by TRL's, verl's and SkyRL's pre-flights (`frontier
check-config`, and at start-up): read from each trainer's own keys, priced on the curve its
currency was read from, said in its keys as `frontier plan-batch` says it; none, saying why
and what to measure, where no measured curve applies (a projected knee, an unread model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from frontier_rft.cli.main import main
from frontier_rft.integrations.batch_settings import DEFAULT_MAX_PROMPTS, plan_lines, start_run
from frontier_rft.integrations.skyrl.currency import skyrl_start_lines
from frontier_rft.integrations.trl.currency import trl_currency
from frontier_rft.integrations.trl.start_lines import trl_start_lines
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


TRL = {  # 8 x 2 processes x 4 micro-batches = 64 rows an optimizer step: 8 prompts x 8
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 4,
    "num_generations": 8,
    "max_completion_length": 100,
    "learning_rate": 1e-6,
}


def test_trls_start_reads_its_optimizer_step_processes_and_pool(curve: str) -> None:
    hint = DeviceHint(curve=curve)
    got = trl_start_lines(TRL, trl_currency(TRL, processes=2, hint=hint), processes=2,
                          max_prompts=300, hint=hint)  # fmt: skip
    start = start_run(curve, length=100, prompts=8, rollouts=8, max_prompts=300)
    assert got == plan_lines(start, "trl", lr=1e-6, processes=2, per_device=8)
    assert "the configured step, 64 rows" in got[0] and "measured curve, curve linear" in got[0]
    assert "per_device_train_batch_size=" in got[1] and "num_generations=8" in got[1]


def test_trls_start_refuses_a_step_of_partial_groups_by_its_rows(curve: str) -> None:
    values = {**TRL, "per_device_train_batch_size": 3, "gradient_accumulation_steps": 1}
    hint = DeviceHint(curve=curve)
    got = trl_start_lines(values, trl_currency(values, hint=hint), hint=hint)
    assert got == ["start plan: none, a step's 3 rows are not whole groups of 8"]


def test_check_config_trl_prints_the_start_after_the_currency(
    tmp_path: Path, curve: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"q{i}", "answer": "1"}) + "\n"
                            for i in range(40)), encoding="utf-8")  # fmt: skip
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**TRL, "dataset_files": [str(data)]}), encoding="utf-8")
    main(["check-config", "trl", str(path), "--step-cost", curve, "--processes", "2"])
    out = capsys.readouterr().out.splitlines()
    at = [i for i, line in enumerate(out) if line.startswith("  start plan: ")]
    assert at and out[at[0] - 1].startswith("  currency: ")
    start = start_run(curve, length=100, prompts=8, rollouts=8, max_prompts=40)  # the pool
    assert out[at[0] : at[0] + 2] == [
        f"  {line}" for line in plan_lines(start, "trl", lr=1e-6, processes=2, per_device=8)
    ]
