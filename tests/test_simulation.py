"""The simulated learner has the properties the papers rely on; the benchmark runs on it."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft import SELECTORS, make_selector
from frontier_rft.bench.simulation.benchmark import parse_entries, run_benchmark
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.simulation import SCENARIOS, SimulatedLearner, get_scenario
from frontier_rft.simulation.runner import Entry, RunSpec, run_one, sampler_spec


def batch_of(ids: list[int], rewards: list[list[float]]) -> GroupBatch:
    task_ids = np.repeat(np.asarray(ids), [len(r) for r in rewards])
    flat = np.concatenate([np.asarray(r, float) for r in rewards])
    return GroupBatch.from_rollouts(0, task_ids, flat, np.full(task_ids.size, -1))


def test_zero_spread_groups_change_nothing() -> None:
    learner = SimulatedLearner(get_scenario("hard"), seed=0)
    before = learner.pass_rates().copy()
    learner.train(batch_of([0, 1, 2], [[1.0] * 8, [0.0] * 8, [0.3] * 8]))
    np.testing.assert_array_equal(learner.pass_rates(), before)


def test_change_grows_with_advantage_magnitude() -> None:
    gains = []
    for rewards in ([1.0] + [0.0] * 7, [1.0] * 4 + [0.0] * 4):  # |A| 0.66 then 1.0
        learner = SimulatedLearner(get_scenario("hard"), seed=0)
        before = learner.pass_rates()[5]
        learner.train(batch_of([5], [rewards]))
        gains.append(learner.pass_rates()[5] - before)
    assert 0 < gains[0] < gains[1]


def test_transfer_follows_shared_skills_and_prerequisites() -> None:
    cfg = get_scenario("multidomain", general_weight=0.0)
    learner = SimulatedLearner(cfg, seed=0)
    t = learner.train_tasks
    source = np.flatnonzero((t.domain == 0) & (t.level == 0))[:20]
    next_level = (t.domain == 0) & (t.level == 1)
    other_domain = t.domain == 1
    before = learner.pass_rates()
    for _ in range(20):
        learner.train(batch_of(source.tolist(), [[1.0, 0.0] * 4] * source.size))
    gain = learner.pass_rates() - before
    assert gain[next_level].mean() > 0.01  # prerequisites: level 1 became easier
    np.testing.assert_allclose(gain[other_domain], 0.0, atol=1e-12)  # unrelated skills


def test_forgetting_relaxes_unpractised_skills() -> None:
    learner = SimulatedLearner(get_scenario("hard", forgetting=0.1), seed=0)
    learner.theta += 1.0
    idle = learner.theta.copy()
    learner.train(batch_of([0], [[1.0, 0.0]]))
    used = learner.train_tasks.weights[0] > 0
    assert np.all(learner.theta[~used] < idle[~used])


def test_fading_transfer_halves_a_task_after_halflife_trainings() -> None:
    # ceiling far away so the room factor stays ~1; one task trained again and again.
    cfg = get_scenario("hard", transfer_halflife=2.0, skill_ceiling=1e9)
    learner = SimulatedLearner(cfg, seed=0)
    steps = []
    for _ in range(4):
        before = learner.theta.copy()
        learner.train(batch_of([7], [[1.0, 0.0] * 4]))  # |A| = 1
        steps.append(np.abs(learner.theta - before).sum())
    # trained 0, 1, 2, 3 times before: 1 / (1 + c / 2) = 1, 2/3, 1/2, 2/5 of the first step
    np.testing.assert_allclose(np.array(steps) / steps[0], [1, 2 / 3, 1 / 2, 2 / 5], rtol=1e-6)
    assert learner.times_trained[7] == 4
    learner.train(batch_of([7], [[1.0] * 8]))  # no spread: not counted
    assert learner.times_trained[7] == 4
    default = SimulatedLearner(get_scenario("hard", skill_ceiling=1e9), seed=0)
    firsts = []
    for _ in range(2):
        before = default.theta.copy()
        default.train(batch_of([7], [[1.0, 0.0] * 4]))
        firsts.append(np.abs(default.theta - before).sum())
    np.testing.assert_allclose(firsts[1], firsts[0], rtol=1e-6)  # off by default
    with pytest.raises(ValueError, match="transfer_halflife must be >= 0"):
        get_scenario("hard", transfer_halflife=-1.0)


def test_rewards_are_sampled_binary_or_partial_credit() -> None:
    ids = np.arange(50)
    binary = SimulatedLearner(get_scenario("hard"), seed=1).rollout(ids, 8)
    assert set(np.unique(binary)) <= {0.0, 1.0} and binary.shape == (400,)
    cont = SimulatedLearner(get_scenario("continuous"), seed=1).rollout(ids, 8)
    assert np.all((cont >= 0) & (cont <= 1))
    assert np.allclose(cont * 5, np.round(cont * 5)) and len(np.unique(cont)) > 2


def test_pool_metadata_serves_every_selector() -> None:
    learner = SimulatedLearner(get_scenario("multidomain"), seed=0)
    pool = learner.pool
    assert pool.categories is not None and pool.categories.shape == (pool.num_tasks, 2)
    for field in ("difficulty", "features", "reference_pass_rates", "prompts"):
        assert getattr(pool, field) is not None
    for name, cls in SELECTORS.items():
        make_selector(name, pool, seed=0, **cls.default_collaborators()).select(8)


def test_scenarios_have_their_advertised_shape() -> None:
    hard = SimulatedLearner(get_scenario("hard"), seed=0).pass_rates()
    assert (hard < 0.05).mean() > 0.7  # most tasks start unsolved
    multi = SimulatedLearner(get_scenario("multidomain"), seed=0)
    by_domain = [multi.pass_rates()[multi.train_tasks.domain == d].mean() for d in range(3)]
    assert by_domain[0] > by_domain[1] > by_domain[2]  # domains of different difficulty
    res = run_benchmark("easy", [], seeds=[0], steps=100, rollouts=8, jobs=1)
    assert res["runs"][0]["score"][-1] > 0.9  # mastered quickly
    assert set(SCENARIOS) >= {"hard", "easy", "multidomain", "continuous"}


def test_runs_are_deterministic_and_parallel_equals_serial() -> None:
    entries = parse_entries(["bots", "sec"])
    serial = run_benchmark("hard", entries, seeds=[0, 1], steps=15, jobs=1)
    parallel = run_benchmark("hard", entries, seeds=[0, 1], steps=15, jobs=2)
    for a, b in zip(serial["runs"], parallel["runs"], strict=True):
        assert (a["label"], a["seed"]) == (b["label"], b["seed"])
        assert a["score"] == b["score"] and a["success_hist"] == b["success_hist"]


@pytest.mark.parametrize("inner", ["metis", "adcl"])
@pytest.mark.parametrize("mode", ["fixed", "adaptive"])
def test_dynamic_sampling_around_any_selector_in_simulation(inner: str, mode: str) -> None:
    entry = Entry(f"{inner}+dapo", inner, sampler=sampler_spec(dynamic_sampling=mode))
    run = run_one(RunSpec(get_scenario("hard"), entry, 0, 3, 8, 4))
    assert len(run["score"]) == 4 and run["dynamic_sampling"] == mode
    # Round 1 rolls out 3x candidates (nothing measured yet); later rounds top up the batch,
    # as the trainer's do: the simulator runs every round, not one per step.
    rounds = run["selector_metrics"]["dapo/rounds"]
    candidates = run["selector_metrics"]["dapo/candidates"]
    assert candidates[0] >= 3 * 8 and run["rollouts"] == [c * 4 for c in candidates]
    assert all(1 <= r <= 10 for r in rounds)
    assert run["selector_metrics"]["dapo/stale_share"] == [0.0] * 3
    plain = run_one(RunSpec(get_scenario("hard"), Entry(inner, inner), 0, 3, 8, 4))
    assert plain["rollouts"] == [8 * 4] * 3


def test_the_simulator_drives_the_samplers_the_trainer_drives(sample_calls: list[str]) -> None:
    """One sampling loop: run_one calls the same `sample` the reference trainer calls."""
    from frontier_rft.simulation import runner

    calls = sample_calls
    scenario = get_scenario("hard")
    runner.run_one(RunSpec(scenario, Entry("u", "uniform"), 0, 2, 8, 4))
    runner.run_one(
        RunSpec(
            scenario,
            Entry("d", "uniform", sampler=sampler_spec(dynamic_sampling="greso")),
            0,
            2,
            8,
            4,
        )
    )
    assert calls == ["PassThrough"] * 2 + ["DynamicSampling"] * 2


def test_every_mode_names_its_settings_in_the_simulator() -> None:
    """The simulator's modes are the wrapper's MODES (plus fixed-keep); mode dapo runs DAPO's
    full rounds: every round 3 B candidates."""
    from frontier_rft import TaskPool, make_selector
    from frontier_rft.sampling.dynamic_sampling import MODES, DynamicSamplingConfig
    from frontier_rft.simulation.runner import DYNAMIC_SAMPLING, sampler_for

    assert (None, *MODES, "fixed-keep") == DYNAMIC_SAMPLING
    sel = make_selector("uniform", TaskPool(num_tasks=50))
    learner = SimulatedLearner(get_scenario("hard"), seed=0)
    for mode in MODES:
        sampler = sampler_for(
            Entry("d", "uniform", sampler=sampler_spec(dynamic_sampling=mode)), sel, learner
        )
        assert getattr(sampler, "config", None) == DynamicSamplingConfig.for_mode(mode)
    run = run_one(
        RunSpec(
            get_scenario("hard"),
            Entry("d", "uniform", sampler=sampler_spec(dynamic_sampling="dapo")),
            0,
            3,
            8,
            4,
        )
    )
    rounds = run["selector_metrics"]["dapo/rounds"]
    assert run["selector_metrics"]["dapo/candidates"] == [24 * r for r in rounds]


def test_entry_refuses_an_unknown_dynamic_sampling_mode() -> None:
    with pytest.raises(ValueError, match="dynamic_sampling must be one of"):
        Entry("x", "uniform", sampler=sampler_spec(dynamic_sampling="3x"))


def test_run_record_shapes() -> None:
    spec = RunSpec(get_scenario("multidomain"), Entry("metis", "metis"), 0, 6, 8, 4)
    run = run_one(spec)
    assert len(run["score"]) == 7 and len(run["etr"]) == 6
    assert run["note"] == "non-LLM heuristic judge"
    assert all(sum(h) == 8 for h in run["success_hist"])
    assert all(sum(c) == 8 for c in run["category_counts"])
    assert run["category_names"] == ["countdown", "zebra", "arc"]


def test_bad_runner_input_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown selector"):
        parse_entries(["botz"])
    with pytest.raises(ValueError, match="unknown option"):
        run_benchmark("hard", [Entry("x", "bots", {"lamda": 0.2})], seeds=[0], steps=2)
    with pytest.raises(ValueError, match="unknown scenario"):
        run_benchmark("medium", [], seeds=[0], steps=2)


@pytest.mark.slow
def test_headline_prompts_only_selectors_beat_uniform_on_hard() -> None:
    """The README's claim, at its settings: prompts only, paper defaults, 16 rollouts, 5 seeds."""
    res = run_benchmark(
        "hard", parse_entries(["bots", "dots", "prioritized", "pcl"]), seeds=range(5), rollouts=16
    )
    assert res["settings"]["given"] == ["prompts"]
    for label in ("bots", "dots", "prioritized", "pcl"):
        ttb100 = res["summary"][label]["ttb100"]
        assert ttb100["reached"] == 5 and ttb100["mean"] < 0.85, (label, ttb100)
    assert res["summary"]["dots"]["ttb100"]["mean"] < 0.6
    assert {r["evidence"]["plugin"] for r in res["runs"] if r["selector"] == "bots"} == {
        "regression"
    }


def test_method_specific_metrics_are_summarised_over_seeds() -> None:
    res = run_benchmark("hard", parse_entries(["prioritized", "sec"]), seeds=[0, 1], steps=12)
    pri = res["summary"]["prioritized"]["method_metrics"]
    assert {"prioritized/solved_pool", "prioritized/unsolved_pool", "prioritized/heap_size"} <= set(
        pri
    )
    assert pri["prioritized/heap_size"]["seeds"] == 2
    assert any(k.startswith("sec/arm_prob/") for k in res["summary"]["sec"]["method_metrics"])
