"""`frontier plan-batch LOG` (cli/plan_batch.py, integrations/batch_settings.py): the plan from a
run's logged noise meter against hand-computed values, each trainer's settings, and the
refusals in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from frontier_rft.cli.main import main
from frontier_rft.integrations.batch_settings import TRAINERS, plan_run, trainer_settings
from frontier_rft.step_cost.planner import NoiseTerms

# The last metered row: |G|^2 1, tr Sigma_inter 25, tr Sigma_intra 200: at K = 8,
# B_noise = 8 * 25 + 200 = 400 rows. Earlier rows differ: the plan reads the last.
NOISE = [
    {"noise/grad_sq_ema": 4.0, "noise/inter_ema": 1.0, "noise/intra_ema": 1.0},
    {"noise/grad_sq_ema": 2.0, "noise/inter_ema": 9.0, "noise/intra_ema": 3.0},
    {"noise/grad_sq_ema": 1.0, "noise/inter_ema": 25.0, "noise/intra_ema": 200.0},
]
# A measured curve of one length, 100 tokens, linear in rows: t(r) = 1 + 0.01 r seconds
# (half generation, half update), so B* = sqrt(a B_noise / b) = sqrt(1 * 400 / 0.01) = 200 rows.
LINEAR = {
    "name": "linear",
    "device_class": "cuda",
    "cells": [
        {"rows": 1, "length": 100, "generate_s": 0.505, "update_s": 0.505},
        {"rows": 1001, "length": 100, "generate_s": 5.505, "update_s": 5.505},
    ],
}


def t_over_s_min(rows: int) -> float:
    """T(B) / S_min = (1 + B_noise / B) t(B) at K = 8 on the linear curve."""
    return (1 + 400 / rows) * (1 + 0.01 * rows)


def _log(directory: Path, rows: list[dict[str, object]], run_config: dict | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "metrics.jsonl").open("w", encoding="utf-8") as fh:
        for step, row in enumerate(rows, start=1):
            fh.write(json.dumps({"step": step, "train/loss": 0.1, **row}) + "\n")
    if run_config is not None:
        info = {"config": run_config, "model_dir": str(directory / "model")}
        (directory / "run.json").write_text(json.dumps(info), encoding="utf-8")
    return directory


@pytest.fixture
def curve(tmp_path: Path) -> str:
    path = tmp_path / "linear.json"
    path.write_text(json.dumps(LINEAR), encoding="utf-8")
    return str(path)


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["plan-batch", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_the_plan_is_the_closed_form_of_the_logged_noise_and_a_linear_curve(
    tmp_path: Path, curve: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # a frontier train run: its run.json says the step (16 x 8), the lr, the pool
    config = {"batch_size": 16, "group_size": 8, "lr": 1e-4, "train_size": 64}
    run = _log(tmp_path / "run", [{}, *NOISE, {"train/completion_tokens": 100.0}], config)
    describe, settings = _plan(capsys, str(run), "--curve", curve)
    assert math.sqrt(1 * 400 / 0.01) == 200
    # by brute force over every whole number of prompts of the pool, the least T is 25 x 8
    best = min(range(8, 64 * 8 + 1, 8), key=t_over_s_min)
    assert best == 200
    assert describe.startswith("batch plan: 200 rows a step (25 prompts x 8 rollouts) against 128")
    ratio = t_over_s_min(200) / t_over_s_min(128)  # 9 / 9.405
    assert f"{ratio:.3g}x the device seconds" in describe
    assert "EMA over 3 metered step(s)" in describe and "B_noise 400 rows at K=8" in describe
    assert "a measured curve, curve linear" in describe and "at 100 tokens" in describe
    assert "sqrt(200/128)" in describe and "rule of thumb" in describe
    # the rate kept first; lr 1e-4 x sqrt(200 / 128) = 1.25e-4 beside it
    assert (
        "frontier train: --batch-size 25 --group-size 8 --lr 0.0001 (kept; the square-root "
        "rule: 0.000125, 1.25x)" in settings
    )
    assert "the learning rate kept: on the one regime measured" in settings


def test_the_flags_override_the_log_and_the_pool_bounds_the_plan(
    tmp_path: Path, curve: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"batch_size": 16, "group_size": 8, "lr": 1e-4, "train_size": 64}
    run = _log(tmp_path / "run", NOISE, config)
    # a pool of 10 prompts: 80 rows (T = 6 * 1.8 = 10.8) is the least of 8..80
    assert min(range(8, 81, 8), key=t_over_s_min) == 80
    describe, settings = _plan(
        capsys, str(run / "metrics.jsonl"), "--curve", curve, "--max-prompts", "10",
        "--length", "50", "--lr", "2e-4",
    )  # fmt: skip
    assert "80 rows a step (10 prompts x 8 rollouts)" in describe
    assert "at 50 tokens" in describe
    lr = 2e-4 * math.sqrt(80 / 128)
    assert (
        f"--batch-size 10 --group-size 8 --lr 0.0002 (kept; the square-root rule: {lr:.3g},"
        in settings
    )


def test_each_trainer_gets_its_own_keys(
    tmp_path: Path, curve: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _log(tmp_path / "trl", NOISE)  # a TRL log says no step shape: the flags do
    shape = ["--prompts", "16", "--group-size", "8", "--lr", "1e-4", "--curve", curve]
    said = {t: _plan(capsys, str(run), *shape, "--trainer", t)[1] for t in TRAINERS}
    assert "--batch-size 25 --group-size 8" in said["frontier"]
    assert (
        "TRL (GRPOConfig, 1 process): per_device_train_batch_size=8 "
        "gradient_accumulation_steps=25 num_generations=8 generation_batch_size=200 "
        "(steps_per_generation unset; the micro-batch at most your 8) learning_rate=0.0001 "
        "(kept; the square-root rule: 0.000125, 1.25x)"
    ) in said["trl"]
    assert (
        "verl: data.train_batch_size=25 actor_rollout_ref.actor.ppo_mini_batch_size=25 "
        "actor_rollout_ref.rollout.n=8 actor_rollout_ref.actor.optim.lr=0.0001 (kept"
    ) in said["verl"]
    assert (
        "SkyRL: trainer.train_batch_size=25 trainer.policy_mini_batch_size=25 "
        "generator.n_samples_per_prompt=8 trainer.policy.optimizer_config.lr=0.0001 (kept"
    ) in said["skyrl"]
    # two processes of micro-batches of 25: 200 rows = 25 x 2 x 4, as TRL counts them
    two = _plan(capsys, str(run), *shape, "--trainer", "trl", "--processes", "2",
                "--per-device", "25")[1]  # fmt: skip
    assert "2 processes): per_device_train_batch_size=25 gradient_accumulation_steps=4" in two
    assert "generation_batch_size=200" in two
    # at TRL's default micro-batch of 8: 100 rows a process, the largest divisor <= 8 is 5
    two = _plan(capsys, str(run), *shape, "--trainer", "trl", "--processes", "2")[1]
    assert "per_device_train_batch_size=5 gradient_accumulation_steps=20" in two


def test_trl_settings_keep_the_micro_batch_and_raise_the_accumulation(curve: str) -> None:
    """The micro-batch is what the run's memory holds: at most the run's own, the largest that
    divides the rows and leaves >= 2 micro-batches (the noise meter reads two)."""
    terms = NoiseTerms(1.0, 25.0, 200.0, 3)
    plan = plan_run(terms, curve, length=100, prompts=16, rollouts=8, max_prompts=64)
    assert plan.rows == 200
    # 200 rows over 3 processes: no whole split, said so
    assert "do not split over 3 processes" in trainer_settings(plan, "trl", processes=3)
    # micro-batches of 3 do not divide 200: 2 does (200 = 2 x 100)
    line = trainer_settings(plan, "trl", per_device=3)
    assert "per_device_train_batch_size=2 gradient_accumulation_steps=100" in line
    # a micro-batch above the step: two micro-batches of 100, never one of 200
    line = trainer_settings(plan, "trl", per_device=300)
    assert "per_device_train_batch_size=100 gradient_accumulation_steps=2" in line
    assert "learning_rate=your learning rate (kept; the square-root rule: x 1.25)" in line
    with pytest.raises(ValueError, match="trainer must be one of"):
        trainer_settings(plan, "tf")


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The error line of a refused call: exit 2, nothing on stdout, no traceback, at most a
    hint line after it (--debug, or argparse's --help)."""
    try:
        code = main(["plan-batch", *argv])
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) <= 2 and all("--debug" in n or "--help" in n for n in lines[1:]), lines
    return lines[0]


