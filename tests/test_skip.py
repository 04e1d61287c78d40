"""The Bayesian skip (selectors/skip.py): each equation against a hand-computed value,
and the behaviours a user relies on (no starving, no stuck epoch, exact resume)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.selectors.skip import SkipConfig, SkipSelector, informative_probability
from helpers import SKIP_WORLDS, assert_state_equal, picks_in_skip_world


def _feed(sel, ids, rewards_per_task, step, n=8):  # type: ignore[no-untyped-def]
    """n rollouts of each id with the given reward for every rollout of that task."""
    rep = np.repeat(np.asarray(ids, np.int64), n)
    rewards = np.repeat(np.asarray(rewards_per_task, np.float64), n)
    sel.update(Feedback(task_ids=rep, rewards=rewards, step=step))


def test_informative_probability_matches_beta_moments() -> None:
    one = np.array([1.0])
    # Beta(1, 1), n = 2: E[p^2] = E[(1-p)^2] = 1/3, so q = 1/3
    assert informative_probability(one, one, 2)[0] == pytest.approx(1 / 3)
    # Beta(9, 1), n = 8: E[p^8] = prod_{i<8} (9+i)/(10+i) = 9/17;
    # E[(1-p)^8] = 8! * 9! / 17! = 1/24310
    q = informative_probability(np.array([9.0]), one, 8)[0]
    assert q == pytest.approx(1 - 9 / 17 - 1 / 24310)
    # Beta(5, 5), n = 8: E[p^8] = (12!/4!) / (17!/9!) = 19958400 / 980179200
    q = informative_probability(np.array([5.0]), np.array([5.0]), 8)[0]
    assert q == pytest.approx(1 - 2 * 19958400 / 980179200)
    assert informative_probability(one, one, 1)[0] == 0.0  # one rollout: never informative


def test_skip_keep_probability_is_q_over_the_base_priors_q() -> None:
    sel = SkipSelector(TaskPool(num_tasks=3), SkipConfig(plugin="none"))
    ids = sel.select(3)
    _feed(sel, ids, [1.0, 0.0, 0.5], 0, n=8)  # all correct, all wrong, 4 of 8
    sel.flush()
    keep = sel.keep_probability(ids)
    q0 = 1 - 2 / 9  # Beta(1, 1), n = 8: 1 - 2 E[p^8] = 1 - 2/9
    easy = (1 - 9 / 17 - 1 / 24310) / q0  # Beta(9, 1) as above
    mixed = 1.0  # Beta(5, 5): q = 0.959 > q0, clipped to 1
    assert keep == pytest.approx([easy, easy, mixed])  # all wrong is Beta(1, 9): symmetric


def test_skip_forgets_a_share_lam_of_its_evidence_per_pool_handed_out() -> None:
    sel = SkipSelector(TaskPool(num_tasks=4), SkipConfig(plugin="none", lam=0.1))
    ids = sel.select(4)
    _feed(sel, ids, np.ones(4), 0, n=8)
    sel.flush()
    a, b = sel.posterior(np.arange(4))
    assert a == pytest.approx(1 + 8) and b == pytest.approx(1.0)
    assert sel.clock == 1.0  # 4 prompts handed out of 4: the fold happened at clock 1
    sel.select(2)  # 6 handed out: clock 1.5
    a, _ = sel.posterior(np.arange(4))
    assert a == pytest.approx(1 + 8 * 0.9**0.5)  # half a pool later: 0.9^0.5 of the evidence


def _seventy_percent_solved(features: str, seed: int = 0, **overrides):  # type: ignore[no-untyped-def]
    """A pool of 1,000 prompts, 70% always solved and 30% solved half the time, with given
    features that tell the kinds apart ('informative'), given random ones ('random'), or the
    prompt text only ('prompts'); returns (selector, always-solved mask, rng)."""
    rng = np.random.default_rng(seed)
    n = 1000
    solved = rng.permutation(n) < 700
    if features == "prompts":
        words = np.where(solved, "add two small numbers", "prove the hard bound")
        pool = TaskPool(num_tasks=n, prompts=[f"{w} {i}" for i, w in enumerate(words)])
    else:
        x = solved[:, None] * 1.0 if features == "informative" else rng.normal(size=(n, 8))
        pool = TaskPool(num_tasks=n, features=x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = SkipSelector(pool, SkipConfig(**overrides), seed=seed)
    return sel, solved, rng


def _first_epoch(sel, solved, rng, steps: int = 20, batch: int = 16):  # type: ignore[no-untyped-def]
    """Walk `steps` batches (well inside the first epoch); the share of prompts kept."""
    skipped = 0.0
    for step in range(steps):
        ids = sel.select(batch)
        skipped += sel.metrics()["skip/skipped"]
        rep = np.repeat(ids, 8)
        p = np.where(solved[rep], 1.0, 0.5)
        sel.update(Feedback(task_ids=rep, rewards=(rng.random(rep.size) < p) * 1.0, step=step))
    assert sel.epoch == 1
    return steps * batch / (steps * batch + skipped)


@pytest.mark.parametrize("features", ["prompts", "random"])
@pytest.mark.parametrize("untried", ["auto", "take"])
def test_skip_takes_every_untried_prompt_on_a_70pct_solved_pool(features, untried) -> None:  # type: ignore[no-untyped-def]
    """The rule for untried prompts (docs/selectors/skip.md): a prompts-only user ('auto'
    on prompt text) and 'take' take every prompt in its first epoch, and given features
    that say nothing skip none either. (The prediction used to be a logit and the pool
    average a rate: untried prompts were kept ~80% of the time here.)"""
    sel, solved, rng = _seventy_percent_solved(features, untried=untried)
    kept = _first_epoch(sel, solved, rng)
    keep = sel.keep_probability(sel._walk.remaining())  # the rest of the epoch: untried
    if features == "prompts" or untried == "take":
        assert kept == 1.0 and np.all(keep == 1.0)
        assert sel.metrics()["skip/untried_predicted"] == 0.0
    else:  # noise in the prediction is not a reason to skip (its upper bound is used)
        assert kept >= 0.99 and keep.mean() >= 0.99


def test_skip_predicts_untried_prompts_from_given_features_with_a_floor() -> None:
    """'auto' with given features: an untried prompt the features call always-solved is
    kept with a probability between the floor (0.25) and 1/2, the others always."""
    sel, solved, rng = _seventy_percent_solved("informative")
    kept = _first_epoch(sel, solved, rng)
    rest = sel._walk.remaining()
    keep = sel.keep_probability(rest)
    assert np.all(keep[solved[rest]] >= 0.25) and keep[solved[rest]].max() < 0.5
    assert np.all(keep[~solved[rest]] == 1.0)
    assert 0.4 < kept < 0.7  # ~0.3 + 0.7 * keep: most always-solved prompts passed over
    assert sel.metrics()["skip/untried_predicted"] == 1.0


def test_skip_untried_keep_is_the_upper_bound_over_the_informative_share() -> None:
    """keep = clip((q^ + 2 se) / q1, floor, 1), by hand: one feature x = kind, 10 first
    groups of kind 0 (all correct) and 10 of kind 1 (4 of 8). Design rows [x, 1]:
    G + I = [[11, 10], [10, 21]] (det 131), moment [10, 10], w = [110, 10] / 131.
    x = 0: q^ = 10/131, x'(G+I)^-1 x = 11/131, q1 = 10/20, se = sqrt(0.25 * 11/131)."""
    kind = np.repeat([0, 1], 11)  # prompts 10 (kind 0) and 21 (kind 1) stay untried
    sel = SkipSelector(TaskPool(num_tasks=22, features=kind[:, None] * 1.0))
    tried = np.r_[0:10, 11:21]
    rep = np.repeat(tried, 8)
    half = np.tile(np.r_[np.ones(4), np.zeros(4)], 20)
    sel.update(Feedback(task_ids=rep, rewards=np.where(kind[rep] == 0, 1.0, half), step=0))
    sel.flush()
    untried = np.array([10, 21])
    expected = [(10 / 131 + 2 * np.sqrt(0.25 * 11 / 131)) / 0.5, 1.0]  # 0.7322, 1
    assert sel.untried_keep(untried) == pytest.approx(expected)
    assert sel.keep_probability(untried) == pytest.approx(expected)


