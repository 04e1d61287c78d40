"""`frontier bench-rl` machinery on a toy testbed: runs in worker processes, resumes, and
writes the results files (real_rl.json in exactly the issue's schema)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

from frontier_rft.bench.real_rl import entries
from frontier_rft.bench.real_rl import testbed as bench
from frontier_rft.bench.real_rl.ledger import RunLedger, run_from_record
from frontier_rft.bench.real_rl.runs import load_run, run_specs
from frontier_rft.cli.main import main

pytestmark = pytest.mark.integration


def test_toy_bench_runs_resumes_and_writes_results(tmp_path: Path) -> None:
    runs, out, ledger = tmp_path / "runs", tmp_path / "out", tmp_path / "ledger"
    argv = [
        "bench-rl",
        "--scale",
        "toy",
        "--seeds",
        "0,1",
        "--selectors",
        "uniform,dapo",
        "--no-effects",
        "--runs",
        str(runs),
        "--out",
        str(out),
        "--ledger",
        str(ledger),
        "--no-progress",
    ]
    assert main(argv) == 0
    for name in (
        "real_rl.json",
        "real_rl_full.json",
        "real_rl.md",
        "real_rl_curves.png",
        "real_rl_ttb.png",
        "real_rl_training.png",
    ):
        assert (out / name).is_file(), name
    headline = json.loads((out / "real_rl.json").read_text())
    assert set(headline) == {"uniform_gain", "start_zero_variance_share", "selectors"}
    assert set(headline["selectors"]) == {"uniform", "dapo"}
    for row in headline["selectors"].values():
        assert set(row) == {"seeds", "ttb100", "ttb100_mean", "ttb100_ci"}
        assert row["seeds"] == [0, 1] and len(row["ttb100"]) == 2
    full = json.loads((out / "real_rl_full.json").read_text())
    assert full["command"].startswith("frontier bench-rl")
    dapo = full["summary"]["labels"]["dapo"]
    assert len(dapo["distinct_trained"]["values"]) == 2
    assert 0 <= dapo["distinct_trained"]["mean"] <= bench.testbed("toy").train.train_size
    shares = [v["mean"] for v in dapo["selected_level_share"].values()]
    assert shares and abs(sum(shares) - 1.0) < 1e-9
    assert set(dapo["final_level_success"]) == {f"level{k}" for k in range(len(shares))}
    assert set(full["start_state"]) == {"0", "1"}
    # Every run trained its steps and evaluated at the start and every eval_every steps.
    tb = bench.testbed("toy")  # the start states were measured by the runs' own workers
    assert sorted(p.name for p in (runs / "start_states").iterdir()) == ["seed0.json", "seed1.json"]
    for seed in (0, 1):
        metrics = runs / "runs" / "dapo" / f"seed{seed}" / "metrics.jsonl"
        rows = [json.loads(x) for x in metrics.read_text().splitlines()]
        assert [r["step"] for r in rows if "eval/pass@1" in r] == [0, 2, 4]
        assert sum("train/rollouts" in r for r in rows) == tb.train.steps
    # Each finished run is in the ledger, with the curves its run directory gives.
    book = RunLedger(ledger, tb, "cpu")
    assert sorted((lab, s) for lab, _, s in book.labels()) == [
        (lab, s) for lab in ("dapo", "uniform") for s in (0, 1)
    ]
    for label, key, seed in book.labels():
        record = book.load(label, key, seed)
        assert record["definition"]["selector"] == label.replace("dapo", "uniform")
        assert record["start_state"] == full["start_state"][str(seed)]
        assert record["code"]["version"] and record["start_model"]
        from_dir = load_run(runs / "runs" / label / f"seed{seed}")
        from_record = run_from_record(record)
        assert from_record["eval_steps"] == from_dir["eval_steps"]
        assert from_record["pass1"] == pytest.approx(from_dir["pass1"], rel=1e-5)
        assert len(from_record["train"]) == len(from_dir["train"])
        last = {k: v for k, v in from_dir["train"][-1].items() if k != "time"}  # not kept
        assert from_record["train"][-1] == pytest.approx(last, rel=1e-5)
    # A second call finds every run in the ledger and retrains nothing.
    stamp = (runs / "runs" / "uniform" / "seed0" / "eval.json").stat().st_mtime_ns
    assert main([*argv, "--report-only"]) == 0
    assert main(argv) == 0
    assert (runs / "runs" / "uniform" / "seed0" / "eval.json").stat().st_mtime_ns == stamp
    # The ledger alone rebuilds the report: no runs directory, no model.
    before = json.loads((out / "real_rl_full.json").read_text())
    elsewhere = ["--runs", str(tmp_path / "gone"), "--out", str(tmp_path / "again")]
    assert main([*argv, *elsewhere, "--report-only"]) == 0
    again = json.loads((tmp_path / "again" / "real_rl_full.json").read_text())
    assert {**again, "command": ""} == {**before, "command": ""}
    assert not (tmp_path / "gone").exists()
    # Every run in the ledger: a plain call builds no model and runs nothing.
    assert main([*argv, *elsewhere]) == 0
    assert not (tmp_path / "gone").exists()
    # Copied run directories reported elsewhere without a ledger: no device is needed, the
    # machine is named.
    flags = ["--report-only", "--device", "cuda:7", "--machine", "GPU box", "--ledger", ""]
    assert main([*argv, *flags]) == 0
    assert "Machine: GPU box  " in (out / "real_rl.md").read_text()
    # A uniform-only calibration report has one learning-curve panel, uniform's.
    assert main([*argv[:5], "--selectors", "uniform", *argv[7:], "--report-only"]) == 0
    assert (out / "real_rl_curves.png").is_file()


def test_a_cuda_device_without_a_gpu_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a CUDA GPU")
    argv = ["bench-rl", "--device", "cuda", "--runs", str(tmp_path / "r"), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "sees no CUDA GPU" in err and "Traceback" not in err
    assert not (tmp_path / "r" / "model-init").exists()  # refused before any work


def test_the_standard_testbed_is_the_cpu_testbed_scaled_up_and_gpu_its_alias() -> None:
    cpu, gpu = bench.testbed("full"), bench.testbed("standard")
    assert bench.testbed("gpu") == gpu  # the earlier name: committed commands still run
    assert gpu.sft is not None
    assert gpu.train.device == gpu.sft.device == "auto" and cpu.train.device == "cpu"
    assert gpu.train.steps * gpu.train.batch_size == 4 * cpu.train.steps * cpu.train.batch_size
    assert (gpu.train.lr, gpu.train.group_size, gpu.train.train_size) == (
        cpu.train.lr,
        cpu.train.group_size,
        cpu.train.train_size,
    )


def test_specs_pair_seeds_and_are_seed_major(tmp_path: Path) -> None:
    tb = bench.testbed("toy")
    specs = run_specs(tb, entries.MAIN_ENTRIES[:3], [0, 1], tmp_path / "m", tmp_path)
    assert [(s.seed, s.entry.label) for s in specs[:3]] == [
        (0, "uniform"),
        (0, "prioritized"),
        (0, "dots"),
    ]
    same_seed = [s.config for s in specs if s.seed == 1]
    assert len({(c.seed, c.train_seed, c.eval_seed, c.steps, c.lr) for c in same_seed}) == 1
    assert {c.selector for c in same_seed} == {"uniform", "prioritized", "dots"}
    assert all(c.given == "self" for c in same_seed)


@pytest.mark.parametrize("text", ["x", "0-99999999", "-1", "2-1", "", "4294967296", "0-1e30"])
def test_bad_seed_lists_are_refused_with_the_expected_form(text: str) -> None:
    import argparse

    from frontier_rft.cli.bench_rl import seed_list as _seeds

    with pytest.raises(argparse.ArgumentTypeError, match="expected seeds like 0-4"):
        _seeds(text)
    assert _seeds("0-2,5") == [0, 1, 2, 5]


def test_a_runs_directory_of_another_testbed_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "testbed.json").write_text(json.dumps(bench.testbed("toy").to_json()))
    argv = ["bench-rl", "--scale", "toy", "--runs", str(runs), "--no-progress", "--seeds", "0"]
    with pytest.raises(SystemExit, match=r"another testbed \(train.train_size differ\)"):
        main([*argv, "--pool-size", "64"])
    assert not (runs / "model-init").exists()
    assert json.loads((runs / "testbed.json").read_text())["train"]["train_size"] == 32


@pytest.mark.parametrize(
    ("size", "message"),
    [
        ("0", "expected an integer >= 1"),
        ("3000", "at most 989 distinct training prompts"),
    ],
)
def test_a_pool_size_the_testbed_cannot_have_is_one_line_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: str, message: str
) -> None:
    runs = tmp_path / "runs"
    argv = ["bench-rl", "--scale", "toy", "--runs", str(runs), "--pool-size", size]
    try:
        code = main([*argv, "--no-progress"])
    except SystemExit as exc:  # argparse's own refusals exit
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not runs.exists()


def test_pool_size_sets_the_runs_pool_and_is_in_the_reported_command() -> None:
    import argparse

    from frontier_rft.cli.bench_rl import _command

    args = argparse.Namespace(
        seeds=[0, 1], jobs=16, selectors="", scale="gpu", device="", steps=0, pool_size=1280,
        runs="runs/x", out="o", name="n", effects=False,
    )  # fmt: skip
    assert _command(args) == (
        "frontier bench-rl --seeds 0,1 --scale gpu --pool-size 1280 --runs runs/x "
        "--out o --name n --no-effects"
    )
    # Reported from the ledger, where the runs trained is not part of the command.
    args.ledger = "benchmarks/ledger"
    assert _command(args) == (
        "frontier bench-rl --seeds 0,1 --scale gpu --pool-size 1280 --out o --name n --no-effects"
    )
    args.start_weights = "d8e66360e158"  # another testbed: the command must say which
    assert "--pool-size 1280 --start-weights d8e66360e158 --out o" in _command(args)


def test_a_testbed_file_from_before_a_new_field_or_with_another_device_still_resumes(
    tmp_path: Path,
) -> None:
    from frontier_rft.cli.bench_rl import _check_same_testbed

    tb = bench.testbed("toy")
    old = tb.to_json()
    del old["train"]["eval_k"], old["pool_seed_base"]  # written before these fields existed
    old["train"]["device"] = old["sft"]["device"] = "cuda:3"  # copied from a GPU machine
    (tmp_path / "testbed.json").write_text(json.dumps(old))
    _check_same_testbed(tmp_path, tb)  # no refusal
    (tmp_path / "testbed.json").write_text("[1, 2]")
    with pytest.raises(SystemExit, match="is not a bench-rl testbed"):
        _check_same_testbed(tmp_path, tb)


_SIGTERM_SCRIPT = """
import subprocess, sys
from pathlib import Path
from frontier_rft.bench.real_rl import runs as real_rl
from frontier_rft.bench.real_rl import entries
from frontier_rft.bench.real_rl import testbed as bench

