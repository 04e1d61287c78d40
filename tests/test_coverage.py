"""coverage="epoch" for the scoring selectors: each prompt once per epoch, best-scored first.

bots (and its presets mopps, dots), prioritized and pcl. The default coverage="pool" is
pinned to the selections these selectors made before the option existed.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import Feedback, Selector, TaskPool, load_selector, save_selector
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.selectors.bots import BOTSSelector
from frontier_rft.selectors.bots.shard import Coordinator
from helpers import assert_state_equal, build, drive, world_pool

SCORING = ["bots", "mopps", "dots", "prioritized", "pcl"]
EPOCH = {"coverage": "epoch"}


def _build(name: str, pool: TaskPool, seed: int = 0, **overrides: Any) -> Selector:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)  # plug-in / feature source notes
        return build(name, pool, seed=seed, **overrides)


def _epochs(picked: list[np.ndarray], num_tasks: int) -> list[np.ndarray]:
    """The selections cut into the walk's epochs. A batch that straddles a boundary ends
    one epoch with the old epoch's last ids and opens the next with all of its ids (they
    count as visited in both), so the next epoch starts where that batch starts."""
    flat = np.concatenate(picked)
    batch = picked[0].size
    out, start = [], 0
    while start + num_tasks <= flat.size:
        end = start + num_tasks
        out.append(flat[start:end])
        start = end - end % batch
    return out


# ------------------------------------------------------------------ coverage
@pytest.mark.parametrize("name", SCORING)
def test_every_prompt_is_selected_exactly_once_in_each_epoch(name: str) -> None:
    pool = world_pool(90)
    sel = _build(name, pool, seed=1, **EPOCH)
    picked = drive(sel, steps=34, batch=8)  # 90 = 11 * 8 + 2: every epoch ends mid-batch
    epochs = _epochs(picked, 90)
    assert len(epochs) == 3
    for ids in epochs:
        np.testing.assert_array_equal(np.sort(ids), np.arange(90))
    for ids in picked:  # straddling batches (steps 11, 22, 33) included
        assert np.unique(ids).size == 8
    sel.flush()
    assert sel.metrics()[f"{name}/epoch"] == 4.0  # the 34th batch opened the 4th epoch


@pytest.mark.parametrize("name", SCORING)
def test_a_batch_straddling_the_boundary_takes_the_rest_then_the_next_epoch(name: str) -> None:
    pool = world_pool(10)
    sel = _build(name, pool, seed=2, **EPOCH)
    first, second = drive(sel, steps=2, batch=7)
    rest = np.setdiff1d(np.arange(10), first)
    assert np.unique(second).size == 7
    np.testing.assert_array_equal(np.sort(second[:3]), rest)  # the old epoch's remainder
    third = drive(sel, steps=1, batch=7, start_step=2)[0]
    # The new epoch handed out `second` already: `third` is 3 of its other ids + 4 new ones.
    assert np.intersect1d(third[:3], second).size == 0
    assert np.unique(third).size == 7


def test_prioritized_takes_the_highest_priorities_of_the_epoch_first() -> None:
    pool = TaskPool(num_tasks=20)
    sel = _build("prioritized", pool, **EPOCH)
    # 4 of 8 correct: w = 0.25 + eps; 3 of 8: 0.234; unseen: 0.2; 8 of 8: eps.
    correct = {0: 4, 1: 4, 2: 4, 3: 4, 4: 3, 5: 3, 16: 8, 17: 8, 18: 8, 19: 8}
    ids = np.repeat(list(correct), 8)
    rewards = np.concatenate([np.r_[np.ones(k), np.zeros(8 - k)] for k in correct.values()])
    sel.update(Feedback(ids, rewards, step=0))
    np.testing.assert_array_equal(np.sort(sel.select(4)), [0, 1, 2, 3])
    np.testing.assert_array_equal(np.sort(sel.select(2)), [4, 5])
    np.testing.assert_array_equal(np.sort(sel.select(10)), np.arange(6, 16))
    np.testing.assert_array_equal(np.sort(sel.select(4)), [16, 17, 18, 19])  # the rest, last
    assert sel.metrics()["prioritized/epoch"] == 1.0
    # A new epoch: the same order again (no feedback since), never the epoch's repeats.
    np.testing.assert_array_equal(np.sort(sel.select(4)), [0, 1, 2, 3])
    assert sel.metrics()["prioritized/epoch"] == 2.0


def test_bots_takes_the_tasks_closest_to_the_target_first() -> None:
    pool = TaskPool(num_tasks=20)
    sel = _build("mopps", pool, sample=False, **EPOCH)  # posterior mean: a known ranking
    correct = {i: (4 if i < 4 else 1 if i < 12 else 8) for i in range(20)}
    ids = np.repeat(list(correct), 8)
    rewards = np.concatenate([np.r_[np.ones(k), np.zeros(8 - k)] for k in correct.values()])
    sel.update(Feedback(ids, rewards, step=0))  # means 0.5 (0-3), 0.2 (4-11), 0.9 (12-19)
    np.testing.assert_array_equal(np.sort(sel.select(4)), [0, 1, 2, 3])
    np.testing.assert_array_equal(np.sort(sel.select(8)), np.arange(4, 12))
    np.testing.assert_array_equal(np.sort(sel.select(8)), np.arange(12, 20))


def test_pcl_takes_the_predictions_closest_to_the_target_first() -> None:
    kind = np.arange(20) % 2  # type 0 solved half the time, type 1 always
    pool = TaskPool(num_tasks=20, features=np.eye(2)[kind])
    sel = _build("pcl", pool, **EPOCH)
    for t in range(5):
        ids = np.repeat(np.arange(20), 8)
        rewards = np.where(kind[ids] == 1, 1.0, np.tile([1.0, 0.0], 80))
        sel.update(Feedback(ids, rewards, step=t))
    first = sel.select(10)  # m * B = 80 >= 20: the whole epoch is scored
    np.testing.assert_array_equal(np.sort(first), np.arange(0, 20, 2))


def _pcl_on_two_kinds(num_tasks: int, seed: int = 0, **overrides: Any) -> Selector:
    """PCL in coverage mode on prompts of two kinds (feature = kind): kind 0 solved half the
    time (the target), kind 1 always; the value model has seen every prompt once."""
    kind = np.arange(num_tasks) % 2
    pool = TaskPool(num_tasks=num_tasks, features=np.eye(2)[kind])
    sel = _build("pcl", pool, seed=seed, **overrides, **EPOCH)
    ids = np.repeat(np.arange(num_tasks), 8)
    half = np.tile([1.0, 0.0], 4 * num_tasks)
    sel.update(Feedback(ids, np.where(kind[ids] == 1, 1.0, half), step=0))
    return sel


def test_pcl_scores_only_the_next_m_times_b_prompts_of_the_walk() -> None:
    kind = np.arange(40) % 2
    sel = _pcl_on_two_kinds(40, pool_multiplier=2)
    sel.select(2)  # opens the epoch; the walk's order is then the selector's state
    window = sel.state_dict()["algo"]["walk"]["order"][2:6]  # the next m * B = 4 prompts
    chosen = sel.select(2)
    assert set(chosen) <= set(window)  # never a better prompt further down the walk
    expected = window[np.argsort(kind[window], kind="stable")[:2]]  # type 0 first, walk order
    np.testing.assert_array_equal(np.sort(chosen), np.sort(expected))


def test_pcl_epoch_window_is_a_uniform_sample_of_the_remainder() -> None:
    """The promise (docs/selectors/pcl.md): each step's window is a uniform sample of what
    the epoch has left, so the rejects of a window do not crowd the next ones. Over many
    seeds, after 3 selections the next window holds kind 1 in the remainder's proportion."""
    kind = np.arange(40) % 2
    in_window, in_remainder = [], []
    for seed in range(300):
        sel = _pcl_on_two_kinds(40, seed=seed, pool_multiplier=2)
        for _ in range(3):
            sel.select(2)  # each leaves 2 rejects (mostly kind 1) of its window of 4
        walk = sel.state_dict()["algo"]["walk"]
        rest = walk["order"][walk["cursor"] :]
        in_window.append(kind[rest[:4]].mean())
        in_remainder.append(kind[rest].mean())
    # Rejects kept at the front: the window would be ~all kind 1 (0.86 measured), not ~0.6.
    assert abs(np.mean(in_window) - np.mean(in_remainder)) < 0.05


