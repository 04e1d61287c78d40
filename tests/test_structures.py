"""Property tests of the priority structures (heap invariants, pop order, sums, sampling)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_rft.structures import (
    IndexedMaxHeap,
    MaxHeap,
    SumTree,
    TimestampHeap,
    TournamentTree,
)

FAST = settings(max_examples=40, deadline=None)
PRIORITIES = st.sampled_from([0.0, 0.1, 0.1875, 0.2, 0.234375, 0.25, 0.2501, float("inf")])

# An operation: ("push", priorities) | ("pop", k) | ("delete", fraction) ; applied to a
# universe of 24 ids so pushes, pops and deletes collide often.
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.lists(PRIORITIES, min_size=1, max_size=8)),
        st.tuples(st.just("pop"), st.integers(0, 6)),
        st.tuples(st.just("delete"), st.floats(0.0, 1.0)),
    ),
    max_size=25,
)
UNIVERSE = 24


class Reference:
    """Sorted-list model: entries (priority, tie, id), best = max priority then min tie."""

    def __init__(self) -> None:
        self.entries: dict[int, tuple[float, int]] = {}
        self.tie = 0

    def push(self, ids: list[int], prios: list[float]) -> np.ndarray:
        ties = np.arange(self.tie, self.tie + len(ids))
        for i, p, t in zip(ids, prios, ties.tolist(), strict=True):
            self.entries[i] = (p, t)
        self.tie += len(ids)
        return ties

    def pop(self, k: int) -> list[int]:
        order = sorted(self.entries, key=lambda i: (-self.entries[i][0], self.entries[i][1]))
        for i in order[:k]:
            del self.entries[i]
        return order[:k]


def _run(ops: list, structure: object, with_delete: bool) -> None:  # type: ignore[type-arg]
    ref = Reference()
    rng = np.random.default_rng(0)
    for op, arg in ops:
        absent = [i for i in range(UNIVERSE) if i not in ref.entries]
        if op == "push":
            ids = [int(i) for i in rng.permutation(absent)[: len(arg)]]
            ties = ref.push(ids, arg[: len(ids)])
            structure.push_many(np.array(ids, dtype=np.int64), arg[: len(ids)], ties)  # type: ignore[attr-defined]
        elif op == "pop":
            k = min(arg, len(ref.entries))
            got, prios = structure.pop_many(k)  # type: ignore[attr-defined]
            want = ref.pop(k)
            assert got.tolist() == want
            assert np.all(prios[1:] <= prios[:-1]), "pops must come in non-increasing priority"
        elif with_delete and ref.entries:
            present = sorted(ref.entries)
            drop = present[: int(arg * len(present))]
            structure.remove_many(np.array(drop, dtype=np.int64))  # type: ignore[attr-defined]
            for i in drop:
                del ref.entries[i]
        assert structure.is_valid()  # type: ignore[attr-defined]
        assert len(structure) == len(ref.entries)  # type: ignore[arg-type]


@FAST
@given(OPS)
def test_max_heap_invariant_and_pop_order(ops: list) -> None:  # type: ignore[type-arg]
    _run(ops, MaxHeap(UNIVERSE), with_delete=False)


@FAST
@given(OPS)
def test_indexed_heap_with_deletes(ops: list) -> None:  # type: ignore[type-arg]
    heap = IndexedMaxHeap(UNIVERSE)
    _run(ops, heap, with_delete=True)
    ids, _, _ = heap.entries()
    # Position map: every slot's id points back at that slot; absent ids map to -1.
    assert np.array_equal(heap._pos[ids], np.arange(ids.size))
    absent = np.setdiff1d(np.arange(UNIVERSE), ids)
    assert np.all(heap._pos[absent] == -1)
    assert np.array_equal(
        heap.contains_many(np.arange(UNIVERSE)), np.isin(np.arange(UNIVERSE), ids)
    )


@FAST
@given(OPS, st.sampled_from([2, 3, 8]))
def test_tournament_tree_matches_the_heap_order(ops: list, arity: int) -> None:  # type: ignore[type-arg]
    _run(ops, TournamentTree(UNIVERSE, arity=arity), with_delete=True)


@FAST
@given(st.lists(st.tuples(st.integers(0, 29), PRIORITIES), min_size=1, max_size=30))
def test_indexed_heap_priority_change(changes: list[tuple[int, float]]) -> None:
    heap = IndexedMaxHeap(30)
    heap.fill(0.2, np.arange(30))
    current = dict.fromkeys(range(30), 0.2)
    for item, prio in changes:
        heap.update(item, prio)
        current[item] = prio
        assert heap.is_valid() and heap.priority_of(item) == prio
    _, prios = heap.pop_many(30)
    assert sorted(current.values(), reverse=True) == prios.tolist()


def test_equal_priorities_pop_first_in_first_out() -> None:
    heap = MaxHeap(10)
    for item in [7, 3, 9, 1]:
        heap.insert(item, 0.2)  # automatic tie-breaker: insertion counter
    assert heap.pop_many(4)[0].tolist() == [7, 3, 9, 1]


def test_extract_max_insert_and_errors() -> None:
    heap = IndexedMaxHeap(5)
    heap.insert(2, 0.1)
    heap.insert(4, 0.25)
    assert heap.peek() == (4, 0.25) and 4 in heap and 3 not in heap
    assert heap.extract_max() == (4, 0.25)
    with pytest.raises(ValueError, match="already"):
        heap.push_many([2], [0.3])
    with pytest.raises(ValueError, match="NaN"):
        heap.push_many([3], [float("nan")])
    assert heap.delete(2) == 0.1 and len(heap) == 0
    with pytest.raises(IndexError):
        heap.extract_max()


@pytest.mark.parametrize("n", [1, 2, 7, 9, 100, 1000])
def test_tournament_fill_and_top(n: int) -> None:
    tree = TournamentTree(n)
    ties = np.random.default_rng(n).permutation(n)
    tree.fill(0.2, ties)
    assert tree.is_valid() and len(tree) == n
    k = min(n, 10)
    assert tree.top(k).tolist() == np.argsort(ties)[:k].tolist()


@FAST
@given(st.lists(st.tuples(st.integers(0, 40), st.floats(0.0, 5.0)), max_size=60))
def test_sum_tree_internal_nodes_are_sums(updates: list[tuple[int, float]]) -> None:
    tree = SumTree(41)
    for item, value in updates:
        tree.update([item], [value])
        assert tree.is_valid()
    leaves = tree.values()
    assert tree.total() == pytest.approx(leaves.sum())


def test_sum_tree_sampling_is_proportional() -> None:
    tree = SumTree(6)
    weights = np.array([1.0, 0.0, 2.0, 3.0, 0.5, 3.5])
    tree.update(np.arange(6), weights)
    draws = tree.sample(100_000, np.random.default_rng(0))
    freq = np.bincount(draws, minlength=6) / draws.size
    np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.01)
    assert freq[1] == 0.0  # zero weight is never drawn


def test_sum_tree_take_is_successive_sampling_without_replacement() -> None:
    weights = np.array([4.0, 3.0, 2.0, 1.0])
    rng = np.random.default_rng(1)
    firsts, seconds = np.zeros(4), np.zeros(4)
    for _ in range(4000):
        tree = SumTree(4)
        tree.update(np.arange(4), weights)
        a, b = tree.take(2, rng)
        assert a != b and tree.values([a, b]).tolist() == [0.0, 0.0]
        firsts[a] += 1
        seconds[b] += 1
    np.testing.assert_allclose(firsts / 4000, weights / 10, atol=0.03)
    # P(second = j) = sum_{i != j} P(first = i) * w_j / (total - w_i)
    expect = np.array(
        [
            sum(weights[i] / 10 * weights[j] / (10 - weights[i]) for i in range(4) if i != j)
            for j in range(4)
        ]
    )
    np.testing.assert_allclose(seconds / 4000, expect, atol=0.03)


def test_sum_tree_take_refuses_without_change() -> None:
    tree = SumTree(3)
    tree.update([0, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive weight"):
        tree.take(3, np.random.default_rng(0))
    assert tree.values().tolist() == [1.0, 0.0, 2.0]


@FAST
@given(st.lists(st.tuples(st.integers(0, 19), st.integers(0, 5)), max_size=40), st.integers(0, 20))
def test_timestamp_heap_pops_oldest_first(pushes: list[tuple[int, int]], pops: int) -> None:
    heap = TimestampHeap(20)
    present: dict[int, int] = {}
    for item, stamp in pushes:
        if item in present:
            continue
        heap.push_many([item], [stamp])
        present[item] = stamp
        assert heap.is_valid()
    k = min(pops, len(present))
    ids, stamps = heap.pop_many(k)
    want = sorted(present, key=lambda i: (present[i], i))[:k]
    assert ids.tolist() == want and stamps.tolist() == [present[i] for i in want]
    rest = sorted(present, key=lambda i: (present[i], i))[k:]
    heap.remove_many(rest[::2])
    assert heap.is_valid() and heap.pop_many(len(heap))[0].tolist() == rest[1::2]


def test_timestamp_heap_batched_append_in_step_order() -> None:
    heap = TimestampHeap(100)
    for step in range(10):
        heap.push_many(np.arange(step * 10, step * 10 + 10)[::-1], step)
        assert heap.is_valid()
    assert heap.pop_many(15)[0].tolist() == list(range(15))


@pytest.mark.parametrize("kind", ["heap", "indexed", "tournament", "sumtree", "timestamp"])
def test_state_round_trip_is_exact(kind: str) -> None:
    rng = np.random.default_rng(3)

    def make():  # type: ignore[no-untyped-def]
        return {
            "heap": lambda: MaxHeap(50),
            "indexed": lambda: IndexedMaxHeap(50),
            "tournament": lambda: TournamentTree(50),
            "sumtree": lambda: SumTree(50),
            "timestamp": lambda: TimestampHeap(50),
        }[kind]()

    a = make()
    ids = rng.permutation(50)[:30]
    if kind == "sumtree":
        a.update(ids, rng.random(30))
    elif kind == "timestamp":
        a.push_many(ids, rng.integers(0, 5, 30))
    else:
        a.push_many(ids, rng.choice([0.1, 0.2, 0.25], 30), np.arange(30))
    b = make()
    b.load_state_dict(a.state_dict())
    for key, value in a.state_dict().items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(b.state_dict()[key]))
    if kind == "sumtree":
        assert (
            a.take(5, np.random.default_rng(0)).tolist()
            == b.take(5, np.random.default_rng(0)).tolist()
        )
    else:
        assert a.pop_many(10)[0].tolist() == b.pop_many(10)[0].tolist()


def test_corrupt_heap_state_is_rejected() -> None:
    heap = IndexedMaxHeap(10)
    heap.push_many([1, 2, 3], [0.1, 0.2, 0.3], [0, 1, 2])
    state = heap.state_dict()
    state["priorities"] = state["priorities"][::-1].copy()  # child now beats its parent
    fresh = IndexedMaxHeap(10)
    with pytest.raises(ValueError, match="heap property"):
        fresh.load_state_dict(state)
    assert len(fresh) == 0


def test_structures_and_prioritized_selector_survive_pickling() -> None:
    """Ray and multiprocessing pickle selectors; memoryview caches must be rebuilt."""
    import pickle

    from frontier_rft import make_selector
    from helpers import drive, world_pool

    for structure in ("heap", "tournament"):
        sel = make_selector("prioritized", world_pool(), seed=0, structure=structure)
        drive(sel, steps=3)
        copy = pickle.loads(pickle.dumps(sel))
        np.testing.assert_array_equal(
            drive(sel, 3, start_step=3)[-1], drive(copy, 3, start_step=3)[-1]
        )
