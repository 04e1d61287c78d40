"""The planned step against the fixed grid (bench/real_rl/planner_grid.py), on hand-made
report summaries whose medians, ratios and verdicts are worked out by hand, and the meter's
run-average noise scale on planted columns."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.bench.real_rl.planner_grid import (
    fixed_times,
    grid_comparison,
    meter_average,
)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SEEDS = [0, 1, 2]


def _time(values: list[float | None], budget: float = 100.0) -> dict[str, Any]:
    """A time_summary-shaped cell; its median by hand (all reached: the middle value)."""
    got = [v for v in values if v is not None]
    median = sorted(got)[1] if len(got) == 3 else None
    return {
        "values": values,
        "budgets": [budget] * len(values),
        "reached": len(got),
        "median": median,
    }


def _row(mine: list[float | None], base: list[float], equal: tuple[float, float, float]) -> Any:
    mean, lo, hi = equal
    return {
        "device": {
            "seeds": SEEDS,
            "time_plateau_h200": _time(mine),
            "base_time_plateau_h200": _time(list(base)),
            "equal_h200_pass1": {"mean": mean, "ci": [lo, hi]},
        }
    }


UNIFORM = [8.0, 12.0, 16.0]  # median 12
LABELS = {
    "uniform": {"seeds": SEEDS},  # the baseline's own row carries no pairing
    "uniform-b32": _row([6.0, 6.0, 10.0], UNIFORM, (0.05, 0.02, 0.08)),  # median 6
    "uniform-b64": _row([4.0, 4.0, 8.0], UNIFORM, (0.08, 0.05, 0.11)),  # median 4: the best
    "uniform-k16": _row([6.0, 8.0, 8.0], UNIFORM, (0.03, 0.00, 0.06)),  # median 8
    "dapo-onecall": _row([1.0, 1.0, 1.0], UNIFORM, (0.0, 0.0, 0.0)),  # not a fixed size
    "uniform-auto": _row([4.0, 4.0, 4.0], UNIFORM, (0.07, -0.005, 0.12)),  # median 4
}


def test_the_grid_is_uniform_at_fixed_sizes_with_uniform_from_its_pairing() -> None:
    grid = fixed_times(LABELS, "h200")
    assert sorted(grid) == ["uniform", "uniform-b32", "uniform-b64", "uniform-k16"]
    assert grid["uniform"]["median"] == 12.0 and grid["uniform-b64"]["median"] == 4.0


def test_the_best_in_hindsight_and_the_planned_entry_over_it() -> None:
    out = grid_comparison(LABELS, "uniform-auto", ["h200"])["axes"]["h200"]
    assert out["best"] == "uniform-b64"
    assert out["over_best"]["ratio"] == pytest.approx(1.0)  # 4 / 4
    assert out["over_each"]["uniform"]["ratio"] == pytest.approx(4 / 12)
    assert out["over_each"]["uniform-k16"]["ratio"] == pytest.approx(0.5)
    assert out["within"] is True
    assert out["holds_score"] is True  # CI low -0.005 >= -0.01


def test_a_slower_plan_or_a_lower_score_fails_its_check() -> None:
    slow = dict(LABELS, **{"uniform-auto": _row([5.0, 5.0, 5.0], UNIFORM, (0.0, -0.02, 0.02))})
    out = grid_comparison(slow, "uniform-auto", ["h200"])["axes"]["h200"]
    assert out["over_best"]["ratio"] == pytest.approx(1.25) and out["within"] is False
    assert out["holds_score"] is False  # CI low -0.02 < -0.01


def test_a_plan_that_never_reaches_is_censored_not_dropped() -> None:
    never = dict(LABELS, **{"uniform-auto": _row([4.0, None, None], UNIFORM, (0, 0, 0))})
    out = grid_comparison(never, "uniform-auto", ["h200"])["axes"]["h200"]
    assert out["planned_reached"] == 1 and out["planned_median"] is None
    assert out["over_best"]["ratio"] is None and out["within"] is False


def test_another_planned_entry_is_set_beside_but_never_the_best() -> None:
    labels = dict(LABELS, **{"uniform-auto-lr1": _row([2.0, 2.0, 2.0], UNIFORM, (0, 0, 0))})
    out = grid_comparison(labels, "uniform-auto", ["h200"], others=["uniform-auto-lr1"])
    axis = out["axes"]["h200"]
    assert axis["best"] == "uniform-b64" and "uniform-auto-lr1" not in axis["over_each"]
    assert axis["over_others"]["uniform-auto-lr1"]["ratio"] == pytest.approx(2.0)  # 4 / 2
    with pytest.raises(ValueError, match="uniform-nope"):
        grid_comparison(labels, "uniform-auto", ["h200"], others=["uniform-nope"])


def test_no_planned_runs_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="uniform-auto"):
        grid_comparison({"uniform": {}}, "uniform-auto", ["h200"])


def test_the_meter_average_is_the_ratio_of_the_means() -> None:
    """Seed 0: mean trace 20, mean |G|^2 1 (its unmetered steps, None, left out); seed 1:
    40 over 2. Over seeds: mean trace 30 over mean |G|^2 1.5 = 20 rows; intra 5 + 10 of
    trace 20 + 40 is a quarter."""
    records = {
        0: {
            "noise/trace": [None, 10.0, 30.0],
            "noise/grad_sq": [None, 1.0, 1.0],
            "noise/intra": [None, 5.0, 5.0],
        },
        1: {"noise/trace": [40.0], "noise/grad_sq": [2.0], "noise/intra": [10.0]},
    }
    out = meter_average(records, resamples=200)
    assert out["b_simple"] == pytest.approx(20.0)
    assert out["per_seed"] == pytest.approx([20.0, 20.0])
    assert out["metered_steps"] == [2, 1]
    assert out["intra_share"] == pytest.approx(0.25)
    assert out["ci"] == pytest.approx([20.0, 20.0])  # both seeds read 20


def test_the_meter_average_in_adams_geometry_reads_its_own_columns() -> None:
    """Under the prefix `noise/adam/` the same ratio of means, of those columns only: 12 / 2
    over 4 / 1 is 6 rows, whatever the plain columns beside them hold."""
    cols = {
        "noise/trace": [99.0, 99.0],
        "noise/grad_sq": [1.0, 1.0],
        "noise/intra": [1.0, 1.0],
        "noise/adam/trace": [None, 12.0],
        "noise/adam/grad_sq": [None, 2.0],
        "noise/adam/intra": [None, 3.0],
    }
    out = meter_average({0: cols}, resamples=20, prefix="noise/adam/")
    assert out["b_simple"] == pytest.approx(6.0)
    assert (out["metered_steps"], out["intra_share"]) == ([1], pytest.approx(0.25))


def test_a_negative_mean_signal_has_no_finite_scale() -> None:
    records = {0: {"noise/trace": [5.0], "noise/grad_sq": [-1.0], "noise/intra": [1.0]}}
    out = meter_average(records, resamples=50)
    assert math.isinf(out["b_simple"]) and out["ci"] is None and out["per_seed"] == [None]


def test_records_without_a_metered_step_are_refused() -> None:
    records = {0: {"noise/trace": [None], "noise/grad_sq": [None], "noise/intra": [None]}}
    with pytest.raises(ValueError, match="noise meter"):
        meter_average(records)


@pytest.mark.parametrize(
    ("stem", "argv"),
    [
        ("planner_vs_grid_format_lr4", ["real_rl_format_lr4_planner_full.json"]),
        (
            "planner_vs_grid_format_lr4_lr1",
            [
                "real_rl_format_lr4_planner_lr_full.json",
                "--planned",
                "uniform-auto-lr1",
                "--beside",
                "uniform-auto",
            ],
        ),
        (
            "planner_vs_grid_format_lr4_lr1_10",
            [
                "real_rl_format_lr4_planner_grid10_full.json",
                "--planned",
                "uniform-auto-lr1",
                "--beside",
                "uniform-auto",
            ],
        ),
        (
            "planner_vs_grid_format_lr4_start",
            [
                "real_rl_format_lr4_planner_start_full.json",
                "--planned",
                "uniform-auto-start-lr1",
                "--beside",
                "uniform-auto,uniform-auto-lr1",
            ],
        ),
        (
            "planner_vs_grid_std",
            [
                "real_rl_std_planner_full.json",
                "--planned",
                "uniform-auto-start-lr1",
                "--beside",
                "uniform-auto-cpu",
            ],
        ),
        (
            "planner_vs_grid_std_cpu",
            [
                "real_rl_std_planner_full.json",
                "--planned",
                "uniform-auto-cpu",
                "--beside",
                "uniform-auto-start-lr1",
            ],
        ),
        (
            "planner_vs_grid_format_lr4_cpu",
            [
                "real_rl_format_lr4_planner_cpu_full.json",
                "--planned",
                "uniform-auto-cpu",
                "--beside",
                "uniform-auto-start-lr1",
            ],
        ),
        (
            "planner_vs_grid_format_lr4_adam_preview",
            [
                "real_rl_format_lr4_planner_adam_preview_full.json",
                "--planned",
                "uniform-auto-cpu-adam",
                "--beside",
                "uniform-auto-cpu",
            ],
        ),
        (
            "planner_vs_grid_format_lr4_lr1_fresh",
            [
                "real_rl_format_lr4_planner_lr_fresh_full.json",
                "--planned",
                "uniform-auto-lr1",
                "--beside",
                "uniform-auto",
            ],
        ),
    ],
)
def test_the_committed_comparisons_reproduce(
    stem: str, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script on the committed report and ledger gives the committed results."""
    monkeypatch.chdir(REPO)  # the report names its ledger relative to the repository
    spec = importlib.util.spec_from_file_location(
        "planner_vs_grid", REPO / "benchmarks" / "planner_vs_grid.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    source = str(Path("benchmarks/results") / argv[0])
    assert script.main([source, *argv[1:], "--name", stem, "--out", str(tmp_path)]) == 0
    got = json.loads((tmp_path / f"{stem}.json").read_text(encoding="utf-8"))
    committed = json.loads((RESULTS / f"{stem}.json").read_text(encoding="utf-8"))
    for key in ("comparison", "meter", "fits", "reading", "code", "seeds"):
        assert got[key] == committed[key], key
