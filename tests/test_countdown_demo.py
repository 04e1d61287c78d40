"""`frontier demo-countdown` end to end on a really tiny model, and the training-runs figure."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

from frontier_rft.bench.real_rl.countdown_demo import run_countdown_demo
from frontier_rft.reporting.runs import compare_runs, compare_seeds, failure_taxonomy_table
from frontier_rft.reporting.training_plots import load_run_curves, plot_training_runs
from test_training_model import TEST_TRAIN, TINY, TINY_SFT

pytestmark = pytest.mark.integration


def test_demo_runs_every_stage_once_and_resumes(tmp_path: Path) -> None:
    train = dataclasses.replace(TEST_TRAIN, steps=2, checkpoint_every=2, eval_every=0)
    sft = dataclasses.replace(TINY_SFT, steps=20)
    runs = run_countdown_demo(tmp_path, ("uniform", "frontier"), TINY, sft, train)
    assert set(runs) == {"uniform", "frontier"}
    for run in runs.values():
        assert (run / "eval.json").exists() and (run / "final" / "config.json").exists()
        curves = load_run_curves(run)
        assert list(curves["steps"]) == [1, 2]
        assert 0.0 <= curves["final_pass1"] <= 1.0
    table = compare_runs([str(d) for d in runs.values()])
    assert "| cd-uniform (uniform) |" in table and "| cd-frontier (frontier) |" in table
    assert "| cd-uniform (uniform) |" in failure_taxonomy_table([str(d) for d in runs.values()])
    # Runs of one selector are seeds: mean ± std per selector.
    u, f = str(runs["uniform"]), str(runs["frontier"])
    seeds = compare_seeds([u, u, f]).splitlines()
    assert seeds[2].startswith("| uniform | 2 |") and "± 0.000" in seeds[2]
    assert seeds[3].startswith("| frontier | 1 |") and "±" not in seeds[3]
    png = plot_training_runs({k: [v] for k, v in runs.items()}, tmp_path / "cmp.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Finished stages are skipped: a second call touches nothing.
    stamp = (runs["uniform"] / "eval.json").stat().st_mtime_ns
    run_countdown_demo(tmp_path, ("uniform",), TINY, sft, train)
    assert (runs["uniform"] / "eval.json").stat().st_mtime_ns == stamp


def test_plot_needs_finished_runs(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(ValueError, match="no training steps"):
        load_run_curves(tmp_path)
    with pytest.raises(ValueError, match="at least one run"):
        plot_training_runs({}, tmp_path / "x.png")


def test_judge_figure_from_metis_metrics(tmp_path: Path) -> None:
    import json

    from frontier_rft.reporting.training_plots import plot_judge_metrics

    with open(tmp_path / "metrics.jsonl", "w") as fh:
        for step in range(1, 30):
            row = {
                "step": step,
                "metis/judge_failure_rate": 0.05,
                "metis/judge_reward_mean": 0.2 + step / 100,
                "metis/prediction_mean": 0.12,
                "metis/prediction_std": 0.08,
                "metis/selected_prediction_mean": 0.24,
            }
            fh.write(json.dumps(row) + "\n")
    png = plot_judge_metrics(tmp_path, tmp_path / "judge.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "train/reward_mean": 0}))
    with pytest.raises(ValueError, match="metis"):
        plot_judge_metrics(tmp_path, tmp_path / "j2.png")
