"""Projected seconds of a logged run, and the costs in each device's currency, by hand."""

from __future__ import annotations

from typing import Any

import pytest

from frontier_rft.bench.real_rl.device_report import device_comparison, device_table, readings
from frontier_rft.bench.real_rl.device_seconds import projected_seconds, step_shape
from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES
from frontier_rft.bench.real_rl.ledger import run_curves
from frontier_rft.bench.real_rl.schedule import check_one_schedule, on_schedule
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


def _run(
    steps: list[int], pass1: list[float], prompts: int, grid: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A run of `steps[-1]` steps of `prompts` prompts x 8 on a pool of 512, evaluated at
    `steps` (and on `grid`, as its config says)."""
    rows = [
        {
            "step": s,
            "train/reward_mean": 0.5,
            "train/prompts": float(prompts),
            "train/rollouts": 8.0 * prompts,
            "perf/step_s": 1.0,
        }
        for s in range(1, steps[-1] + 1)
    ]
    return {
        "eval_steps": steps,
        "eval_rollouts": [8.0 * prompts * s for s in steps],
        "pass1": pass1,
        "passk": {"eval/pass@8": [p + 0.1 for p in pass1]},
        "train": rows,
        "info": {"train_tasks": 512, "config": {"max_new_tokens": 24, "eval_grid": list(grid)}},
    }


def test_costs_to_a_named_target_and_scores_at_equal_cost_by_hand() -> None:
    base = _run([0, 4, 8], [0.1, 0.2, 0.3], 16)
    mine = _run([0, 2, 4], [0.1, 0.3, 0.4], 32)  # twice the prompts a step
    c = device_comparison({0: mine}, {0: base}, [0])
    # plateau: uniform's last quarter of 3 evaluations is its last, 0.3; half: 0.2.
    # By steps mine reaches 0.3 at step 2, uniform at 8; 0.2 at 2 against 4.
    assert c["to_plateau_steps"]["ratio"] == pytest.approx(2 / 8)
    assert c["to_half_steps"]["ratio"] == pytest.approx(2 / 4)
    assert c["time_plateau_steps"]["values"] == [2.0]
    assert c["base_time_plateau_steps"]["values"] == [8.0]
    # By rollouts and passes both are read at 512 and 1,024 rollouts (1/8, 1/4 pass): 0.5
    assert c["to_plateau_rollouts"]["ratio"] == pytest.approx(512 / 1024)
    assert c["to_plateau_passes"]["ratio"] == pytest.approx(0.125 / 0.25)
    assert c["read"]["passes"] == ["evaluations"]
    # equal cost: both end at 1,024 rollouts: 0.4 against 0.3, never interpolated
    assert c["equal_rollouts_pass1"]["mean"] == pytest.approx(0.1)
    assert c["equal_passes_pass@8"]["mean"] == pytest.approx(0.1)
    assert c["equal_rollouts_last_quarter"]["mean"] == pytest.approx(0.1)
    never = _run([0, 2, 4], [0.1, 0.15, 0.2], 32)
    never["made_by"] = {"commit": "a" * 40, "machine": "m"}  # timed in another bench run
    base["made_by"] = {"commit": "b" * 40, "machine": "m"}
    c = device_comparison({0: never}, {0: base}, [0])
    assert c["to_plateau_steps"]["ratio"] is None and c["to_plateau_steps"]["reached"] == 0
    assert c["time_plateau_steps"]["values"] == [None]
    assert c["time_plateau_steps"]["budgets"] == [4.0]  # censored at its budget
    assert c["time_plateau_steps"]["mean"] is None  # never a mean of those that reached
    table = device_table({"mine": c}, "uniform")
    assert table[2].startswith("| mine (1 seeds) | 256 |") and "(0/1 reached)" in table[2]
    assert "not timed side by side" in table[2]


def test_a_grid_run_is_read_at_its_points_by_the_state_that_held_there() -> None:
    grid = ("passes:0.125",)
    base = _run([0, 4, 8], [0.1, 0.2, 0.3], 16, grid)  # 1/32 of a pass a step: every 4
    mine = _run([0, 2, 4], [0.1, 0.3, 0.4], 32, grid)  # 1/16: every 2
    positions, scores, how = readings(mine, "passes")
    assert (positions, scores, how) == ([0.0, 0.125, 0.25], [0.1, 0.3, 0.4], "grid")
    c = device_comparison({0: mine}, {0: base}, [0])
    assert c["read"]["passes"] == ["grid"] and c["read"]["h200"] == ["evaluations"]
    assert c["to_plateau_passes"]["ratio"] == pytest.approx(0.5)
    gap = _run([0, 4], [0.1, 0.4], 32, grid)  # state 2 holds at 1/8 of a pass: not evaluated
    with pytest.raises(ValueError, match="not evaluated at the states its points need"):
        readings(gap, "passes")


def test_a_report_refuses_arms_on_different_schedules() -> None:
    every8 = {"info": {"config": {"eval_every": 8}}}
    every4 = {"info": {"config": {"eval_every": 4}}}
    assert check_one_schedule({"a": {0: every4}, "b": {0: every4}}).words() == "every 4 steps"
    with pytest.raises(ValueError) as err:
        check_one_schedule({"uniform": {0: every8}, "uniform-b32": {0: every4}})
    text = str(err.value)
    assert "uniform: every 8 steps" in text and "uniform-b32: every 4 steps" in text
    assert "--eval-every 4" in text


def test_one_schedule_leaves_an_entry_on_the_testbeds_own_with_its_digest() -> None:
    tb = make_testbed("fast-format-lr4")  # evaluates every 8 steps
    by = {e.label: e for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES)}
    uniform, b32 = by["uniform"], by["uniform-b32"]  # b32 evaluates every 4 itself
    same = on_schedule([uniform, b32], tb, every=8)
    assert same[0] is uniform and "eval_every" not in same[1].own_train()
    four = on_schedule([uniform, b32], tb, every=4, grid=["h200:4"])
    assert four[0].own_train()["eval_every"] == 4
    assert four[1].own_train()["eval_grid"] == ("h200:4",)
    with pytest.raises(ValueError, match="did you mean 'h200'"):
        on_schedule([uniform], tb, grid=["h20:4"])


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


def test_a_reports_command_names_its_schedule_so_it_rebuilds_on_it() -> None:
    import argparse

    from frontier_rft.cli.bench_rl import _command

    args = argparse.Namespace(
        seeds=[0, 1], selectors="uniform", scale="fast-format-lr4", effects=False,
        eval_every=0, eval_grid=("h200:4", "passes:1"),
    )  # fmt: skip
    assert _command(args).endswith("--eval-every 0 --eval-grid h200:4,passes:1 --no-effects")
    assert "--eval" not in _command(argparse.Namespace(seeds=[0], effects=True))


def test_the_learner_line_names_the_reports_schedule_not_the_testbeds() -> None:
    from frontier_rft.bench.real_rl.schedule import Schedule
    from frontier_rft.bench.real_rl.testbed import learner_line

    tb = make_testbed("standard")  # evaluates every 30 steps unless a report overrides it
    assert learner_line(tb).endswith("144 tasks x 8 samples every 30 steps.  ")
    assert learner_line(tb, Schedule(4, ()).words()).endswith(
        "144 tasks x 8 samples every 4 steps.  "
    )
    grid = Schedule(0, ("h200:4", "passes:1")).words()
    assert learner_line(tb, grid).endswith(f"samples {grid}.  ")
    assert "every 30 steps" not in learner_line(tb, grid)
