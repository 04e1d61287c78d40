"""`frontier simulate --fit`: bounded reading of a run's log, the fit, and the ranking."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frontier_rft.cli.main import main
from frontier_rft.simulation import SCENARIOS
from frontier_rft.simulation.fit_log import MAX_LINE_CHARS, read_run_log
from frontier_rft.simulation.fit_run import RunLog, fit_run
from frontier_rft.simulation.runner import Entry, RunSpec, run_one

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "fit_run"
"""A tiny `frontier train` run (metrics.jsonl trimmed to the keys the fit reads, run.json)."""


def _write_log(path: Path, rewards: list[float], etrs: list[float]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for step, (r, e) in enumerate(zip(rewards, etrs, strict=True), start=1):
            fh.write(json.dumps({"step": step, "train/reward_mean": r,
                                 "train/effective_task_ratio": e}) + "\n")  # fmt: skip
            if step % 5 == 0:
                fh.write(json.dumps({"step": step, "eval/pass@1": 0.3}) + "\n")
    return path


def _simulated_log(lr: float, steps: int = 30) -> tuple[list[float], list[float]]:
    cfg = SCENARIOS["small-pool"].replace(num_tasks=256, num_levels=1, level_mix=(1.0,),
                                          learning_rate=lr)  # fmt: skip
    rec = run_one(RunSpec(cfg, Entry("uniform", "uniform"), 11, steps, 16, 8))
    return rec["reward_mean"], rec["etr"]


def test_the_fit_recovers_the_speed_of_a_simulated_run() -> None:
    slow, fast = _simulated_log(0.005), _simulated_log(0.05)
    fits = []
    for rewards, etrs in (slow, fast):
        log = RunLog("sim", 256, 16, 8, 60, "uniform", False, np.array(rewards), np.array(etrs))
        fits.append(fit_run(log, seeds=(0,)))
    assert fits[0].scenario.learning_rate < fits[1].scenario.learning_rate
    for fit in fits:
        assert fit.reward_rmse < 2.5 * fit.reward_noise and fit.etr_rmse < 2.5 * fit.etr_noise


def test_a_bare_log_needs_the_run_shape_and_reads_only_step_records(tmp_path: Path) -> None:
    path = _write_log(tmp_path / "m.jsonl", [0.1] * 12, [0.5] * 12)
    with pytest.raises(ValueError, match="also pass --fit-pool, --batch"):
        read_run_log(path, 10)
    log = read_run_log(path, 10, pool_size=64, batch=8, rollouts=4, steps=20)
    assert log.reward_mean.size == 10 and log.num_tasks == 64 and log.selector == "uniform"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"step": 1, "reward": 0.1}\n', "no step record has a mean reward"),
        ("not json\n" + '{"step": 1}\n', "line 1 is not a JSON record"),
        ("x" * (MAX_LINE_CHARS + 5) + "\n", "longer than"),
        ('{"step": 2, "reward": 0.1, "train/effective_task_ratio": 0.5}\n'
         '{"step": 1, "reward": 0.1, "train/effective_task_ratio": 0.5}\n', "does not follow"),
        ("".join(f'{{"step": {i}, "reward": 3.0, "train/effective_task_ratio": 0.5}}\n'
                 for i in range(9)), "must lie in \\[0, 1\\]"),
        ('{"step": 1, "reward": 0.3, "train/effective_task_ratio": 0.5}\n', "at least 7 steps"),
    ],
)  # fmt: skip
def test_bad_logs_are_one_line_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_run_log(path, 40, pool_size=64, batch=8, rollouts=4, steps=20)


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = _write_log(tmp_path / "m.jsonl", [0.1] * 8, [0.5] * 8)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"step": 9, "train/rew')
    assert read_run_log(path, 40, pool_size=64, batch=8, rollouts=4, steps=20).etr.size == 8


def test_a_run_directory_needs_metrics_and_a_run_json(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"has no metrics\.jsonl"):
        read_run_log(tmp_path, 10)
    _write_log(tmp_path / "metrics.jsonl", [0.1] * 8, [0.5] * 8)
    with pytest.raises(ValueError, match=r"has no run\.json"):
        read_run_log(tmp_path, 10)
    (tmp_path / "run.json").write_text('{"config": {"train_size": 0}}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"config\.train_size must be an int"):
        read_run_log(tmp_path, 10)
    with pytest.raises(ValueError, match="does not exist"):
        read_run_log(tmp_path / "nope", 10)


def test_simulate_fit_on_a_real_trainer_run_reports_error_and_ranking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "--fit", str(FIXTURE), "--fit-steps", "30", "--selector", "greso",
            "--seeds", "2", "--jobs", "1", "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Calibration error over the first 30 steps: mean reward RMSE" in out
    assert "Simulated learner 'fitted'" in out and "| greso" in out
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    fit = results["fit"]
    assert len(fit["run_reward"]) == len(fit["sim_reward"]) == 30
    assert fit["reward_rmse"] < 3 * fit["reward_noise"]


def test_simulate_fit_errors_name_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--fit", "/nonexistent/run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--fit: /nonexistent/run does not exist" in err[0]
    assert main(["simulate"]) == 2
    assert "needs --selector NAME (or --fit RUN_DIR)" in capsys.readouterr().err


def _adapter_log(path: Path, steps: int = 60, every: int = 3) -> list[float]:
    """A frontier_metrics.jsonl written as the TRL adapter writes it (the selector's metrics
    via curriculum_metrics into a JsonlLogger at every `every`-th step, as TRL's
    logging_steps, plus an evaluation record); returns the true mean reward of each step."""
    from frontier_rft import Feedback, TaskPool, make_selector
    from frontier_rft.metrics_log import JsonlLogger, curriculum_metrics

    rng = np.random.default_rng(3)
    pool = TaskPool(num_tasks=256)
    base = rng.normal(-1.0, 1.5, size=256)
    sel = make_selector("greso", pool, seed=0)
    means = []
    with JsonlLogger(path) as log:
        for step in range(steps):
            ids = sel.select(16)
            p = 1 / (1 + np.exp(-(base[ids] + 0.04 * step)))
            rewards = (rng.random((16, 8)) < p[:, None]).astype(float).ravel()
            means.append(float(rewards.mean()))
            sel.update(Feedback(np.repeat(ids, 8), rewards, step=step))
            sel.flush()
            if (step + 1) % every == 0:
                log.log(curriculum_metrics(sel.metrics(), "all"), step=step + 1)
                log.log({"eval_reward": 0.3}, step=step + 1)
    return means


def test_the_adapters_jsonl_feeds_the_fit_at_the_steps_it_was_logged(tmp_path: Path) -> None:
    from frontier_rft import SELECTORS

    path = tmp_path / "frontier_metrics.jsonl"
    means = _adapter_log(path)
    log = read_run_log(path, 30, pool_size=256, batch=16, rollouts=8, steps=60,
                       known_selectors=tuple(SELECTORS))  # fmt: skip
    assert log.selector == "greso" and not log.dynamic_sampling  # named by its metrics' keys
    assert log.steps_at.tolist() == list(range(2, 30, 3)) and log.span == 30
    assert np.allclose(log.reward_mean, np.asarray(means)[log.steps_at])  # its own step's
    fit = fit_run(log, seeds=(0,))
    assert fit.steps_fitted == 30 and np.isfinite(fit.reward_rmse)
    with pytest.raises(ValueError, match=r"raise --fit-steps, or log more often"):
        read_run_log(path, 12, pool_size=256, batch=16, rollouts=8, steps=60)


def test_simulate_fit_reads_an_adapters_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "frontier_metrics.jsonl"
    _adapter_log(path, every=1)
    args = ["simulate", "--fit", str(path), "--fit-steps", "20", "--fit-pool", "256",
            "--batch", "16", "--rollouts", "8", "--steps", "60", "--selector", "uniform",
            "--seeds", "1", "--jobs", "1", "--out", str(tmp_path / "fit")]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "to the first 20 steps of" in out and "(selector greso," in out
    assert "Calibration error over the first 20 steps" in out


def test_feedback_reward_mean_is_the_newest_steps_and_older_states_load() -> None:
    from frontier_rft import Feedback, TaskPool, make_selector

    sel = make_selector("uniform", TaskPool(num_tasks=8), seed=0)
    assert np.isnan(sel.metrics()["feedback/reward_mean"])
    for step, reward in enumerate((0.25, 0.75)):
        ids = sel.select(2)
        sel.update(Feedback(np.repeat(ids, 4), np.tile([reward, reward, 0.0, 1.0], 2), step))
        sel.flush()
    assert sel.metrics()["feedback/reward_mean"] == pytest.approx((0.75 * 2 + 1) / 4)
    state = sel.state_dict()
    del state["base"]["last"]["reward_mean"]  # saved before the metric existed
    twin = make_selector("uniform", TaskPool(num_tasks=8), seed=0)
    twin.load_state_dict(state)
    assert np.isnan(twin.metrics()["feedback/reward_mean"])
    assert np.array_equal(twin.select(2), sel.select(2))


@pytest.mark.parametrize(
    "sampler",
    [
        {"sampler": "dynamic_sampling", "sampler_config": {"max_rounds": 4}},
        {"dynamic_sampling": True, "dapo_max_rounds": 4},  # as runs before `sampler` wrote it
    ],
)
def test_a_run_with_dynamic_sampling_is_read_as_one(tmp_path: Path, sampler: dict) -> None:
    import shutil

    from frontier_rft.sampling.sampler_flags import FLAG_NAMES

    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    info = json.loads((run / "run.json").read_text())
    flat = {k: v for k, v in info["config"].items() if k not in FLAG_NAMES}
    info["config"] = {**flat, **sampler}
    (run / "run.json").write_text(json.dumps(info))
    assert read_run_log(run, 30).dynamic_sampling
    assert not read_run_log(FIXTURE, 30).dynamic_sampling
