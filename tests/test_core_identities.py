"""Advantage identities on GroupBatch / group_advantages: hand values and properties.

v(x) = (1/n) sum (r - mean)^2 is the mean squared Dr.GRPO (group-centred) advantage; for
binary rewards v = p(1-p) <= 1/4; mean |GRPO advantage| (population std) = 2 sqrt(p(1-p));
mean squared RLOO advantage = s(K-s)/(K-1)^2; zero-spread groups carry no advantage.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_rft.core.advantages import ESTIMATORS, GRPO_STD_EPS, group_advantages
from frontier_rft.core.feedback import GroupBatch

SETTINGS = settings(max_examples=60, deadline=None)


def batch_of(groups: list[list[float]], step: int = 0) -> GroupBatch:
    """GroupBatch with group g belonging to task g (rollouts delivered group by group)."""
    ids = np.concatenate([np.full(len(r), g, dtype=np.int64) for g, r in enumerate(groups)])
    rewards = np.concatenate([np.asarray(r, dtype=np.float64) for r in groups])
    return GroupBatch.from_rollouts(step, ids, rewards, np.full(ids.size, -1, dtype=np.int64))


def per_group(values: np.ndarray, batch: GroupBatch) -> list[np.ndarray]:
    return [values[batch.offsets[g] : batch.offsets[g + 1]] for g in range(batch.num_groups)]


unit = st.floats(0.0, 1.0, allow_nan=False)
continuous_groups = st.lists(st.lists(unit, min_size=1, max_size=16), min_size=1, max_size=8)
binary_groups = st.lists(
    st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=16), min_size=1, max_size=8
)


# ------------------------------------------------------------------ hand-computed values
def test_binary_group_by_hand() -> None:
    b = batch_of([[1, 0, 0, 1], [1, 1, 1, 0]])
    np.testing.assert_allclose(b.means, [0.5, 0.75])
    np.testing.assert_allclose(b.variances, [0.25, 0.1875])  # p(1-p)
    np.testing.assert_array_equal(b.successes, [2, 3])
    np.testing.assert_allclose(
        b.advantages("drgrpo"), [0.5, -0.5, -0.5, 0.5, 0.25, 0.25, 0.25, -0.75]
    )
    # RLOO: r_i - mean of the other three, e.g. 1 - 1/3 = 2/3 and 0 - 3/3 = -1.
    np.testing.assert_allclose(
        b.advantages("rloo"), [2 / 3, -2 / 3, -2 / 3, 2 / 3, 1 / 3, 1 / 3, 1 / 3, -1]
    )
    std = np.sqrt([0.25, 0.1875])
    np.testing.assert_allclose(
        b.advantages("grpo"),
        np.array([0.5, -0.5, -0.5, 0.5, 0.25, 0.25, 0.25, -0.75])
        / (np.repeat(std, 4) + GRPO_STD_EPS),
    )
    # Expected |A| = 2 sqrt(p(1-p)): 1 for p = 1/2, sqrt(3)/2 for p = 3/4.
    np.testing.assert_allclose(b.mean_abs_advantage("grpo"), [1.0, np.sqrt(3) / 2], rtol=1e-5)
    np.testing.assert_array_equal(b.mixed, [True, True])


def test_continuous_group_by_hand() -> None:
    b = batch_of([[0.2, 0.5, 0.8]])
    np.testing.assert_allclose(b.means, [0.5])
    np.testing.assert_allclose(b.variances, [0.06])  # (0.09 + 0 + 0.09) / 3
    np.testing.assert_allclose(b.advantages("drgrpo"), [-0.3, 0.0, 0.3], atol=1e-15)
    np.testing.assert_allclose(b.advantages("rloo"), [-0.45, 0.0, 0.45], atol=1e-15)  # 0.2 - 0.65
    np.testing.assert_allclose(
        b.advantages("grpo"),
        np.array([-0.3, 0.0, 0.3]) / (np.sqrt(0.06) + GRPO_STD_EPS),
        atol=1e-12,
    )
    np.testing.assert_array_equal(b.successes, [0])  # success means the full reward only


def test_single_rollout_group_has_zero_advantage_everywhere() -> None:
    b = batch_of([[1.0], [0.3]])
    for estimator in ESTIMATORS:
        np.testing.assert_array_equal(b.advantages(estimator), [0.0, 0.0])
    np.testing.assert_array_equal(b.variances, [0.0, 0.0])
    np.testing.assert_array_equal(b.mixed, [False, False])


def test_unknown_estimator_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown advantage estimator 'ppo'"):
        group_advantages(np.ones(2), np.array([0, 2]), "ppo")


# ------------------------------------------------------------------ properties
@SETTINGS
@given(continuous_groups)
def test_mean_squared_centred_advantage_is_the_within_group_variance(
    groups: list[list[float]],
) -> None:
    b = batch_of(groups)
    msq = [np.mean(a * a) for a in per_group(b.advantages("drgrpo"), b)]
    np.testing.assert_allclose(msq, b.variances, rtol=1e-9, atol=1e-15)
    expected = [np.var(np.asarray(g)) for g in groups]  # population variance
    np.testing.assert_allclose(b.variances, expected, rtol=1e-9, atol=1e-15)


@SETTINGS
@given(continuous_groups)
def test_variance_of_unit_interval_rewards_is_at_most_a_quarter(groups: list[list[float]]) -> None:
    b = batch_of(groups)
    assert np.all(b.variances <= 0.25 + 1e-12)
    assert np.all(b.variances >= 0.0)


@SETTINGS
@given(binary_groups)
def test_binary_variance_is_p_times_one_minus_p(groups: list[list[float]]) -> None:
    b = batch_of(groups)
    p = b.means
    np.testing.assert_allclose(b.variances, p * (1 - p), atol=1e-15)
    np.testing.assert_array_equal(b.successes, [int(sum(g)) for g in groups])
    np.testing.assert_array_equal(b.mixed, (p > 0) & (p < 1))


@SETTINGS
@given(binary_groups)
def test_expected_abs_grpo_advantage_is_two_sqrt_pq(groups: list[list[float]]) -> None:
    b = batch_of(groups)
    p = b.means
    # Exact for the empirical group: mean |r - p| = 2p(1-p) and std = sqrt(p(1-p)); the
    # only gap is the eps added to the std (relative size <= 1e-6 / sqrt(15/256)).
    np.testing.assert_allclose(b.mean_abs_advantage("grpo"), 2 * np.sqrt(p * (1 - p)), rtol=1e-5)
    mean_abs_centred = [np.mean(np.abs(a)) for a in per_group(b.advantages("drgrpo"), b)]
    np.testing.assert_allclose(mean_abs_centred, 2 * p * (1 - p), atol=1e-15)


@SETTINGS
@given(binary_groups)
def test_rloo_mean_squared_advantage_is_s_times_k_minus_s_over_k_minus_1_squared(
    groups: list[list[float]],
) -> None:
    b = batch_of(groups)
    k, s = b.counts, b.successes
    msq = np.array([np.mean(a * a) for a in per_group(b.advantages("rloo"), b)])
    expected = np.where(k > 1, s * (k - s) / np.maximum(k - 1, 1) ** 2.0, 0.0)
    np.testing.assert_allclose(msq, expected, rtol=1e-9, atol=1e-15)


@SETTINGS
@given(continuous_groups)
def test_rloo_is_reward_minus_mean_of_the_others(groups: list[list[float]]) -> None:
    b = batch_of(groups)
    for g, adv in zip(groups, per_group(b.advantages("rloo"), b), strict=True):
        r = np.asarray(g)
        if r.size == 1:
            np.testing.assert_array_equal(adv, [0.0])
            continue
        loo = np.array([r[i] - np.delete(r, i).mean() for i in range(r.size)])
        np.testing.assert_allclose(adv, loo, atol=1e-12)


@SETTINGS
@given(continuous_groups)
def test_centred_advantages_sum_to_zero_and_grpo_is_standardised(groups: list[list[float]]) -> None:
    b = batch_of(groups)
    for estimator in ("drgrpo", "rloo", "grpo"):
        sums = [a.sum() for a in per_group(b.advantages(estimator), b)]
        np.testing.assert_allclose(sums, 0.0, atol=1e-9)
    std = np.sqrt(b.variances)
    wide = std > 1e-3  # away from the eps regime, GRPO advantages have unit mean square
    msq = np.array([np.mean(a * a) for a in per_group(b.advantages("grpo"), b)])
    np.testing.assert_allclose(msq[wide], (std[wide] / (std[wide] + GRPO_STD_EPS)) ** 2, rtol=1e-9)


@SETTINGS
@given(st.lists(st.integers(1, 16), min_size=1, max_size=6), st.sampled_from([0.0, 1.0]))
def test_zero_spread_binary_groups_get_exactly_zero_advantage(sizes: list[int], r: float) -> None:
    b = batch_of([[r] * k for k in sizes])
    for estimator in ESTIMATORS:
        np.testing.assert_array_equal(b.advantages(estimator), 0.0)
    np.testing.assert_array_equal(b.variances, 0.0)
    assert not b.mixed.any()


@SETTINGS
@given(st.lists(st.integers(2, 16), min_size=1, max_size=6), unit)
def test_zero_spread_continuous_groups_get_exactly_zero_advantage(
    sizes: list[int], r: float
) -> None:
    b = batch_of([[r] * k for k in sizes])
    assert not b.mixed.any()
    np.testing.assert_array_equal(b.variances, 0.0)
    for estimator in ESTIMATORS:
        np.testing.assert_array_equal(b.advantages(estimator), 0.0)


def test_zero_spread_continuous_example_by_hand() -> None:
    """Constant non-dyadic rewards (sum/n != r in floating point) still give exactly 0."""
    b = batch_of([[0.1, 0.1, 0.1], [0.7] * 5])
    for estimator in ESTIMATORS:
        np.testing.assert_array_equal(b.advantages(estimator), 0.0)


@SETTINGS
@given(continuous_groups)
def test_mean_abs_advantage_matches_its_definition(groups: list[list[float]]) -> None:
    b = batch_of(groups)
    for estimator in ESTIMATORS:
        adv = b.advantages(estimator)
        expected = [np.mean(np.abs(a)) for a in per_group(adv, b)]
        np.testing.assert_allclose(
            b.mean_abs_advantage(estimator), expected, rtol=1e-12, atol=1e-15
        )
