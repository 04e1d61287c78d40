"""The least-regret start (step_cost/start_plan.py) against hand-computed values: two and four
candidates on a linear cost, a flat cost, the envelope's breakpoints, a shipped curve against a
brute-force sweep of noise scales, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft.step_cost.curve import load_curve
from frontier_rft.step_cost.planner import curve_cost, linear_cost
from frontier_rft.step_cost.start_plan import (
    MAX_START_CANDIDATES,
    _envelope_points,
    start_plan,
)

# t(N) = 1 + N / 4 seconds: at K = 4, 1..4 prompts are 4, 8, 12, 16 rows of 2, 3, 4, 5 seconds,
# seconds a row 0.5, 0.375, 0.3333, 0.3125.
LINEAR = linear_cost(1.0, 0.25, "datasheet", "a planted line")


def test_two_candidates_by_hand() -> None:
    # T(1 prompt) = 2 (1 + x/4), T(2) = 3 (1 + x/8): equal at x = 8. Below it 1 prompt is best
    # and 2 prompts' ratio (3 + 3x/8) / (2 + x/2) falls from 1.5 at x = 0; above it 2 prompts
    # are best and 1 prompt's ratio rises to (2/4) / (3/8) = 4/3 as x grows.
    plan = start_plan(LINEAR, rollouts=4, min_prompts=1, max_prompts=2)
    assert (plan.prompts, plan.rows) == (1, 4)
    assert plan.worst_ratio == pytest.approx(4 / 3)
    assert plan.configured_ratio == pytest.approx(4 / 3)


def test_four_candidates_by_hand() -> None:
    # The envelope: 1 prompt to x = 8, 2 prompts to x = 24, 3 prompts to x = 48, then 4.
    # 2 prompts: 1.5 at x = 0 (3 / 2); at x = 8, 24 it is the best (1); at x = 48 it is
    # 3 x 7 / (5 x 4) = 1.05; unbounded x: 0.375 / 0.3125 = 1.2. Worst 1.5.
    # 1 prompt: 1 at x = 0, 0.5 / 0.3125 = 1.6 unbounded. 3: 4 / 2 = 2 at x = 0. 4: 2.5.
    slopes = np.array([0.5, 0.375, 1 / 3, 0.3125])
    assert _envelope_points(np.array([2.0, 3.0, 4.0, 5.0]), slopes) == pytest.approx([8, 24, 48])
    plan = start_plan(LINEAR, rollouts=4, min_prompts=1, max_prompts=4)
    assert (plan.prompts, plan.rollouts, plan.rows) == (2, 4, 8)
    assert plan.worst_ratio == pytest.approx(1.5)
    assert plan.configured_ratio == pytest.approx(1.6)


def test_a_flat_cost_starts_at_the_most_rows_and_a_proportional_one_at_the_fewest() -> None:
    flat = linear_cost(2.0, 0.0, "datasheet", "latency only")
    plan = start_plan(flat, rollouts=8, min_prompts=16, max_prompts=128)
    assert (plan.prompts, plan.worst_ratio, plan.configured_ratio) == (128, 1.0, 8.0)
    proportional = linear_cost(0.0, 0.5, "datasheet", "throughput only")
    plan = start_plan(proportional, rollouts=8, min_prompts=16, max_prompts=128)
    assert (plan.prompts, plan.worst_ratio) == (16, 1.0)  # ties go to fewer rows


@pytest.mark.parametrize(("curve", "length"), [("h200", 24), ("cpu", 24), ("h200", 256)])
def test_a_shipped_curve_agrees_with_a_sweep_of_noise_scales(curve: str, length: int) -> None:
    cost = curve_cost(load_curve(curve), length)
    plan = start_plan(cost, rollouts=8, min_prompts=16, max_prompts=128)
    rows = np.arange(16, 129) * 8
    seconds = np.array([cost.seconds(int(n)) for n in rows])
    worst = (seconds / rows) / (seconds / rows).min()
    for x in np.concatenate([[0.0], np.geomspace(1e-2, 1e8, 4001)]):
        at = seconds * (1 + x / rows)
        worst = np.maximum(worst, at / at.min())
    assert plan.prompts == 16 + int(np.argmin(worst))
    assert plan.worst_ratio == pytest.approx(float(worst.min()), rel=1e-3)
    assert plan.worst_ratio <= plan.configured_ratio


def test_the_h200_curve_starts_well_above_16_prompts_and_the_cpu_near_them() -> None:
    h200 = start_plan(
        curve_cost(load_curve("h200"), 24), rollouts=8, min_prompts=16, max_prompts=128
    )
    cpu = start_plan(curve_cost(load_curve("cpu"), 24), rollouts=8, min_prompts=16, max_prompts=128)
    assert h200.prompts == 102 and h200.worst_ratio < 1.2 < 6 < h200.configured_ratio
    assert cpu.prompts == 18 and cpu.worst_ratio < 1.13
    assert "816 rows a step (102 prompts x 8 rollouts)" in h200.describe()
    assert "a shipped curve, curve h200 (LlamaForCausalLM (SmolLM2-135M" in h200.describe()


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"rollouts": 1}, "rollouts must be an int >= 2"),
        ({"min_prompts": 0}, "min_prompts must be an int >= 1"),
        ({"max_prompts": 2.5}, "max_prompts must be an int >= 1"),
        ({"min_prompts": 9, "max_prompts": 8}, "min_prompts 9 is above max_prompts 8"),
        ({"max_prompts": MAX_START_CANDIDATES + 1}, "set a smaller maximum"),
    ],
)
def test_bad_bounds_are_refused_by_name(changes: dict[str, object], said: str) -> None:
    args: dict[str, object] = {"rollouts": 4, "min_prompts": 1, "max_prompts": 8, **changes}
    with pytest.raises(ValueError, match=said):
        start_plan(LINEAR, **args)  # type: ignore[arg-type]


def test_a_cost_that_is_not_positive_is_refused_by_name() -> None:
    broken = linear_cost(0.0, 0.0, "datasheet", "a zero cost")
    with pytest.raises(ValueError, match=r"a zero cost\) gave 0.0 seconds at 4 rows"):
        start_plan(broken, rollouts=4, min_prompts=1, max_prompts=2)
