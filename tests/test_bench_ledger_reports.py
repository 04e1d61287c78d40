"""Every committed real-RL report built from the run ledger is rebuilt from the ledger alone
by its own command (`--report-only`, no runs directory, no model) and matches: the JSON
whole, the page line by line. Figures are redrawn, not compared: every report's figure calls
are checked, and a sample of reports (`DRAWN`) draws them for real (drawing is about half of a
rebuild's time, and the same code draws every report)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from frontier_rft.cli.main import main

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
FROM_LEDGER = sorted(
    p.name
    for p in RESULTS.glob("*_full.json")
    if json.loads(p.read_text(encoding="utf-8")).get("ledger")
)
DRAWN = frozenset(FROM_LEDGER[::12])
"""The reports whose rebuild draws its figures for real (the others' drawing calls are
recorded instead)."""
FIGURES = {
    "plot_learning_curves": "curves",
    "plot_rollout_curves": "rollouts",
    "plot_ttb": "ttb",
    "plot_training": "training",
}
"""The figures every rebuild draws, by the suffix of their files (plot_effects draws only where
a report has effects)."""


def test_some_committed_report_comes_from_the_ledger() -> None:
    assert FROM_LEDGER, "no committed real-RL report names the run ledger"


@pytest.mark.parametrize("name", FROM_LEDGER)
def test_a_committed_report_is_rebuilt_from_the_ledger(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    argv = shlex.split(full["command"])
    monkeypatch.chdir(REPO)  # the command's paths (the ledger) are the repository's
    out = tmp_path / "out"
    runs = tmp_path / "no-runs"
    drawn: dict[str, Path] = {}
    if name not in DRAWN:
        from frontier_rft.reporting import real_rl_plots

        for figure in FIGURES:
            monkeypatch.setattr(real_rl_plots, figure, _recorder(figure, drawn))
    if argv[:2] == ["python", "benchmarks/smollm2_gpu_fewer_steps.py"]:  # the CLI, one field set
        script = [sys.executable, argv[1], *argv[2:], "--out", str(out)]
        assert subprocess.run(script, cwd=REPO, capture_output=True, check=False).returncode == 0
    else:
        assert argv[:2] == ["frontier", "bench-rl"]
        flags = ["--report-only", "--out", str(out), "--runs", str(runs), "--no-progress"]
        assert main([*argv[1:], *flags]) == 0
    assert not runs.exists()
    stem = name.removesuffix("_full.json")
    again = json.loads((out / name).read_text(encoding="utf-8"))
    assert {**again, "command": ""} == {**full, "command": ""}
    headline = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
    assert headline == json.loads((RESULTS / f"{stem}.json").read_text(encoding="utf-8"))
    page = (out / f"{stem}.md").read_text(encoding="utf-8").splitlines()
    committed = (RESULTS / f"{stem}.md").read_text(encoding="utf-8").splitlines()
    assert [ln for ln in page if not ln.startswith("Command:")] == [
        ln for ln in committed if not ln.startswith("Command:")
    ]
    if name in DRAWN or argv[:2] != ["frontier", "bench-rl"]:
        assert os.path.isfile(out / f"{stem}_curves.png")
    else:
        assert drawn == {figure: out / f"{stem}_{suffix}.png" for figure, suffix in FIGURES.items()}


def _recorder(figure: str, drawn: dict[str, Path]) -> object:
    """Stands in for a figure function: records the path it was asked to draw to."""

    def draw(*args: object, **kwargs: object) -> Path:
        path = next(a for a in args if isinstance(a, Path))
        drawn[figure] = path
        return path

    return draw


def test_the_per_step_figures_show_every_entry_of_a_short_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uniform against skip-kept (an effect entry): the learning-curve and training figures
    have a panel for skip-kept, not uniform's alone."""
    from frontier_rft.reporting import real_rl_plots

    drawn: dict[str, list[str]] = {}

    def spy(name: str) -> object:
        def draw(runs: object, labels: list[str], path: Path, context: str = "") -> Path:
            drawn[name] = list(labels)
            assert context.startswith("Real RL (cpu): tiny Llama on countdown")  # says what
            return path

        return draw

    monkeypatch.setattr(real_rl_plots, "plot_learning_curves", spy("curves"))
    monkeypatch.setattr(real_rl_plots, "plot_training", spy("training"))
    full = json.loads((RESULTS / "real_rl_skip_kept_3epoch_10seeds_full.json").read_text())
    monkeypatch.chdir(REPO)
    argv = shlex.split(full["command"])[1:]
    flags = ["--report-only", "--out", str(tmp_path), "--no-progress"]
    assert main([*argv, *flags]) == 0
    assert drawn == {"curves": ["uniform", "skip-kept"], "training": ["uniform", "skip-kept"]}
