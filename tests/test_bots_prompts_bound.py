"""The bound rows of the prompts-only BOTS diagnosis
(frontier_rft.bench.simulation.bots_prompts_gap):
what prompt text can tell of a task never tried is E[p | domain, level], and the benchmark
computes exactly that."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft.bench.simulation import bots_prompts_gap as bench
from frontier_rft.simulation.learner import SimulatedLearner
from frontier_rft.simulation.scenario import SCENARIOS


def test_level_rates_are_the_mean_pass_rate_over_the_task_noise() -> None:
    learner = SimulatedLearner(SCENARIOS["multidomain"], seed=3)
    learner.theta = learner.theta + np.linspace(0.0, 2.0, learner.theta.size)  # a trained policy
    rates = bench.level_rates(learner)
    t, cfg = learner.train_tasks, learner.cfg
    # Monte Carlo by hand: p = sigmoid(slope * (w . theta - level_step * level - offset - noise)).
    rng = np.random.default_rng(0)
    noise = cfg.task_noise * rng.standard_normal(200_000)
    offsets = np.asarray(cfg.domain_offsets)
    for i in (0, 1, 2, 7, 11):
        margin = t.weights[i] @ learner.theta - cfg.level_step * t.level[i] - offsets[t.domain[i]]
        expected = np.mean(1.0 / (1.0 + np.exp(-cfg.slope * (margin - noise))))
        assert abs(rates[i] - expected) < 2e-3
    # Tasks of one (domain, level) share it: nothing of a task's own noise leaks in.
    same = (t.domain == t.domain[0]) & (t.level == t.level[0])
    assert same.sum() > 1 and np.ptp(rates[same]) < 1e-12
    # Unlike the true pass rates, which do carry the noise.
    assert np.ptp(learner.pass_rates()[same]) > 0.05


def test_the_prompt_text_is_drawn_from_domain_and_level_alone() -> None:
    # The bound rests on this: two pools with the same domains and levels but other task noise
    # get the same prompts.
    from frontier_rft.simulation.prompts import task_prompts

    domain, level = np.array([0, 1, 1, 0]), np.array([2, 0, 3, 1])
    args = (domain, level, 2, 5, ("math", "code"), 1.0)
    assert task_prompts(*args, np.random.default_rng(5)) == task_prompts(
        *args, np.random.default_rng(5)
    )
    import inspect

    params = list(inspect.signature(task_prompts).parameters)
    assert params == [
        "domain", "level", "num_domains", "num_levels", "domain_names", "prompt_signal", "rng"
    ]  # fmt: skip


def test_fresh_rates_draw_once_per_training_step() -> None:
    learner = SimulatedLearner(SCENARIOS["hard"], seed=0)
    fresh = bench._fresh_rates(learner, seed=0)
    first = fresh()
    assert fresh() is first  # the same draw within a step
    assert first.shape == (learner.pool.num_tasks,)
    assert np.all((first > 0) & (first < 1))  # smoothed (s + 1/2) / (n + 1)
    learner.steps_trained += 1
    assert fresh() is not first


def test_the_oracle_plugin_replaces_p_on_the_tasks_it_names() -> None:
    """An explicit subclass, not a patched instance: p~ is the truth on the tasks `which`
    names, the regression's elsewhere, through every read (with `out`, at ids)."""
    from frontier_rft.selectors.bots.regression import RegressionPlugin

    features = np.random.default_rng(0).standard_normal((6, 2))
    base = RegressionPlugin(features, 1.0, 0.9, gaussian=False, anchors=True)
    truth = np.linspace(0.05, 0.95, 6)
    seen = np.array([True, False, True, False, False, True])
    plain = base.estimate()
    for which, mask in (("oracle unseen", ~seen), ("oracle seen", seen), ("oracle all", None)):
        oracle = bench.OraclePlugin(base, lambda: truth, seen, which)
        want = truth.copy() if mask is None else np.where(mask, truth, plain)
        np.testing.assert_array_equal(oracle.estimate(), want)
        out = np.zeros(6)
        assert oracle.estimate(out=out) is out
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(oracle.estimate(at=np.array([4, 0])), want[[4, 0]])
        before, _ = oracle.observe(np.array([1, 2]), np.array([3.0, 1.0]), np.array([4.0, 4.0]))
        np.testing.assert_array_equal(before, want[[1, 2]])


def _patched_run(scenario: str, variant: str, seed: int) -> list[float]:
    """bench.run as it was before OraclePlugin: the plug-in instance's `estimate` replaced
    by a closure (the code the subclass replaced, kept here as the reference)."""
    import functools
    import warnings

    from frontier_rft.features.derive import EvidenceWarning
    from frontier_rft.selectors import make_selector
    from frontier_rft.simulation.runner import given_pool

    learner = SimulatedLearner(SCENARIOS[scenario], seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = make_selector("bots", given_pool(learner, ("prompts",)), seed=seed)
    seen = np.zeros(learner.pool.num_tasks, dtype=bool)
    plugin = sel._regression
    rates, which = {
        "oracle unseen": (learner.pass_rates, "oracle unseen"),
        "oracle seen": (learner.pass_rates, "oracle seen"),
        "oracle all": (learner.pass_rates, "oracle all"),
        "level unseen": (functools.partial(bench.level_rates, learner), "oracle unseen"),
        "fresh seen": (bench._fresh_rates(learner, seed), "oracle seen"),
    }[variant]
    estimate = plugin.estimate

    def patched(at: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        p = estimate(at=at)
        truth = rates() if at is None else rates()[at]
        mask = seen if at is None else seen[at]
        mask = {"oracle unseen": ~mask, "oracle seen": mask}.get(which, np.ones_like(mask))
        p[mask] = truth[mask]
        if out is not None:
            out[...] = p
            return out
        return p

    plugin.estimate = patched
    return bench.score_curve(learner, sel, seen)


@pytest.mark.parametrize(
    "variant", ["oracle unseen", "oracle seen", "oracle all", "level unseen", "fresh seen"]
)
def test_the_diagnosis_rows_are_those_of_the_instance_patch(
    variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replacing the patched `estimate` by OraclePlugin moves no row: a short run of each,
    against the instance patch it replaced, on this machine (pinned numbers would not do:
    OpenBLAS's kernels differ by CPU, and a run's last digits with them)."""
    monkeypatch.setattr(bench, "STEPS", 40)
    assert bench.run(("multidomain", variant, 0)) == _patched_run("multidomain", variant, 0)
