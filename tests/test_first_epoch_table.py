"""benchmarks/first_epoch_table.py reads the committed ledger: issue 62's rows and, for
`skip-predict`, its predictor's calibration per epoch and side."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from helpers import benchmark_script


@pytest.fixture(scope="module")
def script() -> Iterator[Any]:
    with benchmark_script("first_epoch_table") as module:
        yield module


def test_the_calibration_table_reads_each_epoch_and_side_of_the_tuning_runs(script: Any) -> None:
    text = script.calibration_table(512, 64, [20, 21, 22, 23, 24], ["skip-predict-kept"])
    rows = [ln for ln in text.splitlines() if ln.startswith("| skip-predict-kept")]
    assert [r.split(" | ")[1:3] for r in rows] == [
        ["1", "all-correct"],
        ["1", "all-wrong"],
        ["2", "all-correct"],
        ["2", "all-wrong"],
    ]
    # the all-wrong side discriminates: AUC well above chance, Brier below the base rate's
    wrong = rows[1].split(" | ")
    brier, base = wrong[4].split(" (")
    assert float(brier) < float(base.rstrip(")"))
    assert float(wrong[5].split(" ")[0]) > 0.6


def test_entries_that_log_no_calibration_add_no_table(script: Any) -> None:
    assert script.calibration_table(512, 64, [20, 21], ["skip-eager-kept"]) == ""


def test_the_calibration_is_read_under_each_entrys_own_selector(script: Any) -> None:
    """predict-only logs the calibration under its own name: its entry's column is not
    skip-predict's (the table read skip-predict's column for every entry)."""
    key = script.calibration_key("predict-only-kept-w50", 1, "auc_wrong")
    assert key == "curriculum/predict-only/calibration/epoch1/auc_wrong"
    assert script.calibration_key("skip-predict-kept", 2, "groups") == (
        "curriculum/skip-predict/calibration/epoch2/groups"
    )
    assert script.calibration_key("no-such-entry", 1, "groups") is None


def test_an_entry_in_the_untimed_ledger_is_paired_with_that_ledgers_uniform(script: Any) -> None:
    """screen4's 1,280-prompt runs are in the untimed ledger: they pair with its uniform runs
    (the timed ledger's ran on other code), and their distinct prompts trained and generated
    tokens, which these records predate, are counted as the bench's report counts them."""
    text = script.table(1280, 160, [0, 1], ["screen4"])
    row = next(ln for ln in text.splitlines() if ln.startswith("| screen4"))
    cells = row.split(" | ")
    # generated tokens: from each step's mean completion length (no count logged), near the
    # rollouts' share since screening does not change what a completion is
    rollouts, tokens = (float(c.split("x")[0]) for c in (cells[2], cells[3]))
    assert abs(tokens - rollouts) < 0.05
    assert cells[-2].isdigit()  # distinct prompts trained
    assert cells[-1].rstrip(" |") == "1.00x [1.00, 1.00]"  # steps: both ran the testbed's
    untimed = script.LEDGERS[1:]
    digest = "15805e4bbe8b"
    pairs = [
        (
            script._record(digest, "screen4", s, untimed),
            script._record(digest, "uniform", s, untimed),
        )
        for s in (0, 1)
    ]
    expected = (
        sum(script._facts(a, 80)["pass1"] - script._facts(b, 80)["pass1"] for a, b in pairs) / 2
    )
    assert cells[5].startswith(f"{expected:+.3f}")  # after the CPU time


def test_against_pairs_each_entry_with_another_entry_than_uniform(script: Any) -> None:
    text = script.table(1280, 160, [10, 11], ["skip-predict-kept-w50-backfill"], "skip-kept")
    header, _, base, row = text.splitlines()
    assert "pass@1 − skip-kept" in header and base.startswith("| skip-kept (2 seeds) | 1.00x")
    both = [script._record("15805e4bbe8b", "skip-predict-kept-w50-backfill", s) for s in (10, 11)]
    ref = [script._record("15805e4bbe8b", "skip-kept", s) for s in (10, 11)]
    diff = [
        script._facts(a, 80)["pass1"] - script._facts(b, 80)["pass1"]
        for a, b in zip(both, ref, strict=True)
    ]
    assert row.split(" | ")[5].startswith(f"{sum(diff) / 2:+.3f}")


def test_the_skip_cost_table_gives_each_epoch_of_an_entry_that_passes_over_groups(
    script: Any,
) -> None:
    """Issue 70's table beside issue 62's: epoch 2 of skip-kept at 512 prompts left out
    groups mixed at ~0.38 of the base rate, ~12% of the epoch's mixed groups lost."""
    text = script.skip_cost_table(512, 64, list(range(10)), ["skip-kept"])
    row = next(ln for ln in text.splitlines() if "| 2 (33-64) |" in ln).split(" | ")
    assert abs(float(row[4].split(" ")[0]) - 0.38) <= 0.03
    assert abs(float(row[5].split("%")[0]) - 12) <= 3
