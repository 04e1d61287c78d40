"""What passing over groups cost per epoch (issue 70, item 2): the paired counterfactual against
uniform, by hand on planted per-step columns, on the committed ledger's two known figures, in
the bench report and from the command line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.bench.real_rl.report import markdown_report, summarize_runs
from frontier_rft.bench.real_rl.skip_cost import (
    ledger_skip_cost,
    passes_over_groups,
    skip_cost,
    skip_cost_summary,
)
from helpers import benchmark_script

REPO = Path(__file__).resolve().parents[1]
LEDGERS = (REPO / "benchmarks" / "ledger" / "timed", REPO / "benchmarks" / "ledger")


def _run(
    mixed: list[float], trained: list[float], rolled: list[float] | None = None
) -> dict[str, Any]:
    """A run with the per-step columns skip_cost reads (and what the report reads)."""
    steps = [0, len(mixed)]
    train = [
        {
            "train/informative_groups": m,
            "train/groups_trained": g,
            "train/prompts": g if rolled is None else rolled[i],
            "train/rollouts": 8.0 * g,
            "perf/step_s": 1.0,
            "perf/step_cpu_s": 1.0,
        }
        for i, (m, g) in enumerate(zip(mixed, trained, strict=True))
    ]
    return {
        "eval_steps": steps,
        "eval_rollouts": [0.0, sum(8.0 * g for g in trained)],
        "eval_seconds": [0.0, float(len(mixed))],
        "pass1": [0.1, 0.3],
        "final": {"eval/pass@1": 0.3},
        "train": train,
        "info": {"config": {"batch_size": 4}, "train_tasks": 8},
    }


UNIFORM = _run([2, 3, 1, 2], [4, 4, 4, 4])
KEPT = _run([2, 2, 1, 0], [4, 3, 4, 2])


def test_the_cost_is_the_paired_difference_per_epoch_by_hand() -> None:
    """B = 4, epochs of 2 steps. Epoch 1: uniform 2 + 3 = 5 mixed, the entry 2 + 2 = 4, so 1
    lost (1/5 of uniform's); it left out 0 + 1 = 1 group of 8, mixed at 1/1 against a base
    rate of 5/8: ratio 1.6. Epoch 2: 3 against 1, 2 lost (2/3); left out 0 + 2 = 2, mixed at
    2/2 against 3/8: ratio 8/3."""
    cost = skip_cost(KEPT, UNIFORM, batch=4, epoch_steps=2)
    assert list(cost) == [1, 2]
    one, two = cost[1], cost[2]
    assert one["steps"] == (1, 2) and two["steps"] == (3, 4)
    assert (one["uniform_mixed"], one["entry_mixed"], one["lost"]) == (5, 4, 1)
    assert one["lost_share"] == pytest.approx(0.2)
    assert (one["left_out"], one["left_out_share"]) == (1, pytest.approx(1 / 8))
    assert one["left_out_rate"] == pytest.approx(1.0)
    assert one["base_rate"] == pytest.approx(5 / 8)
    assert one["rate_ratio"] == pytest.approx(1.6)
    assert two["lost_share"] == pytest.approx(2 / 3)
    assert two["left_out_share"] == pytest.approx(0.25)
    assert two["rate_ratio"] == pytest.approx(8 / 3)


def test_a_last_partial_epoch_is_its_own_and_nothing_left_out_has_no_rate() -> None:
    uniform = _run([2, 3, 1, 2, 4], [4] * 5)
    entry = _run([2, 3, 1, 2, 3], [4, 4, 4, 4, 4])
    cost = skip_cost(entry, uniform, batch=4, epoch_steps=2)
    assert cost[3]["steps"] == (5, 5) and cost[3]["lost"] == 1
    assert cost[1]["left_out"] == 0 and math.isnan(cost[1]["left_out_rate"])
    assert math.isnan(cost[1]["rate_ratio"]) and cost[1]["lost_share"] == 0


def test_only_runs_that_train_fewer_than_b_from_a_window_of_b_pass_over_groups() -> None:
    assert passes_over_groups(KEPT, 4)
    assert not passes_over_groups(UNIFORM, 4)  # full batches
    # dynamic sampling: rolls out more than B to train B (fewer at its round limit)
    assert not passes_over_groups(_run([2, 3], [4, 3], rolled=[8, 12]), 4)
    # screening rolls out B and trains the mixed ones: it passes over the rest
    assert passes_over_groups(_run([2, 3], [2, 3], rolled=[4, 4]), 4)
    bare = {**KEPT, "train": [{"train/rollouts": 8.0} for _ in range(4)]}
    assert not passes_over_groups(bare, 4)  # records that do not say
    with pytest.raises(ValueError, match="informative_groups"):
        skip_cost(bare, UNIFORM, 4, 2)


def test_over_seeds_the_ratio_is_the_mean_of_per_seed_ratios() -> None:
    """Seed 0 is KEPT (epoch 1 ratio 1.6); seed 1 left nothing out in epoch 1 (no ratio) and
    lost nothing: the mean ratio is seed 0's, the mean share lost (0.2 + 0) / 2."""
    entry = {0: KEPT, 1: _run([2, 3, 1, 2], [4, 4, 4, 3])}
    summary = skip_cost_summary(entry, {0: UNIFORM, 1: UNIFORM}, 4, 2)
    assert summary["seeds"] == [0, 1] and list(summary["epochs"]) == ["1", "2"]
    one = summary["epochs"]["1"]
    assert one["steps"] == [1, 2]
    assert one["rate_ratio"]["values"] == pytest.approx([1.6])
    assert one["lost_share"]["mean"] == pytest.approx(0.1)


def test_the_committed_ledger_gives_the_two_known_figures() -> None:
    """Epoch 2 of skip-kept against uniform: on the CPU testbed (512 prompts, 64 steps, seeds
    0-9) its left-out groups were mixed at ~0.38 of the base rate and ~12% of the epoch's mixed
    groups were lost; on SmolLM2 (cuda, seeds 0-5) ~0.78 and ~34%, ~44% left out."""
    cpu = ledger_skip_cost(LEDGERS, "fcca87e79ef9", "cpu", ["skip-kept"], range(10))
    two = cpu["skip-kept"]["epochs"]["2"]
    assert cpu["skip-kept"]["seeds"] == list(range(10)) and two["steps"] == [33, 64]
    assert two["rate_ratio"]["mean"] == pytest.approx(0.38, abs=0.03)
    assert two["lost_share"]["mean"] == pytest.approx(0.12, abs=0.03)
    gpu = ledger_skip_cost(LEDGERS, "619d1051399b", "cuda", ["skip-kept"], range(6), 16, 32)
    two = gpu["skip-kept"]["epochs"]["2"]
    assert gpu["skip-kept"]["seeds"] == list(range(6))
    assert two["rate_ratio"]["mean"] == pytest.approx(0.78, abs=0.03)
    assert two["lost_share"]["mean"] == pytest.approx(0.34, abs=0.03)
    assert two["left_out_share"]["mean"] == pytest.approx(0.44, abs=0.03)
    assert gpu["skip-kept"]["epochs"]["1"]["left_out_share"]["mean"] == 0  # no skip in epoch 1


def test_the_bench_report_gives_the_cost_of_entries_that_pass_over_groups_only() -> None:
    runs = {
        "uniform": {0: UNIFORM, 1: UNIFORM},
        "skip-kept": {0: KEPT, 1: KEPT},
        "skip": {0: UNIFORM, 1: UNIFORM},  # full batches: nothing passed over
    }
    start = {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}}
    summary = summarize_runs(runs, start)
    rows = summary["labels"]
    assert "skip_cost" not in rows["uniform"] and "skip_cost" not in rows["skip"]
    cost = rows["skip-kept"]["skip_cost"]
    assert (cost["batch"], cost["epoch_steps"]) == (4, 2)  # uniform's B, pool 8 / B
    assert cost["epochs"]["2"]["rate_ratio"]["mean"] == pytest.approx(8 / 3)
    page = markdown_report(summary, [], list(runs), "# page")
    section = page[page.index("### What passing over groups cost, per epoch") :]
    lines = [ln for ln in section.splitlines() if ln.startswith("| skip")]
    assert [ln.split(" | ")[1] for ln in lines] == ["1 (1-2)", "2 (3-4)"]
    assert lines[1].split(" | ")[2:] == [
        "25.0% [25.0, 25.0]",
        "1.00 (0.38)",
        "2.67 [2.67, 2.67]",
        "66.7% [66.7, 66.7] |",
    ]
    assert "Estimates" in section


def test_the_command_prints_the_table_for_a_testbed_and_device(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with benchmark_script("skip_cost_table") as script:
        argv = ["--testbed", "619d1051399b", "--device", "cuda", "--seeds", "0-5"]
        assert script.main([*argv, "--entries", "skip-kept", "--epoch-steps", "32"]) == 0
        printed = capsys.readouterr().out
        row = next(ln for ln in printed.splitlines() if "| 2 (33-64) |" in ln)
        assert row.startswith("| skip-kept (6 seeds) |")
        assert script.main([*argv, "--entries", "no-such-entry"]) == 1


def test_the_ledger_reading_leaves_out_entries_that_train_whole_steps() -> None:
    """skip-fewer-steps and C-GRPO's rule train B groups every step: their steps walk other
    prompts than the paired uniform run's, so no skip cost is estimated for them (the bench
    report leaves them out the same way); skip-kept beside them is still read."""
    cost = ledger_skip_cost(
        LEDGERS, "fcca87e79ef9", "cpu", ["skip-kept", "skip-fewer-steps", "cgrpo"], range(5)
    )
    assert set(cost) == {"skip-kept"}
