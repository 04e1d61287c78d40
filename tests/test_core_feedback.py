"""Core input handling: GroupBatch aggregation, Feedback and TaskPool validation, persistence."""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_rft import Feedback, GroupBatch, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.core import persistence
from frontier_rft.core.selector import FORMAT_VERSION
from helpers import assert_state_equal, drive, world_pool

SETTINGS = settings(max_examples=50, deadline=None)


# ------------------------------------------------------------------ GroupBatch.from_rollouts
def test_from_rollouts_by_hand() -> None:
    ids = np.array([3, 1, 3, 2, 1, 3], dtype=np.int64)
    rewards = np.array([0.1, 1.0, 0.2, 0.5, 0.0, 0.3])
    versions = np.array([5, 7, -1, -1, 7, 4], dtype=np.int64)
    b = GroupBatch.from_rollouts(9, ids, rewards, versions)
    assert b.step == 9 and b.num_groups == 3
    np.testing.assert_array_equal(b.task_ids, [1, 2, 3])
    np.testing.assert_array_equal(b.counts, [2, 1, 3])
    np.testing.assert_array_equal(b.offsets, [0, 2, 3, 6])
    np.testing.assert_array_equal(b.rewards, [1.0, 0.0, 0.5, 0.1, 0.2, 0.3])  # arrival order kept
    np.testing.assert_array_equal(b.policy_version, [7, -1, 4])  # min known version, -1 if none
    np.testing.assert_allclose(b.sums, [1.0, 0.5, 0.6])
    np.testing.assert_allclose(b.means, [0.5, 0.5, 0.2])
    np.testing.assert_array_equal(b.successes, [1, 0, 0])
    np.testing.assert_array_equal(b.mixed, [True, False, True])
    sub = b.select(np.array([True, False, True]))
    np.testing.assert_array_equal(sub.task_ids, [1, 3])
    np.testing.assert_array_equal(sub.offsets, [0, 2, 5])
    np.testing.assert_array_equal(sub.rewards, [1.0, 0.0, 0.1, 0.2, 0.3])
    np.testing.assert_array_equal(sub.policy_version, [7, 4])
    assert sub.step == 9


def test_group_statistics_do_not_depend_on_arrival_order() -> None:
    # 0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1 differ in the last bit in floating point; the
    # rollouts keep their arrival order (per-rollout advantages line up with the input).
    ids = np.array([0, 0, 0, 1, 1], dtype=np.int64)
    versions = np.full(5, -1, dtype=np.int64)
    forward = GroupBatch.from_rollouts(0, ids, np.array([0.1, 0.2, 0.3, 0.7, 0.1]), versions)
    backward = GroupBatch.from_rollouts(0, ids, np.array([0.3, 0.2, 0.1, 0.1, 0.7]), versions)
    for stat in ("sums", "means", "variances", "mean_abs_advantage"):
        a, b = getattr(forward, stat), getattr(backward, stat)
        a, b = (a(), b()) if callable(a) else (a, b)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), stat
    np.testing.assert_array_equal(backward.rewards, [0.3, 0.2, 0.1, 0.1, 0.7])


@SETTINGS
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.floats(0, 1), st.integers(-1, 5)), min_size=1, max_size=40
    )
)
def test_from_rollouts_groups_ragged_rollouts(rows: list[tuple[int, float, int]]) -> None:
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    rewards = np.array([r[1] for r in rows])
    versions = np.array([r[2] for r in rows], dtype=np.int64)
    b = GroupBatch.from_rollouts(0, ids, rewards, versions)
    np.testing.assert_array_equal(b.task_ids, np.unique(ids))
    assert b.offsets[0] == 0 and b.offsets[-1] == ids.size
    for g, task in enumerate(b.task_ids):
        mine = ids == task
        group = b.rewards[b.offsets[g] : b.offsets[g + 1]]
        np.testing.assert_array_equal(group, rewards[mine])  # arrival order within the group
        assert b.counts[g] == mine.sum()
        known = versions[mine][versions[mine] >= 0]
        assert b.policy_version[g] == (known.min() if known.size else -1)
        assert b.means[g] == pytest.approx(rewards[mine].mean())
        assert b.variances[g] == pytest.approx(rewards[mine].var(), abs=1e-12)
        assert b.successes[g] == int((rewards[mine] >= 1.0 - 1e-9).sum())  # float tolerance
        assert b.mixed[g] == (rewards[mine].max() > rewards[mine].min())


