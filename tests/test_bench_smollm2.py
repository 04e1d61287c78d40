"""The pretrained-LM testbed of `frontier bench-rl` (`--scale gpu-smollm2`): its definition,
the calibration on uniform alone, and the whole path on a CPU with a tiny model standing in
for SmolLM2 (`--scale toy-smollm2 --model DIR`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

from frontier_rft.bench.real_rl import testbed as bench
from frontier_rft.bench.real_rl.calibration import (
    GAIN_MIN,
    ZERO_VARIANCE_MIN,
    calibration_summary,
    runs_that_fit,
)
from frontier_rft.cli.main import main
from frontier_rft.lm.pretrained import SMOLLM2
from frontier_rft.tasks.suite import heldout_split, load_task, train_split
from frontier_rft.training.config import ModelConfig

pytestmark = pytest.mark.integration


def test_the_smollm2_testbed_samples_as_the_model_is_used_and_its_splits_fill() -> None:
    tb = bench.testbed("gpu-smollm2")
    t = tb.train
    assert tb.start_model == SMOLLM2 and tb.model is None and tb.sft is None
    assert (t.temperature, t.top_p, t.precision, t.device) == (0.7, 0.9, "bf16", "cuda")
    assert (t.task, t.levels, t.format_reward) == ("arithmetic", bench.SMOLLM2_LEVELS, 0.0)
    epochs = t.steps * t.batch_size / t.train_size
    assert 2 <= epochs <= 5  # "a few epochs": every prompt seen, none worn out
    suite = load_task(t.task, t.format_reward)
    for seed in (0, 1, 2, 3, 4, 100, 101):  # comparison and calibration pools
        items = train_split(suite, t.train_size, tb.pool_seed_base + seed, t.levels)
        assert len({it.level for it in items}) == len(t.levels.split(","))
    held = heldout_split(suite, t.eval_size, t.eval_seed, t.levels)
    assert len(held) == t.eval_size
    heldout_split(suite, 64 + 16, t.eval_seed, t.levels)  # the judge check's prompts
    toy = bench.testbed("toy-smollm2").train
    assert (toy.levels, toy.temperature, toy.top_p, toy.device) == (t.levels, 0.7, 0.9, "cpu")


def _run(seed: int, pass1: list[float], peak: float | None = None) -> dict:
    train = [{"perf/step_s": 0.5 + 0.1 * seed} | ({"perf/gpu_peak_gb": peak} if peak else {})]
    return {
        "pass1": pass1,
        "eval_seconds": [0.0, 30.0],
        "train": train,
        "final": {"eval/pass@1": pass1[-1], "eval/success_rate_level0": pass1[-1]},
    }


def _start(zero: float) -> dict:
    level = {"mean_score": 0.2, "always_solved": 0.1, "never_solved": zero - 0.1}
    return {"zero_variance": zero, "per_level": {"0": level}}


def test_calibration_chooses_the_best_learning_rate_and_checks_both_preconditions() -> None:
    runs = {
        1e-5: {100: _run(0, [0.10, 0.12, 0.20], 6.0), 101: _run(1, [0.12, 0.20], 7.5)},
        3e-5: {100: _run(0, [0.10, 0.14]), 101: _run(1, [0.12, 0.10])},
    }
    start = {"100": _start(0.5), "101": _start(0.6)}
    s = calibration_summary(runs, start, wall_seconds=90.0, jobs=4, gpu_total_gb=80.0)
    low = s["learning_rates"]["1e-05"]
    assert low["gain"]["values"] == pytest.approx([0.10, 0.08])  # final - start, per seed
    assert low["gain"]["mean"] == pytest.approx(0.09)
    assert s["learning_rates"]["3e-05"]["gain"]["mean"] == pytest.approx(0.01)
    assert s["chosen_lr"] == 1e-5 and low["gpu_peak_gb"] == 7.5
    assert s["start_zero_variance_share"]["mean"] == pytest.approx(0.55)
    assert s["start_per_level"]["0"]["zero_variance"]["mean"] == pytest.approx(0.55)
    assert s["preconditions"] == {
        "zero_variance_min": ZERO_VARIANCE_MIN,
        "gain_min": GAIN_MIN,
        "zero_variance_met": True,
        "gain_met": True,
        "met": True,
    }
    assert s["runs_that_fit"] == 9  # 0.85 * 80 GB // 7.5 GB
    few_zero = calibration_summary(runs, {"100": _start(0.3), "101": _start(0.35)})
    assert few_zero["preconditions"]["zero_variance_met"] is False
    assert few_zero["preconditions"]["met"] is False and few_zero["runs_that_fit"] is None
    flat = calibration_summary({1e-5: {100: _run(0, [0.1, 0.13])}}, start)
    assert flat["preconditions"]["gain_met"] is False  # +0.03 < +0.05


def test_runs_that_fit_one_gpu() -> None:
    assert runs_that_fit(80.0, 6.0) == 11
    assert runs_that_fit(80.0, 100.0) == 1
    assert runs_that_fit(80.0, 0.5) == 16  # capped
    assert runs_that_fit(None, 6.0) is None and runs_that_fit(80.0, None) is None


@pytest.fixture(scope="module")
def tiny_arithmetic_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from frontier_rft.training.tiny_model import build_tiny_lm

    out = tmp_path_factory.mktemp("tiny-arith") / "model"
    config = ModelConfig(
        task="arithmetic",
        vocab_size=300,
        hidden_size=16,
        num_layers=1,
        num_heads=2,
        intermediate_size=32,
        corpus_tasks=100,
    )
    build_tiny_lm(config, out)
    return out


@pytest.mark.slow
def test_pretrained_testbed_calibrates_then_compares_on_a_cpu(
    tiny_arithmetic_model: Path, tmp_path: Path
) -> None:
    runs, out = tmp_path / "runs", tmp_path / "out"
    common = ["--scale", "toy-smollm2", "--model", str(tiny_arithmetic_model), "--runs", str(runs)]
    common += ["--ledger", str(tmp_path / "ledger")]
    common += ["--out", str(out), "--no-progress", "--name", "smol"]
    # Calibration: uniform alone at two learning rates; an untrained model learns nothing
    # in two steps, so the preconditions are not met and the command says so.
    with pytest.raises(SystemExit, match="preconditions not met"):
        main(["bench-rl", *common, "--calibrate", "--seeds", "100", "--calibrate-lrs", "1e-3,3e-3"])
    cal = json.loads((out / "smol_calibration.json").read_text())
    assert set(cal["learning_rates"]) == {"0.001", "0.003"}
    assert cal["chosen_lr"] in (0.001, 0.003) and cal["preconditions"]["met"] is False
    assert set(cal["start_per_level"]) == {"0", "1", "2", "3"}  # the four levels
    assert "calibrate-lrs 0.001,0.003" in cal["command"] and "--calibrate" in cal["command"]
    assert "Preconditions **not met**" in (out / "smol_calibration.md").read_text()
    for lr in ("0.001", "0.003"):
        done = runs / "calibration" / f"lr{lr}" / "runs" / "uniform" / "seed100"
        assert (done / "eval.json").is_file()
        assert not (done / "checkpoints").exists() and not (done / "final").exists()
    start = json.loads((runs / "model-start" / "frontier_rft.json").read_text())
    assert start["source"] == str(tiny_arithmetic_model)
    # The comparison in the same runs directory, at the frozen learning rate.
    argv = ["bench-rl", *common, "--lr", "3e-3", "--selectors", "uniform,greso", "--no-effects"]
    assert main([*argv, "--seeds", "0"]) == 0
    report = (out / "smol.md").read_text()
    assert "(pretrained, no warm start, fp32)" in report
    assert "temperature 0.7, top-p 0.9" in report and "lr 0.003" in report
    config = json.loads((runs / "runs" / "greso" / "seed0" / "run.json").read_text())["config"]
    assert (config["lr"], config["top_p"], config["levels"]) == (3e-3, 0.9, bench.SMOLLM2_LEVELS)
    # Another start model in the same runs directory is refused before any work.
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF")
    swapped = [str(other) if a == str(tiny_arithmetic_model) else a for a in argv]
    with pytest.raises(SystemExit, match=r"another testbed \(start_model differ\)"):
        main([*swapped, "--seeds", "0"])


@pytest.mark.parametrize(
    ("extra", "phrase"),
    [
        (["--calibrate-lrs", "1e-5"], "--calibrate-lrs applies to --calibrate only"),
        (["--calibrate", "--selectors", "bots"], "--calibrate runs uniform alone"),
        (["--calibrate", "--calibrate-lrs", "1e-5,1e-5"], "up to 8 distinct numbers > 0"),
        (["--lr", "-1"], "expected a number > 0"),
    ],
)
def test_calibration_flags_are_checked_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], phrase: str
) -> None:
    argv = ["bench-rl", "--scale", "toy-smollm2", "--runs", str(tmp_path / "r"), *extra]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    assert phrase in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_missing_start_model_is_a_one_line_error_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench-rl", "--scale", "toy-smollm2", "--model", str(tmp_path / "nope")]
    assert main([*argv, "--runs", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "no such directory" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_a_report_reads_the_ledger_alone_when_the_start_model_was_on_another_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The GPU runs record the model's path there (/tmp/stage/...): --report-only rebuilds
    their page here without the file, as its help promises (no model is needed)."""
    argv = ["bench-rl", "--scale", "toy-smollm2", "--selectors", "uniform,skip-kept"]
    argv += ["--model", str(tmp_path / "elsewhere.gguf")]
    flags = ["--report-only", "--ledger", str(tmp_path / "ledger"), "--runs", str(tmp_path / "r")]
    with pytest.raises(SystemExit, match="holds no seed"):  # past the model: an empty ledger
        main([*argv, *flags, "--out", str(tmp_path / "out"), "--no-progress"])
    assert "no such directory" not in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_start_models_are_named_gguf_files_or_model_directories(tmp_path: Path) -> None:
    from frontier_rft.cli.common import UsageError, model_dir
    from frontier_rft.lm.pretrained import smollm2_gguf

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert model_dir(gguf, "--model") == gguf
    if smollm2_gguf() is not None:
        assert model_dir(SMOLLM2, "--model") == Path(SMOLLM2)
    else:
        with pytest.raises(UsageError, match="make smollm2"):
            model_dir(SMOLLM2, "--model")
    with pytest.raises(UsageError, match="not a model directory"):
        model_dir(tmp_path, "--model")
