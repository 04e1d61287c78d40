"""Typical command-line mistakes end in at most two lines that say what to do, never a traceback.

Each case runs `frontier` in-process (the console entry point is `main`) and checks the
exit status, that stderr has no traceback and at most two lines, and that the message
names the fix. `--debug` turns the traceback back on.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from frontier_rft.cli.main import main

FAST = ["--steps", "2", "--seeds", "1", "--batch", "4", "--rollouts", "2", "--jobs", "1"]


def _model_without_config(tmp: Path) -> str:
    (tmp / "not-a-model").mkdir()
    return str(tmp / "not-a-model")


def _write(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text)
    return str(tmp / name)


def _a_model(tmp: Path) -> str:
    """A directory that holds a model (config.json), as build-model or sft leave one."""
    (tmp / "model").mkdir(exist_ok=True)
    (tmp / "model" / "config.json").write_text("{}")
    return str(tmp / "model")


def _bench(tmp: Path, *flags: str) -> list[str]:
    return ["bench-rl", "--scale", "toy", "--runs", str(tmp / "runs"), *flags, "--selectors", "x"]


_TEMP = "a finite number >= 1e-06 (smaller ones overflow logits / temperature)"
"""The one wording of a refused sampling temperature (lm/decoding.py)."""

# (argv builder given a scratch directory, a phrase the error must contain)
MISTAKES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("misspelt --set key", lambda t: ["simulate", "--selector", "bots", "--set", "lamda=0.2"],
     "did you mean 'lam'"),
    ("--set without =", lambda t: ["simulate", "--selector", "bots", "--set", "lam"], "KEY=VALUE"),
    ("unknown selector", lambda t: ["simulate", "--selector", "botz"], "invalid choice"),
    ("missing --selector", lambda t: ["simulate"], "--selector"),
    ("unknown name in --selectors", lambda t: ["compare", "--selectors", "bots,nope"], "nope"),
    ("--set with many selectors", lambda t: ["compare", "--selectors", "bots,sec", "--set",
     "lam=0.2"], "one selector"),
    ("--sweep without values", lambda t: ["simulate", "--selector", "bots", "--sweep", "lam"],
     "KEY=V1,V2"),
    ("unknown scenario field", lambda t: ["simulate", "--selector", "bots", "--scenario-set",
     "nosuch=1"], "nosuch"),
    ("unknown --given", lambda t: ["simulate", "--selector", "bots", "--given", "labels"],
     "choose from"),
    ("zero steps", lambda t: ["simulate", "--selector", "bots", "--steps", "0"], "at least 1"),
    ("unknown --sampler", lambda t: ["simulate", "--selector", "bots", "--sampler", "dapo"],
     "invalid choice"),
    ("--sampler-config without --sampler", lambda t: ["simulate", "--selector", "bots",
     "--sampler-config", "screen=4"], "--sampler-config needs --sampler NAME"),
    ("misspelt --sampler-config field", lambda t: ["simulate", "--selector", "bots",
     "--sampler", "allocation", "--sampler-config", "budgte=0.5"], "did you mean 'budget'"),
    ("--sampler beside --dynamic-sampling", lambda t: ["simulate", "--selector", "bots",
     "--sampler", "cgrpo", "--dynamic-sampling", "fixed"],
     "--dynamic-sampling and --sampler each set the step's sampler"),
    ("--allocation beside --fewer-rollouts", lambda t: ["compare", "--selectors", "greso",
     "--allocation", "pilot=4", "--fewer-rollouts", "screen=4"],
     "--allocation and --fewer-rollouts each set the step's sampler"),
    ("negative seed", lambda t: ["simulate", "--selector", "bots", "--seed", "-1"], "--seed"),
    ("demo with negative steps", lambda t: ["demo", "--steps", "-1"], "--steps must be"),
    ("demo with a 401-digit --steps", lambda t: ["demo", "--steps", "1" + "0" * 400],
     "--steps must be at most 10,000,000"),
    ("--out is a file", lambda t: ["simulate", "--selector", "uniform", "--out",
     _write(t, "afile", "")], "is a file; give a directory"),
    ("scenario field of the wrong type", lambda t: ["simulate", "--selector", "bots",
     "--scenario-set", "forgetting=abc"], "forgetting must be a number"),
    ("negative samples", lambda t: ["evaluate", "--samples", "-1"], "expected an integer >= 1"),
    ("non-numeric steps", lambda t: ["simulate", "--selector", "bots", "--steps", "ten"],
     "invalid int"),
    ("demo --set", lambda t: ["demo", "--set", "lam=1"], "unrecognized arguments"),
    ("demo --sweep", lambda t: ["demo", "--sweep", "lam=1,2"], "unrecognized arguments"),
    ("demo --config", lambda t: ["demo", "--config", "x.yaml"], "takes no --config"),
    ("demo --given", lambda t: ["demo", "--given", "all"], "unrecognized arguments"),
    ("absolute model path missing", lambda t: ["train", "--model", "/nonexistent/model",
     "--out", str(t / "r")], "never downloads from the hub"),
    ("relative model path mistyped (not a hub id)", lambda t: ["train", "--model",
     "runs/tiny-sfft", "--out", str(t / "r")], "resolved from"),
    ("model dir without config.json", lambda t: ["train", "--model", _model_without_config(t),
     "--out", str(t / "r")], "no config.json"),
    ("model file that is not a GGUF", lambda t: ["train", "--model", _write(t, "w.bin", "x"),
     "--out", str(t / "r")], "a .gguf file or a model name (smollm2-135m-instruct)"),
    ("--metis-* flag for another selector", lambda t: ["train", "--selector", "bots",
     "--metis-lam", "0.1", "--model", _a_model(t), "--out", str(t / "run")],
     "--metis-lam applies to --selector metis only"),
    ("resume with nothing to resume", lambda t: ["train", "--resume", "--out", str(t)],
     "nothing to resume"),
    ("resume a run.json that is not JSON", lambda t: ["train", "--resume", "--out",
     _write(t, "run.json", "{not json") and str(t)], "not readable as a run.json"),
    ("resume a run.json without a config", lambda t: ["train", "--resume", "--out",
     _write(t, "run.json", '{"config": 3, "model_dir": "m"}') and str(t)], "no 'config'"),
    ("resume a run.json with a foreign config", lambda t: ["train", "--resume", "--out",
     _write(t, "run.json", '{"config": {"nosuch": 1}, "model_dir": "m"}') and str(t)],
     "not a valid TrainConfig"),
    ("resume with a changed setting", lambda t: ["train", "--resume", "--selector", "bots",
     "--out", _write(t, "run.json", '{"config": {}, "model_dir": "m"}') and str(t)],
     "drop --selector"),
    ("train without --model", lambda t: ["train", "--out", str(t / "r")], "--model DIR"),
    ("unknown task", lambda t: ["train", "--task", "math", "--out", str(t / "r")],
     "choose from 'countdown'"),
    ("unknown selector in train", lambda t: ["train", "--selector", "botz", "--out", str(t)],
     "did you mean 'bots'"),
    ("former dapo selector in train", lambda t: ["train", "--selector", "dapo", "--out", str(t)],
     "--selector uniform --dynamic-sampling"),
    ("METIS flag with another selector", lambda t: ["train", "--metis-k", "2", "--out", str(t)],
     "--selector metis only"),
    ("bad float", lambda t: ["train", "--lr", "fast", "--out", str(t)], "invalid float"),
    ("missing config file", lambda t: ["train", "--config", str(t / "nope.yaml")],
     "no such file"),
    ("unknown key in config file", lambda t: ["train", "--config",
     _write(t, "c.yaml", "out: r\nlearning_rate: 0.1\n")], "unknown key 'learning_rate'"),
    ("config file with YAML aliases", lambda t: ["simulate", "--config", _write(t, "c.yaml",
     "a: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nselector: bots\nset: {dedupe_window: *b}\n")],
     "aliases (*name) are not supported"),
    ("config file nested too deeply", lambda t: ["simulate", "--config", _write(t, "c.yaml",
     "selector: bots\nsteps: " + "[" * 400 + "]" * 400 + "\n")], "nested deeper than 32"),
    ("config value YAML reads as a date", lambda t: ["simulate", "--config", _write(t, "c.yaml",
     "selector: bots\nset:\n  lam: 2013-01-01\n")], "set.lam: a date value is not supported"),
    ("config value tagged !!binary", lambda t: ["simulate", "--config", _write(t, "c.yaml",
     "selector: bots\nset:\n  lam: !!binary aGVsbG8=\n")], "a bytes value is not supported"),
    ("--set value nested too deeply", lambda t: ["simulate", "--selector", "bots", "--set",
     "lam=" + "[" * 20_000 + "]" * 20_000], "nested deeper than 32"),
    ("absurd number of seeds", lambda t: ["simulate", "--selector", "bots", "--seeds",
     "100000000"], "--seeds must be at most"),
    ("--selectors naming nothing", lambda t: ["compare", "--selectors", ","],
     "names no selector"),
    ("scenario with no task in any level", lambda t: ["simulate", "--selector", "bots",
     "--scenario-set", "level_mix=[0,0]"], "level_mix must have a positive entry"),
    ("scenario too large to hold", lambda t: ["simulate", "--selector", "bots",
     "--scenario-set", "num_tasks=1000000000000"], "num_tasks + eval_tasks must be at most"),
    ("scenario value beyond any sense", lambda t: ["simulate", "--selector", "bots",
     "--scenario-set", "level_step=1e300"], "level_step must be a finite number"),
    ("config file that is not YAML", lambda t: ["simulate", "--config",
     _write(t, "c.yaml", "selector: [bots\n")], "not valid YAML"),
    ("config value of the wrong type", lambda t: ["simulate", "--config",
     _write(t, "c.yaml", "selector: bots\nsteps: many\n")], "steps"),
    ("evaluate with nothing", lambda t: ["evaluate"], "--model DIR"),
    ("compare an unfinished run", lambda t: ["evaluate", "--compare", str(t)], "no eval.json"),
    ("compare a run with a damaged eval.json", lambda t: ["evaluate", "--compare",
     _write(t, "eval.json", "[" * 100_000 + "]" * 100_000) and str(t)], "nesting depth"),
    ("sft from a missing model", lambda t: ["sft", "--model", "nope", "--out", str(t)],
     "no such directory"),
    ("build-model over a model", lambda t: ["build-model", "--out", _a_model(t)],
     "already holds a model; choose another --out, remove that directory, or pass --overwrite"),
    ("sft over a model", lambda t: ["sft", "--model", _a_model(t), "--out", _a_model(t)],
     "already holds a model"),
    ("evaluate --compare with --samples", lambda t: ["evaluate", "--compare", str(t),
     "--samples", "4"], "--samples: not used by evaluate --compare"),
    ("evaluate --compare with --out and --k", lambda t: ["evaluate", "--compare", str(t),
     "--k", "1", "--out", str(t / "o")], "--k, --out: not used by evaluate --compare"),
    ("evaluate --model with --plot", lambda t: ["evaluate", "--model", _a_model(t), "--plot",
     "x.png"], "evaluate --model writes no figure: drop --plot"),
    ("evaluate --model and --compare", lambda t: ["evaluate", "--model", _a_model(t),
     "--compare", str(t)], "not both"),
    ("evaluate --k above --samples", lambda t: ["evaluate", "--model", _a_model(t),
     "--samples", "2", "--k", "1,4"], "every k must lie in [1, --samples 2]"),
    ("compare a missing run", lambda t: ["evaluate", "--compare", "nope"],
     "--compare nope does not exist"),
    ("evaluate --model at top-p 0", lambda t: ["evaluate", "--model", _a_model(t),
     "--top-p", "0"], "top_p must lie in (0, 1] (1.0 = no truncation), got 0.0 (--samples"),
    ("evaluate --compare with --temperature", lambda t: ["evaluate", "--compare", str(t),
     "--temperature", "0.7"], "--temperature: not used by evaluate --compare"),
    ("ziprc head missing", lambda t: ["ziprc", "pareto", "--head", "nope", "--out", str(t)],
     "--head"),
    ("ziprc eval head missing", lambda t: ["ziprc", "eval", "--head", "nope"], "--head"),
    # a fake model directory: the sampling flags must be refused before any model loads
    ("ziprc train at zero tokens", lambda t: ["ziprc", "train", "--model", _a_model(t),
     "--out", str(t / "h"), "--max-new-tokens", "0"],
     "samples and max_new_tokens must be >= 1, got 4, 0 (--samples, --max-new-tokens"),
    ("ziprc eval at a negative temperature", lambda t: ["ziprc", "eval", "--head",
     _a_model(t), "--temperature", "-1"], f"temperature must be 0 (greedy) or {_TEMP}, got -1.0"),
    # issue 36: a temperature below the floor is refused before the (fake) model loads, in
    # one wording for train and evaluate (train cannot be greedy: its loss divides by it)
    ("train at temperature 1e-300", lambda t: ["train", "--model", _a_model(t), "--out",
     str(t / "run"), "--temperature", "1e-300"], f"temperature must be {_TEMP}, got 1e-300"),
    ("evaluate at temperature 1e-300", lambda t: ["evaluate", "--model", _a_model(t),
     "--temperature", "1e-300"], f"temperature must be 0 (greedy) or {_TEMP}, got 1e-300"),
    ("train at a negative temperature", lambda t: ["train", "--model", _a_model(t), "--out",
     str(t / "run"), "--temperature", "-1"], f"temperature must be {_TEMP}, got -1.0"),
    ("evaluate at a negative temperature", lambda t: ["evaluate", "--model", _a_model(t),
     "--temperature", "-1"], f"temperature must be 0 (greedy) or {_TEMP}, got -1.0"),
    ("misspelt selector name", lambda t: ["selectors", "botz"], "did you mean 'bots'"),
    # bench-rl's flags are refused at parse time; the trailing unknown entry makes a missed
    # refusal end before any work instead of starting a benchmark (issue 28 items 7-9)
    ("bench-rl huge seeds", lambda t: _bench(t, "--seeds", "0-99999999999999999999"),
     "seeds in [0, 2**32)"),
    ("bench-rl huge seed", lambda t: _bench(t, "--seeds", "5,99999999999999999999"),
     "seeds in [0, 2**32)"),
    ("bench-rl huge pool", lambda t: _bench(t, "--pool-size", "1000000000"),
     "pass --pool-size 989 or less"),
    ("bench-rl pool below a batch", lambda t: _bench(t, "--pool-size", "7"),
     "pass --pool-size 8 or more"),
    ("bench-rl zero pool", lambda t: _bench(t, "--pool-size", "0"),
     "--pool-size: expected an integer >= 1"),
    ("bench-rl zero jobs", lambda t: _bench(t, "--jobs", "0"),
     "--jobs: expected an integer in [1, 1024]"),
    ("bench-rl negative jobs", lambda t: _bench(t, "--jobs", "-3"),
     "--jobs: expected an integer in [1, 1024]"),
    ("no command", lambda t: [], "COMMAND"),
    ("unknown command", lambda t: ["trian"], "invalid choice"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv_of", "phrase"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_mistake_gives_a_short_error_with_the_fix(
    argv_of: Callable[[Path], list[str]],
    phrase: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv_of(tmp_path))
    except SystemExit as exc:  # argparse's own errors exit with status 2
        code = exc.code if isinstance(exc.code, int) else 1
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2, err
    assert lines[0].startswith("frontier"), err
    assert phrase in err, err


def test_demo_checks_its_flags_before_printing_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--steps", "-1"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "--steps must be at least 1" in out.err


def test_there_are_at_least_twenty_mistakes() -> None:
    assert len(MISTAKES) >= 20


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="never downloads"):
        main(["train", "--model", "/nonexistent", "--out", str(tmp_path), "--debug"])


def test_console_script_prints_no_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "frontier_rft.cli.main", "train", "--model", "/nonexistent",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_version() -> None:
    from frontier_rft import __version__

    done = subprocess.run(
        [sys.executable, "-m", "frontier_rft.cli.main", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == f"frontier-rft {__version__}"


def test_an_uncreatable_out_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from frontier_rft.cli import simulate_run as simulate

    def no_runs(*args: object, **kwargs: object) -> None:
        raise AssertionError("a run started before --out was checked")

    monkeypatch.setattr(simulate, "run_benchmark", no_runs)
    blocker = tmp_path / "afile"
    blocker.write_text("")
    code = main(["simulate", "--selector", "uniform", *FAST, "--out", str(blocker / "results")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert "cannot create the directory" in err, err


def test_build_model_refuses_an_existing_model_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers")
    from frontier_rft.training import tiny_model

    class Building(Exception):
        pass

    def build(config: object, out: object) -> None:
        raise Building(str(out))

    monkeypatch.setattr(tiny_model, "build_tiny_lm", build)
    out = _a_model(tmp_path)
    assert main(["build-model", "--out", out]) == 2  # refused: the stub never ran
    assert "--overwrite" in capsys.readouterr().err
    with pytest.raises(Building, match="model"):  # --overwrite goes on to build
        main(["build-model", "--out", out, "--overwrite"])


@pytest.mark.parametrize("checkpointed", [True, False])
def test_an_interrupted_train_says_how_to_resume(
    checkpointed: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from frontier_rft.training import grpo

    run = tmp_path / "my run"
    if checkpointed:
        (run / "checkpoints").mkdir(parents=True)
        (run / "checkpoints" / "latest").write_text("step_000001")

    class Stopped:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(grpo, "Trainer", Stopped)
    code = main(["train", "--model", _a_model(tmp_path), "--out", str(run)])
    err = capsys.readouterr().err
    assert code == 130 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    if checkpointed:
        assert f"`frontier train --out '{run}' --resume`" in err, err
    else:
        assert "before the first checkpoint" in err, err
