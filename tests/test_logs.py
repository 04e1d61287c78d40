"""Library messages go through `logging` (the `frontier_rft` logger); `frontier` shows them.

The package logger holds only a NullHandler, so a library user's program prints nothing it
did not ask for; `frontier` shows INFO and above on stderr, one plain line each, and puts
the logger back as it was when the command ends.
"""

from __future__ import annotations

import ast
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from frontier_rft.cli.main import main

SRC = Path(__file__).resolve().parents[1] / "src" / "frontier_rft"
ALLOWED_PRINTS = {("bench/real_rl/runs.py", "_main"), ("bench/scripts.py", "write_outputs")}
"""Entry points of scripts run as `python -m` (their usage line is their own output), and
the helper that prints the tables of the scripts under benchmarks/ (their console output,
as the CLI's is)."""


class _Prints(ast.NodeVisitor):
    """Every use of the name `print`, with the function it is in."""

    def __init__(self) -> None:
        self.where = ["<module>"]
        self.found: list[tuple[str, int]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.where.append(node.name)
        self.generic_visit(node)
        self.where.pop()

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "print":
            self.found.append((self.where[-1], node.lineno))


def test_the_library_prints_nothing_itself() -> None:
    """Outside the CLI, no module calls print or hands print on as a default logger."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("cli/"):
            continue
        prints = _Prints()
        prints.visit(ast.parse(path.read_text()))
        found += [
            f"{rel}:{line} in {fn}" for fn, line in prints.found if (rel, fn) not in ALLOWED_PRINTS
        ]
    assert not found, f"print in library code (log to logging.getLogger(__name__)): {found}"


def test_without_configuration_the_library_is_silent() -> None:
    code = (
        "import logging, frontier_rft; "
        "logging.getLogger('frontier_rft.training.grpo').warning('not shown')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout == "" and done.stderr == ""
    handlers = logging.getLogger("frontier_rft").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


# ------------------------------------------------------------------ a real library message

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_training_model import TEST_TRAIN  # noqa: E402


def test_the_trainers_messages_reach_a_logging_handler(
    sft_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import dataclasses

    from frontier_rft.training.grpo import Trainer

    caplog.set_level(logging.INFO, logger="frontier_rft")
    cfg = dataclasses.replace(TEST_TRAIN, steps=1, checkpoint_every=1)
    Trainer(cfg, sft_dir, tmp_path / "run").train()
    records = [r for r in caplog.records if r.name == "frontier_rft.training.grpo"]
    messages = [r.getMessage() for r in records]
    assert any(m.startswith("eval step 0: score") for m in messages), messages
    assert any(m.startswith("step 1/1") for m in messages), messages
    assert all(r.levelno == logging.INFO for r in records)


def _train_argv(sft: Path, out: Path) -> list[str]:
    argv = ["train", "--model", str(sft), "--out", str(out), "--selector", "uniform"]
    argv += ["--steps", "1", "--levels", "2x20,3x20", "--train-size", "24", "--batch-size", "3"]
    argv += ["--group-size", "4", "--max-new-tokens", "12", "--eval-size", "4"]
    return [*argv, "--eval-samples", "2", "--eval-k", "1,2", "--no-tensorboard"]


@pytest.mark.slow
def test_frontier_shows_library_messages_on_stderr_and_restores_the_logger(
    sft_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger("frontier_rft")
    before = (list(logger.handlers), logger.level, logger.propagate)
    assert main(_train_argv(sft_dir, tmp_path / "run")) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert any(line.startswith("eval step 0: score") for line in lines), err  # as before
    assert any(line.startswith("step 1/1") for line in lines), err  # plain, one per line
    assert '"eval/mean_score"' in out  # the command's result stays on stdout
    assert (list(logger.handlers), logger.level, logger.propagate) == before


@pytest.mark.slow
def test_the_log_level_flag_hides_info_messages(
    sft_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--log-level", "warning", *_train_argv(sft_dir, tmp_path / "run")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "eval step 0: score" not in err and "step 1/1" not in err
    assert '"eval/mean_score"' in out


def test_the_environment_sets_the_level(monkeypatch: pytest.MonkeyPatch) -> None:
    from frontier_rft.logs import env_level, show_messages

    monkeypatch.setenv("FRONTIER_LOG_LEVEL", " WARNING ")
    assert env_level() == "warning"
    monkeypatch.delenv("FRONTIER_LOG_LEVEL")
    assert env_level() == "info"
    logger = logging.getLogger("frontier_rft.x")
    with show_messages("warning"):
        assert not logger.isEnabledFor(logging.INFO) and logger.isEnabledFor(logging.WARNING)


def test_a_bad_log_level_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRONTIER_LOG_LEVEL", "loud")
    assert main(["selectors", "bots"]) == 2
    err = capsys.readouterr().err
    assert "$FRONTIER_LOG_LEVEL must be one of debug, info, warning, error, got 'loud'" in err
    assert "Traceback" not in err
    monkeypatch.delenv("FRONTIER_LOG_LEVEL")
    with pytest.raises(SystemExit):
        main(["--log-level", "loud", "selectors"])
    assert "invalid choice: 'loud'" in capsys.readouterr().err
    assert os.environ.get("FRONTIER_LOG_LEVEL") is None
