"""The calibrated learner's equations, checked by hand; the original learner still reproduces."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from frontier_rft.core.feedback import GroupBatch
from frontier_rft.simulation import SCENARIOS, SimulatedLearner, get_scenario
from frontier_rft.simulation.calibration import (
    fit_learning_rate,
    fit_start,
    start_histogram,
    uniform_gain,
    zero_variance_share,
)
from frontier_rft.simulation.learner import ADAM_BETA2
from frontier_rft.simulation.runner import Entry, RunSpec, run_one

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def batch_of(ids: list[int], rewards: list[list[float]]) -> GroupBatch:
    task_ids = np.repeat(np.asarray(ids), [len(r) for r in rewards])
    flat = np.concatenate([np.asarray(r, float) for r in rewards])
    return GroupBatch.from_rollouts(0, task_ids, flat, np.full(task_ids.size, -1))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


HALF = [1.0, 0.0] * 4  # p-hat 0.5: every std-normalised advantage is +-1, so A = 1
QUARTER = [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # p-hat 1/4: A = 2 sqrt(3/16) = sqrt(3)/2


def learner(**fields: object) -> SimulatedLearner:
    cfg = get_scenario(
        "hard", optimizer="adam", skill_ceiling=1e9, learning_rate=0.1, **fields
    )  # ceiling far away: the room factor is 1 to 1e-9
    return SimulatedLearner(cfg, seed=0)


def test_adam_normalises_the_step_by_the_running_rms_of_the_update_norm() -> None:
    sim = learner(specific_share=2.0)
    w = sim.train_tasks.weights[7]
    sq = float(w @ w) + 2.0**2  # |u|^2 + s^2 with u = A w / B, s = eta A / B, A = B = 1
    sim.train(batch_of([7], [HALF]))
    # step 1: v = (1 - b2) sq, v_hat = v / (1 - b2) = sq, so the step is lr w / sqrt(sq)
    np.testing.assert_allclose(sim.theta - sim.theta0, 0.1 * w / math.sqrt(sq), rtol=1e-6)
    np.testing.assert_allclose(sim.specific[7], 0.1 * 2.0 / math.sqrt(sq), rtol=1e-6)
    assert sim.specific[np.arange(sim.specific.size) != 7].sum() == 0
    # step 2 with A = sqrt(3)/2: v_hat = (b2 sq + a^2 sq) / (1 + b2) over the two steps
    theta1, c1 = sim.theta.copy(), sim.specific[7]
    sim.train(batch_of([7], [QUARTER]))
    a = math.sqrt(3) / 2
    v_hat = (ADAM_BETA2 * sq + a**2 * sq) / (1 + ADAM_BETA2)
    np.testing.assert_allclose(sim.theta - theta1, 0.1 * a * w / math.sqrt(v_hat), rtol=1e-6)
    np.testing.assert_allclose(sim.specific[7] - c1, 0.1 * 2.0 * a / math.sqrt(v_hat), rtol=1e-6)


def test_a_constant_update_norm_gives_a_constant_step_whatever_the_batch_signal() -> None:
    """AdamW-like: one group per step or the same group four times spread over four tasks
    with a quarter of the batch each, the skill step's size is set by lr, not by B."""
    one = learner()
    one.train(batch_of([7], [HALF]))
    many = learner()
    same = many.train_tasks.level == many.train_tasks.level[7]  # same skills, same w
    ids = [*np.flatnonzero(same)[:4].tolist(), *np.flatnonzero(~same)[:12].tolist()]
    many.train(batch_of(ids, [HALF] * 4 + [[0.0] * 8] * 12))  # 4 mixed of 16 groups
    np.testing.assert_allclose(
        np.linalg.norm(one.theta - one.theta0), np.linalg.norm(many.theta - many.theta0), rtol=1e-6
    )


