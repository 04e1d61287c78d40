"""bench-rl's summary and effect checks on hand-built runs (no training): concentration
metrics, and frontier replay ratios that round to the same slot count flagged as equal."""

from __future__ import annotations

from typing import Any

import pytest

from frontier_rft.bench.real_rl.report import effect_checks, markdown_report, summarize_runs


def _run(pass1: list[float], ratio: float | None, distinct: float) -> dict[str, Any]:
    steps = [0, 2, 4]
    overrides = {} if ratio is None else {"replay_ratio": ratio}
    train = [
        {
            "train/effective_task_ratio": 0.5,
            "train/mean_abs_advantage": 0.4,
            "train/success_rate": 0.3,
            "perf/step_s": 1.0,
            "perf/step_cpu_s": 1.0,
            "perf/select_ms": 1.0,
            "train/rollouts": 128.0,
            "train/selected_level0_share": 0.25,
            "train/selected_level1_share": 0.75,
            "curriculum/tasks/distinct_trained": distinct,
        }
        for _ in range(4)
    ]
    final = {"eval/pass@1": pass1[-1], "eval/success_rate_level0": 0.5}
    return {
        "eval_steps": steps,
        "eval_rollouts": [128.0 * s for s in steps],
        "eval_seconds": [float(s) for s in steps],
        "pass1": pass1,
        "final": final,
        "train": train,
        "info": {"config": {"batch_size": 16, "selector_overrides": overrides}},
    }


def test_concentration_metrics_and_equal_replay_slots() -> None:
    runs = {
        "uniform": {s: _run([0.1, 0.2, 0.3], None, 300.0) for s in (0, 1)},
        "frontier": {s: _run([0.1, 0.25, 0.3], None, 310.0) for s in (0, 1)},
        "frontier-r0.05": {s: _run([0.1, 0.2, 0.3], 0.05, 320.0) for s in (0, 1)},
        "frontier-r0.15": {s: _run([0.1, 0.25, 0.3], 0.15, 310.0) for s in (0, 1)},
    }
    start = {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.6}}
    summary = summarize_runs(runs, start)
    row = summary["labels"]["frontier-r0.05"]
    assert row["distinct_trained"]["values"] == [320.0, 320.0]
    assert row["selected_level_share"]["1"]["mean"] == 0.75
    assert row["final_level_success"] == {"level0": row["final_level_success"]["level0"]}
    (check,) = [c for c in effect_checks(runs, summary) if "replay" in c["effect"]]
    # 16 x 0.05 = 0.8 -> 1, 16 x 0.10 = 1.6 -> 2, 16 x 0.15 = 2.4 -> 2.
    assert check["measured"]["replay_slots_per_batch"] == {
        "frontier-r0.05": 1,
        "frontier": 2,
        "frontier-r0.15": 2,
    }
    assert check["measured"]["ratios_with_equal_slots"] is True


def test_greso_in_dapo_is_measured_by_rollouts_against_dapo() -> None:
    dapo = _run([0.1, 0.2, 0.3], None, 300.0)
    dapo["eval_rollouts"] = [0.0, 1000.0, 2000.0]
    greso = _run([0.1, 0.25, 0.3], None, 250.0)
    greso["eval_rollouts"] = [0.0, 500.0, 1000.0]
    runs = {
        "uniform": {s: _run([0.1, 0.2, 0.3], None, 300.0) for s in (0, 1)},
        "dapo": {s: dapo for s in (0, 1)},
        "greso-dapo": {s: greso for s in (0, 1)},
    }
    summary = summarize_runs(runs, {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}})
    (check,) = [c for c in effect_checks(runs, summary) if "GRESO" in c["effect"]]
    m = check["measured"]
    # dapo's best 0.3 at 2000 rollouts; greso-dapo reaches it at 1000: TTB100 = 0.5.
    assert m["ttb100_rollouts"]["values"] == [0.5, 0.5]
    # 50% of dapo's gain (0.2): first evaluated at or above at 1000 rollouts for dapo, at 500
    # for greso-dapo (read at evaluation points, never interpolated).
    assert m["ttb50_rollouts"]["mean"] == 500.0 / 1000.0
    # Scored at 1000 rollouts, where both have a curve: 0.3 against dapo's 0.2.
    assert abs(m["pass1_at_equal_rollouts_minus_dapo"]["mean"] - 0.1) < 1e-12
    assert m["total_rollouts_ratio"]["values"] == [0.5, 0.5]
    assert check["reproduced"] is True
    assert check["detail"] == {"fewer_rollouts_to_dapo_best": True, "no_score_loss": True}
    # A greso-dapo that loses held-out score at equal rollouts does not reproduce the claim.
    worse = _run([0.1, 0.12, 0.15], None, 250.0)
    worse["eval_rollouts"] = [0.0, 1000.0, 1500.0]
    runs["greso-dapo"] = {0: worse, 1: dict(worse, pass1=[0.1, 0.1, 0.18])}
    (check,) = [c for c in effect_checks(runs, summary) if "GRESO" in c["effect"]]
    assert check["measured"]["pass1_at_equal_rollouts_minus_dapo"]["ci"][1] < 0
    assert check["reproduced"] is False


