"""Every adaptive selector picks mixed-outcome tasks more often than uniform does.

World: a third of the tasks always solved, a third never, a third mixed (p = 0.5), with
informative metadata (conftest.world_pool). Seeds are fixed; the margin asked for is
five standard errors of uniform's share, and each selector clears it by far.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import build, drive, world_pass_rates, world_pool

ADAPTIVE = ["prioritized", "bots", "mopps", "dots", "sec", "frontier", "metis", "pcl"]
STEPS, BATCH, ROLLOUTS, BURN_IN = 40, 60, 8, 5


def mixed_share(name: str) -> tuple[float, int]:
    pool = world_pool(num_tasks=900)
    mixed = world_pass_rates(pool) == 0.5
    picked = drive(build(name, pool, seed=11), steps=STEPS, batch=BATCH, n=ROLLOUTS)
    after = np.concatenate(picked[BURN_IN:])
    return float(mixed[after].mean()), after.size


@pytest.fixture(scope="module")
def uniform_share() -> float:
    share, _ = mixed_share("uniform")
    assert abs(share - 1 / 3) < 0.05  # sanity: uniform sees the base rate
    return share


@pytest.mark.parametrize("name", ADAPTIVE)
def test_adaptive_selector_prefers_mixed_tasks(name: str, uniform_share: float) -> None:
    share, count = mixed_share(name)
    standard_error = np.sqrt(uniform_share * (1 - uniform_share) / count)
    assert share > uniform_share + 5 * standard_error, (name, share, uniform_share)
