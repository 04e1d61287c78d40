"""A step past MAX_STEP is refused by the samplers around a selector (DynamicSampling,
Allocation, PilotCommit) before anything moves: no round is proposed, nothing is rolled out,
the inner selector's RNG and the wrapper's state are as they were (issue 47: a refused step cost a
full round, and 2**63 ended in an OverflowError)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from conftest import assert_state_equal, world_pass_rates, world_pool
from frontier_rft import Allocation, AllocationConfig, make_selector
from frontier_rft.wrappers.dynamic_sampling import DynamicSampling, DynamicSamplingConfig
from frontier_rft.wrappers.pilot_commit import PilotCommit

POOL = world_pool()


def dynamic(config: DynamicSamplingConfig) -> Callable[[], Any]:
    return lambda: DynamicSampling(make_selector("uniform", POOL, seed=3), config)


def allocation(config: AllocationConfig, inner: str = "uniform") -> Callable[[], Any]:
    return lambda: Allocation(make_selector(inner, POOL, seed=3), config)


VARIANTS = {
    "dapo": dynamic(DynamicSamplingConfig()),
    "dapo-surplus": dynamic(DynamicSamplingConfig(max_surplus=8)),
    "dapo-adaptive": dynamic(DynamicSamplingConfig(adaptive=True)),
    "dapo-greso": dynamic(DynamicSamplingConfig.greso()),
    "allocation": allocation(AllocationConfig()),
    "allocation-pilot": allocation(AllocationConfig(pilot=2, commit="mixed")),
    "allocation-greso": allocation(AllocationConfig(), inner="greso"),
    "pilot-commit": lambda: PilotCommit(make_selector("uniform", POOL, seed=3)),
}


class CountingRollout:
    """rollout(ids[, counts]) with Bernoulli rewards from the world pool; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.rng = np.random.default_rng(0)
        self.rates = world_pass_rates(POOL)

    def __call__(self, ids: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
        self.calls += 1
        sizes = np.full(ids.shape[0], 4) if counts is None else counts
        p = np.repeat(self.rates[ids], sizes)
        return (self.rng.random(p.shape[0]) < p).astype(np.float64)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("step", [2**53, 2**63, np.uint64(2**63), 2**64 + 5])
def test_a_step_past_max_step_is_refused_before_anything_moves(variant: str, step: Any) -> None:
    sampler = VARIANTS[variant]()
    warm = CountingRollout()
    for t in range(2):  # some state of its own first: posteriors, surplus, a measured z
        sampler.sample(t, 6, 4, warm)
    inner_before = sampler.inner.state_dict()
    own_before = sampler.state_dict(with_inner=False)
    rollout = CountingRollout()
    with pytest.raises(ValueError, match=r"^step must be a non-negative int below 2\*\*53"):
        sampler.sample(step, 6, 4, rollout)
    assert rollout.calls == 0
    assert_state_equal(sampler.inner.state_dict(), inner_before)
    assert_state_equal(sampler.state_dict(with_inner=False), own_before)
    # The same sampler goes on as if nothing happened: the next step matches a fresh twin's.
    twin = VARIANTS[variant]()
    twin_warm = CountingRollout()
    for t in range(2):
        twin.sample(t, 6, 4, twin_warm)
    got = sampler.sample(2, 6, 4, CountingRollout())
    want = twin.sample(2, 6, 4, CountingRollout())
    np.testing.assert_array_equal(got.task_ids, want.task_ids)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((0, 2**63, 4), "batch_size"),
        ((0, 6, 2**63), "group_size"),
        ((0, 6.0, 4), "batch_size"),
        ((0, 6, True), "group_size"),
        ((0.0, 6, 4), "step"),
    ],
)
def test_bad_sizes_are_refused_by_name_before_anything_moves(
    variant: str, args: tuple[Any, ...], needle: str
) -> None:
    sampler = VARIANTS[variant]()
    before = sampler.state_dict()
    rollout = CountingRollout()
    with pytest.raises(ValueError, match=needle):
        sampler.sample(*args, rollout)
    assert rollout.calls == 0
    assert_state_equal(sampler.state_dict(), before)
