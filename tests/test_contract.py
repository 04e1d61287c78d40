"""The contract every registered selector obeys (docs/contract.md), checked for each one."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import SELECTORS, Feedback, TaskPool, load_selector, save_selector
from frontier_rft.core.config import config_from_dict, config_to_dict, field_docs
from frontier_rft.features.derive import EvidenceWarning
from helpers import assert_state_equal, build, drive, world_pass_rates, world_pool, world_rewards


def test_select_returns_valid_distinct_ids(selector_name: str, pool: TaskPool) -> None:
    sel = build(selector_name, pool)
    for ids in drive(sel, steps=12, batch=9):
        assert ids.dtype == np.int64 and ids.shape == (9,)
        assert ids.min() >= 0 and ids.max() < pool.num_tasks
        if not sel.allows_repeats:
            assert np.unique(ids).size == 9


def test_same_seed_same_sequence(selector_name: str, pool: TaskPool) -> None:
    a = drive(build(selector_name, pool, seed=7), steps=10)
    b = drive(build(selector_name, pool, seed=7), steps=10)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("pending", [False, True], ids=["flushed", "with-pending-feedback"])
def test_save_load_continue_is_bit_identical(
    selector_name: str, pool: TaskPool, tmp_path: Path, pending: bool
) -> None:
    sel = build(selector_name, pool, seed=3)
    drive(sel, steps=6)
    if pending:  # feedback received but not yet folded in must survive the round trip
        ids = np.array([1, 2, 5])
        sel.update(Feedback(np.repeat(ids, 4), np.tile([1.0, 0.0, 0.0, 1.0], 3), step=6))
    path = tmp_path / "sel.npz"
    save_selector(sel, path)
    restored = load_selector(path, **_collaborators(selector_name, pool))
    assert_state_equal(sel.state_dict(), restored.state_dict())
    a = drive(sel, steps=6, start_step=7)
    b = drive(restored, steps=6, start_step=7)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert_state_equal(sel.state_dict(), restored.state_dict())


def test_state_dict_round_trip_in_memory(selector_name: str, pool: TaskPool) -> None:
    sel = build(selector_name, pool, seed=1)
    drive(sel, steps=4)
    other = build(selector_name, pool, seed=1)
    other.load_state_dict(sel.state_dict())
    np.testing.assert_array_equal(
        drive(sel, 3, start_step=4)[-1], drive(other, 3, start_step=4)[-1]
    )


def _one_step(sel_name: str, pool: TaskPool, seed: int = 0):  # type: ignore[no-untyped-def]
    sel = build(sel_name, pool, seed=seed)
    drive(sel, steps=3)
    ids = sel.select(8)
    rng = np.random.default_rng(99)
    task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 4)
    return sel, task_ids, rewards


def test_split_and_shuffled_feedback_equals_one_delivery(
    selector_name: str, pool: TaskPool
) -> None:
    whole, task_ids, rewards = _one_step(selector_name, pool)
    pieces, _, _ = _one_step(selector_name, pool)
    whole.update(Feedback(task_ids, rewards, step=3))
    # Shuffle whole groups, then cut the flat stream into uneven contiguous pieces.
    rng = np.random.default_rng(5)
    groups = np.unique(task_ids)
    order = np.concatenate([np.flatnonzero(task_ids == g) for g in rng.permutation(groups)])
    for chunk in np.array_split(order, [3, 4, 13, 20]):
        if chunk.size:
            pieces.update(Feedback(task_ids[chunk], rewards[chunk], step=3))
    np.testing.assert_array_equal(whole.select(6), pieces.select(6))
    assert_state_equal(whole.state_dict(), pieces.state_dict())


def test_late_feedback_is_accepted(selector_name: str, pool: TaskPool) -> None:
    """A trainer that selects step t+1 before step t's rewards exist (TRL) still works."""
    sel = build(selector_name, pool)
    rng = np.random.default_rng(0)
    rates = world_pass_rates(pool)
    previous = sel.select(6)
    for t in range(1, 8):
        current = sel.select(6)  # drawn before the previous step's rewards arrive
        task_ids, rewards = world_rewards(previous, rates, rng, 4)
        sel.update(Feedback(task_ids, rewards, step=t - 1))
        previous = current
    assert sel.metrics()["feedback/steps"] >= 6


