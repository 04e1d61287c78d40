"""The first-epoch ceiling's ledger shares (frontier_rft.bench.real_rl.finished.first_epoch_ceiling,
run by benchmarks/first_epoch_ceiling.py): the oracle's spend per epoch is the mean
of each committed uniform record's mixed share over that half of its steps."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from frontier_rft.bench.real_rl.finished import first_epoch_ceiling as ceiling

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
LEDGERS = ceiling.ledger_roots(REPO)


def test_the_smollm2_share_is_each_halfs_mean_of_the_records_mixed_share() -> None:
    shares = ceiling.testbed_mixed_share(ceiling.SMOLLM2_TESTBED, "cuda", LEDGERS)
    assert shares["seeds"] == [0, 1, 2, 3, 4, 5]
    (path,) = (BENCH / "ledger" / ceiling.SMOLLM2_TESTBED / "cuda" / "uniform").glob("*/seed3.*")
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


def test_the_page_names_the_pretrained_lms_testbed() -> None:
    shares = ceiling.testbed_mixed_share(ceiling.SMOLLM2_TESTBED, "cuda", LEDGERS)
    text = ceiling.page({"pools": {}, "smollm2": shares})
    assert "SmolLM2-135M-Instruct" in text and ceiling.SMOLLM2_TESTBED in text
    row = next(ln for ln in text.splitlines() if ln.startswith("| 6 |"))
    assert row.count("x [") == 3


def test_the_committed_page_counts_the_ledgers_seeds_and_says_which_twin_it_reads() -> None:
    """Issue 72: the page said 15 seeds at 512 while the ledger held 25, and did not say
    that seeds 0-19 at 1,280 have two records (main and timed ledger) with different
    results."""
    text = (BENCH / "results" / "first_epoch_ceiling.md").read_text(encoding="utf-8")
    for size, steps in ((512, 64), (1280, 160)):
        held = ceiling.ledger_mixed_share(size, steps, LEDGERS)
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| {size} | {steps} |"))
        assert row.split("|")[3].strip() == str(len(held["seeds"]))
    twins = ceiling.ledger_mixed_share(1280, 160, LEDGERS)["twins"]
    assert sorted(int(s) for s, differ in twins.items() if differ) == list(range(20))
    assert "1280 prompts: seeds 0-19 have two uniform records" in text
    assert "those of seeds 0-19 differ" in text
