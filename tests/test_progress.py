"""The shared progress bar: redrawn on a terminal, readable lines in a log, lazy tqdm."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from frontier_rft.progress import INTERVAL_ENV, progress_bar


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_one_readable_line_per_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "0")
    log = io.StringIO()
    with progress_bar(5, "runs", unit="run", stream=log) as bar:
        for i in range(5):
            bar.set_postfix_str(f"seed {i}", refresh=False)
            bar.update(1)
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0].startswith("runs:   0%") and "0/5" in lines[0]
    assert lines[-1].startswith("runs: 100%") and "5/5" in lines[-1]
    assert len(lines) >= 3 and all(line.startswith("runs:") for line in lines)


def test_a_log_is_not_flooded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "3600")
    log = io.StringIO()
    with progress_bar(1000, "steps", stream=log) as bar:
        for _ in range(1000):
            bar.update(1)
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and "1000/1000" in lines[-1]  # the start and the end


def test_a_terminal_gets_tqdms_redrawn_bar() -> None:
    tty = FakeTerminal()
    with progress_bar(3, "x", stream=tty) as bar:
        bar.update(3)
    assert "\r" in tty.getvalue()


def test_disabled_bar_is_silent_and_keeps_the_interface() -> None:
    log = io.StringIO()
    bar = progress_bar(3, "x", stream=log, enabled=False)
    bar.update(2)
    bar.set_postfix_str("note")
    bar.close()
    assert log.getvalue() == ""


def test_no_layer_below_the_cli_imports_the_cli() -> None:
    pytest.importorskip("torch")
    code = (
        "import sys\n"
        "import frontier_rft.inference.rollouts, frontier_rft.inference.train_head\n"
        "import frontier_rft.inference.pareto, frontier_rft.features.policy\n"
        "import frontier_rft.progress\n"
        "print([m for m in sys.modules if m.startswith('frontier_rft.cli')], 'tqdm' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[] False"  # and tqdm itself only once a bar is made


def test_simulate_reports_progress_into_a_pipe(tmp_path: Path) -> None:
    """`frontier simulate ... 2>&1 | cat`: the log shows the runs as they finish."""
    done = subprocess.run(
        [sys.executable, "-m", "frontier_rft.cli.main", "simulate", "--selector", "sec",
         "--steps", "3", "--seeds", "2", "--batch", "4", "--rollouts", "2", "--jobs", "1",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env={**os.environ, INTERVAL_ENV: "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("runs:")]
    assert lines[0].startswith("runs:   0%") and "4/4" in lines[-1]
    assert "\r" not in done.stderr
