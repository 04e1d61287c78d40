"""DAPO dynamic sampling wrapper: filtering, surplus carry-over, staleness, pass-through, state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import (
    assert_state_equal,
    selector_kwargs,
    world_pass_rates,
    world_pool,
    world_rewards,
)
from frontier_rft import SELECTORS, Feedback, GroupBatch, TaskPool, load_selector, save_selector
from frontier_rft import make_selector as make
from frontier_rft.core.advantages import group_advantages
from frontier_rft.core.config import config_from_dict, config_to_dict
from frontier_rft.selectors.dynamic_sampling import (
    DynamicSamplingConfig,
    DynamicSamplingSelector,
    FilteredBatch,
)


def dapo(pool: TaskPool, seed: int = 0, **overrides: Any) -> DynamicSamplingSelector:
    sel = make("dapo", pool, seed=seed, **overrides)
    assert isinstance(sel, DynamicSamplingSelector)
    return sel


def fb(groups: dict[int, list[float]], step: int, version: int | None = None) -> Feedback:
    """Feedback from {task: rewards of its rollouts}, rollouts interleaved across groups."""
    ids = np.concatenate([np.full(len(r), t) for t, r in groups.items()])
    rewards = np.concatenate([np.asarray(r, dtype=float) for r in groups.values()])
    perm = np.random.default_rng(step).permutation(ids.size)  # arrival order is arbitrary
    return Feedback(ids[perm], rewards[perm], step=step, policy_version=version)


def groups_of(out: FilteredBatch) -> dict[tuple[int, int], list[float]]:
    """{(task, step): rewards} of a filtered batch."""
    return {
        (int(t), int(s)): out.rewards[out.offsets[g] : out.offsets[g + 1]].tolist()
        for g, (t, s) in enumerate(zip(out.task_ids, out.steps, strict=True))
    }


MIXED = [1.0, 0.0, 1.0, 0.0]


# ------------------------------------------------------------------ selection
def test_select_returns_exactly_n_and_candidates_oversample(pool: TaskPool) -> None:
    sel, ref = dapo(pool, seed=4), make("uniform", pool, seed=4)
    np.testing.assert_array_equal(sel.select(5), ref.select(5))  # contract: exactly n ids
    np.testing.assert_array_equal(sel.candidates(6), ref.select(18))
    assert sel.num_candidates(6) == 18  # DAPO's recipe: 3x the training batch
    assert dapo(pool, oversample=2.5).num_candidates(5) == 13  # ceil(12.5)
    assert dapo(pool, oversample=1.0).num_candidates(7) == 7
    assert sel.num_candidates(60) == pool.num_tasks  # capped at the pool without repeats
    with pytest.raises(ValueError, match="batch_size"):
        sel.num_candidates(0)


def test_wrapper_proposes_exactly_what_the_inner_selector_would(pool: TaskPool) -> None:
    sel, ref = dapo(pool, seed=9), make("uniform", pool, seed=9)
    rng = np.random.default_rng(0)
    for t in range(8):
        ids = sel.candidates(4)
        np.testing.assert_array_equal(ids, ref.select(12))
        task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 4)
        sel.update(Feedback(task_ids, rewards, step=t))
        sel.filter_groups(Feedback(task_ids, rewards, step=t), 4)


# ------------------------------------------------------------------ filtering
def test_zero_spread_groups_are_dropped(pool: TaskPool) -> None:
    sel = dapo(pool)
    feedback = fb({0: [1, 1, 1, 1], 1: [0, 0, 0, 0], 2: MIXED, 3: [0.2, 0.3, 0.2, 0.2]}, step=0)
    out = sel.filter_groups(feedback, batch_size=10)
    assert sorted(out.task_ids.tolist()) == [2, 3]
    assert out.deficit == 8 and not out.from_surplus.any()
    ids = np.asarray(feedback.task_ids)
    np.testing.assert_array_equal(out.kept_mask, np.isin(ids, [2, 3]))
    assert not out.buffered_mask.any()
    arrival = np.asarray(feedback.rewards)[ids == 2].tolist()
    assert groups_of(out)[(2, 0)] == arrival  # rollouts keep their arrival order
    m = sel.metrics()
    assert m["dapo/filtered_share"] == 0.5
    assert m["dapo/effective_ratio_before"] == 0.5
    assert m["dapo/effective_ratio_after"] == pytest.approx(0.2)  # 2 of 10 slots carry signal
    assert m["dapo/deficit"] == 8.0
    np.testing.assert_array_equal(
        out.advantages("rloo"), group_advantages(out.rewards, out.offsets, "rloo")
    )


def test_single_rollout_groups_and_empty_result(pool: TaskPool) -> None:
    out = dapo(pool).filter_groups(fb({5: [1.0], 6: [0.0, 0.0]}, step=0), batch_size=3)
    assert out.num_groups == 0 and out.deficit == 3
    assert out.offsets.tolist() == [0] and out.advantages().shape == (0,)


def test_surplus_is_used_next_step_before_new_groups(pool: TaskPool) -> None:
    sel = dapo(pool)
    first = fb({t: MIXED for t in range(10, 15)} | {20: [1, 1, 1, 1]}, step=0)
    out0 = sel.filter_groups(first, batch_size=2)
    assert out0.num_groups == 2 and out0.deficit == 0
    buffered = set(range(10, 15)) - set(out0.task_ids.tolist())
    ids0 = np.asarray(first.task_ids)
    np.testing.assert_array_equal(out0.buffered_mask, np.isin(ids0, sorted(buffered)))
    assert not (out0.kept_mask & out0.buffered_mask).any()
    assert sel.metrics()["dapo/surplus_groups"] == 3

    second = fb({t: [0.0, 1.0, 1.0] for t in range(30, 34)}, step=1)
    out1 = sel.filter_groups(second, batch_size=4)
    # The three buffered groups come first, with the rewards they had at step 0.
    assert out1.from_surplus.tolist() == [True, True, True, False]
    assert set(out1.task_ids[:3].tolist()) == buffered and out1.steps.tolist() == [0, 0, 0, 1]
    for t in buffered:  # same rewards, same arrival order as delivered at step 0
        assert groups_of(out1)[(t, 0)] == np.asarray(first.rewards)[ids0 == t].tolist()
    assert out1.task_ids[3] in range(30, 34)
    assert int(out1.kept_mask.sum()) == 3 and int(out1.buffered_mask.sum()) == 9
    assert sel.metrics()["dapo/surplus_groups"] == 3
    assert sel.metrics()["dapo/surplus_used"] == 3.0


def test_stale_surplus_is_dropped(pool: TaskPool) -> None:
    sel = dapo(pool, max_staleness=1)
    sel.filter_groups(fb({t: MIXED for t in range(6)}, step=0), batch_size=1)  # 5 buffered
    out1 = sel.filter_groups(fb({40: MIXED}, step=1), batch_size=2)  # uses 2, 3 age to 1
    assert out1.from_surplus.all() and sel.metrics()["dapo/surplus_groups"] == 4
    out2 = sel.filter_groups(fb({50: [1, 1]}, step=2), batch_size=8)
    # The step-0 leftovers are two steps old now: dropped and reported as released.
    assert out2.steps.tolist() == [1] and out2.task_ids.tolist() == [40]
    assert sorted(out2.released_steps.tolist()) == [0, 0, 0]
    assert sel.metrics()["dapo/stale_dropped"] == 3.0
    assert sel.metrics()["dapo/surplus_groups"] == 0.0


def test_zero_staleness_keeps_surplus_within_one_step_only(pool: TaskPool) -> None:
    """max_staleness=0: surplus only tops up a second candidates round of the same step."""
    sel = dapo(pool, max_staleness=0)
    sel.filter_groups(fb({1: MIXED, 2: MIXED, 3: MIXED}, step=4), batch_size=1)
    same_step = sel.filter_groups(fb({7: [0, 0]}, step=4), batch_size=2)
    assert same_step.from_surplus.tolist() == [True, True]
    sel.filter_groups(fb({1: MIXED, 2: MIXED, 3: MIXED}, step=5), batch_size=1)
    later = sel.filter_groups(fb({7: [0, 0]}, step=6), batch_size=2)
    assert later.num_groups == 0 and later.released_task_ids.size == 2


def test_fresher_group_of_a_surplus_task_supersedes_it(pool: TaskPool) -> None:
    sel = dapo(pool)
    sel.filter_groups(fb({1: MIXED, 2: MIXED, 3: MIXED}, step=0), batch_size=1)
    buffered = set(sel.state_dict()["algo"]["surplus"]["task_ids"].tolist())
    t = min(buffered)
    out = sel.filter_groups(fb({t: [0.0, 1.0, 0.0]}, step=1), batch_size=5)
    assert np.unique(out.task_ids).size == out.num_groups  # ids stay distinct
    assert groups_of(out)[(t, 1)] == [0.0, 1.0, 0.0] and (t, 0) not in groups_of(out)
    assert out.released_task_ids.tolist() == [t]
    assert sel.metrics()["dapo/superseded_dropped"] == 1.0


def test_overflow_drops_oldest_surplus_first(pool: TaskPool) -> None:
    sel = dapo(pool, max_surplus=3, max_staleness=5)
    sel.filter_groups(fb({1: MIXED, 2: MIXED, 3: MIXED}, step=0), batch_size=1)  # 2 buffered
    out = sel.filter_groups(fb({t: MIXED for t in range(10, 14)}, step=1), batch_size=1)
    # The one slot takes an old group; 1 old + 4 new = 5 > 3: the 2 oldest are dropped.
    assert out.from_surplus.tolist() == [True]
    surplus = sel.state_dict()["algo"]["surplus"]
    assert surplus["steps"].tolist() == [1, 1, 1]
    assert sel.metrics()["dapo/overflow_dropped"] == 2.0
    assert int(out.buffered_mask.sum()) == 3 * 4
    assert out.released_steps.tolist() == [0]


def test_discarding_surplus_reproduces_plain_dapo(pool: TaskPool) -> None:
    sel = dapo(pool, max_surplus=0)
    out = sel.filter_groups(fb({t: MIXED for t in range(5)}, step=0), batch_size=2)
    assert out.num_groups == 2 and not out.buffered_mask.any()
    assert sel.metrics()["dapo/surplus_groups"] == 0.0


def test_policy_version_is_carried_through_the_surplus(pool: TaskPool) -> None:
    sel = dapo(pool)
    sel.filter_groups(fb({1: MIXED, 2: MIXED}, step=0, version=7), batch_size=1)
    out = sel.filter_groups(fb({3: MIXED}, step=1), batch_size=3)
    assert out.policy_version.tolist() == [7, -1]


def test_bad_filter_input_raises_and_leaves_state_unchanged(pool: TaskPool) -> None:
    sel = dapo(pool)
    sel.filter_groups(fb({1: MIXED, 2: MIXED, 3: MIXED}, step=0), batch_size=1)
    before = sel.state_dict()
    with pytest.raises(ValueError, match="NaN"):
        sel.filter_groups(Feedback([1, 1], [np.nan, 0.0], step=1), 2)
    with pytest.raises(ValueError, match="batch_size"):
        sel.filter_groups(fb({4: MIXED}, step=1), 0)
    with pytest.raises(ValueError, match=r"must lie in \[0.0, 1.0\]"):
        sel.filter_groups(Feedback([1, 1], [2.0, 0.0], step=1), 2)
    with pytest.raises(ValueError, match="Feedback"):
        sel.filter_groups("rewards", 2)  # type: ignore[arg-type]
    assert_state_equal(before, sel.state_dict())


# ------------------------------------------------------------------ pass-through
def test_inner_selector_receives_every_reward_exactly_once(pool: TaskPool) -> None:
    sel = dapo(pool, seed=2)
    received: list[GroupBatch] = []
    inner_observe = sel.inner._observe

    def spy(batch: GroupBatch) -> None:
        received.append(batch)
        inner_observe(batch)

    sel.inner._observe = spy  # type: ignore[method-assign]
    rng = np.random.default_rng(1)
    sent: dict[tuple[int, int], list[float]] = {}
    previous: Feedback | None = None
    for t in range(10):
        ids = sel.candidates(4)
        task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 4)
        feedback = Feedback(task_ids, rewards, step=t)
        for i, r in zip(task_ids.tolist(), rewards.tolist(), strict=True):
            sent.setdefault((t, i), []).append(r)
        half = task_ids.size // 2  # delivered in two pieces, the first one twice
        sel.update(Feedback(task_ids[:half], rewards[:half], step=t), idempotent=True)
        sel.update(Feedback(task_ids[:half], rewards[:half], step=t), idempotent=True)
        if previous is not None:  # a late retry of the previous step
            sel.update(previous, idempotent=True)
        sel.update(Feedback(task_ids[half:], rewards[half:], step=t), idempotent=True)
        sel.filter_groups(feedback, 4)  # surplus re-use must not feed the inner again
        previous = feedback
    sel.flush()
    got: dict[tuple[int, int], list[float]] = {}
    for b in received:
        for g, task in enumerate(b.task_ids.tolist()):
            got.setdefault((b.step, task), []).extend(
                b.rewards[b.offsets[g] : b.offsets[g + 1]].tolist()
            )
    assert set(got) == set(sent)
    for key, rewards in sent.items():
        assert sorted(got[key]) == sorted(rewards), key
    total = sum(len(r) for r in sent.values())
    assert sel.inner.metrics()["feedback/rollouts"] == total
    assert sel.metrics()["dapo/inner/feedback/rollouts"] == float(total)
    assert sel.metrics()["dapo/inner/select/calls"] == 10.0


def test_inner_metrics_are_renamespaced(pool: TaskPool) -> None:
    sel = dapo(pool)
    sel.candidates(3)
    m = sel.metrics()
    assert m["dapo/inner/uniform/epoch"] == 1.0
    assert m["dapo/inner/select/calls"] == 1.0
    assert all(isinstance(v, float) for v in m.values())


@pytest.mark.parametrize("inner", sorted(n for n in SELECTORS if n != "dapo"))
def test_wraps_every_registered_selector(inner: str) -> None:
    pool = world_pool()
    try:
        sel = dapo(pool, inner=inner, **selector_kwargs(inner, pool))
    except NotImplementedError:
        pytest.skip(f"{inner} is still a placeholder")
    assert type(sel.inner) is SELECTORS[inner]
    rng = np.random.default_rng(0)
    for t in range(4):
        ids = sel.candidates(5)
        task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 4)
        sel.update(Feedback(task_ids, rewards, step=t))
        sel.filter_groups(Feedback(task_ids, rewards, step=t), 5)
    other = dapo(pool, inner=inner, **selector_kwargs(inner, pool))
    other.load_state_dict(sel.state_dict())
    np.testing.assert_array_equal(sel.candidates(5), other.candidates(5))


def test_collaborators_cover_every_inner_and_are_forwarded(pool: TaskPool) -> None:
    for cls in SELECTORS.values():
        if cls is not DynamicSamplingSelector:
            assert set(cls.collaborators) <= set(DynamicSamplingSelector.collaborators), cls.name
    if DynamicSamplingSelector.collaborators:
        name = DynamicSamplingSelector.collaborators[0]
        with pytest.raises(ValueError, match="takes no collaborator"):
            make("dapo", pool, **{name: object()})  # uniform needs none


# ------------------------------------------------------------------ config and state
def test_config_defaults_and_validation() -> None:
    cfg = DynamicSamplingConfig()
    defaults = (cfg.inner, cfg.inner_config, cfg.oversample, cfg.max_surplus, cfg.max_staleness)
    assert defaults == ("uniform", {}, 3.0, 1024, 1)
    bad = {
        "inner": ("nope", "registered selector"),
        "oversample": (0.5, "oversample"),
        "max_surplus": (-1, "max_surplus"),
        "max_staleness": (1.5, "max_staleness"),
    }
    for key, (value, needle) in bad.items():
        with pytest.raises(ValueError, match=needle):
            DynamicSamplingConfig(**{key: value})
    with pytest.raises(ValueError, match="cannot be 'dapo'"):
        DynamicSamplingConfig(inner="dapo")
    with pytest.raises(ValueError, match="did you mean 'dedupe_window'"):
        DynamicSamplingConfig(inner_config={"dedupe_windw": 3})
    with pytest.raises(ValueError, match="oversample"):
        DynamicSamplingConfig(oversample=float("nan"))


def test_inner_config_round_trips_through_json_and_is_applied(pool: TaskPool) -> None:
    overrides = {"dedupe_window": 8}
    cfg = DynamicSamplingConfig(inner_config=overrides)
    overrides["dedupe_window"] = 99  # the frozen config keeps its own copy
    again = config_from_dict(DynamicSamplingConfig, json.loads(json.dumps(config_to_dict(cfg))))
    assert again == cfg and again.inner_config == {"dedupe_window": 8}
    sel = dapo(pool, inner_config={"dedupe_window": 8})
    assert sel.inner.config.dedupe_window == 8


def _loop(sel: DynamicSamplingSelector, steps: range, seed: int) -> list[FilteredBatch]:
    rng = np.random.default_rng(seed)
    outs = []
    for t in steps:
        ids = sel.candidates(3)
        task_ids, rewards = world_rewards(ids, world_pass_rates(sel.pool), rng, 4)
        sel.update(Feedback(task_ids, rewards, step=t))
        outs.append(sel.filter_groups(Feedback(task_ids, rewards, step=t), 3))
    return outs


def test_state_round_trip_with_nontrivial_surplus(pool: TaskPool, tmp_path: Path) -> None:
    sel = dapo(pool, seed=5, oversample=4.0, max_staleness=2)
    _loop(sel, range(6), seed=0)
    surplus = sel.state_dict()["algo"]["surplus"]
    assert surplus["task_ids"].size >= 3 and len(set(surplus["steps"].tolist())) >= 1
    save_selector(sel, tmp_path / "dapo.npz")
    restored = load_selector(tmp_path / "dapo.npz")
    assert isinstance(restored, DynamicSamplingSelector)
    assert_state_equal(sel.state_dict(), restored.state_dict())
    for a, b in zip(_loop(sel, range(6, 12), 1), _loop(restored, range(6, 12), 1), strict=True):
        for name in (
            "task_ids",
            "steps",
            "rewards",
            "kept_mask",
            "buffered_mask",
            "released_task_ids",
        ):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert_state_equal(sel.state_dict(), restored.state_dict())
    assert sel.metrics()["dapo/surplus_used"] == restored.metrics()["dapo/surplus_used"]


def test_corrupt_surplus_state_is_rejected_without_change(pool: TaskPool) -> None:
    sel = dapo(pool, oversample=4.0)
    _loop(sel, range(4), seed=0)
    before = sel.state_dict()
    broken = sel.state_dict()
    broken["algo"]["surplus"]["counts"] = broken["algo"]["surplus"]["counts"] + 1
    with pytest.raises(ValueError, match="surplus"):
        sel.load_state_dict(broken)
    assert_state_equal(before, sel.state_dict())


# ------------------------------------------------------------------ behaviour
def test_trains_only_on_mixed_tasks_where_uniform_wastes_two_thirds() -> None:
    pool = world_pool(num_tasks=300)
    types = np.asarray(pool.categories)
    sel, uni = dapo(pool, seed=0), make("uniform", pool, seed=0)
    rng = np.random.default_rng(0)
    trained_dapo, trained_uniform, deficits = [], [], []
    for t in range(30):
        ids = sel.candidates(16)
        task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 8)
        sel.update(Feedback(task_ids, rewards, step=t))
        out = sel.filter_groups(Feedback(task_ids, rewards, step=t), 16)
        trained_dapo.append(types[out.task_ids])
        deficits.append(out.deficit)
        trained_uniform.append(types[uni.select(16)])
    share_dapo = np.mean(np.concatenate(trained_dapo) == 2)
    share_uniform = np.mean(np.concatenate(trained_uniform) == 2)
    assert share_dapo == 1.0  # only type-2 (p=0.5) tasks ever have reward spread
    assert share_uniform < 0.45
    # 3x oversampling of a 1/3-mixed pool fills the batch about once per step; the
    # surplus carried over keeps the average fill well above the no-surplus rate.
    assert np.mean(deficits) < 3.0
