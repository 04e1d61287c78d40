"""benchmarks/lr_step_price.py and the metric it reports (bench.metrics.ratio_of_median_ratios):
the larger step's ratio at one rate over its ratio at another, on planted times worked out by
hand."""

from __future__ import annotations

import pytest

from frontier_rft.bench.metrics import ratio_of_median_ratios
from helpers import benchmark_script


def _cell(values: list[float | None], budget: float = 64.0) -> dict[str, object]:
    return {"values": values, "budgets": [budget] * len(values)}


def test_ratio_of_ratios_of_kaplan_meier_medians() -> None:
    """Three seeds. Higher rate: the larger step reaches at 8, 8, 12 steps (median 8), the
    smaller at 32, 40, 48 (median 40): 0.2. Lower rate: 24, 24, 28 (24) over 48, 56, 60 (56):
    3/7. Their ratio: 0.2 / (3/7) = 7/15."""
    high = (_cell([8.0, 8.0, 12.0]), _cell([32.0, 40.0, 48.0]))
    low = (_cell([24.0, 24.0, 28.0]), _cell([48.0, 56.0, 60.0]))
    out = ratio_of_median_ratios(high, low, resamples=200)
    assert out["ratio"] == pytest.approx(7 / 15)
    lo, hi = out["ci"]
    assert lo - 1e-12 <= 7 / 15 <= hi + 1e-12


def test_a_median_beyond_the_budget_gives_no_ratio() -> None:
    """The larger step at the higher rate reaches on one seed of three: its median lies beyond
    every budget, so no ratio (censored, never averaged over the seed that reached)."""
    high = (_cell([8.0, None, None]), _cell([32.0, 40.0, 48.0]))
    low = (_cell([24.0, 24.0, 28.0]), _cell([48.0, 56.0, 60.0]))
    out = ratio_of_median_ratios(high, low, resamples=50)
    assert out["ratio"] is None
    assert out["ci"][1] is None


def test_a_smaller_step_that_never_reached_bounds_the_ratio() -> None:
    """The larger step's median is 20 steps; the smaller never reached in runs of 64, 64 and
    60 steps: its median lies beyond 60 at least, so the ratio is below 20 / 60."""
    large = {"median": 20.0, "budgets": [32.0, 32.0, 32.0]}
    small = {"median": None, "budgets": [64.0, 64.0, 60.0]}
    with benchmark_script("lr_step_price") as script:
        assert script._bound(large, small) == pytest.approx(1 / 3)
        assert script._bound(large, {**small, "median": 40.0}) is None
