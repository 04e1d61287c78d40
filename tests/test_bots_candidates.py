"""BOTS candidate mode (`candidates > 0`): lazy forgetting and lazy implicit evidence equal
the eager whole-pool update to rounding, selection draws from the candidates, and the
state round trip is exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.selectors.bots import BOTSSelector
from helpers import assert_state_equal, drive, world_pool

N = 60


def moving_world(seed: int = 0) -> tuple[TaskPool, np.ndarray, np.ndarray]:
    """A pool whose policy passes its strong reference, then falls below its weak one, so
    mu~ leaves [0, 1] in both directions and the interpolation clips."""
    rng = np.random.default_rng(seed)
    weak = rng.uniform(0.0, 0.5, N)
    strong = np.clip(weak + rng.uniform(0.0, 0.5, N), 0.0, 1.0)
    early = np.clip(strong + 0.4, 0.0, 1.0)  # above strong: mu > 1
    late = np.clip(weak - 0.3, 0.0, 1.0)  # below weak: mu < 0
    pool = TaskPool(num_tasks=N, reference_pass_rates=np.c_[weak, strong])
    return pool, early, late


def script(seed: int, steps: int, window: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(step, task ids, rewards) deliveries: on time, in pieces, late pieces of folded steps,
    steps late within the log window and older than it, and skipped step numbers."""
    rng = np.random.default_rng(seed)
    _, early, late = moving_world()
    out: list[tuple[int, np.ndarray, np.ndarray]] = []
    held: list[tuple[int, np.ndarray, np.ndarray]] = []
    t = 0
    for i in range(steps):
        t += int(rng.integers(1, 3))  # some step numbers never occur
        rate = early if i < steps // 2 else late
        ids = rng.choice(N, 8, replace=False)
        sizes = rng.integers(2, 6, ids.shape[0])  # unequal groups
        task_ids = np.repeat(ids, sizes)
        rewards = (rng.random(task_ids.shape[0]) < rate[task_ids]).astype(np.float64)
        if rng.random() < 0.3:
            rewards = rng.random(task_ids.shape[0])  # fractional rewards too
        cut = int(rng.integers(0, task_ids.shape[0]))
        first = task_ids < ids[ids.shape[0] // 2]  # whole groups per piece
        out.append((t, task_ids[first], rewards[first]))
        if rng.random() < 0.3:
            held.append((t, task_ids[~first], rewards[~first]))  # arrives later
        elif (~first).any():
            out.append((t, task_ids[~first], rewards[~first]))
        if held and rng.random() < 0.4:
            out.append(held.pop(int(rng.integers(len(held)))))
        del cut
    if window:  # a step older than the window, never seen
        out.append((max(0, t - 3 * window), np.array([1, 1, 2]), np.array([1.0, 0.0, 1.0])))
    out.extend(held)
    return out


def run(sel: BOTSSelector, deliveries: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
    for i, (t, ids, rewards) in enumerate(deliveries):
        if ids.shape[0]:
            sel.update(Feedback(ids, rewards, step=t))
        if i % 2:
            sel.flush()
    sel.flush()


CONFIGS: list[dict[str, Any]] = [
    {"name": "bots"},  # interpolation, lam = rho = 0.1, clipped steps
    {"name": "bots", "lam": 0.5, "rho": 0.3},  # history pruned (horizon 67 steps)
    {"name": "bots", "lam": 0.0, "rho": 0.2},  # no forgetting: history kept whole
    {"name": "bots", "plugin": "none", "lam": 0.2},  # forgetting only
    {"name": "bots", "adaptive_rho": True, "implicit_rollouts": 3.0},
    {"name": "bots", "reward_model": "gaussian"},  # unclipped interpolation
    {"name": "mopps"},
    {"name": "dots"},  # lam = 1: only the newest step counts
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_lazy_update_equals_the_eager_update_to_rounding(cfg: dict[str, Any]) -> None:
    pool, _, _ = moving_world()
    name, kwargs = cfg["name"], {k: v for k, v in cfg.items() if k != "name"}
    window = 4
    eager = make_selector(name, pool, late_window=window, **kwargs)
    lazy = make_selector(name, pool, late_window=window, candidates=16, **kwargs)
    assert isinstance(eager, BOTSSelector) and isinstance(lazy, BOTSSelector)
    deliveries = script(1, steps=160, window=window)
    for chunk in np.array_split(np.arange(len(deliveries)), 8):
        run(eager, [deliveries[i] for i in chunk])
        run(lazy, [deliveries[i] for i in chunk])
        lazy.select(8)  # drawing candidates catches them up in place: changes no value
        np.testing.assert_allclose(lazy.posterior_mean(), eager.posterior_mean(), rtol=1e-11)
        np.testing.assert_allclose(
            lazy.effective_sample_size(), eager.effective_sample_size(), rtol=1e-11
        )
    m_eager, m_lazy = eager.metrics(), lazy.metrics()
    for key in ("mu_tilde", "rho", "clock", "late_pieces", "effective_sample_size"):
        assert m_lazy[f"{name}/{key}"] == pytest.approx(
            m_eager[f"{name}/{key}"], rel=1e-11, nan_ok=True
        )
    if name == "bots" and kwargs.get("reward_model") != "gaussian" and "plugin" not in kwargs:
        assert m_eager["bots/mu_tilde"] < 0.0  # the script drove mu~ out of [0, 1]


def test_candidates_covering_the_pool_select_exactly_what_the_eager_selector_selects() -> None:
    """Same random stream as the whole-pool draw. (MoPPS counts exactly; elsewhere a rounding
    difference can move a parameter off 1.0, where numpy's gamma sampler changes method.)"""
    pool, early, _ = moving_world()
    eager = make_selector("mopps", pool, seed=4)
    lazy = make_selector("mopps", pool, seed=4, candidates=N)
    rng = np.random.default_rng(0)
    for t in range(30):
        a, b = eager.select(6), lazy.select(6)
        np.testing.assert_array_equal(a, b)
        task_ids = np.repeat(a, 4)
        rewards = (rng.random(task_ids.shape[0]) < early[task_ids]).astype(np.float64)
        for sel in (eager, lazy):
            sel.update(Feedback(task_ids, rewards, step=t))


def test_selection_comes_from_the_drawn_candidates() -> None:
    """With 8 candidates for a batch of 8, a step's pick is its whole candidate draw: a
    uniform sample, whatever the posteriors say."""
    pool = TaskPool(num_tasks=1000)
    sel = make_selector("mopps", pool, seed=0, candidates=8)
    ref = np.random.default_rng(0)  # the selector's own RNG stream, replayed
    for _ in range(5):
        want = ref.choice(1000, size=8, replace=False)
        ids = sel.select(8)
        np.testing.assert_array_equal(np.sort(ids), np.sort(want))
        ref.standard_gamma(np.ones(8))  # the Thompson draw that followed
        ref.standard_gamma(np.ones(8))


def test_candidate_mode_still_prefers_mixed_tasks() -> None:
    pool = world_pool(num_tasks=400)
    rates = np.where(np.arange(400) % 4 == 0, 0.5, np.where(np.arange(400) % 2 == 0, 1.0, 0.0))
    sel = make_selector("mopps", pool, seed=0, candidates=64)
    rng = np.random.default_rng(1)
    mixed = 0
    for t in range(120):
        ids = sel.select(8)
        if t >= 60:
            mixed += int((rates[ids] == 0.5).sum())
        task_ids = np.repeat(ids, 8)
        sel.update(Feedback(task_ids, (rng.random(task_ids.size) < rates[task_ids]) * 1.0, t))
    assert mixed / (60 * 8) > 0.5  # uniform picks a mixed task 25% of the time


def test_state_round_trip_and_resume_are_exact(tmp_path: Path) -> None:
    pool, early, _ = moving_world()
    sel = make_selector("bots", pool, seed=3, candidates=12, lam=0.5)
    drive(sel, steps=90, batch=6, pass_rates=early)  # past the 67-step horizon: pruned
    sel.update(Feedback(np.array([1, 1, 2]), np.array([1.0, 0.0, 1.0]), step=90))  # pending
    path = tmp_path / "sel.npz"
    save_selector(sel, path)
    restored = load_selector(path)
    assert_state_equal(sel.state_dict(), restored.state_dict())
    a = drive(sel, steps=20, start_step=91, batch=6, pass_rates=early)
    b = drive(restored, steps=20, start_step=91, batch=6, pass_rates=early)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert_state_equal(sel.state_dict(), restored.state_dict())


def test_state_of_the_other_mode_is_refused() -> None:
    pool, _, _ = moving_world()
    lazy = make_selector("bots", pool, candidates=8)
    eager = make_selector("bots", pool)
    state = lazy.state_dict()
    state["config"] = eager.state_dict()["config"]
    with pytest.raises(ValueError, match="candidate mode"):
        eager.load_state_dict(state)


def test_kernel_plugin_is_refused_and_auto_falls_back() -> None:
    pool = TaskPool(num_tasks=50, features=np.random.default_rng(0).random((50, 3)))
    with pytest.raises(ValueError, match="kernel plug-in"):
        make_selector("bots", pool, plugin="kernel", candidates=16)
    sel = make_selector("bots", pool, candidates=16)
    assert sel.metrics()["bots/rho"] == 0.0  # auto: no plug-in, no implicit evidence
    with pytest.raises(ValueError, match="candidates must be an int"):
        make_selector("bots", pool, candidates=-1)


def test_batch_larger_than_candidates_still_returns_the_batch() -> None:
    sel = make_selector("mopps", TaskPool(num_tasks=100), candidates=4)
    ids = sel.select(10)
    assert ids.shape == (10,) and np.unique(ids).size == 10


def test_clip_correction_tables_equal_the_sum_over_events() -> None:
    from frontier_rft.selectors.bots.lazy import LazyPosterior

    rng = np.random.default_rng(2)
    ref = rng.random((40, 2))
    ref[:5, 1] = ref[:5, 0]  # gap 0: never clipped
    lazy = LazyPosterior(40, (1.0, 1.0), 0.1, False, ref)
    for step in range(30):
        lazy.advance(step, float(rng.uniform(0.1, 2.0)), float(rng.uniform(-1.5, 2.5)), clip=True)
        if step % 7 == 0:
            lazy.sync(rng.choice(40, 10, replace=False))  # tasks with different last events
    ev = lazy.event.astype(np.int64)
    w, s = ref[:, 0], ref[:, 1]
    want = np.zeros(40)
    for e, step, c, mu in zip(
        lazy.clip_events, lazy.clip_steps, lazy.clip_c, lazy.clip_mu, strict=True
    ):
        p = w + mu * (s - w)
        want += np.where(ev < e, c * 0.9 ** (29 - step) * (np.clip(p, 0, 1) - p), 0.0)
    assert np.abs(want).max() > 0.1
    np.testing.assert_allclose(lazy._clip_correction(ev, ref, 29), want, rtol=1e-12, atol=1e-12)