def test_pcl_epoch_keeps_taking_targets_until_the_epoch_runs_out_of_them() -> None:
    """Issue 35's repro: N = 400, half the prompts at p = 0.5 (the targets), half always
    solved, B = 10, m = 8. A uniform window of 80 holds >= 10 targets in expectation until
    ~step 17 of 40, so the batches stay all-target; with the rejects left at the front of
    the walk the share fell to ~0.5 by step 8."""
    kind = np.arange(400) % 2
    sel = _pcl_on_two_kinds(400)
    share = [float((kind[sel.select(10)] == 0).mean()) for _ in range(15)]
    assert min(share[:13]) >= 0.9, share
    assert np.mean(share) >= 0.95, share


# ------------------------------------------------------------------ state
@pytest.mark.parametrize("name", SCORING)
@pytest.mark.parametrize("pending", [False, True], ids=["flushed", "with-pending-feedback"])
def test_save_load_continue_is_bit_identical(name: str, pending: bool, tmp_path: Path) -> None:
    pool = world_pool(90)
    sel = _build(name, pool, seed=3, **EPOCH)
    drive(sel, steps=13, batch=8)  # mid-way through the second epoch
    if pending:
        sel.update(Feedback(np.repeat([1, 2, 5], 4), np.tile([1.0, 0.0, 0.0, 1.0], 3), step=13))
    path = tmp_path / "sel.npz"
    save_selector(sel, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        restored = load_selector(path)
    assert_state_equal(sel.state_dict(), restored.state_dict())
    a = drive(sel, steps=12, batch=8, start_step=14)  # across the next boundary
    b = drive(restored, steps=12, batch=8, start_step=14)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert_state_equal(sel.state_dict(), restored.state_dict())


@pytest.mark.parametrize("name", ["bots", "prioritized", "pcl"])
def test_a_state_of_the_other_coverage_mode_is_refused_unchanged(name: str) -> None:
    pool = world_pool(90)
    walker, pooled = _build(name, pool, **EPOCH), _build(name, pool)
    drive(walker, steps=2, batch=8)
    drive(pooled, steps=2, batch=8)
    before = pooled.state_dict()
    with pytest.raises(ValueError, match=r"config|coverage"):
        pooled.load_state_dict(walker.state_dict())
    assert_state_equal(before, pooled.state_dict())


def test_bots_learns_the_same_in_both_modes() -> None:
    """coverage only changes what is selected: the same feedback, the same posterior."""
    pool = world_pool(90)
    modes = [_build("bots", pool, seed=4), _build("bots", pool, seed=4, **EPOCH)]
    rng = np.random.default_rng(0)
    for t in range(6):
        ids = np.repeat(rng.choice(90, size=8, replace=False), 4)
        rewards = (rng.random(ids.size) < 0.5).astype(np.float64)
        for sel in modes:
            sel.update(Feedback(ids, rewards, step=t))
            sel.flush()
    a, b = (sel.state_dict()["algo"] for sel in modes)
    for key in ("alpha", "beta", "clock", "mu_tilde", "rho"):
        assert_state_equal(a[key], b[key], key)


# ------------------------------------------------------------------ default unchanged
# Recorded from the code before coverage existed: build(name, world_pool(), seed=11),
# drive(steps=5, batch=8).
PINNED: list[tuple[str, dict[str, Any], list[list[int]]]] = [
    ("bots", {}, [[47, 25, 81, 42, 53, 59, 24, 38], [52, 2, 8, 27, 34, 35, 26, 85], [78, 64, 80, 28, 59, 35, 56, 0], [43, 71, 17, 28, 88, 41, 22, 24], [56, 47, 22, 53, 31, 13, 87, 64]]),  # noqa: E501
    ("mopps", {}, [[47, 25, 81, 42, 53, 59, 24, 38], [44, 72, 85, 13, 47, 8, 69, 10], [41, 31, 68, 57, 76, 3, 50, 21], [29, 16, 4, 86, 6, 1, 63, 21], [79, 77, 50, 38, 61, 31, 63, 26]]),  # noqa: E501
    ("dots", {}, [[2, 10, 11, 42, 51, 52, 63, 67], [14, 20, 35, 53, 56, 71, 74, 77], [14, 35, 77, 17, 26, 41, 59, 86], [17, 35, 41, 8, 20, 44, 74, 80], [8, 35, 41, 29, 56, 65, 71, 77]]),  # noqa: E501
    ("bots", {"candidates": 16}, [[12, 11, 88, 61, 34, 46, 48, 57], [37, 23, 2, 16, 42, 71, 12, 6], [3, 47, 39, 17, 29, 0, 28, 71], [8, 15, 18, 76, 58, 5, 70, 47], [75, 86, 6, 18, 64, 47, 4, 65]]),  # noqa: E501
    ("prioritized", {}, [[67, 40, 71, 49, 30, 38, 4, 33], [12, 53, 78, 80, 66, 2, 37, 72], [55, 87, 23, 62, 84, 45, 5, 88], [62, 1, 75, 58, 54, 19, 70, 22], [62, 65, 32, 69, 39, 9, 18, 25]]),  # noqa: E501
    ("prioritized", {"sampling": "proportional"}, [[43, 1, 28, 40, 20, 55, 46, 39], [14, 83, 24, 61, 69, 64, 36, 33], [79, 70, 14, 44, 47, 77, 62, 22], [88, 7, 10, 16, 30, 52, 5, 77], [26, 14, 42, 71, 53, 37, 51, 60]]),  # noqa: E501
    ("pcl", {}, [[0, 32, 56, 16, 40, 78, 71, 43], [65, 59, 29, 80, 38, 56, 68, 20], [17, 74, 50, 35, 77, 5, 44, 41], [53, 86, 23, 41, 77, 74, 83, 62], [53, 86, 23, 41, 74, 83, 77, 26]]),  # noqa: E501
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "overrides", "expected"),
    PINNED,
    ids=[n + "".join(f"-{k}" for k in o) for n, o, _ in PINNED],
)
def test_the_default_pool_mode_selects_as_before(
    name: str, overrides: dict[str, Any], expected: list[list[int]]
) -> None:
    sel = _build(name, world_pool(), seed=11, **overrides)
    assert sel.config.coverage == "pool"  # type: ignore[attr-defined]
    picked = drive(sel, steps=5, batch=8)
    assert [ids.tolist() for ids in picked] == expected
    assert f"{name}/epoch" not in sel.metrics()