root = Path(sys.argv[1])
specs = real_rl.run_specs(bench.testbed("toy"), entries.MAIN_ENTRIES[:1], [0], root / "m", root)
real = subprocess.Popen

def popen(cmd, **kwargs):  # a worker that would train for a minute
    proc = real([sys.executable, "-c", "import time; time.sleep(60)"], **kwargs)
    (root / "worker.pid").write_text(str(proc.pid))
    return proc

real_rl.subprocess.Popen = popen
real_rl.run_all(specs, jobs=1, progress=False, poll_s=0.05)
"""


def test_a_terminated_benchmark_stops_its_workers(tmp_path: Path) -> None:
    """`kill` of bench-rl (SIGTERM) stops its worker processes as Ctrl-C does, instead of
    leaving them training without a parent."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    parent = subprocess.Popen(
        [sys.executable, "-c", _SIGTERM_SCRIPT, str(tmp_path)], env=env, stderr=subprocess.PIPE
    )
    pid_file = tmp_path / "worker.pid"
    deadline = time.monotonic() + 120
    while not pid_file.is_file() and time.monotonic() < deadline and parent.poll() is None:
        time.sleep(0.1)
    assert pid_file.is_file(), parent.stderr.read().decode() if parent.stderr else ""
    worker = int(pid_file.read_text())
    parent.send_signal(signal.SIGTERM)
    parent.wait(timeout=60)
    with pytest.raises(ProcessLookupError):  # stopped and reaped by the benchmark
        os.kill(worker, 0)