def test_specific_displacement_helps_its_task_and_costs_every_task() -> None:
    sim = learner(specific_share=2.0, specific_gain=3.0, interference=5.0)
    before_train, before_score = sim.pass_rates(), sim.score()
    sim.train(batch_of([7], [HALF]))
    t, c = sim.train_tasks, sim.specific
    cost = 5.0 * float(c @ c)
    assert sim.interference() == pytest.approx(cost)
    expected = _sigmoid(t.weights @ sim.theta + sim.memory + 3.0 * c - t.difficulty - cost)
    np.testing.assert_allclose(sim.pass_rates(), expected, rtol=1e-9)
    e = sim.eval_tasks
    held_out = _sigmoid(e.weights @ sim.theta - e.difficulty - cost).mean()
    assert sim.score() == pytest.approx(held_out, rel=1e-9)
    assert sim.pass_rates()[7] > before_train[7]  # memorised its own task
    # without interference the held-out score could only rise; with a large one it falls
    harsh = learner(specific_share=2.0, interference=1e4)
    start = harsh.score()
    harsh.train(batch_of([7], [HALF]))
    assert harsh.score() < start and before_score == pytest.approx(start)


def test_specific_displacement_decays_and_adds_coherently_on_revisits() -> None:
    keep = learner(specific_share=1.0)
    fade = learner(specific_share=1.0, specific_decay=0.5)
    for sim in (keep, fade):
        sim.train(batch_of([7], [HALF]))
        sim.train(batch_of([7], [HALF]))
    step = keep.specific[7] / 2  # constant norm: each visit adds lr * s / sqrt(sq), the same
    np.testing.assert_allclose(fade.specific[7], 0.5 * step + step, rtol=1e-6)
    spread = learner(specific_share=1.0)
    spread.train(batch_of([7], [HALF]))
    spread.train(batch_of([8], [HALF]))
    # the same two visits on one task: |c|^2 = (2 s)^2; on two tasks: 2 s^2
    assert float(keep.specific @ keep.specific) == pytest.approx(
        2 * float(spread.specific @ spread.specific), rel=1e-6
    )


def test_rollout_noise_spreads_group_means_beyond_binomial() -> None:
    plain = learner()
    noisy = learner(rollout_noise=2.0)
    ids = np.full(4000, 7)
    for sim in (plain, noisy):
        sim.memory[7] = -(sim.train_tasks.weights[7] @ sim.theta - sim.train_tasks.difficulty[7])
    means = [sim.rollout(ids, 8).reshape(-1, 8).mean(axis=1) for sim in (plain, noisy)]
    assert abs(means[0].mean() - 0.5) < 0.02 and abs(means[1].mean() - 0.5) < 0.02
    assert means[0].var() == pytest.approx(0.25 / 8, rel=0.1)  # binomial
    assert means[1].var() > 1.5 * means[0].var()  # overdispersed


def test_gradient_noise_takes_its_share_of_the_normalised_step() -> None:
    """sigma^2 sum_g A_g^2 / B^2 joins |u|^2 + sum_g s_g^2 in the normaliser: one group
    (A = B = 1) steps lr w / sqrt(|w|^2 + sigma^2); two mixed groups of the same skills
    (u = w, noise sigma^2 / 2) step further; one mixed of two groups (u = w / 2, noise
    sigma^2 / 4) steps as one group alone."""
    sigma = 3.0
    one = learner(gradient_noise=sigma)
    w = one.train_tasks.weights[7]
    one.train(batch_of([7], [HALF]))
    np.testing.assert_allclose(
        one.theta - one.theta0, 0.1 * w / math.sqrt(w @ w + sigma**2), rtol=1e-6
    )
    same = np.flatnonzero(
        (one.train_tasks.level == one.train_tasks.level[7]) & (np.arange(one.pool.num_tasks) != 7)
    )
    two = learner(gradient_noise=sigma)
    two.train(batch_of([7, int(same[0])], [HALF, HALF]))
    np.testing.assert_allclose(
        two.theta - two.theta0, 0.1 * w / math.sqrt(w @ w + sigma**2 / 2), rtol=1e-6
    )
    diluted = learner(gradient_noise=sigma)
    diluted.train(batch_of([7, int(same[0])], [HALF, [1.0] * 8]))
    np.testing.assert_allclose(diluted.theta, one.theta, rtol=1e-6)