def test_allocation_is_measured_by_rollouts_against_uniform() -> None:
    """Pilot-Commit's claim on an allocation entry: uniform's best within 1/1.5 of its
    rollouts on every seed, with no score loss where both curves exist."""
    uniform = _run([0.1, 0.2, 0.3], None, 300.0)
    uniform["eval_rollouts"] = [0.0, 1000.0, 2000.0]
    lean = _run([0.1, 0.22, 0.3], None, 300.0)
    lean["eval_rollouts"] = [0.0, 600.0, 1200.0]
    runs = {
        "uniform": {s: uniform for s in (0, 1)},
        "greso-alloc-lean": {s: lean for s in (0, 1)},
    }
    summary = summarize_runs(runs, {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}})
    (check,) = [c for c in effect_checks(runs, summary) if "greso-alloc-lean" in c["effect"]]
    m = check["measured"]
    # uniform's best 0.3 at 2000 rollouts, the lean run's at 1200: TTB100 = 0.6 <= 1/1.5.
    assert m["ttb100_rollouts"]["values"] == [0.6, 0.6]
    # At 1200 rollouts (the smaller total): 0.3 against uniform's latest evaluation by then,
    # 0.2 at 1000 rollouts.
    assert abs(m["pass1_at_equal_rollouts_minus_uniform"]["mean"] - 0.1) < 1e-12
    assert m["total_rollouts_ratio"]["values"] == [0.6, 0.6]
    assert check["reproduced"] is True
    # One seed that never reaches uniform's best: not reproduced, whatever the other does.
    runs["greso-alloc-lean"] = {0: lean, 1: dict(lean, pass1=[0.1, 0.2, 0.25])}
    (check,) = [c for c in effect_checks(runs, summary) if "greso-alloc-lean" in c["effect"]]
    assert check["detail"]["reached_on_every_seed"] is False
    assert check["reproduced"] is False


def test_a_lean_allocation_is_measured_against_equal_groups_of_the_same_budget() -> None:
    """greso-alloc-lean against uniform-n4, where both have a curve (the smaller total)."""
    uniform = _run([0.1, 0.2, 0.3], None, 300.0)
    uniform["eval_rollouts"] = [0.0, 1000.0, 2000.0]
    lean = _run([0.1, 0.22, 0.3], None, 300.0)
    lean["eval_rollouts"] = [0.0, 600.0, 1200.0]
    n4 = _run([0.1, 0.15, 0.2], None, 300.0)
    n4["eval_rollouts"] = [0.0, 500.0, 1000.0]
    runs = {
        "uniform": {s: uniform for s in (0, 1)},
        "greso-alloc-lean": {0: lean, 1: dict(lean, pass1=[0.1, 0.21, 0.28])},
        "uniform-n4": {s: n4 for s in (0, 1)},
    }
    summary = summarize_runs(runs, {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}})
    (check,) = [c for c in effect_checks(runs, summary) if "scores above uniform-n4" in c["effect"]]
    m = check["measured"]
    # At 1000 rollouts: each lean run's latest evaluation by then (at 600), seed 0 0.22 and
    # seed 1 0.21; uniform-n4 0.2 on both.
    delta = m["pass1_at_equal_rollouts_minus_control"]
    assert abs(delta["mean"] - (0.02 + 0.01) / 2) < 1e-9
    assert m["total_rollouts_ratio"]["values"] == [1.2, 1.2]
    assert check["reproduced"] is True


