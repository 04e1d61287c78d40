"""benchmarks/first_epoch_table.py reads the committed ledger: issue 62's rows and, for
`skip-predict`, its predictor's calibration per epoch and side."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def script() -> Iterator[Any]:
    sys.path.insert(0, str(BENCH))
    try:
        import first_epoch_table

        yield first_epoch_table
    finally:
        sys.path.remove(str(BENCH))


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