# ------------------------------------------------------------------ Feedback validation
GOOD_IDS = np.array([0, 1, 2])

BAD_FEEDBACK: dict[str, tuple[Feedback, str]] = {
    "negative step": (Feedback(GOOD_IDS, np.ones(3), step=-1), "step must be a non-negative int"),
    "float step": (Feedback(GOOD_IDS, np.ones(3), step=1.0), "step must be a non-negative int"),
    "bool step": (Feedback(GOOD_IDS, np.ones(3), step=True), "step must be a non-negative int"),
    "float version": (
        Feedback(GOOD_IDS, np.ones(3), step=0, policy_version=1.5),
        "policy_version must be a non-negative int",
    ),
    "bool version": (
        Feedback(GOOD_IDS, np.ones(3), step=0, policy_version=False),
        "policy_version must be a non-negative int",
    ),
    "step beyond int64": (Feedback(GOOD_IDS, np.ones(3), step=2**63), "below 2**53, got 9223"),
    "uint64 step": (
        Feedback(GOOD_IDS, np.ones(3), step=np.uint64(2**64 - 1)),
        "step must be a non-negative int below 2**53, got 18446744073709551615",
    ),
    "step 2**53": (Feedback(GOOD_IDS, np.ones(3), step=2**53), "below 2**53"),
    "uint64 version": (
        Feedback(GOOD_IDS, np.ones(3), step=0, policy_version=np.uint64(2**64 - 1)),
        "policy_version must be a non-negative int below 2**53",
    ),
    "negative version": (
        Feedback(GOOD_IDS, np.ones(3), step=0, policy_version=-1),
        "policy_version must be a non-negative int",
    ),
    "uint64 ids": (
        Feedback(np.array([2**64 - 1, 0, 1], dtype=np.uint64), np.ones(3), step=0),
        "outside [0, 10), first 18446744073709551615",
    ),
    "huge float ids": (Feedback(np.array([1e300, 0.0, 1.0]), np.ones(3), step=0), "first 1e+300"),
    "reward beyond 1e100": (
        Feedback(GOOD_IDS, np.array([1.7e308, 0.0, 0.0]), step=0),
        "magnitude 1.7e+308, above the supported 1e+100; divide the rewards by a constant",
    ),
    "complex rewards": (Feedback(GOOD_IDS, np.ones(3) + 1j, step=0), "must be numeric"),
    "2-d ids": (Feedback(GOOD_IDS.reshape(3, 1), np.ones(3), step=0), "flat 1-D arrays"),
    "2-d rewards": (Feedback(GOOD_IDS, np.ones((3, 2)), step=0), "flat 1-D arrays"),
    "scalar rewards": (Feedback(GOOD_IDS, 1.0, step=0), "flat 1-D arrays"),
    "length mismatch": (Feedback(GOOD_IDS, np.ones(4), step=0), "3 task_ids but 4 rewards"),
    "empty": (Feedback(GOOD_IDS[:0], np.ones(0), step=0), "empty"),
    "fractional ids": (Feedback(GOOD_IDS + 0.5, np.ones(3), step=0), "must be integers"),
    "nan ids": (Feedback(np.array([0.0, np.nan, 1.0]), np.ones(3), step=0), "must be integers"),
    "string ids": (Feedback(np.array(["a", "b", "c"]), np.ones(3), step=0), "must be integers"),
    "string rewards": (Feedback(GOOD_IDS, np.array(["1", "0", "1"]), step=0), "must be numeric"),
    "bool rewards": (Feedback(GOOD_IDS, np.array([True, False, True]), step=0), "must be numeric"),
    "id too large": (
        Feedback(np.array([0, 10, 11]), np.ones(3), step=0),
        "2 id(s) outside [0, 10), first 10",
    ),
    "negative id": (
        Feedback(np.array([0, -1, 2]), np.ones(3), step=0),
        "outside [0, 10), first -1",
    ),
    "nan reward": (
        Feedback(GOOD_IDS, np.array([1.0, np.nan, 0.0]), step=0),
        "NaN or inf (1 value(s), first at position 1, task 1)",
    ),
    "inf reward": (Feedback(GOOD_IDS, np.array([np.inf, 1.0, 0.0]), step=0), "NaN or inf"),
    "reward above bound": (
        Feedback(GOOD_IDS, np.array([1.0, 1.5, 0.0]), step=0),
        "must lie in [0.0, 1.0] for this selector's settings",
    ),
    "reward below bound": (Feedback(GOOD_IDS, np.array([-0.1, 1, 0]), step=0), "must lie in"),
}


