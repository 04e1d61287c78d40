"""The simulator runs fewer rollouts on uniform's schedule as the trainer does: entries with
the TrainConfig spelling (rollouts: kept, screen: k), the same steps as uniform, every
rollout counted (screened ones included), on a pool with known solved, unsolvable and mixed
prompts (the simulated policy's rollouts scripted: counts exact)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from frontier_rft import make_selector
from frontier_rft.bench.simulation.benchmark import run_benchmark
from frontier_rft.cli.main import main
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.simulation import SimulatedLearner, get_scenario
from frontier_rft.simulation.runner import Entry, RunSpec, given_pool, run_one, sampler_spec

N_TASKS, B, N, K = 64, 8, 8, 2
STEPS = 4 * N_TASKS // B  # four of uniform's epochs
SCENARIO = get_scenario("hard", num_tasks=N_TASKS)


def scripted(ids: np.ndarray, n: Any) -> np.ndarray:
    """id % 4: 0 always solved, 1 never, 2 and 3 mixed (1, 0, 1, 0, ...: any first k mixed)."""
    sizes = np.broadcast_to(np.asarray(n), ids.shape).tolist()
    out = [
        np.ones(s) if t % 4 == 0 else np.zeros(s) if t % 4 == 1 else (np.arange(s) % 2 == 0) * 1.0
        for t, s in zip(ids.tolist(), sizes, strict=True)
    ]
    return np.concatenate(out)


@pytest.fixture(autouse=True)
def known_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SimulatedLearner, "rollout", lambda self, ids, n: scripted(ids, n))


def simulate(name: str, fewer: dict[str, Any] | None = None) -> dict[str, Any]:
    entry = Entry(name, name, sampler=sampler_spec(fewer_rollouts=fewer))
    return run_one(RunSpec(SCENARIO, entry, seed=0, steps=STEPS, batch=B, rollouts=N))


def test_the_same_steps_as_uniform_with_exact_rollout_counts() -> None:
    uniform = simulate("uniform")
    assert len(uniform["rollouts"]) == STEPS and sum(uniform["rollouts"]) == STEPS * B * N
    # uniform screened with k = 2: every prompt k, the mixed half the other n - k, each epoch
    screened = simulate("uniform", {"screen": K})
    assert len(screened["rollouts"]) == STEPS
    assert sum(screened["rollouts"]) == 4 * (N_TASKS * K + N_TASKS // 2 * (N - K))  # 1,280
    # uniform's window holds every prompt: kept is uniform, rollout for rollout
    assert simulate("uniform", {"rollouts": "kept"})["rollouts"] == uniform["rollouts"]
    # greso's skip in uniform's window: the trainer's sampler, driven directly, spends the same
    kept = simulate("greso", {"rollouts": "kept"})
    learner = SimulatedLearner(SCENARIO, seed=0)
    sampler = FewerRollouts(make_selector("greso", given_pool(learner, ("prompts",)), seed=0))

    def rollout(ids: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
        return learner.rollout(ids, N if counts is None else counts)

    direct = [sampler.sample(t, B, N, rollout).rollouts for t in range(STEPS)]
    assert kept["rollouts"] == direct and len(direct) == STEPS
    assert sum(direct[: N_TASKS // B]) == N_TASKS * N  # nothing skipped in the first epoch
    assert sum(direct) < 0.8 * STEPS * B * N  # half the pool solved or unsolvable
    both = simulate("greso", {"rollouts": "kept", "screen": K})
    assert sum(both["rollouts"]) < min(sum(direct), sum(screened["rollouts"]))
    assert both["fewer_rollouts"] == {"rollouts": "kept", "screen": K}


def test_the_summary_reports_rollouts_as_a_share_of_uniforms_and_the_final_score() -> None:
    entries = [
        Entry("uniform-screen2", "uniform", sampler=sampler_spec(fewer_rollouts={"screen": K}))
    ]
    res = run_benchmark(SCENARIO, entries, seeds=[0, 1], steps=STEPS, batch=B, rollouts=N, jobs=1)
    summary = res["summary"]
    assert summary["uniform"]["rollouts_vs_baseline"]["mean"] == 1.0
    share = summary["uniform-screen2"]["rollouts_vs_baseline"]["mean"]
    assert share == pytest.approx((N_TASKS * K + N_TASKS // 2 * (N - K)) / (N_TASKS * N))  # 5/8
    assert summary["uniform-screen2"]["rollouts_total"]["mean"] == 4 * 320
    assert summary["uniform-screen2"]["final_score"]["mean"] is not None


@pytest.mark.parametrize(
    ("fewer", "message"),
    [
        ({"rollouts": "some"}, "rollouts must be one of ('full', 'kept'), got 'some'"),
        ({"screen": 1}, "screen must be 0 (off) or a number of screening rollouts >= 2"),
        ({"rollout": "kept"}, "takes rollouts, screen, loss_scale; got ['rollout']"),
        ({"rollouts": "full"}, "rollouts full without screening is uniform's step"),
    ],
)
def test_bad_fewer_rollouts_fields_are_named(fewer: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^fewer_rollouts.*{re.escape(message)}"):
        sampler_spec(fewer_rollouts=fewer)
    with pytest.raises(ValueError, match="dynamic_sampling and fewer_rollouts do not combine"):
        sampler_spec(dynamic_sampling="fixed", fewer_rollouts={"screen": 2})


def test_refused_before_any_run_where_the_trainer_refuses() -> None:
    bots = Entry("bots-kept", "bots", sampler=sampler_spec(fewer_rollouts={"rollouts": "kept"}))
    with pytest.raises(ValueError, match="'bots' does not walk the data"):
        run_benchmark(SCENARIO, [bots], seeds=[0], steps=2, batch=B, rollouts=N, jobs=1)
    wide = Entry("screen8", "uniform", sampler=sampler_spec(fewer_rollouts={"screen": N}))
    with pytest.raises(ValueError, match="screen 8 must be below group_size 8"):
        run_benchmark(SCENARIO, [wide], seeds=[0], steps=2, batch=B, rollouts=N, jobs=1)
    assert FewerRolloutsConfig(screen=K).skip  # (the trainer's default: the skip on)


def test_frontier_compare_prints_rollouts_and_final_score(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["compare", "--scenario", "hard", "--scenario-set", f"num_tasks={N_TASKS}",
         "--selectors", "uniform", "--fewer-rollouts", f"screen={K}", "--steps", str(STEPS),
         "--batch", str(B), "--rollouts", str(N), "--seeds", "1", "--jobs", "1",
         "--out", str(tmp_path / "out")]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert f"Rollouts generated in the same {STEPS} steps (mean over seeds):" in out
    assert "| uniform-screen2 | 0.625 |" in out


def test_frontier_simulate_takes_a_step_sampler_by_kind_as_frontier_train_does(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`frontier simulate --sampler KIND --sampler-config K=V` runs the selector inside that
    sampler (`frontier train --sampler`'s names and settings): the entry holds its spec."""
    import json

    code = main(
        ["simulate", "--scenario", "hard", "--scenario-set", f"num_tasks={N_TASKS}",
         "--selector", "uniform", "--sampler", "fewer_rollouts", "--sampler-config",
         f"screen={K}", "--sampler-config", "skip=false", "--steps", str(STEPS), "--batch",
         str(B), "--rollouts", str(N), "--seeds", "1", "--jobs", "1", "--out",
         str(tmp_path / "out")]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "uniform+fewer_rollouts" in results["labels"]
    assert "| uniform+fewer_rollouts | 0.625 |" in capsys.readouterr().out  # as screen=2 does