def _dapo_run(pass1: list[float], rolled: float, trained: float | None) -> dict[str, Any]:
    """A run that spends 3x uniform's rollouts a step and drops surplus mixed groups."""
    run = _run(pass1, None, rolled)
    run["eval_rollouts"] = [384.0 * s for s in run["eval_steps"]]
    for row in run["train"]:
        row.update(
            {"train/rollouts": 384.0, "train/groups_trained": 16.0},
            **{"curriculum/dapo/overflow_dropped": 16.0, "curriculum/dapo/stale_dropped": 0.0},
        )
        if trained is not None:
            row["train/distinct_prompts_trained"] = trained
    return run


def test_distinct_prompts_trained_counts_only_groups_that_reached_the_loss() -> None:
    """The selector's count includes mixed groups dynamic sampling dropped untrained: the
    trainer's count is used where logged, the selector's where nothing was dropped, and
    neither is guessed where groups were dropped and the record has no trainer count."""
    runs = {
        "uniform": {s: _run([0.1, 0.2, 0.3], None, 300.0) for s in (0, 1)},
        "dapo": {s: _dapo_run([0.1, 0.25, 0.3], 420.0, None) for s in (0, 1)},
        "greso-dapo": {s: _dapo_run([0.1, 0.25, 0.3], 360.0, 330.0) for s in (0, 1)},
    }
    summary = summarize_runs(runs, {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}})
    rows = summary["labels"]
    assert rows["uniform"]["distinct_trained"]["mean"] == 300.0
    assert rows["uniform"]["distinct_trained_source"] == ["nothing dropped"]
    assert rows["dapo"]["distinct_trained"]["mean"] is None
    assert rows["dapo"]["distinct_trained_source"] == ["not recorded"]
    assert rows["dapo"]["distinct_mixed"]["mean"] == 420.0
    assert rows["dapo"]["mixed_dropped_share"]["mean"] == 0.2  # 16 dropped, 4 x 16 trained
    assert rows["greso-dapo"]["distinct_trained"]["mean"] == 330.0
    # No mixed group rolled out at all (a policy that never solves): no share, no error.
    for row in runs["greso-dapo"][0]["train"]:
        row.update({"train/groups_trained": 0.0, "curriculum/dapo/overflow_dropped": 0.0})
    again = summarize_runs(runs, {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}})
    assert again["labels"]["greso-dapo"]["mixed_dropped_share"]["values"] == [0.2]  # seed 1
    page = markdown_report(summary, [], list(runs), "# page")
    assert "| not recorded |" in page and "| 420 [420, 420] |" in page
    assert "dapo: dropped 20% of the mixed groups it rolled out untrained" in page


def test_entries_that_spend_more_a_step_are_read_by_rollouts_first() -> None:
    """dapo's TTB by steps (3x the rollouts a step) hides its spend: the page puts the
    table by rollouts first, scores the end at equal rollouts beside the end at equal
    steps, and says on how many seeds a difference rests where they disagree."""
    runs = {
        "uniform": {s: _run([0.1, 0.2, 0.3], None, 300.0) for s in (0, 1)},
        "dapo": {
            0: _dapo_run([0.1, 0.3, 0.35], 420.0, None),
            1: _dapo_run([0.1, 0.3, 0.25], 420.0, None),
        },
    }
    summary = summarize_runs(runs, {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}})
    row = summary["labels"]["dapo"]
    # Uniform's 50% target 0.2 first evaluated at step 2 (256 rollouts); dapo's too (768).
    assert row["ttb50"]["values"] == pytest.approx([1.0, 1.0])
    assert row["ttb50_rollouts"]["values"] == pytest.approx([3.0, 3.0])
    # By rollouts, BSF100 looks within uniform's 512 rollouts: dapo's next evaluation is at
    # 768, so its best evaluation within them is its start, 0.1 (none is interpolated).
    assert abs(row["bsf100_rollouts"]["values"][0] - 0.1 / 0.3) < 1e-9
    # At equal rollouts (512): dapo's latest evaluation by then, 0.1, against uniform's 0.3.
    assert abs(row["pass1_minus_uniform_equal_rollouts"]["mean"] - (0.1 - 0.3)) < 1e-9
    page = markdown_report(summary, [], list(runs), "# page")
    by_rollouts, by_steps = page.index("### By cumulative rollouts"), page.index("### By training")
    assert by_rollouts < by_steps
    assert "dapo 3.00x" in page
    assert "pass@1 − uniform at equal rollouts" in page
    assert "0.000 [-0.050, 0.050] (1/2 above)" in page  # +0.05 and -0.05 at each end


