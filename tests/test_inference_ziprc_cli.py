"""`frontier ziprc train` then `frontier ziprc eval` on the session's tiny model, small sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.cli.main import main
from frontier_rft.inference.head import load_head_model
from frontier_rft.inference.rollouts import RolloutSet

pytestmark = pytest.mark.integration

SMALL = ["--levels", "2x20", "--max-new-tokens", "12", "--threads", "1"]


def test_ziprc_train_then_eval_round_trip(
    sft_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = tmp_path / "head"
    argv = ["ziprc", "train", "--model", str(sft_dir), "--out", str(head), "--prompts", "6"]
    argv += ["--samples", "2", "--length-edges", "0,4,8,16", "--epochs", "1", *SMALL]
    assert main(argv) == 0
    assert "wrote" in capsys.readouterr().out
    meta = json.loads((head / "ziprc.json").read_text())
    assert meta["spec"]["length_edges"] == [0, 4, 8, 16] and meta["sequences"] == 12
    stats = json.loads((head / "train_stats.json").read_text())
    assert len(stats["loss"]) == stats["steps"] == 1  # 12 sequences, effective batch 32
    assert RolloutSet.load(head / "train_rollouts.jsonl").rewards.shape == (6, 2)
    _, _, spec = load_head_model(head)
    assert spec.num_lengths == 3

    out = tmp_path / "eval"
    argv = ["ziprc", "eval", "--head", str(head), "--out", str(out), "--prompts", "3"]
    argv += ["--samples", "4", "--k", "2,4", "--no-plot", *SMALL]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "AUC(value_end -> correct)" in printed and "| oracle@4 |" in printed
    text = (out / "calibration.json").read_text()
    assert "NaN" not in text and "Infinity" not in text  # strict JSON: null where undefined
    report = json.loads(text)
    assert report["reserved_ids_emitted"] == 0 and report["sequences"] == 12
    assert report["split"] == "heldout" and set(report["selection"]) >= {"value@2", "oracle@4"}
    # A second run reuses the stored rollouts and reproduces the report.
    first = (out / "calibration.json").read_text()
    assert main(argv) == 0
    assert (out / "calibration.json").read_text() == first

    # The live decoder's operating points through the real `frontier` parser.
    pareto = tmp_path / "pareto"
    argv = ["ziprc", "pareto", "--head", str(head), "--out", str(pareto), "--seeds", "0"]
    argv += ["--prompts", "2", "--k", "2", "--preset", "tiny", "--tau", "0.5"]
    argv += ["--beta", "0.05", "--k-bar", "", "--no-plot", "--levels", "2x20", "--threads", "1"]
    argv += ["--max-new-tokens", "12"]
    assert main(argv) == 0
    results = json.loads((pareto / "results.json").read_text())
    assert results and (pareto / "results.md").exists()


def test_ziprc_bad_flags_are_clear_errors(
    sft_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ziprc", "train", "--model", str(sft_dir), "--out", str(tmp_path / "h")]
    assert main([*argv, "--length-edges", "4,8"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("frontier ziprc train: error: length_edges must start at 0")
    assert "Traceback" not in err
    # A model directory that holds no head says how to make one.
    assert main(["ziprc", "eval", "--head", str(sft_dir), "--out", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert "frontier ziprc train" in err and "Traceback" not in err