def test_duplicated_delivery_is_not_double_counted(selector_name: str, pool: TaskPool) -> None:
    once, task_ids, rewards = _one_step(selector_name, pool)
    twice, _, _ = _one_step(selector_name, pool)
    once.update(Feedback(task_ids, rewards, step=3), idempotent=True)
    twice.update(Feedback(task_ids, rewards, step=3), idempotent=True)
    twice.update(Feedback(task_ids, rewards, step=3), idempotent=True)
    assert twice.metrics()["feedback/duplicates_dropped"] == task_ids.size
    np.testing.assert_array_equal(once.select(6), twice.select(6))
    a, b = once.state_dict(), twice.state_dict()
    a["base"]["totals"].pop("duplicates_dropped")
    b["base"]["totals"].pop("duplicates_dropped")
    assert_state_equal(a, b)


def test_update_does_not_mutate_inputs(selector_name: str, pool: TaskPool) -> None:
    sel = build(selector_name, pool)
    ids = sel.select(5)
    task_ids = np.repeat(ids, 3)
    rewards = np.tile([1.0, 0.0, 1.0], 5)
    ids_copy, rewards_copy = task_ids.copy(), rewards.copy()
    fb = Feedback(task_ids, rewards, step=0)
    sel.update(fb)
    sel.select(5)
    np.testing.assert_array_equal(task_ids, ids_copy)
    np.testing.assert_array_equal(rewards, rewards_copy)
    assert fb.task_ids is task_ids and fb.rewards is rewards
    # Later in-place edits by the caller must not leak into the selector either.
    sel.update(Feedback(task_ids, rewards, step=1))
    before = sel.state_dict()
    rewards[:] = 0.5
    assert_state_equal(before, sel.state_dict())


BAD_FEEDBACK = {
    "nan reward": (lambda ids: Feedback(ids, np.full(ids.size, np.nan), step=9), "NaN"),
    "inf reward": (lambda ids: Feedback(ids, np.full(ids.size, np.inf), step=9), "inf"),
    "id too large": (lambda ids: Feedback(ids + 10_000, np.ones(ids.size), step=9), "out of range"),
    "negative id": (lambda ids: Feedback(-ids - 1, np.ones(ids.size), step=9), "out of range"),
    "empty": (lambda ids: Feedback(ids[:0], np.ones(0), step=9), "empty"),
    "length mismatch": (lambda ids: Feedback(ids, np.ones(ids.size + 1), step=9), "rewards"),
    "2-d rewards": (lambda ids: Feedback(ids, np.ones((ids.size, 2)), step=9), "1-D"),
    "negative step": (lambda ids: Feedback(ids, np.ones(ids.size), step=-1), "step"),
    "float ids": (lambda ids: Feedback(ids + 0.5, np.ones(ids.size), step=9), "integers"),
    "masked rewards": (
        lambda ids: Feedback(ids, np.ma.masked_array(np.ones(ids.size), mask=True), step=9),
        "not masked ones",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FEEDBACK))
def test_bad_feedback_raises_and_leaves_state_unchanged(
    selector_name: str, pool: TaskPool, case: str
) -> None:
    sel = build(selector_name, pool)
    drive(sel, steps=3)
    sel.update(Feedback(np.array([0, 0]), np.array([1.0, 0.0]), step=3))  # pending survives
    before = sel.state_dict()
    make, needle = BAD_FEEDBACK[case]
    with pytest.raises(ValueError, match=needle):
        sel.update(make(np.array([1, 2, 3])))
    assert_state_equal(before, sel.state_dict())


def test_rewards_outside_unit_interval_rejected_for_bounded_settings(
    selector_name: str, pool: TaskPool
) -> None:
    sel = build(selector_name, pool)
    drive(sel, steps=2)
    if sel.reward_bounds is None:
        pytest.skip("this configuration accepts unbounded continuous rewards")
    before = sel.state_dict()
    with pytest.raises(ValueError, match=r"must lie in \[0.0, 1.0\]"):
        sel.update(Feedback(np.array([1, 1]), np.array([1.5, 0.0]), step=2))
    assert_state_equal(before, sel.state_dict())