@pytest.mark.parametrize("case", sorted(BAD_FEEDBACK))
def test_feedback_validation_messages(case: str) -> None:
    feedback, needle = BAD_FEEDBACK[case]
    with pytest.raises(ValueError, match=re.escape(needle)):
        feedback.validated(10, (0.0, 1.0))


def test_the_bounds_are_inclusive_at_their_edges() -> None:
    edge = Feedback(GOOD_IDS, np.array([1e100, -1e100, 0.0]), step=2**53 - 1, policy_version=0)
    _, rewards = edge.validated(10, None)
    assert rewards[0] == 1e100
    Feedback(GOOD_IDS, np.ones(3), step=np.uint64(5), policy_version=np.int8(2**7 - 1)).validated(
        10, None
    )


def test_reward_bounds_message_shows_the_plain_value() -> None:
    feedback = Feedback(GOOD_IDS, np.array([1.0, 1.5, 0.0]), step=0)
    with pytest.raises(ValueError, match=re.escape("got 1.5 at position 1")):
        feedback.validated(10, (0.0, 1.0))


def test_feedback_validation_accepts_and_copies() -> None:
    ids = np.array([2.0, 1.0])  # integral floats are accepted
    rewards = np.array([3.5, -2.0], dtype=np.float32)
    out_ids, out_rewards = Feedback(ids, rewards, step=np.int64(4)).validated(10, None)
    assert out_ids.dtype == np.int64 and out_rewards.dtype == np.float64
    np.testing.assert_array_equal(out_ids, [2, 1])
    out_ids[0] = 7
    assert ids[0] == 2.0  # private copies
    lists = Feedback([0, 1], [1, 0], step=0, policy_version=np.int32(3)).validated(2, (0.0, 1.0))
    np.testing.assert_array_equal(lists[1], [1.0, 0.0])