# ------------------------------------------------------------------ config
@pytest.mark.parametrize("name", SCORING)
@pytest.mark.parametrize("value", ["bogus", "Epoch", "", None, 1])
def test_coverage_is_validated_naming_the_choices(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=r"coverage must be one of \('pool', 'epoch'\)"):
        _build(name, world_pool(), coverage=value)


@pytest.mark.parametrize("name", ["bots", "mopps", "dots"])
def test_bots_refuses_epoch_coverage_with_candidates(name: str) -> None:
    with pytest.raises(ValueError, match=r"coverage='epoch'.*candidates=0"):
        _build(name, world_pool(), candidates=16, **EPOCH)


def test_a_sharded_bots_service_refuses_epoch_coverage() -> None:
    sel = _build("bots", world_pool(), plugin="none", **EPOCH)
    assert isinstance(sel, BOTSSelector)
    with pytest.raises(ValueError, match="coverage='pool'"):
        Coordinator(sel.cfg, sel.plugin, sel.gaussian, Coordinator.state_of(sel))


@pytest.mark.parametrize("name", SCORING)
def test_an_epoch_that_ends_with_a_full_batch_opens_no_new_one_early(name: str) -> None:
    """88 = 11 * 8: epochs are exactly the consecutive 11-batch runs (none lost to the next)."""
    sel = _build(name, world_pool(88), seed=5, **EPOCH)
    flat = np.concatenate(drive(sel, steps=33, batch=8))
    for e in range(3):
        np.testing.assert_array_equal(np.sort(flat[88 * e : 88 * (e + 1)]), np.arange(88))
    sel.flush()
    assert sel.metrics()[f"{name}/epoch"] == 3.0
