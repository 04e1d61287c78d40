"""TTB and BSF exactly as the BOTS paper defines them (appendix B.4), and the paired CIs."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft.bench.metrics import (
    bootstrap_mean_ci,
    bsf,
    first_reach,
    paired_summary,
    ttb,
)

STEPS = [0, 20, 40, 60, 80, 100]
BASE = [0.1, 0.15, 0.2, 0.25, 0.3, 0.28]  # starts at 0.1, best 0.3 at step 80


def test_ttb_paper_example() -> None:
    # Paper: baseline 0.1 -> best 0.3; the 50% target 0.2 is reached by the baseline at
    # step 40 and by the method at step 30: TTB(50%) = 30 / 40 = 0.75.
    method = [0.1, 0.16, 0.26, 0.3, 0.31, 0.31]  # 0.2 crossed at 20 + 20 * 0.4 = 28
    assert ttb(STEPS, method, STEPS, BASE, 0.5) == pytest.approx(28 / 40)
    assert ttb(STEPS, BASE, STEPS, BASE, 0.5) == pytest.approx(1.0)
    assert ttb(STEPS, BASE, STEPS, BASE, 1.0) == pytest.approx(1.0)
    # 100%: the baseline's best 0.3 at step 80; the method reaches it at step 60.
    assert ttb(STEPS, method, STEPS, BASE, 1.0) == pytest.approx(60 / 80)


def test_ttb_interpolates_between_evaluations() -> None:
    base = [0.0, 0.5, 1.0]
    assert first_reach([0, 10, 20], base, 0.75) == pytest.approx(15.0)
    assert ttb([0, 10, 20], [0.0, 1.0, 1.0], [0, 10, 20], base, 0.75) == pytest.approx(7.5 / 15)


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
