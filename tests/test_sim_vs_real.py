"""The simulator against real RL (frontier_rft.bench.simulation.vs_real): how a simulated difference
is classed, and the run noise it adds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from frontier_rft.bench.simulation import vs_real as svr
from frontier_rft.simulation.scenario import SCENARIOS

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def test_a_clear_difference_is_classed_by_its_sign() -> None:
    base = [0.30, 0.32, 0.31, 0.29, 0.33]
    up = [b + 0.10 for b in base]
    down = [b - 0.10 for b in base]
    assert svr.sim_class(up, base, 512, "x", 0.0) == "helps"
    assert svr.sim_class(down, base, 512, "x", 0.0) == "hurts"
    assert svr.sim_class(base, base, 512, "x", 0.023) == "noise"


def test_a_run_s_own_noise_turns_a_small_difference_into_noise() -> None:
    """+0.02 on every seed: the evaluation's noise alone (SD ~0.02 per paired difference,
    ~0.009 for a mean of 5) leaves the CI above 0; a run's training noise of 0.023 on each
    side widens it past 0."""
    base = [0.30, 0.32, 0.31, 0.29, 0.33]
    small = [b + 0.02 for b in base]
    assert svr.sim_class(small, base, 512, "x", 0.0) == "helps"
    assert svr.sim_class(small, base, 512, "x", 0.023) == "noise"


def test_training_noise_is_uniform_s_real_variance_less_what_else_explains_it() -> None:
    doc = json.loads((RESULTS / "real_rl_gpu_full.json").read_text(encoding="utf-8"))
    finals = np.asarray(doc["summary"]["labels"]["uniform"]["final"]["eval/pass@1"]["values"])
    p = finals.mean()
    noise = svr.training_noise(SCENARIOS["small-pool"])
    assert noise["binomial_sd"] == pytest.approx(math.sqrt(p * (1 - p) / (144 * 8)))
    assert noise["real_uniform_sd"] == pytest.approx(finals.std(ddof=1))
    assert noise["run_sd"] ** 2 == pytest.approx(
        noise["real_uniform_sd"] ** 2 - noise["binomial_sd"] ** 2 - noise["sim_uniform_sd"] ** 2
    )
    committed = json.loads((RESULTS / "sim_vs_real.json").read_text(encoding="utf-8"))
    assert committed["training_noise"] == pytest.approx(noise)


def test_report_seeds_never_include_the_fit_seeds() -> None:
    assert svr.parse_seeds("5-9") == (5, 6, 7, 8, 9)
    assert svr.parse_seeds("3,11") == (3, 11)
    for bad in ("99-101", "x", "4", "-3-2"):
        with pytest.raises(ValueError, match="--seeds"):
            svr.parse_seeds(bad)


def test_the_committed_comparison_counts_its_own_rows() -> None:
    doc = json.loads((RESULTS / "sim_vs_real.json").read_text(encoding="utf-8"))
    for pool, rows in doc["pools"].items():
        others = [r for n, r in rows.items() if n != "uniform"]
        agree = sum(r["sim_class"] == r["real_class"] for r in others) / len(others)
        assert doc["agreement"][pool]["sign_agreement"] == pytest.approx(agree)
        assert len(rows) >= 8
