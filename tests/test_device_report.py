"""Projected seconds of a logged run, and the costs in each device's currency, by hand."""

from __future__ import annotations

from typing import Any

import pytest

from frontier_rft.bench.real_rl.device_report import device_comparison, device_table
from frontier_rft.bench.real_rl.device_seconds import projected_seconds, step_shape
from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES
from frontier_rft.bench.real_rl.ledger import run_curves
from frontier_rft.bench.real_rl.testbed import testbed as make_testbed
from frontier_rft.step_cost import StepShape, load_curve


def test_a_logged_step_splits_its_rollouts_over_its_rounds() -> None:
    row = {"train/rollouts": 130.0, "train/sampling_rounds": 3.0, "train/trained_rows": 128.0}
    assert step_shape(row, 24) == StepShape((44, 43, 43), 24, 128)
    # an older record without the columns: one call, every row trained
    assert step_shape({"train/rollouts": 128.0}, 24) == StepShape((128,), 24, 128)


def test_a_wraps_rollouts_are_costed_where_its_class_generates_them() -> None:
    row = {"train/rollouts": 140.0, "train/sampling_rounds": 1.0, "train/trained_rows": 120.0}
    # rescue: a call of its own after the sampler's
    assert step_shape({**row, "rescue/rollouts": 36.0}, 24).calls == (104, 36)
    assert step_shape({**row, "rescue/rollouts": 0.0}, 24).calls == (140,)
    # hard_groups: more rows of the first call, the sampler's own split over its rounds
    two = {**row, "train/sampling_rounds": 2.0, "hard_groups/rollouts": 32.0}
    assert step_shape(two, 24).calls == (86, 54)
    both = {**two, "rescue/rollouts": 16.0}
    assert step_shape(both, 24).calls == (78, 46, 16)
    # backfill replays groups: nothing generated, whatever its metrics say
    assert step_shape({**row, "backfill/rollouts": 50.0}, 24).calls == (140,)


def test_projected_seconds_cost_each_step_on_the_curve() -> None:
    h200 = load_curve("h200")
    train = [
        {"train/rollouts": 128.0, "train/sampling_rounds": 1.0, "train/trained_rows": 128.0},
        {"train/rollouts": 384.0, "train/sampling_rounds": 2.0, "train/trained_rows": 128.0},
    ]
    info = {"config": {"max_new_tokens": 24}}
    first = h200.seconds(128, 24, "generate_s") + h200.seconds(128, 24, "update_s")
    second = 2 * h200.seconds(192, 24, "generate_s") + h200.seconds(128, 24, "update_s")
    got = projected_seconds(train, info, "h200")
    assert got == pytest.approx([0.0, first, first + second])


def _run(steps: list[int], pass1: list[float], seconds: list[float]) -> dict[str, Any]:
    rows = [
        {"step": s, "train/reward_mean": 0.5, "train/rollouts": 128.0, "perf/step_s": 1.0}
        for s in range(1, steps[-1] + 1)
    ]
    run = {
        "eval_steps": steps,
        "eval_rollouts": [128.0 * s for s in steps],
        "eval_cpu_seconds": seconds,
        "eval_projected_h200": seconds,
        "eval_projected_cpu": seconds,
        "pass1": pass1,
        "passk": {"eval/pass@8": [p + 0.1 for p in pass1]},
        "train": rows,
    }
    return run


def test_cost_to_the_baselines_final_score_and_scores_at_equal_seconds_by_hand() -> None:
    base = _run([0, 4, 8], [0.1, 0.2, 0.3], [0.0, 4.0, 8.0])
    mine = _run([0, 2, 4], [0.1, 0.3, 0.4], [0.0, 1.0, 2.0])
    c = device_comparison({0: mine}, {0: base}, [0])
    # uniform reaches its final 0.3 at step 8 (8 s); mine at step 2 (1 s)
    assert c["to_final_steps"]["values"] == [pytest.approx(2 / 8)]
    assert c["to_final_h200_projected_s"]["values"] == [pytest.approx(1 / 8)]
    assert c["steps_to_final"]["values"] == [2.0]
    assert c["base_steps_to_final"]["values"] == [8.0]
    # equal seconds: the smaller total, 2 s: mine 0.4, uniform 0.1 + 0.1 * 2 / 4 = 0.15
    assert c["equal_h200_pass1"]["mean"] == pytest.approx(0.4 - 0.15)
    assert c["equal_h200_pass@8"]["mean"] == pytest.approx(0.25)
    # last quarter: pass@1 at 1.5, 5/3, 11/6 and 2 s, each arm
    mine_q = [0.3 + 0.1 * (t - 1.0) for t in (1.5, 5 / 3, 11 / 6, 2.0)]
    base_q = [0.1 + 0.025 * t for t in (1.5, 5 / 3, 11 / 6, 2.0)]
    assert c["equal_h200_last_quarter"]["mean"] == pytest.approx(sum(mine_q) / 4 - sum(base_q) / 4)
    never = _run([0, 2, 4], [0.1, 0.15, 0.2], [0.0, 1.0, 2.0])
    c = device_comparison({0: never}, {0: base}, [0])
    assert c["to_final_steps"]["mean"] is None and c["to_final_steps"]["reached"] == 0
    table = device_table({"mine": c}, "uniform")
    assert table[2].startswith("| mine (1 seeds) | 128 |") and "0/1 reached" in table[2]


def test_run_curves_carry_projected_seconds_and_pass_at_k() -> None:
    rows = [
        {"step": 0, "eval/pass@1": 0.1, "eval/pass@8": 0.3},
        {
            "step": 1,
            "train/reward_mean": 0.5,
            "train/rollouts": 128.0,
            "perf/step_s": 2.0,
            "perf/step_cpu_s": 1.5,
        },
        {"step": 1, "eval/pass@1": 0.2, "eval/pass@8": 0.4},
    ]
    run = run_curves(rows, {"config": {"max_new_tokens": 24}})
    assert run["eval_cpu_seconds"] == [0.0, 1.5]
    assert run["passk"] == {"eval/pass@8": [0.3, 0.4]}
    h200 = load_curve("h200").step_seconds(StepShape((128,), 24, 128))
    assert run["eval_projected_h200"] == pytest.approx([0.0, h200])


def test_the_step_size_entries_run_the_rows_they_name() -> None:
    tb = make_testbed("fast-format-lr4")
    by = {e.label: e for e in EFFECT_ENTRIES}
    rows = {}
    for label in ("uniform-b32", "uniform-b64", "uniform-b128", "uniform-k32", "pcl-b64"):
        c = tb.run_config(by[label], 0)
        rows[label] = c.batch_size * c.group_size
    assert rows == {
        "uniform-b32": 256,
        "uniform-b64": 512,
        "uniform-b128": 1024,
        "uniform-k32": 512,
        "pcl-b64": 512,
    }
    onecall = tb.run_config(by["dapo-onecall"], 0)
    assert onecall.sampler == "dynamic_sampling"
    assert onecall.sampler_config["max_rounds"] == 1 and onecall.sampler_config["adaptive"]
    assert by["dapo-onecall"].rows_of == "uniform-b48"
    assert by["pcl-b64"].rows_of == "uniform-b64"
    # recorded only when set: an entry without them keeps its definition's keys
    assert "batch_size" not in by["skip-kept"].own_train()
    assert by["uniform-b64"].own_train()["batch_size"] == 64