def test_the_start_model_travels_with_the_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A warm start built here is saved to the ledger's start_models/<digest>/; another
    machine (another runs directory) trains from exactly those weights with --start-weights,
    recorded as a testbed of its own whose runs name the same start model."""
    from frontier_rft.bench.real_rl.ledger import directory_digest, testbed_digest

    ledger = tmp_path / "ledger"
    common = ["bench-rl", "--scale", "toy", "--seeds", "0", "--selectors", "uniform"]
    common += ["--no-effects", "--ledger", str(ledger), "--no-progress"]
    assert main([*common, "--runs", str(tmp_path / "a"), "--out", str(tmp_path / "o1")]) == 0
    saved = list((ledger / "start_models").iterdir())
    assert len(saved) == 1 and saved[0].name == directory_digest(tmp_path / "a" / "model-sft")
    digest = saved[0].name
    argv = [*common, "--runs", str(tmp_path / "b"), "--out", str(tmp_path / "o2")]
    assert main([*argv, "--start-weights", digest]) == 0
    assert not (tmp_path / "b" / "model-init").exists()  # nothing built
    assert directory_digest(tmp_path / "b" / "model-sft") == digest
    shared = bench.testbed("toy")
    own = dataclasses.replace(shared, start_weights=digest)
    assert testbed_digest(own) != testbed_digest(shared)
    held = RunLedger(ledger, own, "cpu")
    ((label, definition, seed),) = list(held.labels())
    assert held.load(label, definition, seed)["start_model"] == digest
    capsys.readouterr()
    for bad, message in (("abc", "12 hex digits"), ("0" * 12, "not in")):
        code = main([*argv, "--start-weights", bad])
        assert code == 2 and message in capsys.readouterr().err


def test_reward_log_keeps_uniform_s_rewards_beside_its_record(tmp_path: Path) -> None:
    """`--reward-log` (issue 70, item 7): uniform's runs log each step's per-prompt rewards,
    gzipped into the ledger beside the record; other entries log none, and the testbed's
    digest is the one without the flag (the same runs)."""
    import gzip

    from frontier_rft.bench.real_rl.ledger import testbed_digest

    ledger = tmp_path / "ledger"
    argv = ["bench-rl", "--scale", "toy", "--seeds", "0", "--selectors", "uniform,skip"]
    argv += ["--no-effects", "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]
    argv += ["--ledger", str(ledger), "--no-progress", "--reward-log"]
    assert main(argv) == 0
    digest = testbed_digest(bench.testbed("toy"))
    logs = sorted(ledger.glob(f"{digest}/cpu/*/*/seed0.rewards.jsonl.gz"))
    assert [p.parents[1].name for p in logs] == ["uniform"]
    lines = gzip.decompress(logs[0].read_bytes()).decode().splitlines()
    steps = bench.testbed("toy").train.steps
    assert len(lines) == steps  # one line a step
    first = json.loads(lines[0])
    assert len(first["rewards"]) == bench.testbed("toy").train.batch_size
    assert sorted(ledger.glob(f"{digest}/cpu/skip/*/seed0.json.gz"))  # recorded, no log
