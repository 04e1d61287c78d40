"""The regime statistics (bench/real_rl/regime.py) read from the committed ledger: SmolLM2-135M's
runs (H200, seeds 0-5) and the standard CPU testbed's (512 prompts x 2 epochs, seeds 0-9) give
the figures issue 70 quotes, and the table names every target."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from frontier_rft.bench.real_rl.regime import (
    REGIME_TARGETS,
    epoch_transitions,
    regime_lines,
    regime_stats,
    transition_lines,
    transition_stats,
)

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


def _log(path: Path, steps: list[tuple[list[int], list[list[float]]]]) -> Path:
    """A gzipped reward log, as the ledger keeps them, of `steps` (prompts, their groups)."""
    lines = [
        json.dumps({"step": i, "pool_size": 8, "seed": 0, "task_ids": ids, "rewards": groups})
        for i, (ids, groups) in enumerate(steps)
    ]
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


def test_epoch_transitions_count_epoch_two_by_the_last_epoch_one_outcome(tmp_path: Path) -> None:
    """Hand-counted: epochs of 2 steps; prompt 0 is all-wrong then mixed in epoch 1 (its last
    outcome counts: mixed), 1 all-correct, 2 all-wrong, 3 untried in epoch 1 (left out);
    steps past epoch 2 are not read."""
    wrong, right, mixed = [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]
    log = _log(
        tmp_path / "seed0.rewards.jsonl.gz",
        [
            ([0, 1], [wrong, right]),
            ([0, 2], [mixed, wrong]),
            ([0, 1, 3], [wrong, mixed, mixed]),  # epoch 2: 0 mixed->flat, 1 right->mixed
            ([2, 1], [mixed, right]),  # 2 wrong->mixed, 1 right->flat
            ([2], [mixed]),  # epoch 3: not counted
        ],
    )
    assert epoch_transitions(log, 2) == {
        "all-wrong": (1, 1),
        "all-correct": (2, 1),
        "mixed": (1, 0),
    }
    partial = _log(tmp_path / "p.gz", [([0], [[0.5, 0.5]]), ([0], [[0.5, 0.5]])])
    assert epoch_transitions(partial, 1)["all-wrong"] == (1, 0)  # flat below 1 is unsolved


def test_the_fast_format_lr4_ledger_gives_the_quoted_transitions() -> None:
    """The regime closest to SmolLM2 (uniform's reward logs, seeds 0-9): prompts all-correct
    in epoch 1 came back mixed in epoch 2 at the base rate, all-wrong ones at 0.64 of it; the
    fast regime never reaches the all-correct side (no seed holds MIN_GROUPS of them)."""
    lr4 = transition_stats(LEDGERS, "a633e2cc481f", "cpu", range(10))
    assert lr4["seeds"] == 10
    assert lr4["all-correct"]["ratio"]["mean"] == pytest.approx(1.03, abs=0.01)
    assert lr4["all-wrong"]["ratio"]["mean"] == pytest.approx(0.64, abs=0.01)
    assert lr4["all-wrong"]["share"]["mean"] == pytest.approx(0.48, abs=0.01)
    fast = transition_stats(LEDGERS, "cebabb1e33c3", "cpu", range(10))
    assert fast["all-correct"]["ratio"]["mean"] is None
    smollm2 = transition_stats(LEDGERS, "619d1051399b", "cuda", range(6))
    assert smollm2["seeds"] == 0  # its runs predate the reward log
    table = "\n".join(transition_lines({"lr4": lr4, "smollm2": smollm2}))
    assert "| lr4 | 10 |" in table and "| smollm2 | 0 | —; — |" in table