@pytest.mark.parametrize("batch", [0, -3, 91, 2.5, True])
def test_bad_batch_size_raises_and_leaves_state_unchanged(
    selector_name: str, pool: TaskPool, batch: object
) -> None:
    sel = build(selector_name, pool)
    drive(sel, steps=2)
    if batch == 91 and sel.allows_repeats:
        pytest.skip("this configuration samples with replacement")
    before = sel.state_dict()
    with pytest.raises(ValueError, match="batch_size"):
        sel.select(batch)  # type: ignore[arg-type]
    assert_state_equal(before, sel.state_dict())


def test_corrupt_state_is_rejected_without_change(selector_name: str, pool: TaskPool) -> None:
    sel = build(selector_name, pool)
    drive(sel, steps=3)
    before = sel.state_dict()
    broken = sel.state_dict()
    broken["base"]["times_selected"] = np.zeros(3, dtype=np.uint8)
    with pytest.raises(ValueError):
        sel.load_state_dict(broken)
    assert_state_equal(before, sel.state_dict())
    wrong = sel.state_dict()
    wrong["selector"] = "something-else"
    with pytest.raises(ValueError, match="saved by selector"):
        sel.load_state_dict(wrong)
    assert_state_equal(before, sel.state_dict())


@pytest.mark.parametrize("part", ["top", "algo"])
def test_unknown_state_fields_are_named_and_rejected_without_change(
    selector_name: str, pool: TaskPool, part: str
) -> None:
    sel = build(selector_name, pool)
    drive(sel, steps=3)
    before = sel.state_dict()
    extra = sel.state_dict()
    target = extra if part == "top" else extra["algo"]
    target["from_a_newer_version"] = 1
    target["also_unknown"] = np.zeros(2)
    with pytest.raises(ValueError, match=r"unknown field.*'also_unknown', 'from_a_newer_version'"):
        sel.load_state_dict(extra)
    assert_state_equal(before, sel.state_dict())
    sel.load_state_dict(before)  # what it saves loads (every optional part included)
    assert_state_equal(before, sel.state_dict())