def test_task_drift_walks_every_training_and_held_out_task() -> None:
    delta = 0.2
    sim = learner(task_drift=delta)
    start_margin = sim.train_tasks.weights @ sim.theta - sim.train_tasks.difficulty
    for _ in range(25):  # zero-spread groups: only the drift moves anything
        sim.train(batch_of([0], [[1.0] * 8]))
    moved = sim.train_tasks.weights @ sim.theta - sim.train_tasks.difficulty - start_margin
    assert np.allclose(moved, 0.0)
    np.testing.assert_allclose(sim.pass_rates(), _sigmoid(start_margin + sim.drift), rtol=1e-9)
    e = sim.eval_tasks
    held_out = _sigmoid(e.weights @ sim.theta - e.difficulty + sim.eval_drift).mean()
    assert sim.score() == pytest.approx(held_out, rel=1e-9)
    # a random walk: after 25 steps each task's drift has variance 25 delta^2
    assert sim.drift.var() == pytest.approx(25 * delta**2, rel=0.1)
    assert sim.eval_drift.var() == pytest.approx(25 * delta**2, rel=0.15)
    assert abs(sim.drift.mean()) < 0.1


def test_negative_noise_fields_are_refused() -> None:
    for field in ("gradient_noise", "task_drift"):
        with pytest.raises(ValueError, match=field):
            get_scenario("small-pool", **{field: -0.1})
    with pytest.raises(ValueError, match="gradient_noise needs optimizer 'adam'"):
        get_scenario("hard", gradient_noise=1.0)


def test_zero_spread_groups_move_nothing_under_adam() -> None:
    sim = learner(specific_share=2.0, interference=1.0)
    before = sim.pass_rates().copy()
    sim.train(batch_of([0, 1], [[1.0] * 8, [0.0] * 8]))
    np.testing.assert_array_equal(sim.pass_rates(), before)


def test_the_original_learner_reproduces_a_committed_result() -> None:
    """coverage_sim.json, cov-sim-512: uniform's mean final score on hard at 512 tasks."""
    doc = json.loads((RESULTS / "coverage_sim.json").read_text(encoding="utf-8"))
    committed = doc["cov-sim-512"]["summary"]["uniform"]["final_score"]["mean"]
    cfg = get_scenario("hard", num_tasks=512)
    finals = [
        run_one(RunSpec(cfg, Entry("uniform", "uniform"), s, 360, 16, 8))["score"][-1]
        for s in range(100, 105)
    ]
    assert float(np.mean(finals)) == committed


def test_calibrated_scenarios_differ_only_in_pool_size() -> None:
    small, large = SCENARIOS["small-pool"], SCENARIOS["large-pool"]
    assert (small.num_tasks, large.num_tasks) == (512, 1280)
    assert small.replace(name="x", description="", num_tasks=1) == large.replace(
        name="x", description="", num_tasks=1
    )
    assert small.optimizer == "adam" and small.specific_share > 0


def test_start_histogram_is_the_binomial_law_without_spread() -> None:
    hist = start_histogram(0.0, 0.0, 8)
    np.testing.assert_allclose(hist, [math.comb(8, k) / 256 for k in range(9)], rtol=1e-12)
    p = 1 / (1 + math.exp(1.5))  # offset 1.5: logit -1.5
    assert zero_variance_share(start_histogram(1.5, 0.0, 4)) == pytest.approx(p**4 + (1 - p) ** 4)
    wide = start_histogram(1.5, 2.0, 8)
    assert wide.sum() == pytest.approx(1.0) and zero_variance_share(wide) > zero_variance_share(
        start_histogram(1.5, 0.0, 8)
    )


