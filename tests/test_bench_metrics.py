"""TTB and BSF exactly as the BOTS paper defines them (appendix B.4), read at evaluation points
(the default) or interpolated (a labelled option), the summaries over seeds, and times to a
score with censored seeds (Kaplan-Meier medians, hand-computed)."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft.bench.metrics import (
    bootstrap_mean_ci,
    bsf,
    first_reach,
    km_median,
    mean_ci,
    median_ratio,
    paired_summary,
    seed_stats,
    summarize,
    time_summary,
    ttb,
)

STEPS = [0, 20, 40, 60, 80, 100]
BASE = [0.1, 0.15, 0.2, 0.25, 0.3, 0.28]  # starts at 0.1, best 0.3 at step 80


def test_ttb_paper_example() -> None:
    # Paper: baseline 0.1 -> best 0.3; the 50% target 0.2 is reached by the baseline at
    # step 40 and by the method at step 30: TTB(50%) = 30 / 40 = 0.75.
    method = [0.1, 0.16, 0.26, 0.3, 0.31, 0.31]  # 0.2 crossed at 20 + 20 * 0.4 = 28
    assert ttb(STEPS, method, STEPS, BASE, 0.5, interpolate=True) == pytest.approx(28 / 40)
    # Read at evaluation points (the default): both first evaluated at or above 0.2 at step 40
    assert ttb(STEPS, method, STEPS, BASE, 0.5) == pytest.approx(40 / 40)
    assert ttb(STEPS, BASE, STEPS, BASE, 0.5) == pytest.approx(1.0)
    assert ttb(STEPS, BASE, STEPS, BASE, 1.0) == pytest.approx(1.0)
    # 100%: the baseline's best 0.3 at step 80; the method reaches it at step 60.
    assert ttb(STEPS, method, STEPS, BASE, 1.0) == pytest.approx(60 / 80)


def test_ttb_interpolates_between_evaluations_only_when_asked() -> None:
    base = [0.0, 0.5, 1.0]
    assert first_reach([0, 10, 20], base, 0.75, interpolate=True) == pytest.approx(15.0)
    assert ttb(
        [0, 10, 20], [0.0, 1.0, 1.0], [0, 10, 20], base, 0.75, interpolate=True
    ) == pytest.approx(7.5 / 15)
    assert first_reach([0, 10, 20], base, 0.75) == 20.0
    assert ttb([0, 10, 20], [0.0, 1.0, 1.0], [0, 10, 20], base, 0.75) == pytest.approx(10 / 20)


def test_the_kaplan_meier_median_counts_censored_seeds() -> None:
    # four seeds reached at 1, 2, 3, 4: S = 3/4, 1/2 -> the median is 2
    assert km_median([1, 2, 3, 4], [True] * 4) == 2.0
    # seed 2 never reached within its budget 2: S(1) = 3/4; at 3 two remain: 3/4 * 1/2 = 3/8
    assert km_median([1, 2, 3, 4], [True, False, True, True]) == 3.0
    # fewer than half reached, the rest censored past them: no median within the budgets
    assert km_median([5, 5, 5], [False, False, True]) is None
    # a censoring at the time of an event leaves the risk set after it
    assert km_median([2, 2, 3], [True, False, True]) == 3.0


def test_a_time_summary_never_averages_the_seeds_that_reached() -> None:
    some = time_summary([1.0, 2.0, None, 4.0], [9.0, 9.0, 6.0, 9.0])
    assert some["mean"] is None and some["ci"] is None and some["reached"] == 3
    assert some["median"] == 2.0 and some["values"][2] is None
    lo, _ = some["median_ci"]
    assert lo is not None and lo <= 2.0
    every = time_summary([1.0, 2.0, 3.0], [9.0, 9.0, 9.0])
    assert every["mean"] == pytest.approx(2.0) and every["median"] == 2.0
    ratio = median_ratio([1.0, 1.0, None], [3.0] * 3, [4.0] * 3, [9.0] * 3)
    assert ratio["ratio"] == pytest.approx(0.25) and ratio["reached"] == 2 and ratio["n"] == 3
    beyond = median_ratio([None, None, 1.0], [3.0] * 3, [4.0] * 3, [9.0] * 3)
    assert beyond["ratio"] is None


def test_ttb_none_when_never_reached_or_no_baseline_progress() -> None:
    assert ttb(STEPS, [0.1] * 6, STEPS, BASE, 1.0) is None
    assert ttb(STEPS, BASE, STEPS, [0.2] * 6, 0.5) is None


def test_bsf_uses_floor_of_beta_t() -> None:
    # T = 100: BSF(25%) compares bests up to step floor(25) = 25, i.e. evals at 0 and 20.
    method = [0.1, 0.3, 0.0, 0.0, 0.0, 0.0]
    assert bsf(STEPS, method, STEPS, BASE, 0.25) == pytest.approx(0.3 / 0.15)
    assert bsf(STEPS, method, STEPS, BASE, 1.0) == pytest.approx(1.0)
    assert bsf(STEPS, BASE, STEPS, BASE, 0.5) == pytest.approx(1.0)


def test_curves_are_validated() -> None:
    with pytest.raises(ValueError):
        ttb([0, 10], [0.1], [0, 10], [0.1, 0.2], 1.0)
    with pytest.raises(ValueError):
        first_reach([0, 0], [0.1, 0.2], 0.15)
    with pytest.raises(ValueError):
        first_reach([0, 1], [0.1, float("nan")], 0.15)


def test_bootstrap_ci_and_paired_summary() -> None:
    lo, hi = bootstrap_mean_ci([0.5, 0.6, 0.7, 0.8, 0.9])
    assert lo < 0.7 < hi and lo >= 0.5 and hi <= 0.9
    assert bootstrap_mean_ci([0.4] * 5) == pytest.approx((0.4, 0.4))
    full = paired_summary([0.5, 0.6, 0.7])
    assert full["mean"] == pytest.approx(0.6) and full["reached"] == 3
    partial = paired_summary([0.5, None, 0.7])
    assert partial["mean"] is None and partial["ci"] is None
    assert partial["reached"] == 2 and partial["mean_reached"] == pytest.approx(0.6)
    assert paired_summary([None, None])["mean_reached"] is None
    assert np.isfinite(bootstrap_mean_ci([1.0, 2.0], seed=3)).all()


def test_every_step_curves_take_the_first_step_at_the_target() -> None:
    # The paper's worked example on a curve evaluated at every step (the simulator's):
    # baseline 0.1 -> 0.3 by step 100, first at 0.2 on step 40; a method at 0.2 on step 30
    # has TTB(50%) = 30/40 = 0.75, and never reaching 0.3 leaves TTB(100%) undefined.
    base = np.concatenate([np.linspace(0.1, 0.2, 41), np.linspace(0.2, 0.3, 61)[1:]])
    method = np.concatenate([np.linspace(0.1, 0.2, 31), np.full(70, 0.2)])
    steps = np.arange(101)
    assert first_reach(steps, base, 0.2, interpolate=False) == 40
    assert ttb(steps, method, steps, base, 0.5, interpolate=False) == pytest.approx(0.75)
    assert ttb(steps, method, steps, base, 1.0, interpolate=False) is None
    assert bsf(steps, method, steps, base, 1.0) == pytest.approx(0.2 / 0.3)
    assert bsf(steps, base, steps, base, 0.25) == 1.0
    summary = summarize({0: method, 1: base}, {0: base, 1: base}, per_step={})
    assert summary["ttb100"] == {"mean": 1.0, "std": 0.0, "reached": 1, "of": 2}
    assert summary["ttb50"]["mean"] == pytest.approx((0.75 + 1.0) / 2)


def test_interpolation_is_what_tells_the_two_readings_apart() -> None:
    # Hand-computed: target 0.75 of a baseline 0 -> 1 evaluated at steps 0, 10, 20 is crossed
    # between 10 (0.5) and 20 (1.0): interpolated at 15, first evaluated at or above at 20.
    x, base = [0, 10, 20], [0.0, 0.5, 1.0]
    method = [0.0, 0.9, 1.0]  # crosses 0.75 at 10 * 0.75 / 0.9 = 8.33..., first above at 10
    assert first_reach(x, base, 0.75, interpolate=True) == pytest.approx(15.0)
    assert first_reach(x, base, 0.75, interpolate=False) == 20.0
    assert ttb(x, method, x, base, 0.75, interpolate=True) == pytest.approx((10 * 0.75 / 0.9) / 15)
    assert ttb(x, method, x, base, 0.75, interpolate=False) == pytest.approx(10 / 20)
    # x counts from the curve's first point (rollouts and seconds do not start at 0).
    assert ttb([5, 15, 25], method, [5, 15, 25], base, 0.75, interpolate=False) == 0.5


def test_bsf_budget_is_the_floor_of_beta_t_on_every_step_curves() -> None:
    # T = 6 steps, beta = 0.25: t = floor(1.5) = 1, so steps 0 and 1 count, step 2 does not.
    steps = np.arange(7)
    base = [0.1, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3]
    method = [0.1, 0.1, 0.6, 0.6, 0.6, 0.6, 0.6]
    assert bsf(steps, method, steps, base, 0.25) == pytest.approx(0.1 / 0.2)
    assert bsf(steps, method, steps, base, 0.5) == pytest.approx(0.6 / 0.3)  # t = 3


def test_seed_summaries() -> None:
    assert seed_stats([1.0, None, 3.0, float("nan")]) == {
        "mean": 2.0, "std": 1.0, "reached": 2, "of": 4
    }  # fmt: skip
    assert seed_stats([None]) == {"mean": None, "std": None, "reached": 0, "of": 1}
    cell = mean_ci([0.2, None, 0.4])
    assert cell["values"] == [0.2, 0.4] and cell["mean"] == pytest.approx(0.3)
    assert cell["ci"][0] >= 0.2 and cell["ci"][1] <= 0.4
    assert mean_ci([None]) == {"values": [None], "mean": None, "ci": None}


def test_bsf_on_different_grids_counts_the_score_at_the_budget() -> None:
    """By rollouts, a run evaluated just past the budget would be scored at its previous
    evaluation; with `interpolate` its score at the budget itself counts, for both curves."""
    base_x, base = [0.0, 100.0, 200.0], [0.1, 0.2, 0.3]
    x, method = [0.0, 60.0, 120.0], [0.1, 0.4, 0.5]  # t = floor(0.25 x 200) = 50
    assert bsf(x, method, base_x, base, 0.25) == pytest.approx(0.1 / 0.1)
    got = bsf(x, method, base_x, base, 0.25, interpolate=True)
    assert got == pytest.approx((0.1 + 0.3 * 50 / 60) / 0.15)
    # Past the method's last evaluation it is not extended: its best evaluation counts.
    assert bsf(x, method, base_x, base, 1.0, interpolate=True) == pytest.approx(0.5 / 0.3)