def test_bsf_by_steps_of_a_longer_run_is_labelled_as_scored_at_uniforms_end() -> None:
    """A run of twice uniform's steps at half its rollouts a step: BSF by steps stops at
    uniform's last step, and the page says so; by rollouts, uniform's total is its end."""
    long = _run([0.1, 0.15, 0.2, 0.25, 0.35], None, 300.0)
    long["eval_steps"] = [0, 2, 4, 6, 8]
    long["eval_rollouts"] = [64.0 * s for s in long["eval_steps"]]
    long["eval_seconds"] = [float(s) for s in long["eval_steps"]]
    long["train"] = [dict(long["train"][0], **{"train/rollouts": 64.0}) for _ in range(8)]
    runs = {"uniform": {0: _run([0.1, 0.2, 0.3], None, 300.0)}, "n4-long": {0: long}}
    summary = summarize_runs(runs, {"0": {"zero_variance": 0.5}})
    row = summary["labels"]["n4-long"]
    assert row["bsf100"]["values"] == [0.2 / 0.3]  # by step 4 of its 8
    assert abs(row["bsf100_rollouts"]["values"][0] - 0.35 / 0.3) < 1e-9  # its end
    page = markdown_report(summary, [], list(runs), "# page")
    assert "n4-long run longer, so their BSF100 here is scored at step 4, not at their end" in page


def test_the_effects_are_a_table_on_entries_the_testbed_runs() -> None:
    """Each effect is a row of data: the entries it needs exist, and its measurement and
    comparisons are ones the evaluator knows."""
    from frontier_rft.bench.real_rl.effects import COMPARISONS, EFFECTS
    from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES
    from frontier_rft.bench.real_rl.report import MEASUREMENTS

    known = {e.label for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES)}
    for effect in EFFECTS:
        assert effect.measure in MEASUREMENTS and effect.conditions, effect.claim
        assert all(c.op in COMPARISONS for c in effect.conditions), effect.claim
        for binding in effect.each:
            assert {n.format(**binding) for n in effect.needs} <= known, effect.claim


def test_a_condition_reads_every_child_and_takes_its_default_where_undefined() -> None:
    from frontier_rft.bench.real_rl.effects import Condition, holds

    every = Condition("each", "ttb.*.ci.1", "<", 1.0)
    assert holds(every, {"ttb": {"a": {"ci": [0.5, 0.9]}, "b": {"ci": [0.5, 0.95]}}})
    assert not holds(every, {"ttb": {"a": {"ci": [0.5, 0.9]}, "b": {"ci": None}}})
    assert holds(Condition("x", "d.ci.1", "not <", 0, if_missing=True), {"d": {"ci": None}})
    assert not holds(Condition("x", "a", ">", "b"), {"a": float("nan"), "b": 1.0})
    assert holds(Condition("x", "a", ">=", "b"), {"a": 2.0, "b": 2.0})
    assert not holds(Condition("x", "a", ">=", "b"), {"a": 2.0})  # no threshold: undefined


def test_the_schedule_table_reports_the_largest_pass_at_k_the_testbed_scores() -> None:
    """SmolLM2's testbed scores pass@1 and pass@4: the schedule table's pass@k column and
    its target read pass@4, not a pass@8 that no run has (which would make every target 'no')."""

    def scored(rollouts: float) -> dict[str, Any]:
        run = _run([0.1, 0.2, 0.3], None, 300.0)
        run["final"]["eval/pass@4"] = 0.5
        run["train"] = [dict(t, **{"train/rollouts": rollouts}) for t in run["train"]]
        run["eval_rollouts"] = [rollouts / 2 * s for s in run["eval_steps"]]
        return run

    runs = {
        "uniform": {s: scored(128.0) for s in (0, 1)},
        "lean": {s: scored(64.0) for s in (0, 1)},
    }
    summary = summarize_runs(runs, {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}})
    page = markdown_report(summary, [], list(runs), "# page")
    assert "| final pass@1 | final pass@4 |" in page and "pass@4 − uniform |" in page
    assert "pass@8" not in page
    lean = next(line for line in page.splitlines() if line.startswith("| lean | 4 [4, 4] | 0.50"))
    assert lean.endswith("| yes |")  # 0.5x the rollouts, pass@1 and pass@4 level
