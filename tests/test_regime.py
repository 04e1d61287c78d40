"""The regime statistics (bench/real_rl/regime.py) read from the committed ledger: SmolLM2-135M's
runs (H200, seeds 0-5) and the standard CPU testbed's (512 prompts x 2 epochs, seeds 0-9) give
the figures issue 70 quotes, and the table names every target."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.bench.real_rl.regime import REGIME_TARGETS, regime_lines, regime_stats

ROOT = Path(__file__).resolve().parents[1]
LEDGERS = (ROOT / "benchmarks" / "ledger" / "timed", ROOT / "benchmarks" / "ledger")


def test_smollm2_and_the_standard_testbed_give_the_quoted_figures() -> None:
    smollm2 = regime_stats(LEDGERS, "619d1051399b", "cuda", range(6))
    standard = regime_stats(LEDGERS, "fcca87e79ef9", "cpu", range(10))
    assert smollm2["seeds"] == 6 and standard["seeds"] == 10
    assert smollm2["gain"]["mean"] == pytest.approx(3.63, abs=0.02)  # 0.097 -> 0.352
    assert smollm2["start_zero_variance"]["mean"] == pytest.approx(0.70, abs=0.01)
    assert smollm2["epoch2_mixed"]["mean"] == pytest.approx(0.28, abs=0.01)
    assert smollm2["skip_rate_ratio"]["mean"] == pytest.approx(0.76, abs=0.01)
    assert standard["gain"]["mean"] == pytest.approx(1.36, abs=0.02)
    assert standard["skip_rate_ratio"]["mean"] == pytest.approx(0.39, abs=0.01)
    assert smollm2["epoch2_all_correct"]["mean"] is None  # those records predate the count
    table = "\n".join(regime_lines({"smollm2": smollm2, "standard": standard}))
    for target in REGIME_TARGETS.values():
        assert f"target {target}" in table
    assert "| smollm2 | 6 |" in table and "3.63x" in table


def test_a_testbed_without_uniform_runs_is_named() -> None:
    with pytest.raises(ValueError, match="no uniform runs of testbed 000000000000/cpu"):
        regime_stats(LEDGERS, "000000000000", "cpu", range(3))