def test_without_a_log_it_says_the_least_regret_start(
    curve: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # the linear curve at K = 100: 1..4 prompts are 100..400 rows of 2, 3, 4, 5 seconds, the
    # hand-computed case of tests/test_start_plan.py: 2 prompts, at most 1.5x (1 prompt: 1.6x)
    argv = ["--curve", curve, "--length", "100", "--prompts", "1", "--group-size", "100"]
    describe, settings = _plan(capsys, *argv, "--max-prompts", "4", "--lr", "1e-4")
    assert describe.startswith("start plan: 200 rows a step (2 prompts x 100 rollouts)")
    assert "at most 1.5x" in describe and "the configured step, 100 rows: up to 1.6x" in describe
    assert (
        "frontier train: --batch-size 2 --group-size 100 --lr 0.0001 (kept; the square-root "
        "rule: 0.000141, 1.41x)" in settings
    )
    _, verl = _plan(capsys, *argv, "--max-prompts", "4", "--trainer", "verl")
    assert "data.train_batch_size=2 " in verl and "rollout.n=100 " in verl


def test_a_start_without_the_step_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert "give --prompts (the step you would configure)" in _refused(capsys, "--group-size", "8")
    assert "--max-prompts 8 is below --prompts 16" in _refused(
        capsys, "--prompts", "16", "--group-size", "8", "--max-prompts", "8"
    )
    assert "two rollouts" in _refused(capsys, "--prompts", "16", "--group-size", "1")


def test_a_log_without_noise_rows_says_how_to_turn_the_meter_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _log(tmp_path / "off", [{}, {}], {"batch_size": 16, "group_size": 8})
    err = _refused(capsys, str(run))
    assert "no noise/..._ema rows" in err and "noise_every" in err and "--noise-every" in err


def test_bad_calls_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _log(tmp_path / "trl", NOISE)
    assert "give --prompts and --group-size" in _refused(capsys, str(run))
    assert "give --group-size" in _refused(capsys, str(run), "--prompts", "16")
    assert "invalid choice: 'tf'" in _refused(
        capsys, str(run), "--prompts", "16", "--group-size", "8", "--trainer", "tf"
    )
    assert "two rollouts" in _refused(capsys, str(run), "--prompts", "16", "--group-size", "1")
    assert "neither a shipped curve" in _refused(
        capsys, str(run), "--prompts", "16", "--group-size", "8", "--curve", "tpu"
    )
    assert "not a training run's folder" in _refused(capsys, str(tmp_path / "none"))
