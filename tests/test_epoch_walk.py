"""structures.EpochWalk: the one walk over a fresh permutation per epoch."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft.structures.epoch_walk import EpochWalk


def test_walk_take_covers_each_id_once_per_epoch_and_straddles_without_repeats() -> None:
    walk, rng = EpochWalk(10), np.random.default_rng(0)
    seen = [walk.take(4, rng) for _ in range(5)]  # 20 ids = 2 epochs
    for batch in seen:
        assert np.unique(batch).size == batch.size
    flat = np.concatenate(seen)
    # The third batch straddles: 2 ids end epoch 1, 2 start epoch 2.
    assert sorted(flat[:10].tolist()) == list(range(10))
    assert sorted(flat[10:].tolist()) == list(range(10))
    assert walk.epoch == 2 and walk.left == 0


def test_walk_take_where_passes_rejected_ids_over_until_the_next_epoch() -> None:
    walk, rng = EpochWalk(10), np.random.default_rng(0)
    odd = lambda ids: ids % 2 == 1  # noqa: E731
    got, passed = walk.take_where(5, rng, odd, max_epochs=3)
    assert sorted(got.tolist()) == [1, 3, 5, 7, 9]
    assert passed == 10 - 5 - walk.left  # even ids walked past before the 5th odd one
    got2, _ = walk.take_where(2, rng, odd, max_epochs=3)  # the next epoch starts
    assert walk.epoch == 2 and set(got2.tolist()) <= {1, 3, 5, 7, 9}


def test_walk_take_where_is_bounded_when_nothing_is_accepted() -> None:
    walk, rng = EpochWalk(6), np.random.default_rng(0)
    never = lambda ids: np.zeros(ids.shape[0], dtype=bool)  # noqa: E731
    got, passed = walk.take_where(4, rng, never, max_epochs=2)
    assert np.unique(got).size == 4  # after 2 whole epochs it takes without asking
    assert passed == 12


def test_walk_take_best_takes_the_remainders_best_and_each_id_once_per_epoch() -> None:
    walk, rng = EpochWalk(9), np.random.default_rng(1)
    score = lambda ids: -ids.astype(float)  # noqa: E731  (lowest id first)
    assert walk.take_best(3, rng, score).tolist() == [0, 1, 2]
    assert walk.take_best(3, rng, score).tolist() == [3, 4, 5]
    straddle = walk.take_best(5, rng, score)  # 6, 7, 8, then the best two of epoch 2
    assert sorted(straddle[:3].tolist()) == [6, 7, 8] and straddle[3:].tolist() == [0, 1]
    assert walk.epoch == 2
    rest = walk.take_best(walk.left, rng, score)
    assert sorted(np.concatenate([straddle, rest]).tolist()) == list(range(9))  # 6-8 count in both


def test_walk_state_round_trip_and_rejects_a_non_permutation() -> None:
    walk, rng = EpochWalk(7), np.random.default_rng(0)
    walk.take(3, rng)
    other = EpochWalk(7)
    other.load_state_dict(walk.state_dict(), "test")
    assert (
        other.take(5, np.random.default_rng(5)).tolist()
        == walk.take(5, np.random.default_rng(5)).tolist()
    )
    bad = dict(walk.state_dict(), order=np.zeros(7, np.int64))
    with pytest.raises(ValueError, match="order"):
        EpochWalk(7).load_state_dict(bad, "test")


def test_walk_take_best_window_scores_only_the_window_and_reshuffles_its_rejects() -> None:
    walk, rng = EpochWalk(50), np.random.default_rng(3)
    walk.take(1, rng)  # opens the epoch
    window = walk.remaining()[:6].copy()
    seen: list[np.ndarray] = []

    def score(ids: np.ndarray) -> np.ndarray:
        seen.append(ids.copy())
        return -ids.astype(float)

    chosen = walk.take_best(2, rng, score, window=6)
    np.testing.assert_array_equal(seen[0], window)  # the window only, in walk order
    np.testing.assert_array_equal(chosen, np.sort(window)[:2])
    rest = walk.remaining()
    assert sorted(rest.tolist()) == sorted(set(range(50)) - set(walk.order[:3].tolist()))
    assert walk.left == 47


def test_walk_take_best_leaves_the_remainder_in_uniform_order() -> None:
    """After a window's best are taken, every remainder position is equally likely to hold
    one of its rejects (a partial Fisher-Yates): frequency of a reject at the front (the
    defect kept them all there) and at the back, over many walks."""
    front, back, trials = 0, 0, 4000
    for seed in range(trials):
        walk, rng = EpochWalk(20), np.random.default_rng(seed)
        walk.take(1, rng)  # opens the epoch: 19 left
        window = walk.remaining()[:5].copy()
        chosen = walk.take_best(2, rng, lambda ids: -ids.astype(float), window=5)
        rejects = np.setdiff1d(window, chosen)
        rest = walk.remaining()  # 17 ids, 3 of them rejects: 3/17 per position
        front += int(np.isin(rest[0], rejects))
        back += int(np.isin(rest[-1], rejects))
    assert abs(front / trials - 3 / 17) < 0.03
    assert abs(back / trials - 3 / 17) < 0.03


def test_walk_take_best_over_the_whole_remainder_draws_nothing() -> None:
    """window=None (bots, prioritized): the order only breaks ties, no random draw."""
    walk, rng = EpochWalk(12), np.random.default_rng(0)
    walk.take(1, rng)
    before = rng.bit_generator.state
    walk.take_best(3, rng, lambda ids: -ids.astype(float))
    assert rng.bit_generator.state == before
