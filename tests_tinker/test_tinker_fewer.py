"""`rollouts="kept"` on tinker-cookbook: the cookbook's sync loop and steps, only the tasks
the selector keeps among uniform's next batch rolled out (the world and what is stood in
for: test_tinker_adapter.py and fake_service)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fake_service import GROUP_SIZE, NUM_TASKS, PASS_RATES, SEED, Record
from test_tinker_adapter import _sampled_groups, _states_equal
from tinker_run import BATCH, make_dataset, spy_on

from frontier_rft import make_selector
from frontier_rft.integrations.tinker import KEPT_NEEDS_SYNC, FrontierRLDataset
from frontier_rft.sampling.fewer_rollouts import FewerRollouts

Run = Callable[..., Record]
STEPS = 12  # three epochs of the 32 tasks, 8 a step


def reference_windows(dataset: FrontierRLDataset, steps: int) -> list[list[int]]:
    """The reference trainer's rule on the same pool and rewards: FewerRollouts(greso) with
    the skip. The stand-in sampler answers task t's k-th rollout at weights version v with
    Bernoulli(p_t) seeded by (v, t, k); the sync loop samples step s at version s."""
    wrapper = FewerRollouts(make_selector("greso", dataset.selector.pool, seed=7))
    out: list[list[int]] = []
    for step in range(steps):

        def rollout(ids: np.ndarray, step: int = step) -> np.ndarray:
            out.append([int(t) for t in ids])
            draws = [
                np.random.default_rng([SEED, step, int(t), k]).random() < PASS_RATES[t]
                for t in ids
                for k in range(GROUP_SIZE)
            ]
            return np.asarray(draws, dtype=np.float64)

        wrapper.sample(step, BATCH, GROUP_SIZE, rollout)
    return out


def test_kept_keeps_the_cookbooks_steps_and_rolls_out_fewer(
    run_cookbook: Run, tmp_path: Path
) -> None:
    uniform = make_dataset(tmp_path / "u", "uniform")
    uniform_record = run_cookbook(uniform, tmp_path / "u", max_steps=STEPS)
    kept = make_dataset(tmp_path / "k", "greso", rollouts="kept")
    spy = spy_on(kept)
    record = run_cookbook(kept, tmp_path / "k", max_steps=STEPS)

    # The cookbook's steps: one batch and one optimizer step each, as under uniform.
    assert len(spy.picks) == STEPS and record.optim_steps == uniform_record.optim_steps == STEPS
    assert spy.picks == reference_windows(kept, STEPS)
    sizes = [len(p) for p in spy.picks]
    assert sizes[:4] == [BATCH] * 4  # greso skips nothing before a task's first group
    assert sum(sizes) < STEPS * BATCH and min(sizes) >= 1
    # Exactly the kept tasks were sampled, a group each, and trained (no scale: tinker's
    # losses are sums over tokens, so the left-out groups count as zero-advantage ones).
    for step, picks in enumerate(spy.picks):
        assert Counter(t for v, t, _ in record.samples if v == step) == {
            t: GROUP_SIZE for t in picks
        }
    assert record.trained == [k * GROUP_SIZE for k in sizes]
    assert (len(record.samples), len(uniform_record.samples)) == (284, 384)
    assert sum(sizes) * GROUP_SIZE == 284
    assert Counter(spy.updates) == _sampled_groups(record)  # every group reported once
    assert kept.metrics()["tinker/rollouts"] == 284
    assert kept.metrics()["fewer_rollouts/kept"] == sizes[-1]
    # The walk is in uniform's epoch: 12 windows of 8 of the 32 tasks, three epochs.
    assert kept.selector.metrics()["greso/epoch"] == uniform.selector.metrics()["uniform/epoch"]


def test_kept_resumes_mid_epoch_exactly(run_cookbook: Run, tmp_path: Path) -> None:
    whole = make_dataset(tmp_path / "whole", "greso", rollouts="kept")
    whole_spy = spy_on(whole)
    run_cookbook(whole, tmp_path / "whole", max_steps=10)

    first = make_dataset(tmp_path / "split", "greso", rollouts="kept")
    first_spy = spy_on(first)
    run_cookbook(first, tmp_path / "split", max_steps=6)  # checkpoints at 3 and 6
    resumed = make_dataset(tmp_path / "split", "greso", rollouts="kept")
    spy = spy_on(resumed)
    run_cookbook(resumed, tmp_path / "split", max_steps=10)  # from step 6: mid epoch 2

    assert resumed.metrics()["tinker/resumes"] == 1.0
    assert first_spy.picks + spy.picks == whole_spy.picks
    assert any(len(p) < BATCH for p in spy.picks)  # the resumed steps did shrink
    assert _states_equal(resumed.selector.state_dict(), whole.selector.state_dict())


@pytest.mark.parametrize("mode", ["async", "stream"])
def test_kept_in_the_async_or_streaming_loop_is_refused(
    run_cookbook: Run, tmp_path: Path, mode: str
) -> None:
    dataset = make_dataset(tmp_path, "greso", rollouts="kept")
    before = dataset.selector.state_dict()
    with pytest.raises(ValueError, match=r"^rollouts='kept' needs the cookbook's sync loop"):
        run_cookbook(
            dataset,
            tmp_path,
            max_steps=4,
            async_lag=0 if mode == "async" else None,
            stream=mode == "stream",
        )
    assert "\n" not in KEPT_NEEDS_SYNC
    assert dataset.metrics()["tinker/draws"] == 0.0  # refused before anything moved
    assert _states_equal(dataset.selector.state_dict(), before)


def test_kept_needs_a_selector_that_walks_the_data(tmp_path: Path) -> None:
    from fake_service import TaskGroup

    from frontier_rft.integrations.tinker import TinkerFrontierConfig

    config = TinkerFrontierConfig(batch_size=BATCH, rollouts="kept")
    with pytest.raises(ValueError, match="does not walk the data"):
        FrontierRLDataset([TaskGroup(t) for t in range(NUM_TASKS)], config, "prioritized")
    with pytest.raises(ValueError, match="rollouts must be full"):
        TinkerFrontierConfig(batch_size=BATCH, rollouts="some")