# ------------------------------------------------------------------ TaskPool validation
BAD_POOLS: dict[str, tuple[dict[str, Any], str]] = {
    "zero tasks": ({"num_tasks": 0}, "num_tasks must be a positive int"),
    "bool tasks": ({"num_tasks": True}, "num_tasks must be a positive int"),
    "float tasks": ({"num_tasks": 4.0}, "num_tasks must be a positive int"),
    "categories length": ({"categories": [0, 1, 2]}, r"TaskPool.categories must have shape \(4,\)"),
    "categories 3-d": (
        {"categories": np.zeros((4, 1, 1))},
        r"categories must have shape \(4,\) or \(4, k>=1\)",
    ),
    "negative categories": ({"categories": [0, -1, 0, 1]}, "non-negative integer labels"),
    "categories text": (
        {"categories": ["a", "b", "c", "d"]},
        "TaskPool.categories must hold real numbers, got dtype <U1; map labels to ints",
    ),
    "fractional categories": (
        {"categories": [0.5, 1.5, 0.0, 1.0]},
        "TaskPool.categories must be integer labels, got 0.5",
    ),
    "categories (N, 0)": ({"categories": np.zeros((4, 0))}, r"shape \(4,\) or \(4, k>=1\)"),
    "categories beyond int64": (
        {"categories": np.full(4, 2**64 - 1, dtype=np.uint64)},
        "non-negative integer labels below 2\\*\\*63",
    ),
    "categories 2.0**63 float": (  # was stored as -2**63, and its file then failed to load
        {"categories": [0.0, 2.0**63, 0.0, 1.0]},
        "non-negative integer labels below 2\\*\\*63",
    ),
    "complex difficulty": (
        {"difficulty": [1 + 2j, 1, 1, 1]},
        "TaskPool.difficulty must hold real numbers, got dtype complex128",
    ),
    "text difficulty": ({"difficulty": ["1", "2", "3", "4"]}, "must hold real numbers"),
    "ragged features": ({"features": [[1.0], [1.0, 2.0], [1.0], [1.0]]}, "not a rectangular"),
    "features (N, 0)": ({"features": np.zeros((4, 0))}, r"features must have shape \(4, k>=1\)"),
    "features too large": ({"features": np.full((4, 2), 1e200)}, "magnitude 1e\\+200"),
    "prompts None": ({"prompts": [None] * 4}, r"TaskPool.prompts\[0\] is None \(NoneType\), not"),
    "keys ints": ({"keys": [0, 1, 2, 3]}, r"TaskPool.keys\[0\] is 0 \(int\), not a string"),
    "difficulty nan": ({"difficulty": [0.1, np.nan, 0.2, 0.3]}, "TaskPool.difficulty contains NaN"),
    "difficulty 2-d": (
        {"difficulty": np.zeros((4, 2))},
        r"TaskPool.difficulty must have shape \(4,\)",
    ),
    "features 1-d": ({"features": np.zeros(4)}, r"TaskPool.features must have shape \(4, k>=1\)"),
    "features inf": (
        {"features": np.full((4, 2), np.inf)},
        "TaskPool.features contains NaN or inf",
    ),
    "reference columns": (
        {"reference_pass_rates": np.zeros((4, 3))},
        r"reference_pass_rates must have shape \(N, 2\)",
    ),
    "reference above one": (
        {"reference_pass_rates": np.full((4, 2), 1.2)},
        r"reference_pass_rates must lie in \[0, 1\]",
    ),
    "reference negative": (
        {"reference_pass_rates": np.full((4, 2), -0.1)},
        r"reference_pass_rates must lie in \[0, 1\]",
    ),
    "reference nan": (
        {"reference_pass_rates": np.full((4, 2), np.nan)},
        "reference_pass_rates contains NaN",
    ),
    "prompts length": ({"prompts": ["a", "b"]}, "TaskPool.prompts has 2 entries, expected 4"),
    "prompts string": ({"prompts": "abcd"}, "TaskPool.prompts must be a sequence of 4 strings"),
    "keys length": ({"keys": ["k"] * 5}, "TaskPool.keys has 5 entries, expected 4"),
    "prompts set": ({"prompts": {"a", "b", "c", "d"}}, "strings .a list, for example., got set"),
    "prompts dict": ({"prompts": dict.fromkeys("abcd")}, "got dict"),
    "prompts generator": ({"prompts": (c for c in "abcd")}, "got generator"),
}


def test_taskpool_takes_an_ordered_column_with_a_length() -> None:
    # A pandas Series or any sized, ordered column that is not a Sequence.
    class Column:
        def __init__(self, items: list[str]) -> None:
            self.items = items

        def __len__(self) -> int:
            return len(self.items)

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(self.items)

    assert TaskPool(num_tasks=3, prompts=Column(["a", "b", "c"])).prompts == ("a", "b", "c")
    pd = pytest.importorskip("pandas")
    series = pd.DataFrame({"prompt": ["x", "y"]})["prompt"]
    assert TaskPool(num_tasks=2, prompts=series).prompts == ("x", "y")


@pytest.mark.parametrize("case", sorted(BAD_POOLS))
def test_taskpool_validation_messages(case: str) -> None:
    kwargs, needle = BAD_POOLS[case]
    with pytest.raises(ValueError, match=needle):
        TaskPool(**{"num_tasks": 4, **kwargs})


