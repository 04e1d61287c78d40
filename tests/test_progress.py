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


def test_bench_rl_progress_writes_lines_to_a_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """`frontier bench-rl ... 2> log`: lines, not carriage-return redraws on one line."""
    from types import SimpleNamespace

    from frontier_rft.bench.real_rl import runs as bench

    monkeypatch.setenv(INTERVAL_ENV, "0")
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    done = SimpleNamespace(done=True, config=SimpleNamespace(steps=5), steps_done=lambda: 5)
    assert bench.run_all([done, done], jobs=1, poll_s=0.0) == []  # type: ignore[list-item]
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines and all(line.startswith("bench-rl steps:") for line in lines)
    assert "10/10" in lines[-1]


def test_evaluation_sampling_shows_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """`frontier evaluate --model`, train's evaluations, measure-references: a bar per prompt
    batch, so minutes of sampling are not silent."""
    pytest.importorskip("torch")
    from types import SimpleNamespace

    from frontier_rft.lm import rollout
    from frontier_rft.lm.decoding import Sampling
    from frontier_rft.training import evaluate

    monkeypatch.setenv(INTERVAL_ENV, "0")
    monkeypatch.setattr(rollout, "encode_prompts", lambda tok, prompts: [[1]] * len(prompts))
    monkeypatch.setattr(
        rollout, "generate_completions", lambda m, ids, n, *a, **kw: [[2]] * (len(ids) * n)
    )
    tokenizer = SimpleNamespace(decode=lambda ids, skip_special_tokens: "text")
    verifier = SimpleNamespace(score=lambda item, text: 1.0)
    items = [SimpleNamespace(prompt=f"p{i}", task_id=i, level=0, domain="x") for i in range(5)]
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    scores, texts = evaluate.rollout_scores(
        None,
        tokenizer,
        items,
        verifier,
        Sampling(2, 8),
        prompts_per_batch=2,
        progress=True,
        desc="eval m",
    )  # type: ignore[arg-type]
    assert scores.shape == (5, 2) and len(texts) == 5
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("eval m:   0%") and "5/5" in lines[-1]
    assert any("2/5" in line for line in lines) and any("4/5" in line for line in lines)

    log.truncate(0)
    log.seek(0)
    evaluate.evaluate_items(None, tokenizer, items, verifier, Sampling(2, 8), ks=(1,))
    assert log.getvalue() == ""  # off by default (a library call stays quiet)


def test_a_bar_that_does_not_stay_on_a_terminal_still_ends_a_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "3600")
    log = io.StringIO()
    with progress_bar(4, "eval step 0", stream=log, leave=False) as bar:
        bar.update(4)
    assert "4/4" in log.getvalue().splitlines()[-1]


def test_a_log_gets_each_state_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # close() and a refresh after an update redraw a state already written; a log keeps one
    # line per state (a changed postfix is a new state).
    monkeypatch.setenv(INTERVAL_ENV, "0")
    out = io.StringIO()
    bar = progress_bar(3, "runs", stream=out)
    bar.update(1)
    bar.refresh()
    bar.set_postfix_str("bots seed 3")
    bar.update(2)
    bar.refresh()
    bar.close()
    lines = out.getvalue().splitlines()
    assert [line.split("|")[0] for line in lines] == [
        "runs:   0%",
        "runs:  33%",
        "runs:  33%",
        "runs: 100%",
    ]
    assert lines[2].endswith("bots seed 3]") and lines[3].endswith("bots seed 3]")
