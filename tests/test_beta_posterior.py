"""The Beta-with-forgetting posterior that skip and the allocation share
(frontier_rft.structures.beta_posterior), against values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft.structures.beta_posterior import BetaPosteriors


def _posteriors(lam: float) -> BetaPosteriors:
    return BetaPosteriors(4, lam, (1.0, 1.0), 0.9, per_rollout=False)


def test_update_equation_by_hand() -> None:
    post = _posteriors(lam=0.5)
    ids = np.array([0])
    post.observe(ids, np.array([3.0]), np.array([4.0]))  # 3 of 4 at clock 0
    post.advance(8)  # two pool-sizes handed out: d^(e - e_k) = 0.5^2 = 0.25
    assert post.clock == 2.0
    np.testing.assert_allclose(post.decay(ids), [0.25])
    # Fewer than 16 groups: the base prior Beta(1, 1), c = 2, m = 1/2.
    a, b = post.posterior(ids)
    np.testing.assert_allclose((a, b), ([1.0 + 0.25 * 3.0], [1.0 + 0.25 * 1.0]))
    a, b = post.posterior(ids, np.array([0.9]))  # a mean of the caller's, same strength
    np.testing.assert_allclose((a, b), ([1.8 + 0.75], [0.2 + 0.25]))
    post.observe(ids, np.array([1.0]), np.array([2.0]))  # S <- 0.25 S + s, F <- 0.25 F + f
    assert (post.succ[0], post.fail[0], post.when[0]) == (1.75, 1.25, 2.0)
    assert post.seen(np.arange(4)).tolist() == [True, False, False, False]


def test_full_forgetting_makes_a_prompt_untried_after_a_pass() -> None:
    post = _posteriors(lam=1.0)
    ids = np.array([1])
    post.observe(ids, np.array([2.0]), np.array([2.0]))
    assert post.tried(ids).tolist() == [True]
    post.advance(1)
    assert post.tried(ids).tolist() == [False] and post.seen(ids).tolist() == [True]


def test_state_round_trip_and_bad_state() -> None:
    post = _posteriors(lam=0.1)
    post.advance(3)
    post.observe(np.array([0, 2]), np.array([1.0, 0.5]), np.array([2.0, 2.0]))
    twin = _posteriors(lam=0.1).loaded(post.state_dict(), "skip")
    for key, value in post.state_dict().items():
        np.testing.assert_array_equal(twin.state_dict()[key], value)
    bad = {**post.state_dict(), "failures": -np.ones(4)}
    with pytest.raises(ValueError, match="failures"):
        twin.loaded(bad, "skip")
