"""The `frontier` command line: simulate/compare/demo write results and a report."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from frontier_rft import SELECTORS
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


TINY = ["--steps", "6", "--seeds", "2", "--batch", "8", "--rollouts", "4", "--jobs", "1"]


def test_compare_writes_results_records_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp"
    args = ["compare", "--scenario", "multidomain", "--selectors", "bots,sec,metis"]
    assert main([*args, *TINY, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == ["uniform", "bots", "sec", "metis"]
    assert len(results["runs"]) == 8 and results["settings"]["seeds"] == [0, 1]
    with open(out / "records.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8 * 6 and {"score", "etr", "label", "seed", "step"} <= set(rows[0])
    assert (out / "report.html").stat().st_size > 1000
    assert "bots" in printed and "sec" in printed


def test_simulate_sweep_labels_each_value(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = ["simulate", "--selector", "bots", "--sweep", "rho=0,0.1", "--set", "lam=0.2"]
    assert main([*args, *TINY, "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == ["uniform", "bots[rho=0]", "bots[rho=0.1]"]
    overrides = {r["label"]: r["overrides"] for r in results["runs"]}
    assert overrides["bots[rho=0]"] == {"lam": 0.2, "rho": 0}


def test_bad_set_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        main(["simulate", "--selector", "bots", "--set", "lam", *TINY, "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="unknown option"):
        main(["simulate", "--selector", "bots", "--set", "lamda=1", *TINY, "--out", str(tmp_path)])


def test_demo_console_entry_point_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "frontier_rft.cli.main", "demo", *TINY, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "prioritized" in done.stdout and (tmp_path / "report.html").exists()
