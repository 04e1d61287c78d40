"""The batch planner (step_cost/planner.py) against hand-computed values: the closed form of a
linear cost, the bounds, the split into prompts and rollouts, the refusals, describe()."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from frontier_rft.core.noise_scale import NoiseEma, halves, halves_estimate
from frontier_rft.step_cost.curve import Cell, StepCostCurve, StepShape, load_curve
from frontier_rft.step_cost.own_curve import OwnFit
from frontier_rft.step_cost.planner import (
    NoiseTerms,
    StepCost,
    curve_cost,
    group_sizes,
    linear_cost,
    own_cost,
    plan_batch,
    split_rows,
)

# |G|^2 1, tr Sigma_inter 25, tr Sigma_intra 200: at K = 8, B_noise = 8 * 25 + 200 = 400 rows.
TERMS = NoiseTerms(grad_sq=1.0, inter=25.0, intra=200.0, steps=12)
# t(B) = 1 + 0.01 B seconds: B* = sqrt(a B_noise / b) = sqrt(1 * 400 / 0.01) = 200 rows.
LINEAR = linear_cost(1.0, 0.01, "datasheet", "a projected H200 step")


def t_over_s_min(b_noise: float, rows: int) -> float:
    """T(B) / S_min = (1 + B_noise / B)(1 + 0.01 B), the linear cost above."""
    return (1 + b_noise / rows) * (1 + 0.01 * rows)


def test_the_search_finds_the_closed_form_of_a_linear_cost() -> None:
    plan = plan_batch(TERMS, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=1024)
    assert TERMS.b_noise(8) == 400.0 and math.sqrt(1.0 * 400 / 0.01) == 200.0
    assert (plan.rows, plan.prompts, plan.rollouts) == (200, 25, 8)
    assert plan.b_noise == 400.0
    # T(200) = 3 * 3 = 9; T(128) = (1 + 400/128)(1 + 1.28) = 4.125 * 2.28 = 9.405
    assert plan.seconds_ratio == pytest.approx(9 / 9.405)
    assert plan.steps_ratio == pytest.approx(3 / 4.125)  # S_min cancels
    assert plan.lr_factor == pytest.approx(1.25)  # sqrt(200 / 128)
    # its neighbours cost more: T(192) = (1 + 400/192) * 2.92, T(208) = (1 + 400/208) * 3.08
    assert t_over_s_min(400, 192) > 9 and t_over_s_min(400, 208) > 9


def test_a_bound_that_cuts_the_optimum_is_where_the_plan_stops() -> None:
    low = plan_batch(TERMS, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=64)
    assert (low.rows, low.prompts) == (64, 8)
    assert low.seconds_ratio == pytest.approx((1 + 400 / 64) * 1.64 / 9.405)  # 11.89 / 9.405
    assert low.lr_factor == pytest.approx(math.sqrt(0.5))
    high = plan_batch(TERMS, LINEAR, prompts=16, rollouts=8, min_rows=512, max_rows=1024)
    assert (high.rows, high.prompts) == (512, 64)
    assert high.seconds_ratio == pytest.approx(1.78125 * 6.12 / 9.405)  # 10.90125 / 9.405
    assert high.lr_factor == pytest.approx(2.0)  # sqrt(512 / 128), at the cap
    capped = plan_batch(
        TERMS, LINEAR, prompts=16, rollouts=8, min_rows=512, max_rows=1024, max_lr_factor=1.5
    )
    assert capped.lr_factor == 1.5
    # a pool of 10 prompts: 80 rows (T = 6 * 1.8 = 10.8) beats 72 (T = (1 + 400/72) * 1.72)
    pool = plan_batch(
        TERMS, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=1024, max_prompts=10
    )
    assert (pool.rows, pool.prompts) == (80, 10)
    assert t_over_s_min(400, 72) > 10.8


def test_the_split_favours_prompts_by_the_inter_term() -> None:
    inter = NoiseTerms(grad_sq=1.0, inter=1.0, intra=8.0, steps=3)
    # 64 rows: K = 2 gives 1/32 + 8/64 = 10/64, K = 8 gives 1/8 + 8/64 = 16/64
    assert inter.variance(32, 2) == pytest.approx(10 / 64)
    assert inter.variance(8, 8) == pytest.approx(16 / 64)
    assert split_rows(64, inter, (2, 4, 8), keep=8) == (32, 2)
    assert split_rows(12, inter, (2, 4, 8), keep=8) == (6, 2)  # 8 does not divide 12
    assert split_rows(64, inter, (2, 4, 8), keep=8, max_prompts=16) == (16, 4)  # the pool
    assert split_rows(10, inter, (4, 8), keep=8) is None
    flat = NoiseTerms(grad_sq=1.0, inter=0.0, intra=8.0, steps=3)
    assert split_rows(64, flat, (2, 4, 8), keep=8) == (8, 8)  # a tie keeps the run's K
    assert split_rows(64, flat, (2, 4, 8), keep=4) == (16, 4)
    assert group_sizes(8) == (2, 4, 8) and group_sizes(6) == (2, 3, 6)


def test_with_the_intra_term_dominant_the_group_size_matters_little() -> None:
    intra = NoiseTerms(grad_sq=1.0, inter=0.01, intra=100.0, steps=3)
    plan = plan_batch(
        intra, LINEAR, prompts=8, rollouts=8, min_rows=64, max_rows=64, sizes=group_sizes(8)
    )
    assert (plan.prompts, plan.rollouts) == (32, 2)
    # (1 + (2 * 0.01 + 100) / 64) / (1 + (8 * 0.01 + 100) / 64): within 1e-3 of the same
    assert plan.seconds_ratio == pytest.approx((1 + 100.02 / 64) / (1 + 100.08 / 64))
    assert plan.seconds_ratio > 0.999


def test_the_plan_splits_and_sizes_together() -> None:
    # K = 2: B_noise = 2 * 25 + 200 = 250, B* = sqrt(250 / 0.01) = 158.1 -> 158 of the evens
    plan = plan_batch(
        TERMS, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=1024, sizes=(2, 4, 8)
    )
    assert (plan.rows, plan.prompts, plan.rollouts) == (158, 79, 2)
    assert plan.b_noise == 250.0
    t158 = t_over_s_min(250, 158)  # 2.58228 * 2.58 = 6.66228
    assert t158 < t_over_s_min(250, 156) and t158 < t_over_s_min(250, 160)
    assert plan.seconds_ratio == pytest.approx(t158 / 9.405)


def test_costs_from_a_curve_and_from_the_runs_own_fit() -> None:
    cpu = load_curve("cpu")
    cost = curve_cost(cpu, 16)
    assert cost.kind == "shipped" and "curve cpu" in cost.source
    assert cost.seconds(64) == cpu.step_seconds(StepShape((64,), 16, 64))
    cell = Cell(8, 10, 1.0, 1.0)
    run = StepCostCurve("run", "cpu", "", "", "fitted", (cell,))
    fit = OwnFit((0.5, 0.01, 0.001), (0.2, 0.002, 0.0), 5, run)
    own = own_cost(fit, 10)
    # 0.5 + 0.01 * 10 + 0.001 * 100 * 10 = 1.6 to generate, 0.2 + 0.002 * 100 = 0.4 to update
    assert own.seconds(100) == pytest.approx(2.0)
    assert own.kind == "own" and "own fit over 5 steps" in own.source
    assert curve_cost(run, 10).kind == "own"
    assert curve_cost(StepCostCurve("mine", "cuda", "", "", "", (cell,)), 10).kind == "measured"


def test_describe_says_the_evidence_and_the_learning_rate_rule() -> None:
    plan = plan_batch(TERMS, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=1024)
    line = plan.describe()
    assert "\n" not in line
    for part in (
        "200 rows a step (25 prompts x 8 rollouts) against 128 now (16 x 8)",
        "0.957x the device seconds",
        "S_min cancels",
        "EMA over 12 metered step(s)",
        "B_noise 400 rows at K=8",
        "a datasheet projection, a projected H200 step",
        "keep Adam's",
        "or scale it by 1.25x",
        "Malladi et al. 2022",
        "capped at 2x",
        "rule of thumb: check it",
    ):
        assert part in line, part
    cell = Cell(8, 10, 1.0, 1.0)
    fit = OwnFit(
        (0.5, 0.01, 0.001), (0.2, 0.002, 0.0), 5, StepCostCurve("run", "cpu", "", "", "", (cell,))
    )
    own = plan_batch(TERMS, own_cost(fit, 10), prompts=16, rollouts=8, min_rows=8, max_rows=256)
    assert "the run's own cost, the run's own fit over 5 steps" in own.describe()
    shipped = plan_batch(
        TERMS, curve_cost(load_curve("h200"), 24), prompts=16, rollouts=8, min_rows=8, max_rows=256
    )
    assert "a shipped curve, curve h200" in shipped.describe()


def test_the_terms_read_from_the_meter_and_its_log() -> None:
    split = halves([4, 4, 4, 4])
    est = halves_estimate(split, np.ones(16), 0.5, 2.0, 4.0)
    ema = NoiseEma(0.9)
    logged = ema.update(est)
    terms = NoiseTerms.from_ema(ema)
    assert (terms.grad_sq, terms.inter, terms.intra, terms.steps) == (
        pytest.approx(logged["noise/grad_sq_ema"]),
        pytest.approx(logged["noise/inter_ema"]),
        pytest.approx(logged["noise/intra_ema"]),
        1,
    )
    rows = [
        {"noise/grad_sq_ema": 3.0, "noise/inter_ema": 1.0, "noise/intra_ema": 9.0},
        {"loss/policy": 0.1},
        {"noise/grad_sq_ema": 2.0, "noise/inter_ema": 1.0, "noise/intra_ema": 4.0},
    ]
    assert NoiseTerms.from_metrics(rows) == NoiseTerms(2.0, 1.0, 4.0, 2)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: NoiseTerms(0.0, 1.0, 1.0, 3), "not enough metered steps: |G|^2 is 0"),
        (lambda: NoiseTerms(-0.2, 1.0, 1.0, 3), "not enough metered steps: |G|^2 is -0.2"),
        (lambda: NoiseTerms(1.0, -1.0, 1.0, 3), "not enough metered steps: inter"),
        (lambda: NoiseTerms(1.0, 1.0, -1.0, 3), "not enough metered steps: intra"),
        (lambda: NoiseTerms(1.0, math.nan, 1.0, 3), "inter must be finite"),
        (lambda: NoiseTerms(1.0, 1.0, 1.0, 0), "not enough metered steps"),
        (lambda: NoiseTerms.from_ema(NoiseEma(0.9)), "not enough metered steps"),
        (lambda: NoiseTerms.from_metrics([{"loss/policy": 0.1}]), "not enough metered steps"),
        (
            lambda: plan_batch(TERMS, LINEAR, prompts=16, rollouts=8, min_rows=64, max_rows=32),
            "min_rows 64 is above max_rows 32",
        ),
        (
            lambda: plan_batch(TERMS, LINEAR, prompts=16, rollouts=1, min_rows=8, max_rows=32),
            "rollouts must be",
        ),
        (
            lambda: plan_batch(
                TERMS, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=32, sizes=(1, 8)
            ),
            "group sizes must be",
        ),
        (
            lambda: plan_batch(TERMS, LINEAR, prompts=16, rollouts=8, min_rows=9, max_rows=15),
            "no step of group size",
        ),
        (
            lambda: plan_batch(
                TERMS,
                linear_cost(0.0, 0.0, "own", "zero"),
                prompts=16,
                rollouts=8,
                min_rows=8,
                max_rows=32,
            ),
            "gave 0.0 seconds",
        ),
        (
            lambda: plan_batch(
                TERMS, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=32, max_lr_factor=0.5
            ),
            "max_lr_factor",
        ),
        (lambda: group_sizes(1), "group size must be"),
        (lambda: StepCost(lambda rows: 1.0, "guess", ""), "kind must be one of"),
    ],
)
def test_bad_input_is_refused_by_name_in_one_line(make: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=r"^batch planner: ") as err:
        make()
    assert match in str(err.value) and "\n" not in str(err.value)


def test_a_refused_plan_changes_nothing() -> None:
    ema = NoiseEma(0.9)
    ema.update(halves_estimate(halves([4, 4, 4, 4]), np.ones(16), 0.5, 2.0, 4.0))
    before = ema.state_dict()
    terms = NoiseTerms.from_ema(ema)
    with pytest.raises(ValueError, match="min_rows"):
        plan_batch(terms, LINEAR, prompts=16, rollouts=8, min_rows=64, max_rows=32)
    assert ema.state_dict() == before and NoiseTerms.from_ema(ema) == terms
    ok = plan_batch(terms, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=64)
    assert ok == plan_batch(terms, LINEAR, prompts=16, rollouts=8, min_rows=8, max_rows=64)