def test_skip_groups_of_one_rollout_are_never_skipped_for_it() -> None:
    sel = SkipSelector(TaskPool(num_tasks=5), SkipConfig(plugin="none"))
    ids = sel.select(5)
    _feed(sel, ids, np.ones(5), 0, n=1)
    sel.flush()
    assert np.all(sel.keep_probability(np.arange(5)) == 1.0)


@pytest.mark.parametrize("world", SKIP_WORLDS)
@pytest.mark.parametrize("name", ["skip", "greso"])
def test_never_starves_or_sticks(name: str, world: str) -> None:
    counts = picks_in_skip_world(name, world)
    assert counts.min() >= 1  # nobody starves: 1,200 picks over 30 prompts


def test_config_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="lam"):
        SkipConfig(lam=1.5)
    with pytest.raises(ValueError, match="plugin"):
        SkipConfig(plugin="kernel")  # type: ignore[arg-type]


def test_skip_predict_state_resumes_exactly_and_is_refused_by_take() -> None:
    """The untried-prompt model is part of the state: save -> load -> continue is exact,
    and a 'take' selector refuses it, unchanged."""
    sel, solved, rng = _seventy_percent_solved("informative")
    _first_epoch(sel, solved, rng, steps=5)
    assert sel.metrics()["skip/untried_predicted"] == 1.0
    state = sel.state_dict()
    twin, _, _ = _seventy_percent_solved("informative")
    twin.load_state_dict(state)
    assert_state_equal(state, twin.state_dict())
    assert np.array_equal(sel.select(16), twin.select(16))
    take, _, _ = _seventy_percent_solved("informative", untried="take")
    before = take.state_dict()
    with pytest.raises(ValueError, match=r"config|untried"):
        take.load_state_dict(state)
    assert_state_equal(before, take.state_dict())


