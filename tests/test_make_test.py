"""`make test` runs every suite whatever the one before it did, and fails naming the ones
that failed: the Makefile's target, scripts/verl_env.sh and scripts/tinker_env.sh, each run
with stand-in test runners in a scratch copy (no virtual environment is built or touched)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _runner(path: Path, fails_on: str) -> Path:
    """A stand-in `python`: logs its arguments, exits 1 when they contain `fails_on`."""
    log = path.parent / "calls.log"
    path.write_text(
        f'#!/bin/sh\necho "$*" >> "{log}"\ncase "$*" in *"{fails_on}"*) exit 1;; esac\nexit 0\n',
        encoding="utf-8",
    )
    path.chmod(0o755)
    return log


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_runs_the_verl_skyrl_and_tinker_suites_after_the_main_suite_fails(
    tmp_path: Path,
) -> None:
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "scripts").mkdir()
    for name in ("verl", "skyrl", "tinker"):
        script = tmp_path / "scripts" / f"{name}_env.sh"
        script.write_text(
            f'#!/bin/sh\necho {name}-suites >> "{tmp_path}/calls.log"\n', encoding="utf-8"
        )
        script.chmod(0o755)
    log = _runner(tmp_path / "python", fails_on="pytest")
    done = subprocess.run(
        ["make", "-s", "-o", ".venv/.installed-dev", "-o", "sandbox", "test", "PY=./python"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert log.read_text().splitlines() == [
        "-m pytest -q",
        "verl-suites",
        "skyrl-suites",
        "tinker-suites",
    ]
    assert "make test: failed suites: tests(.venv)\n" in done.stderr  # the others passed


def test_skyrl_env_runs_its_suite_and_fails_when_it_fails(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "skyrl_env.sh"
    shutil.copy(REPO / "scripts" / "skyrl_env.sh", script)
    for name in ("pyproject.toml", "constraints.txt"):
        (tmp_path / name).write_text("", encoding="utf-8")
        os.utime(tmp_path / name, (0, 0))  # older than the stamp: nothing is installed
    bin_dir = tmp_path / ".venv-skyrl" / "bin"
    bin_dir.mkdir(parents=True)
    log = _runner(bin_dir / "python", fails_on="tests_skyrl")
    (tmp_path / ".venv-skyrl" / ".installed-skyrl-0.3.0").touch()
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and "-m pytest" in calls[0] and "tests_skyrl" in calls[0]
    assert done.returncode == 1


@pytest.mark.parametrize("fails_on", ["tests_verl", "test_trl_config"])
def test_verl_env_runs_both_suites_and_fails_if_either_failed(
    tmp_path: Path, fails_on: str
) -> None:
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "verl_env.sh"
    shutil.copy(REPO / "scripts" / "verl_env.sh", script)
    for name in ("pyproject.toml", "constraints.txt"):
        (tmp_path / name).write_text("", encoding="utf-8")
        os.utime(tmp_path / name, (0, 0))  # older than the stamp: nothing is installed
    bin_dir = tmp_path / ".venv-verl" / "bin"
    bin_dir.mkdir(parents=True)
    log = _runner(bin_dir / "python", fails_on=fails_on)
    (tmp_path / ".venv-verl" / ".installed-verl-0.9.1-trl").touch()
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and "tests_verl" in calls[0] and "test_trl_config" in calls[1]
    assert done.returncode == 1
    named = "tests_verl" if fails_on == "tests_verl" else "TRL tests in .venv-verl"
    assert f"scripts/verl_env.sh: failed: {named}" in done.stderr


@pytest.mark.parametrize("fails", [False, True])
def test_tinker_env_runs_its_suite_and_fails_if_it_failed(tmp_path: Path, fails: bool) -> None:
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "tinker_env.sh"
    shutil.copy(REPO / "scripts" / "tinker_env.sh", script)
    for name in ("pyproject.toml", "constraints.txt"):
        (tmp_path / name).write_text("", encoding="utf-8")
        os.utime(tmp_path / name, (0, 0))  # older than the stamp: nothing is installed
    bin_dir = tmp_path / ".venv-tinker" / "bin"
    bin_dir.mkdir(parents=True)
    log = _runner(bin_dir / "python", fails_on="tests_tinker" if fails else "no-such-argument")
    (tmp_path / ".venv-tinker" / ".installed-tinker-cookbook-0.6.1").touch()
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and "tests_tinker" in calls[0]
    assert done.returncode == (1 if fails else 0)
    assert ("scripts/tinker_env.sh: failed: tests_tinker" in done.stderr) == fails