def _nested_dicts(tree: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths of every dict below `tree` (inside lists too), `tree` itself excluded."""
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    for key, value in items:
        if isinstance(value, dict):
            yield (*path, key)
        if isinstance(value, dict | list):
            yield from _nested_dicts(value, (*path, key))


def test_the_walk_finds_every_nested_part() -> None:
    """Guard against a walk that finds nothing (a flat state then checks nothing)."""
    tree = {"a": {"b": [{"c": 1}, 2]}, "d": 3}
    assert list(_nested_dicts(tree)) == [("a",), ("a", "b", 0)]


# Every selector, plus the settings that add nested parts to its state: the extra configs
# its class declares, and, for one that estimates a missing difficulty from feedback (its
# prompts-only evidence says so), a pool without difficulty.
_NESTED_CASES: list[tuple[str, dict[str, Any]]] = [
    *((name, {}) for name in sorted(SELECTORS)),
    *((name, config) for name in sorted(SELECTORS) for config in SELECTORS[name].test_configs),
    *(
        (name, {"estimated": True})
        for name in sorted(SELECTORS)
        if "evidence/difficulty/observed" in SELECTORS[name].needs.evidence
    ),
]


@pytest.mark.parametrize(
    ("name", "overrides"),
    _NESTED_CASES,
    ids=[n + "".join(f"-{k}" for k in o) for n, o in _NESTED_CASES],
)
def test_unknown_fields_in_nested_state_parts_are_named_and_rejected(
    name: str, overrides: dict[str, Any]
) -> None:
    overrides, world = dict(overrides), world_pool()
    pool, rates = world, world_pass_rates(world)
    if overrides.pop("estimated", False):
        pool = TaskPool(num_tasks=world.num_tasks, features=world.features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)  # difficulty estimated: expected
        saved = build(name, pool, **overrides)
        fresh = build(name, pool, seed=5, **overrides)
    drive(saved, steps=3, pass_rates=rates)
    drive(fresh, steps=1, pass_rates=rates)  # another state: a partial load would show
    state = saved.state_dict()
    paths = list(_nested_dicts(state["algo"]))  # none for a flat state (uniform, sec)
    before = fresh.state_dict()
    for path in paths:
        extra = saved.state_dict()
        part = extra["algo"]
        for key in path:
            part = part[key]
        part["zz_unknown"] = 1
        with pytest.raises(ValueError, match="zz_unknown"):
            fresh.load_state_dict(extra)
        assert_state_equal(before, fresh.state_dict(), "/".join(map(str, path)))
    fresh.load_state_dict(state)  # untouched, it loads
    assert_state_equal(state, fresh.state_dict())


def test_state_for_another_pool_is_rejected(selector_name: str, pool: TaskPool) -> None:
    state = build(selector_name, pool).state_dict()
    other = build(selector_name, world_pool(num_tasks=93))
    with pytest.raises(ValueError, match="different TaskPool"):
        other.load_state_dict(state)


def test_config_round_trips_through_json(selector_name: str, pool: TaskPool) -> None:
    cls = SELECTORS[selector_name]
    config = build(selector_name, pool).config
    again = config_from_dict(cls.config_class, json.loads(json.dumps(config_to_dict(config))))
    assert again == config


def test_unknown_option_is_a_clear_error(selector_name: str, pool: TaskPool) -> None:
    with pytest.raises(ValueError, match="unknown option"):
        build(selector_name, pool, definitely_not_an_option=1)


def test_missing_metadata_names_the_taskpool_field(selector_name: str) -> None:
    bare = TaskPool(num_tasks=90)
    try:
        sel = build(selector_name, bare)
    except ValueError as exc:
        assert "TaskPool." in str(exc), str(exc)
        return
    drive(sel, steps=3, pass_rates=np.full(90, 0.5))


def test_metrics_are_namespaced_floats(selector_name: str, pool: TaskPool) -> None:
    sel = build(selector_name, pool)
    drive(sel, steps=4)
    sel.flush()  # metrics never fold in pending feedback themselves
    metrics = sel.metrics()
    assert metrics["feedback/steps"] == 4
    for key, value in metrics.items():
        assert "/" in key and isinstance(value, float), key


def test_config_fields_have_docstrings(selector_name: str) -> None:
    import dataclasses

    cls = SELECTORS[selector_name].config_class
    documented = field_docs(cls)
    missing = [f.name for f in dataclasses.fields(cls) if not documented.get(f.name)]
    assert not missing, f"{cls.__name__} fields without a one-line docstring: {missing}"


def _collaborators(name: str, pool: TaskPool) -> dict[str, object]:
    from helpers import selector_kwargs

    return selector_kwargs(name, pool)


def _fact_pools() -> list[TaskPool]:
    """Pools holding every combination of metadata an adapter builds from columns."""
    full = world_pool(30)
    names = ("categories", "difficulty", "features", "reference_pass_rates")
    out = [TaskPool(num_tasks=30, prompts=full.prompts)]
    out += [TaskPool(num_tasks=30, prompts=full.prompts, **{k: getattr(full, k)}) for k in names]
    return [*out, full]


FACT_CONFIGS: dict[str, tuple[dict[str, Any], ...]] = {
    "bots": (
        {"plugin": "kernel"},
        {"plugin": "regression"},
        {"plugin": "none"},
        {"rho": 0.0},
        {"candidates": 8},
        {"reward_model": "gaussian"},
    ),
    "skip": ({"plugin": "none"}, {"plugin": "regression"}),
}
"""Configurations whose facts differ from the defaults', beside each class's test_configs."""


def test_declared_facts_match_the_built_selector(selector_name: str) -> None:
    """What the adapters' checks read from the class (reads_features, reward_bounds_for)
    is what the selector does once built, for every test config and pool."""
    cls = SELECTORS[selector_name]
    for overrides in ({}, *cls.test_configs, *FACT_CONFIGS.get(selector_name, ())):
        config = config_from_dict(cls.config_class, overrides)
        for pool in _fact_pools():
            need = cls.requirement(config)
            if need is not None and not set(need.fields) & pool.given():
                continue  # refused at construction
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EvidenceWarning)
                try:
                    sel = build(selector_name, pool, **overrides)
                except ValueError:
                    continue  # a configuration this pool cannot run (named by the selector)
            evidence = sel.evidence
            reads = "features" in evidence or any(v.startswith("kmeans") for v in evidence.values())
            where = f"{selector_name} {overrides} over {sorted(pool.given())}"
            assert cls.reads_features(config, pool.given()) == reads, where
            assert cls.reward_bounds_for(config, pool.given()) == sel.reward_bounds, where
