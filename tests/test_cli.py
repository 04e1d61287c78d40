"""The `frontier` command line: the demo compares every selector; `selectors` shows configs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from frontier_rft import SELECTORS
from frontier_rft.cli.demo import run_selection_demo
from frontier_rft.cli.main import main


def test_selectors_lists_every_registered_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selectors"]) == 0
    out = capsys.readouterr().out
    for name in SELECTORS:
        assert f"{name}: " in out


def test_selectors_name_shows_fields_defaults_and_docs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["selectors", "bots"]) == 0
    out = capsys.readouterr().out
    assert "lam = 0.1" in out and "rho = 0.1" in out


def test_unknown_selector_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selectors", "botz"]) == 2
    assert "unknown selector 'botz'" in capsys.readouterr().err


def test_demo_runs_every_selector_and_adaptive_ones_beat_uniform() -> None:
    results = {r.selector: r for r in run_selection_demo(steps=30, show_progress=False)}
    assert set(results) == set(SELECTORS)
    assert "non-LLM" in results["metis"].note
    uniform = results["uniform"].effective_task_ratio
    for name in ("prioritized", "bots", "dots"):
        assert results[name].effective_task_ratio > uniform + 0.1, name


def test_frontier_console_script_runs() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "frontier_rft.cli.main",
            "demo",
            "--steps",
            "3",
            "--selectors",
            "uniform,sec",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "| sec |" in done.stdout and "| uniform |" in done.stdout