def test_taskpool_copies_freezes_and_fingerprints() -> None:
    difficulty = np.array([0.1, 0.2, 0.3, 0.4])
    pool = TaskPool(num_tasks=4, difficulty=difficulty, prompts=["a", "b", "c", "d"])
    difficulty[0] = 9.0
    assert pool.difficulty is not None and pool.difficulty[0] == 0.1
    with pytest.raises(ValueError, match="read-only"):
        pool.difficulty[0] = 1.0
    assert pool.prompts == ("a", "b", "c", "d")
    assert TaskPool(num_tasks=4).fingerprint != pool.fingerprint
    twin = TaskPool(num_tasks=4, difficulty=[0.1, 0.2, 0.3, 0.4], prompts=("a", "b", "c", "d"))
    assert twin.fingerprint == pool.fingerprint
    assert TaskPool.from_state(pool.to_state()).fingerprint == pool.fingerprint


def test_require_names_the_field_the_selector_and_the_reason() -> None:
    pool = TaskPool(num_tasks=4, difficulty=[0.0, 1.0, 2.0, 3.0])
    assert pool.require("difficulty", "offline") is pool.difficulty
    with pytest.raises(ValueError) as info:
        pool.require("features", "pcl", "the value model reads task embeddings")
    msg = str(info.value)
    assert "TaskPool.features" in msg and "'pcl'" in msg
    assert "the value model reads task embeddings" in msg and "features=..." in msg


