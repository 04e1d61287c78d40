"""The noise-scale fit (bench.real_rl.noise_fit): exact on steps that follow the law, censored
seeds kept, and withdrawn, with its reasons, where the data cannot carry it."""

from __future__ import annotations

import math
from typing import Any

import pytest

from frontier_rft.bench.real_rl.noise_fit import (
    law_exponent,
    noise_fit,
    slope_fit,
    steps_series,
)


def _data(steps: dict[int, list[float | None]], evals: int = 5) -> dict[int, dict[str, Any]]:
    return {
        n: {"times": t, "budgets": [100.0] * len(t), "evals_before": [evals] * len(t)}
        for n, t in steps.items()
    }


LAW = {128: 50.0, 256: 30.0, 512: 20.0, 1024: 15.0}
"""S = 10 (1 + 512 / N): S_min 10, N_noise 512."""


def test_steps_on_the_law_give_its_parameters() -> None:
    f = noise_fit(_data({n: [s] * 4 for n, s in LAW.items()}), resamples=50)
    assert f["withdrawn"] == []
    assert f["s_min"] == pytest.approx(10.0) and f["n_noise"] == pytest.approx(512.0)
    assert f["n_noise_ci"] == pytest.approx([512.0, 512.0])


def test_a_censored_seed_is_kept_in_the_median_not_dropped() -> None:
    # at N = 128 one of three seeds never reached within 100 steps: the median is 60, not 55
    steps = {n: [s] * 3 for n, s in LAW.items()}
    steps[128] = [50.0, 60.0, None]
    f = noise_fit(_data(steps), resamples=20)
    assert f["median_steps"][0] == 60.0 and f["reached"][0] == 2


@pytest.mark.parametrize(
    ("steps", "evals", "reason"),
    [
        ({128: [50.0, 40.0]}, 5, "1 row count(s)"),  # one N: the minimum-norm answer is no fit
        ({**{n: [s] * 3 for n, s in LAW.items()}, 2048: [None, None, 9.0]}, 5, "fewer than half"),
        ({n: [s] * 3 for n, s in LAW.items()}, 1, "within 2 evaluations"),
    ],
)
def test_a_fit_the_data_cannot_carry_is_withdrawn(
    steps: dict[int, list[float | None]], evals: int, reason: str
) -> None:
    f = noise_fit(_data(steps, evals), resamples=20)
    assert any(reason in why for why in f["withdrawn"])
    assert "n_noise" not in f  # no value, no interval beside it


def test_no_seed_reaching_anywhere_is_a_withdrawn_fit_not_an_index_error() -> None:
    f = noise_fit(_data({n: [None, None] for n in LAW}), resamples=20)
    assert f["median_steps"] == [None] * 4 and f["withdrawn"]
    assert noise_fit({}, resamples=5)["withdrawn"]


def test_an_undefined_noise_scale_gets_no_interval() -> None:
    # steps that fall faster than 1/N: the line's intercept is negative, N_noise undefined
    f = noise_fit(_data({128: [80.0], 256: [20.0], 512: [5.0], 1024: [1.0]}), resamples=20)
    assert f["n_noise"] is None and f["n_noise_ci"] is None
    assert any("does not fit" in why for why in f["withdrawn"])


def test_the_series_reads_the_report_rows_by_their_step_size() -> None:
    def device(mine: list[Any], base: list[Any]) -> dict[str, Any]:
        return {
            "time_half_steps": {"values": mine, "budgets": [9.0] * len(mine)},
            "base_time_half_steps": {"values": base, "budgets": [9.0] * len(base)},
            "evals_half_steps": [3] * len(mine),
            "base_evals_half_steps": [4] * len(base),
        }

    labels = {
        "uniform": {},
        "uniform-b32": {"device": device([2.0], [5.0])},
        "uniform-k32": {"device": device([3.0], [5.0])},
        "skip": {"device": device([1.0], [5.0])},
    }
    prompts = steps_series(labels, "prompts", 16, 8, "half")
    assert sorted(prompts) == [128, 256] and prompts[128]["times"] == [5.0]
    assert prompts[256]["evals_before"] == [3]
    assert sorted(steps_series(labels, "rollouts", 16, 8, "half")) == [128, 512]


def test_the_slope_of_steps_on_rows_by_hand() -> None:
    """40 steps at 100 rows and 20 at 400: log(1/2) / log(4) = -1/2, every resample alike; a
    row count whose median is undefined (two of three seeds never reached) gives none."""
    got = slope_fit(_data({100: [40.0] * 3, 400: [20.0] * 3}), resamples=30)
    assert got is not None
    assert got["slope"] == pytest.approx(-0.5) and got["ci"] == pytest.approx([-0.5, -0.5])
    assert slope_fit(_data({100: [40.0] * 3, 400: [20.0, None, None]}), resamples=5) is None


def test_the_slope_a_law_gives_by_hand() -> None:
    """S = (1 + 2 / N)^power through N = 1 and 2: 3 and 2 steps, slope log(2/3) / log(2) =
    -0.585 at power 1 and half that at power 1/2; no noise, no saving (slope 0)."""
    want = math.log(2 / 3) / math.log(2)
    assert law_exponent(2.0, [1, 2]) == pytest.approx(want)
    assert law_exponent(2.0, [2, 1], power=0.5) == pytest.approx(want / 2)
    assert law_exponent(0.0, [128, 1024]) == pytest.approx(0.0)
