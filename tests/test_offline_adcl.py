"""Offline difficulty curricula (sequential, windowed, reverse) and ADCL chunk re-estimation."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.selectors.adcl import ADCLConfig, ADCLSelector
from helpers import drive

N = 20
# Task i has difficulty rank RANK[i]: the easy-to-hard order is EASY_TO_HARD.
RANK = np.random.default_rng(0).permutation(N)
POOL = TaskPool(num_tasks=N, difficulty=RANK / N)
EASY_TO_HARD = np.argsort(RANK)


def batches(sel: object, sizes: list[int]) -> list[np.ndarray]:
    return [sel.select(b) for b in sizes]  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- offline
def test_sequential_walks_easy_to_hard_and_wraps() -> None:
    sel = make_selector("offline", POOL)
    got = np.concatenate(batches(sel, [6, 6, 6, 6]))
    np.testing.assert_array_equal(got, np.concatenate([EASY_TO_HARD, EASY_TO_HARD[:4]]))
    assert sel.metrics()["offline/epoch"] == 1


def test_reverse_walks_hard_to_easy() -> None:
    sel = make_selector("offline", POOL, mode="reverse")
    got = np.concatenate(batches(sel, [5, 5, 5, 5]))
    np.testing.assert_array_equal(got, EASY_TO_HARD[::-1])


def test_windowed_samples_inside_a_sliding_window() -> None:
    sel = make_selector("offline", POOL, mode="windowed", window_fraction=0.25, seed=3)
    rank_of = np.empty(N, dtype=np.int64)
    rank_of[EASY_TO_HARD] = np.arange(N)
    # Window of 5 positions, stride 3 (the batch size): starts 0, 3, 6, 9, 12, 15, then 0.
    for start in [0, 3, 6, 9, 12, 15, 0]:
        ranks = rank_of[sel.select(3)]
        assert np.unique(ranks).size == 3
        assert ranks.min() >= start and ranks.max() < start + 5, (start, ranks)
    assert sel.metrics()["offline/epoch"] == 1


def test_window_never_smaller_than_the_batch_and_custom_stride() -> None:
    sel = make_selector("offline", POOL, mode="windowed", window_fraction=0.05, window_stride=2)
    rank_of = np.empty(N, dtype=np.int64)
    rank_of[EASY_TO_HARD] = np.arange(N)
    first, second = (rank_of[b] for b in batches(sel, [4, 4]))
    assert sorted(first.tolist()) == [0, 1, 2, 3]  # window widened to the batch
    assert sorted(second.tolist()) == [2, 3, 4, 5]  # moved by the stride, not the batch


def test_ties_are_broken_by_the_seed_or_by_index() -> None:
    levels = TaskPool(num_tasks=12, difficulty=np.arange(12) % 3)  # three levels
    orders = [
        np.concatenate(batches(make_selector("offline", levels, seed=s), [12])) for s in (0, 1)
    ]
    for order in orders:
        np.testing.assert_array_equal(levels.difficulty[order], np.repeat([0, 1, 2], 4))
    assert not np.array_equal(orders[0], orders[1])
    by_index = make_selector("offline", levels, tie_break="index").select(12)
    np.testing.assert_array_equal(by_index, np.argsort(np.arange(12) % 3, kind="stable"))


def test_bots_offline_baseline_recipe_breaks_ties_by_a_second_model() -> None:
    """BOTS appendix B.6: easy-to-hard by one reference model's success rate, a second model
    breaking ties. With rates in steps of 1/64, difficulty = (1 - p1) + 1e-3 (1 - p2) sorts
    lexicographically (docs/selectors/offline.md)."""
    p1 = np.array([0.5, 0.5, 1.0, 0.25])
    p2 = np.array([0.9, 0.1, 0.0, 1.0])
    # difficulty = 0.5001, 0.5009, 0.001, 0.75: easy-to-hard 2, 0, 1, 3.
    pool = TaskPool(num_tasks=4, difficulty=(1 - p1) + 1e-3 * (1 - p2))
    assert make_selector("offline", pool).select(4).tolist() == [2, 0, 1, 3]


@pytest.mark.parametrize("mode", ["sequential", "windowed", "reverse"])
def test_offline_ignores_feedback(mode: str) -> None:
    quiet = make_selector("offline", POOL, seed=1, mode=mode)
    fed = make_selector("offline", POOL, seed=1, mode=mode)
    for t in range(8):
        a, b = quiet.select(4), fed.select(4)
        np.testing.assert_array_equal(a, b)
        fed.update(Feedback(np.repeat(b, 2), np.tile([1.0, 0.0], 4), step=t))


def test_offline_reports_batch_difficulty() -> None:
    sel = make_selector("offline", POOL)
    ids = sel.select(4)
    assert sel.metrics()["offline/batch_difficulty"] == pytest.approx(POOL.difficulty[ids].mean())


def test_offline_needs_difficulty() -> None:
    with pytest.raises(ValueError, match=r"TaskPool\.difficulty"):
        make_selector("offline", TaskPool(num_tasks=4))


@pytest.mark.parametrize(
    ("field", "value"),
    [("mode", "random"), ("window_fraction", 0.0), ("window_stride", -1), ("tie_break", "x")],
)
def test_offline_bad_config(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        make_selector("offline", POOL, **{field: value})


# ---------------------------------------------------------------------------- ADCL
class ModEstimator:
    """Deterministic pass rates (task_id % 3) / 2; records every call."""

    def __init__(self) -> None:
        self.calls: list[np.ndarray] = []

    def __call__(self, task_ids: np.ndarray) -> np.ndarray:
        self.calls.append(task_ids.copy())
        return (task_ids % 3) / 2.0


def adcl(estimator: object = None, **overrides: object) -> ADCLSelector:
    kwargs = {} if estimator is None else {"estimator": estimator}
    sel = make_selector("adcl", POOL, seed=0, **kwargs, **overrides)
    assert isinstance(sel, ADCLSelector)
    return sel


def test_without_estimator_adcl_is_the_offline_sequential_walk() -> None:
    a, b = adcl(num_chunks=4), make_selector("offline", POOL, seed=0)
    for _ in range(9):
        np.testing.assert_array_equal(a.select(7), b.select(7))


def test_chunks_partition_the_easy_to_hard_order() -> None:
    sel = adcl(num_chunks=4)
    chunks = [set(sel.select(5).tolist()) for _ in range(4)]
    for c, chunk in enumerate(chunks):
        assert chunk == set(EASY_TO_HARD[5 * c : 5 * c + 5].tolist())


def test_next_chunk_is_re_estimated_and_re_sorted_when_entered() -> None:
    est = ModEstimator()
    sel = adcl(est, num_chunks=4)
    first = sel.select(5)  # chunk 0 of epoch 0 keeps the base policy's offline order
    np.testing.assert_array_equal(first, EASY_TO_HARD[:5])
    assert est.calls == []  # chunk 1 is not estimated before it is needed
    second = sel.select(5)
    assert len(est.calls) == 1
    np.testing.assert_array_equal(est.calls[0], EASY_TO_HARD[5:10])  # offline order in
    rates = (EASY_TO_HARD[5:10] % 3) / 2.0
    np.testing.assert_array_equal(second, EASY_TO_HARD[5:10][np.argsort(-rates, kind="stable")])
    m = sel.metrics()
    assert m["adcl/estimate_calls"] == 1
    assert m["adcl/estimate_rollouts"] == 4 * 5  # 4 rollouts per prompt (METIS Table 5)
    assert m["adcl/estimate_pass_rate"] == pytest.approx(rates.mean())


def test_adcl_chunk_walk_and_re_sort_by_hand() -> None:
    """METIS A.5: sort easy-to-hard, cut into chunks, re-estimate the next chunk under the
    current policy and re-sort it locally (difficulty = 1 - pass rate)."""
    difficulty = [0.7, 0.1, 0.5, 0.3, 0.2, 0.8, 0.4, 0.6]
    rates = {2: 0.25, 7: 1.0, 0: 0.5, 5: 0.75}  # the policy now finds task 7 easiest
    calls: list[list[int]] = []

    def estimator(task_ids: np.ndarray) -> np.ndarray:
        calls.append(task_ids.tolist())
        return np.array([rates[int(t)] for t in task_ids])

    pool = TaskPool(num_tasks=8, difficulty=difficulty)
    sel = make_selector("adcl", pool, seed=0, estimator=estimator, num_chunks=2)
    # Easy-to-hard: 1 (0.1), 4, 3, 6 | 2 (0.5), 7, 0, 5 (0.8): two chunks of four.
    assert sel.select(4).tolist() == [1, 4, 3, 6]  # chunk 0 keeps the offline order
    assert calls == []
    # Chunk 1 is estimated on entry, in its offline order, then sorted by pass rate
    # descending: 7 (1.0), 5 (0.75), 0 (0.5), 2 (0.25).
    assert sel.select(4).tolist() == [7, 5, 0, 2]
    assert calls == [[2, 7, 0, 5]]


def test_adcl_defaults_are_metis_table_5() -> None:
    """METIS Table 5 (ADCL): 8 chunks, 4 rollouts per prompt for difficulty estimation."""
    cfg = ADCLConfig()
    assert (cfg.num_chunks, cfg.rollouts_per_estimate, cfg.within_chunk) == (8, 4, "sorted")
    assert adcl().config == cfg


def test_estimate_cost_follows_rollouts_per_estimate_and_epochs_re_estimate() -> None:
    est = ModEstimator()
    sel = adcl(est, num_chunks=4, rollouts_per_estimate=2)
    for _ in range(8):
        sel.select(5)  # two epochs: 3 estimates in the first, 4 in the second
    assert len(est.calls) == 7
    assert sel.metrics()["adcl/estimate_rollouts"] == 2 * 5 * 7
    assert sel.metrics()["adcl/epoch"] == 2


def test_batches_straddling_chunks_and_epochs_never_repeat() -> None:
    for chunks in (1, 2, 3, 8):
        for batch in (1, 7, 13, 20):
            sel = adcl(ModEstimator(), num_chunks=chunks)
            for _ in range(15):
                ids = sel.select(batch)
                assert np.unique(ids).size == batch, (chunks, batch)


def test_uniform_within_chunk_makes_one_shuffled_pass_without_estimating() -> None:
    est = ModEstimator()
    sel = adcl(est, num_chunks=2, within_chunk="uniform")
    got = [sel.select(5) for _ in range(4)]
    assert est.calls == []
    assert set(np.concatenate(got[:2]).tolist()) == set(EASY_TO_HARD[:10].tolist())
    assert set(np.concatenate(got[2:]).tolist()) == set(EASY_TO_HARD[10:].tolist())
    assert not np.array_equal(np.concatenate(got[:2]), EASY_TO_HARD[:10])


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (lambda ids: np.full(ids.size + 1, 0.5), "shape"),
        (lambda ids: np.full(ids.size, 1.5), r"\[0, 1\]"),
        (lambda ids: np.full(ids.size, np.nan), "finite"),
        (lambda ids: ["x"] * ids.size, "numbers"),
    ],
)
def test_bad_estimator_output_raises_and_leaves_state_unchanged(
    answer: object, needle: str
) -> None:
    sel = make_selector("adcl", POOL, estimator=answer, num_chunks=4)
    sel.select(3)
    before = sel.state_dict()
    with pytest.raises(ValueError, match=needle):
        sel.select(5)  # enters chunk 1, which needs an estimate
    after = sel.state_dict()
    np.testing.assert_array_equal(before["algo"]["order"], after["algo"]["order"])
    assert before["algo"]["pos"] == after["algo"]["pos"] and before["rng"] == after["rng"]


def test_estimator_exception_propagates_without_state_change() -> None:
    def broken(ids: np.ndarray) -> np.ndarray:
        raise RuntimeError("inference server down")

    sel = make_selector("adcl", POOL, estimator=broken, num_chunks=4)
    sel.select(5)
    with pytest.raises(RuntimeError, match="server down"):
        sel.select(2)
    assert sel.state_dict()["algo"]["pos"] == 5


def test_save_load_with_the_estimator_passed_again(tmp_path: Path) -> None:
    sel = adcl(ModEstimator(), num_chunks=4)
    drive(sel, steps=3, batch=4, pass_rates=np.full(N, 0.5))
    save_selector(sel, tmp_path / "adcl.npz")
    again = load_selector(tmp_path / "adcl.npz", estimator=ModEstimator())
    for _ in range(10):
        np.testing.assert_array_equal(sel.select(4), again.select(4))


def test_state_that_moves_tasks_between_chunks_is_rejected() -> None:
    sel = adcl(num_chunks=4)
    state = sel.state_dict()
    order = state["algo"]["order"]
    order[[0, 19]] = order[[19, 0]]  # swap the easiest and the hardest task across chunks
    with pytest.raises(ValueError, match="between difficulty chunks"):
        sel.load_state_dict(state)


def test_adcl_needs_difficulty_and_a_callable_estimator() -> None:
    with pytest.raises(ValueError, match=r"TaskPool\.difficulty"):
        make_selector("adcl", TaskPool(num_tasks=4))
    with pytest.raises(ValueError, match="callable"):
        make_selector("adcl", POOL, estimator=3)
    with pytest.raises(ValueError, match="num_chunks"):
        make_selector("adcl", POOL, num_chunks=0)


@pytest.mark.parametrize("name", ["offline", "adcl"])
def test_rewards_are_bounded_only_when_difficulty_is_observed(name: str) -> None:
    """Observed difficulty reads rewards as pass rates: 2.0 is refused, not clipped to 1."""
    prompts = [f"problem {i}" for i in range(20)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        observed = make_selector(name, TaskPool(num_tasks=20, prompts=prompts), seed=0)
    given = make_selector(name, TaskPool(num_tasks=20, difficulty=np.linspace(0, 1, 20)), seed=0)
    for sel in (observed, given):
        ids = sel.select(4)
        fb = Feedback(np.repeat(ids, 2), np.full(8, 2.0), step=0)
        if sel is observed:
            with pytest.raises(ValueError, match=r"must lie in \[0.0, 1.0\]"):
                sel.update(fb)
        else:
            sel.update(fb)  # never read: any scale