@pytest.mark.parametrize("model", ["first", "ridge"])
@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda g: np.full_like(g, -1e300), id="all -1e300"),
        pytest.param(lambda g: g - np.diag(np.full(g.shape[0], 1e6)), id="negative diagonal"),
        pytest.param(lambda g: g + np.triu(np.ones_like(g), 1) * 1e3, id="not symmetric"),
    ],
)
def test_a_tampered_regression_state_is_refused_on_load(model: str, tamper: object) -> None:
    """Issue 47: a gram of -1e300 loaded and later ended in numpy's LinAlgError (singular
    matrix) at the next selection; it is refused on load by name, the selector unchanged."""
    sel, solved, rng = _seventy_percent_solved("informative")
    _first_epoch(sel, solved, rng, steps=5)
    state = sel.state_dict()
    gram = state["algo"][model]["gram"]
    state["algo"][model]["gram"] = tamper(gram)  # type: ignore[operator]
    twin, _, _ = _seventy_percent_solved("informative")
    before = twin.state_dict()
    with pytest.raises(ValueError, match=r"^skip state: the ridge model's gram is not a sum"):
        twin.load_state_dict(state)
    assert_state_equal(before, twin.state_dict())
    twin.select(16)  # still usable


def test_the_group_size_is_the_full_groups_under_screening() -> None:
    """Screened groups of k = 2 beside full ones of 8: q asks about a group of 8, whatever
    the mix (a median would flip between 2 and 8, or land on 5)."""
    import numpy as np

    from frontier_rft import Feedback, TaskPool, make_selector

    sel = make_selector("skip", TaskPool(num_tasks=8), seed=0, plugin="none")
    ids = np.array([0, 1, 2, 3])
    counts = np.array([2, 2, 2, 8])
    rewards = np.concatenate([np.zeros(2), np.ones(2), np.zeros(2), np.tile([0.0, 1.0], 4)])
    sel.update(Feedback(task_ids=np.repeat(ids, counts), rewards=rewards, step=0))
    sel.flush()
    assert sel.group_size == 8