def test_fit_start_recovers_offset_and_spread() -> None:
    target = start_histogram(1.75, 1.075, 8)
    assert fit_start(8, histogram=target) == pytest.approx((1.75, 1.075), abs=1e-6)
    mean = float(target @ (np.arange(9) / 8))
    offset, spread = fit_start(8, mean=mean, zero_share=float(zero_variance_share(target)))
    assert offset == pytest.approx(1.75, abs=0.11) and spread == pytest.approx(1.075, abs=0.11)
    assert fit_start(8, histogram=target, spread=1.075)[0] == pytest.approx(1.75)
    with pytest.raises(ValueError, match="needs a histogram"):
        fit_start(8, mean=0.2)
    with pytest.raises(ValueError, match="9 finite counts"):
        fit_start(8, histogram=[1.0, 2.0])


def test_fit_learning_rate_hits_the_target_gain() -> None:
    cfg = SCENARIOS["small-pool"].replace(num_tasks=128, eval_tasks=100)
    budget = {"steps": 40, "batch": 8, "rollouts": 8}
    target = uniform_gain(cfg.replace(learning_rate=0.02), [0], **budget)
    lr = fit_learning_rate(cfg, target, [0], start=0.005, **budget)
    assert lr is not None
    assert uniform_gain(cfg.replace(learning_rate=lr), [0], **budget) == pytest.approx(
        target, abs=0.003
    )
    assert fit_learning_rate(cfg, 0.99, [0], start=0.005, **budget) is None  # out of reach


@pytest.mark.parametrize("selector", ["prioritized", "uniform"])
def test_retrained_next_step_is_the_share_of_trained_prompts_trained_the_step_before(
    selector: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained: list[np.ndarray] = []
    original = SimulatedLearner.train

    def recording(self: SimulatedLearner, batch: GroupBatch, loss_scale: float = 1.0) -> None:
        trained.append(batch.task_ids[batch.mean_abs_advantage("grpo") > 0])
        original(self, batch, loss_scale)

    monkeypatch.setattr(SimulatedLearner, "train", recording)
    cfg = SCENARIOS["small-pool"]
    rec = run_one(RunSpec(cfg, Entry(selector, selector), 3, steps=30, batch=16, rollouts=8))
    expected: list[float | None] = []
    previous: set[int] = set()
    for ids in trained:
        now = ids.tolist()
        expected.append(sum(i in previous for i in now) / len(now) if now else None)
        previous = set(now)
    assert rec["retrained_next_step"] == pytest.approx(expected)


def test_a_quick_repeat_costs_every_task_its_share_of_the_step() -> None:
    """repeat_cost rho: a mixed group whose prompt had a mixed group the step before costs
    every task rho * lr * scale * A / B logits; a gap of one step, or a zero-spread visit in
    between, is no quick repeat."""
    rho = 3.0
    sim = learner(repeat_cost=rho)
    w = sim.train_tasks.weights[7]
    sim.train(batch_of([7], [HALF]))  # first visit: no repeat
    assert sim.repeat_harm == 0.0
    sim.train(batch_of([7], [HALF]))  # the step after: a repeat; v_hat = |w|^2 both steps
    expected = rho * 0.1 / math.sqrt(w @ w)
    assert sim.repeat_harm == pytest.approx(expected, rel=1e-6)
    sim.train(batch_of([8], [HALF]))  # another prompt
    sim.train(batch_of([7], [HALF]))  # 7 again after a one-step gap: no repeat
    sim.train(batch_of([7], [[1.0] * 8]))  # zero spread: trains nothing, marks nothing
    sim.train(batch_of([7], [HALF]))  # so this is no repeat either
    assert sim.repeat_harm == pytest.approx(expected, rel=1e-6)
    t, e = sim.train_tasks, sim.eval_tasks
    np.testing.assert_allclose(
        sim.pass_rates(), _sigmoid(t.weights @ sim.theta + sim.memory - t.difficulty - expected)
    )
    held_out = _sigmoid(e.weights @ sim.theta - e.difficulty - expected).mean()
    assert sim.score() == pytest.approx(held_out, rel=1e-9)
