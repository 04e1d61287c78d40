"""A TRL run's live shadows on the real tiny GRPOTrainer (CPU): at the end of train() the run
logs the replay's table of its shadows, tokens saved as well as rollouts, and writes it to
frontier_metrics.jsonl, where `frontier shadow replay` reads it back (docs/shadow.md)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from test_trl_shadows import RULES, _run

from frontier_rft.cli.main import main
from frontier_rft.shadow.replay import read_shadow_summary
from frontier_rft.shadow.rule import passes_table


def test_the_end_of_a_run_prints_and_logs_the_replays_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="frontier_rft")
    trainer, _, _ = _run(tmp_path / "out", RULES)
    trainer.train()
    table = passes_table([(s.name, s.passes()) for s in trainer.frontier_shadows.shadows])
    assert "| greso+screen2 | all |" in table
    # The share of the run's generated tokens saved, not '-': the shadows were given them.
    total = trainer.frontier_shadows.shadows[1].passes()[-1]  # screen2's whole run
    assert total["token_steps"] == total["steps"] and 0 < total["tokens_saved"] < total["tokens"]
    share = f"{100 * total['rollouts_saved_share']:.1f}% | {100 * total['tokens_saved_share']:.1f}%"
    assert f"| screen2 | all | {total['steps']:.0f} |" in table and share in table
    assert table in caplog.text  # logged at the end of train(), as the start-up lines are
    metrics = tmp_path / "out" / "frontier_metrics.jsonl"
    step, named = read_shadow_summary(metrics)
    assert step == trainer.state.global_step and passes_table(named) == table
    assert main(["shadow", "replay", str(metrics)]) == 0
    out = capsys.readouterr().out
    assert table in out and "counted in the trainer's generated tokens, over every step" in out