# ------------------------------------------------------------------ persistence
@pytest.fixture
def saved(tmp_path: Path) -> tuple[Any, Path]:
    sel = make_selector("uniform", world_pool(), seed=3)
    drive(sel, steps=3)
    path = tmp_path / "sel.npz"
    save_selector(sel, path)
    return sel, path


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("error", [Boom, KeyboardInterrupt])
def test_save_is_atomic_when_the_writer_fails_midway(
    saved: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    sel, path = saved
    before = path.read_bytes()
    drive(sel, steps=2, start_step=3)  # the new state differs from the saved one

    def half_written(fh: Any, **arrays: Any) -> None:
        fh.write(b"PK\x03\x04 half a zip file")
        raise error("disk full")

    monkeypatch.setattr(persistence.np, "savez", half_written)
    with pytest.raises(error):
        save_selector(sel, path)
    monkeypatch.undo()
    assert path.read_bytes() == before  # the previous file is intact
    assert sorted(os.listdir(path.parent)) == ["sel.npz"]  # no temp file left behind
    assert load_selector(path).select_calls == 3


def test_save_fails_cleanly_when_the_rename_fails(
    saved: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    sel, path = saved
    before = path.read_bytes()

    def no_rename(src: Any, dst: Any) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(persistence.os, "replace", no_rename)
    with pytest.raises(OSError, match="read-only"):
        save_selector(sel, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(os.listdir(path.parent)) == ["sel.npz"]


def test_save_creates_directories_and_round_trips(tmp_path: Path) -> None:
    sel = make_selector("uniform", world_pool(), seed=1)
    drive(sel, steps=2)
    path = tmp_path / "a" / "b" / "sel.npz"
    save_selector(sel, path)
    assert_state_equal(sel.state_dict(), load_selector(path).state_dict())


@pytest.mark.parametrize("cut", [0.0, 0.1, 0.5, 0.9])
def test_truncated_file_raises_value_error(saved: tuple[Any, Path], cut: float) -> None:
    _, path = saved
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(ValueError, match="not a readable frontier_rft selector file"):
        load_selector(path)


def test_garbage_file_raises_value_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.npz"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(ValueError, match="not a readable"):
        load_selector(path)


def test_flipped_bytes_raise_value_error(saved: tuple[Any, Path]) -> None:
    _, path = saved
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 16] = bytes(16)  # corrupt a stored member: the zip CRC check fails
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError):
        load_selector(path)


def test_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_selector(tmp_path / "nope.npz")


def _rewrite_header(path: Path, edit: Any) -> None:
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    header = json.loads(arrays["__header__"].tobytes().decode("utf-8"))
    header = edit(header)
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_npz_without_header_raises(tmp_path: Path) -> None:
    path = tmp_path / "plain.npz"
    np.savez(path, x=np.arange(3))
    with pytest.raises(ValueError, match="no header"):
        load_selector(path)


def test_format_version_mismatch_raises(saved: tuple[Any, Path]) -> None:
    _, path = saved
    _rewrite_header(path, lambda h: {**h, "format_version": FORMAT_VERSION + 1})
    with pytest.raises(ValueError, match=f"format version {FORMAT_VERSION + 1} is not supported"):
        load_selector(path)


def test_state_format_version_mismatch_raises(saved: tuple[Any, Path]) -> None:
    sel, _ = saved
    state = sel.state_dict()
    state["format_version"] = 0
    with pytest.raises(ValueError, match="state format version 0 is not supported"):
        sel.load_state_dict(state)


def test_unknown_selector_name_in_file_raises(saved: tuple[Any, Path]) -> None:
    _, path = saved
    _rewrite_header(path, lambda h: {**h, "selector": "unifrom"})
    with pytest.raises(ValueError, match="unknown selector 'unifrom'"):
        load_selector(path)


@pytest.mark.parametrize(
    "edit",
    [lambda h: [1, 2, 3], lambda h: {"format_version": FORMAT_VERSION}],
    ids=["header-not-a-dict", "header-without-selector"],
)
def test_malformed_header_raises_value_error(saved: tuple[Any, Path], edit: Any) -> None:
    _, path = saved
    _rewrite_header(path, edit)
    with pytest.raises(ValueError):
        load_selector(path)


def test_pool_is_saved_inside_the_file(saved: tuple[Any, Path]) -> None:
    sel, path = saved
    restored = load_selector(path)
    assert restored.pool.fingerprint == sel.pool.fingerprint
    assert restored.pool.prompts == sel.pool.prompts
    np.testing.assert_array_equal(restored.pool.features, sel.pool.features)
    with zipfile.ZipFile(path) as zf:
        assert any(name.startswith("s/pool") for name in zf.namelist())


def test_include_pool_false_requires_pool(tmp_path: Path) -> None:
    pool = world_pool()
    sel = make_selector("uniform", pool, seed=2)
    drive(sel, steps=2)
    path = tmp_path / "nopool.npz"
    save_selector(sel, path, include_pool=False)
    with zipfile.ZipFile(path) as zf:
        assert not any(name.startswith("s/pool") for name in zf.namelist())
    with pytest.raises(ValueError, match="saved without its TaskPool; pass pool="):
        load_selector(path)
    restored = load_selector(path, pool=pool)
    assert_state_equal(sel.state_dict(), restored.state_dict())
    with pytest.raises(ValueError, match="different TaskPool"):
        load_selector(path, pool=world_pool(num_tasks=93))


def test_float_category_labels_round_trip_exactly_up_to_the_largest_below_2_63(
    tmp_path: Any,
) -> None:
    from frontier_rft import load_selector, make_selector, save_selector

    top = np.nextafter(2.0**63, 0.0)  # 2**63 - 1024: the largest float64 below 2**63
    pool = TaskPool(4, categories=[0.0, top, 2.0**53 + 2, 1.0])
    want = [0, 2**63 - 1024, 2**53 + 2, 1]
    assert pool.categories is not None and pool.categories.tolist() == want
    save_selector(make_selector("uniform", pool), tmp_path / "sel.npz")
    loaded = load_selector(tmp_path / "sel.npz")
    assert loaded.pool.categories is not None and loaded.pool.categories.tolist() == want


def test_boolean_category_labels_are_the_labels_0_and_1() -> None:
    """Issue 36: booleans were refused with an OverflowError (numpy cannot compare a bool
    array's max with the Python int 2**63); the previous release read them as 0/1."""
    from frontier_rft import make_selector

    flags = np.array([True, False, True, False])
    pool = TaskPool(4, categories=flags)
    assert pool.categories is not None and pool.categories.dtype == np.int64
    assert pool.categories.tolist() == [1, 0, 1, 0]
    joint = TaskPool(4, categories=np.stack([flags, ~flags], axis=1))
    assert joint.categories is not None and joint.categories.tolist()[0] == [1, 0]
    assert TaskPool(4, categories=[True, True, False, False]).categories is not None
    assert TaskPool(2, difficulty=np.array([True, False])).difficulty is not None
    assert len(make_selector("sec", pool, seed=0).select(2)) == 2
