"""The adapters' default selector (uniform), skip and greso on an all-solved and a never-solved
pool, through the TRL and verl sampler layers without a model (issue 36):
each run ends, within a bound, in its metrics saying every group was zero-variance, never in
a hang.

GRESO skips a prompt with a streak of all-equal groups with probability up to 1 - min_keep;
on a pool where every group is all-equal, every prompt is skipped that way, and only the
min_keep floor (GRESOConfig.min_keep_floor) keeps one select() bounded.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool
from frontier_rft.integrations.pool import make_pool_selector

STEPS = 12
BOUND_S = 120  # wall-clock seconds; the slowest case takes ~10 on a busy core
GROUP = 4


@contextmanager
def bounded(seconds: int) -> Iterator[None]:
    """Fail (not hang) when the block runs longer than `seconds`."""

    def stop(signum: int, frame: Any) -> None:
        raise TimeoutError(f"did not end within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _check(metrics: dict[str, float], reward: float, name: str = "greso") -> None:
    assert metrics["feedback/effective_task_ratio"] == 0.0  # no group had mixed outcomes
    if name == "greso":
        share = "greso/easy_share" if reward == 1.0 else "greso/hard_share"
        assert metrics[share] == 1.0, metrics
    assert metrics["feedback/steps"] >= STEPS - 1  # the last step is folded at the next select


@pytest.mark.parametrize("name", ["default", "skip", "greso"])
@pytest.mark.parametrize("reward", [1.0, 0.0], ids=["all-solved", "never-solved"])
def test_trl_sampler_with_the_default_selector_ends(reward: float, name: str) -> None:
    pytest.importorskip("torch")
    from frontier_rft.integrations.trl.config import FrontierConfig
    from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler

    config = FrontierConfig() if name == "default" else FrontierConfig(selector=name)
    n, batch = 16, 8
    pool = TaskPool(n, prompts=[f"what is {i} + {i}?" for i in range(n)])
    selector = make_pool_selector(config.selector, pool, 0, config.selector_config)
    sampler = FrontierRepeatSampler(
        selector, np.arange(n), mini_repeat_count=GROUP, batch_size=batch, repeat_count=1
    )
    with bounded(BOUND_S):
        stream = iter(sampler)
        for step in range(STEPS):
            rows = []
            for _ in range(batch * GROUP):
                try:
                    rows.append(next(stream))
                except StopIteration:  # an epoch ends: the Trainer starts the next
                    stream = iter(sampler)
                    rows.append(next(stream))
            ids = np.asarray(rows, dtype=np.int64)
            assert len(set(ids.tolist())) == batch
            selector.update(Feedback(ids, np.full(ids.size, reward), step=step))
    _check(selector.metrics(), reward, config.selector)


@pytest.mark.parametrize("name", ["default", "skip", "greso"])
@pytest.mark.parametrize("reward", [1.0, 0.0], ids=["all-solved", "never-solved"])
def test_verl_sampler_with_the_default_selector_ends(
    reward: float, name: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)  # the sampler logs to ./frontier_metrics.jsonl
    from frontier_rft.integrations.verl.config import VerlSamplerConfig
    from frontier_rft.integrations.verl.sampler import FrontierSampler

    n, batch = 16, 8
    data = [{"prompt": f"q{i}", "index": i} for i in range(n)]  # positions are the ids
    config = VerlSamplerConfig(
        batch_size=batch, **({} if name == "default" else {"selector": name})
    )
    assert config.selector == ("uniform" if name == "default" else name)
    sampler = FrontierSampler(data, config=config)
    with bounded(BOUND_S):
        stream = iter(sampler)
        for _ in range(STEPS):
            ids = []
            for _ in range(batch):
                try:
                    ids.append(next(stream))
                except StopIteration:
                    stream = iter(sampler)
                    ids.append(next(stream))
            task_ids = np.repeat(np.asarray(ids), GROUP)
            sampler.report(task_ids, np.full(task_ids.size, reward))
    _check(sampler.selector.metrics(), reward, config.selector)
