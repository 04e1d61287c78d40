"""benchmarks/first_epoch_ceiling.py's ledger shares: the oracle's spend per epoch is the mean
of each committed uniform record's mixed share over that half of its steps."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import benchmark_script

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def script() -> Iterator[Any]:
    with benchmark_script("first_epoch_ceiling") as module:
        yield module


def test_the_smollm2_share_is_each_halfs_mean_of_the_records_mixed_share(script: Any) -> None:
    shares = script.testbed_mixed_share(script.SMOLLM2_TESTBED, "cuda")
    assert shares["seeds"] == [0, 1, 2, 3, 4, 5]
    (path,) = (BENCH / "ledger" / script.SMOLLM2_TESTBED / "cuda" / "uniform").glob("*/seed3.*")
    with gzip.open(path, "rt") as fh:
        cols = json.load(fh)["columns"]
    # a column has a row per logged step and evaluation; the steps' rows hold the values
    etr = [v for v in cols["train/effective_task_ratio"] if v is not None]
    success = [v for v in cols["train/success_rate"] if v is not None]
    assert len(etr) == 64  # 64 steps of 16 over 512 prompts: epoch 1 is the first 32
    got = shares["mixed"][3]
    assert got["1"] == pytest.approx(sum(etr[:32]) / 32)
    assert got["2"] == pytest.approx(sum(etr[32:]) / 32)
    assert got["success1"] == pytest.approx(sum(success[:32]) / 32)


def test_the_page_names_the_pretrained_lms_testbed(script: Any) -> None:
    results = {"pools": {}, "smollm2": script.testbed_mixed_share(script.SMOLLM2_TESTBED, "cuda")}
    text = script.page(results)
    assert "SmolLM2-135M-Instruct" in text and script.SMOLLM2_TESTBED in text
    row = next(ln for ln in text.splitlines() if ln.startswith("| 6 |"))
    assert row.count("x [") == 3


def test_the_committed_page_counts_the_ledgers_seeds_and_says_which_twin_it_reads(
    script: Any,
) -> None:
    """Issue 72: the page said 15 seeds at 512 while the ledger held 25, and did not say
    that seeds 0-19 at 1,280 have two records (main and timed ledger) with different
    results."""
    text = (BENCH / "results" / "first_epoch_ceiling.md").read_text(encoding="utf-8")
    for size, steps in ((512, 64), (1280, 160)):
        held = script.ledger_mixed_share(size, steps)
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| {size} | {steps} |"))
        assert row.split("|")[3].strip() == str(len(held["seeds"]))
    twins = script.ledger_mixed_share(1280, 160)["twins"]
    assert sorted(int(s) for s, differ in twins.items() if differ) == list(range(20))
    assert "1280 prompts: seeds 0-19 have two uniform records" in text
    assert "those of seeds 0-19 differ" in text
