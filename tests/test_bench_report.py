"""bench-rl's summary and effect checks on hand-built runs (no training): concentration
metrics, and frontier replay ratios that round to the same slot count flagged as equal."""

from __future__ import annotations

from typing import Any

from frontier_rft.bench.real_rl_report import effect_checks, summarize_runs


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
    # 50% of dapo's gain (0.2) at 1000 rollouts for dapo, at 500 x (0.1/0.15) for greso-dapo.
    assert m["ttb50_rollouts"]["mean"] == 500.0 * (0.1 / 0.15) / 1000.0
    # Scored at 1000 rollouts, where both have a curve: 0.3 against dapo's 0.2.
    assert abs(m["pass1_at_equal_rollouts_minus_dapo"]["mean"] - 0.1) < 1e-12
    assert m["total_rollouts_ratio"]["values"] == [0.5, 0.5]
    assert check["reproduced"] is True
    assert check["detail"] == {"fewer_rollouts_to_dapo_best": True, "no_score_loss": True}
    # A greso-dapo that loses held-out score at equal rollouts does not reproduce the claim.
    worse = _run([0.1, 0.12, 0.2], None, 250.0)
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
    # At 1200 rollouts (the smaller total): 0.3 against uniform's 0.2 + 0.2 x 0.1 = 0.22.
    assert abs(m["pass1_at_equal_rollouts_minus_uniform"]["mean"] - 0.08) < 1e-12
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
        "greso-alloc-lean": {0: lean, 1: dict(lean, pass1=[0.1, 0.2, 0.28])},
        "uniform-n4": {s: n4 for s in (0, 1)},
    }
    summary = summarize_runs(runs, {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}})
    (check,) = [c for c in effect_checks(runs, summary) if "scores above uniform-n4" in c["effect"]]
    m = check["measured"]
    # At 1000 rollouts: seed 0 0.22 + 0.08 x 400/600 = 0.2733, seed 1 0.2 + 0.08 x 400/600
    # = 0.2533; uniform-n4 0.2 on both.
    delta = m["pass1_at_equal_rollouts_minus_control"]
    assert abs(delta["mean"] - (0.0733333 + 0.0533333) / 2) < 1e-6
    assert m["total_rollouts_ratio"]["values"] == [1.2, 1.2]
    assert check["reproduced"] is True
