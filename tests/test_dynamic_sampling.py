"""DynamicSampling (DAPO) wrapper: filtering, surplus carry-over, staleness, pass-through,
adaptive sizing, state."""

from __future__ import annotations

import ast
import math
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
from frontier_rft.core.selector import Selector
from frontier_rft.selectors.dynamic_sampling import (
    DynamicSampling,
    DynamicSamplingConfig,
    FilteredBatch,
)
from frontier_rft.selectors.dynamic_sampling_io import (
    load_dynamic_sampling,
    save_dynamic_sampling,
)


def dapo(
    pool: TaskPool, seed: int = 0, inner: str = "uniform", **overrides: Any
) -> DynamicSampling:
    """DAPO's recipe: `inner` (uniform) inside dynamic sampling, config overrides applied."""
    return DynamicSampling(make(inner, pool, seed=seed), DynamicSamplingConfig(**overrides))


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

# Recorded from the former selector `make_selector("dapo", world_pool(), seed=s)` (uniform
# inside, oversample 3) before it became a wrapper: per step, the first 6 candidates of
# candidates(4) and the task ids filter_groups trained on (the wrapper's own RNG splits
# train/surplus), over 5 steps of world_rewards with rng default_rng(s), 4 rollouts each.
RECORDED = {
    0: (
        [
            [27, 20, 13, 81, 5, 73],
            [10, 19, 8, 65, 9, 88],
            [53, 74, 85, 23, 39, 34],
            [2, 35, 64, 17, 66, 28],
            [24, 21, 47, 0, 6, 57],
        ],
        [[11, 50, 5], [44, 65, 71, 8], [74, 23, 68, 53], [62, 2, 35, 17], [26, 47]],
    ),
    3: (
        [
            [85, 28, 67, 34, 60, 68],
            [58, 37, 64, 86, 27, 65],
            [61, 35, 17, 49, 4, 15],
            [10, 89, 48, 46, 66, 38],
            [87, 6, 43, 69, 55, 75],
        ],
        [[23, 74, 77, 68], [2, 11, 86, 62], [44, 41, 17, 35], [38, 89, 53], []],
    ),
    11: (
        [
            [44, 18, 21, 69, 6, 15],
            [9, 41, 73, 37, 84, 80],
            [39, 34, 89, 43, 45, 62],
            [61, 28, 5, 31, 1, 58],
            [60, 3, 75, 57, 77, 17],
        ],
        [[35, 44, 38, 68], [32, 41, 26, 80], [47, 62, 89, 29], [5, 14, 56], [23, 8, 17, 77]],
    ),
}


@pytest.mark.parametrize("seed", sorted(RECORDED))
def test_reproduces_the_former_dapo_selector_bit_for_bit(seed: int) -> None:
    pool = world_pool()
    sel = DynamicSampling(make("uniform", pool, seed=seed))
    rng = np.random.default_rng(seed)
    cands, trained = [], []
    for t in range(5):
        ids = sel.candidates(4)
        assert ids.size == 12
        cands.append(ids[:6].tolist())
        task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 4)
        sel.update(Feedback(task_ids, rewards, step=t))
        trained.append(sel.filter_groups(Feedback(task_ids, rewards, step=t), 4).task_ids.tolist())
    assert (cands, trained) == RECORDED[seed]


def test_dapo_is_no_longer_a_selector_and_says_how_to_get_it(tmp_path: Path) -> None:
    pool = world_pool()
    assert "dapo" not in SELECTORS
    assert not issubclass(DynamicSampling, Selector)
    with pytest.raises(ValueError, match="DynamicSampling\\(make_selector\\('uniform'"):
        make("dapo", pool)
    # A selector file the former class wrote: load_selector names the replacement.
    save_selector(make("uniform", pool), tmp_path / "old.npz")
    with np.load(tmp_path / "old.npz") as z:
        arrays = dict(z)
    header = bytes(arrays["__header__"]).decode().replace('"uniform"', '"dapo"', 1)
    arrays["__header__"] = np.frombuffer(header.encode(), dtype=np.uint8)
    np.savez(tmp_path / "dapo.npz", **arrays)
    with pytest.raises(ValueError, match=r"wrapper now.*dynamic_sampling: true"):
        load_selector(tmp_path / "dapo.npz")


def test_module_imports_no_registry() -> None:
    import frontier_rft.selectors.dynamic_sampling as mod

    tree = ast.parse(Path(mod.__file__).read_text())
    names = [
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in (n.names if isinstance(n, ast.Import) else [None])  # type: ignore[list-item]
    ]
    assert not [m for m in names if m and ("registry" in m or m == "frontier_rft.selectors")]
    assert "make_selector" not in {
        a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
    }


# ------------------------------------------------------------------ selection
def test_select_returns_exactly_n_and_candidates_oversample(pool: TaskPool) -> None:
    sel, ref = dapo(pool, seed=4), make("uniform", pool, seed=4)
    assert sel.seed == 4 and DynamicSampling(make("uniform", pool, seed=1), seed=9).seed == 9
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
    buffered = set(sel.state_dict()["surplus"]["task_ids"].tolist())
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
    surplus = sel.state_dict()["surplus"]
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
    assert sel.metrics()["feedback/rollouts"] == float(total)
    assert sel.metrics()["select/calls"] == 10.0


def test_metrics_are_the_inner_ones_unchanged_plus_dapo_keys(pool: TaskPool) -> None:
    sel = dapo(pool)
    sel.candidates(3)
    m = sel.metrics()
    inner = sel.inner.metrics()
    assert {k: m[k] for k in inner} == pytest.approx(inner, nan_ok=True)
    assert m["uniform/epoch"] == 1.0 and m["select/calls"] == 1.0
    own = set(m) - set(inner)
    assert own and all(k.startswith("dapo/") for k in own)
    assert math.isnan(m["dapo/zero_variance_rate"])
    assert all(isinstance(v, float) for v in m.values())


def test_refresh_features_and_evidence_pass_through() -> None:
    pool = world_pool()
    sel = dapo(pool, inner="pcl")
    new = np.random.default_rng(0).standard_normal((pool.num_tasks, 3))
    assert sel.refresh_features(new) is True
    assert sel.metrics()["evidence/features/refreshed"] == 1.0
    assert dapo(pool).refresh_features(new) is False  # uniform reads no features


@pytest.mark.parametrize("inner", sorted(SELECTORS))
def test_wraps_every_registered_selector(inner: str) -> None:
    pool = world_pool()
    kwargs = selector_kwargs(inner, pool)
    try:
        sel = DynamicSampling(make(inner, pool, seed=0, **kwargs))
    except NotImplementedError:
        pytest.skip(f"{inner} is still a placeholder")
    assert type(sel.inner) is SELECTORS[inner]
    rng = np.random.default_rng(0)
    for t in range(4):
        ids = sel.candidates(5)
        task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 4)
        sel.update(Feedback(task_ids, rewards, step=t))
        sel.filter_groups(Feedback(task_ids, rewards, step=t), 5)
    other = DynamicSampling(make(inner, pool, seed=0, **kwargs))
    other.load_state_dict(sel.state_dict())
    np.testing.assert_array_equal(sel.candidates(5), other.candidates(5))


def test_wrapper_refuses_what_is_not_a_selector(pool: TaskPool) -> None:
    with pytest.raises(ValueError, match="wraps a built selector"):
        DynamicSampling("uniform")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="DynamicSamplingConfig"):
        DynamicSampling(make("uniform", pool), {"oversample": 2})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        DynamicSampling(make("uniform", pool), seed=-1)


# ------------------------------------------------------------------ adaptive sizing
def _measure(sel: DynamicSampling, zero: int, mixed: int, step: int) -> None:
    """One filter_groups call whose fresh groups are `zero` all-equal and `mixed` mixed."""
    groups = {t: [1.0, 1.0] for t in range(zero)} | {50 + t: MIXED for t in range(mixed)}
    sel.filter_groups(fb(groups, step=step), batch_size=1)


def test_adaptive_sizes_follow_grescos_rule_hand_computed(pool: TaskPool) -> None:
    sel = dapo(pool, adaptive=True)  # margin 1.25, clamps [1, 3] per slot
    assert sel.num_candidates(8) == 24  # nothing measured yet: oversample (3x)
    _measure(sel, zero=1, mixed=3, step=0)  # z = 0.25
    assert sel.zero_variance_rate == 0.25
    assert sel.num_candidates(8) == 14  # ceil(8 / 0.75 * 1.25) = ceil(13.33)
    assert sel.num_candidates(3) == 5  # ceil(3 / 0.75 * 1.25) = 5
    _measure(sel, zero=2, mixed=0, step=0)  # same step, second round: z = 3/6 = 0.5
    assert sel.zero_variance_rate == 0.5
    assert sel.num_candidates(4) == 10  # 4 / 0.5 * 1.25 = 10 exactly
    assert sel.num_candidates(8) == 20
    _measure(sel, zero=0, mixed=4, step=1)  # a new step resets the window: z = 0
    assert sel.num_candidates(8) == 10  # ceil(8 * 1.25)
    assert sel.metrics()["dapo/zero_variance_rate"] == 0.0
    _measure(sel, zero=9, mixed=1, step=2)  # z = 0.9: 8 / 0.1 * 1.25 = 100 -> upper clamp
    assert sel.num_candidates(8) == 24
    _measure(sel, zero=3, mixed=0, step=3)  # z = 1: no division by zero, upper clamp
    assert sel.zero_variance_rate == 1.0
    assert sel.num_candidates(8) == 24 and sel.num_candidates(1) == 3
    assert sel.num_candidates(60) == pool.num_tasks  # and never more than the pool


def test_adaptive_clamps_and_margin(pool: TaskPool) -> None:
    sel = dapo(pool, adaptive=True, adaptive_margin=1.0, min_oversample=1.5, max_oversample=6.0)
    _measure(sel, zero=0, mixed=4, step=0)  # z = 0: 8 / 1 * 1.0 = 8 -> lower clamp 12
    assert sel.num_candidates(8) == 12
    _measure(sel, zero=3, mixed=1, step=1)  # z = 0.75: 8 / 0.25 = 32, inside [12, 48]
    assert sel.num_candidates(8) == 32
    _measure(sel, zero=7, mixed=1, step=2)  # z = 0.875: 8 / 0.125 = 64 -> upper clamp 48
    assert sel.num_candidates(8) == 48
    assert sel.num_candidates(5) == 30  # ceil(5 * 6)
    fixed = dapo(pool, adaptive=False)
    _measure(fixed, zero=7, mixed=1, step=2)
    assert fixed.num_candidates(8) == 24  # fixed DAPO ignores z
    late = dapo(pool, adaptive=True)
    _measure(late, zero=0, mixed=4, step=5)
    _measure(late, zero=4, mixed=0, step=3)  # a late round of an older step: not counted
    assert late.zero_variance_rate == 0.0


def test_adaptive_measurement_is_state_and_resumes_exactly(pool: TaskPool) -> None:
    sel = dapo(pool, adaptive=True)
    _measure(sel, zero=3, mixed=1, step=0)
    other = dapo(pool, adaptive=True)
    other.load_state_dict(sel.state_dict())
    assert other.zero_variance_rate == 0.75 and other.num_candidates(4) == 12
    bad = sel.state_dict()
    bad["zero_variance"]["zero"] = 99
    with pytest.raises(ValueError, match="zero_variance"):
        other.load_state_dict(bad)
    assert other.zero_variance_rate == 0.75


# ------------------------------------------------------------------ config and state
def test_config_defaults_and_validation() -> None:
    cfg = DynamicSamplingConfig()
    defaults = (cfg.oversample, cfg.max_surplus, cfg.max_staleness, cfg.adaptive)
    assert defaults == (3.0, 1024, 1, False)
    assert (cfg.adaptive_margin, cfg.min_oversample, cfg.max_oversample) == (1.25, 1.0, 3.0)
    bad = {
        "oversample": (0.5, "oversample"),
        "max_surplus": (-1, "max_surplus"),
        "max_staleness": (1.5, "max_staleness"),
        "adaptive_margin": (0.9, "adaptive_margin"),
        "min_oversample": (0.5, "min_oversample"),
        "max_oversample": (0.5, "max_oversample"),
        "adaptive": ("yes", "adaptive"),
    }
    for key, (value, needle) in bad.items():
        with pytest.raises(ValueError, match=needle):
            DynamicSamplingConfig(**{key: value})
    with pytest.raises(ValueError, match="min_oversample <= max_oversample"):
        DynamicSamplingConfig(min_oversample=4.0, max_oversample=2.0)
    with pytest.raises(ValueError, match="oversample"):
        DynamicSamplingConfig(oversample=float("nan"))
    with pytest.raises(TypeError):
        DynamicSamplingConfig(inner="uniform")  # type: ignore[call-arg]


def _loop(sel: DynamicSampling, steps: range, seed: int) -> list[FilteredBatch]:
    rng = np.random.default_rng(seed)
    outs = []
    for t in steps:
        ids = sel.candidates(3)
        task_ids, rewards = world_rewards(ids, world_pass_rates(sel.pool), rng, 4)
        sel.update(Feedback(task_ids, rewards, step=t))
        outs.append(sel.filter_groups(Feedback(task_ids, rewards, step=t), 3))
    return outs


@pytest.mark.parametrize("adaptive", [False, True])
def test_state_round_trip_with_nontrivial_surplus(
    pool: TaskPool, tmp_path: Path, adaptive: bool
) -> None:
    sel = dapo(pool, seed=5, oversample=4.0, max_staleness=2, adaptive=adaptive)
    _loop(sel, range(6), seed=0)
    surplus = sel.state_dict()["surplus"]
    assert surplus["task_ids"].size >= 1 and len(set(surplus["steps"].tolist())) >= 1
    save_dynamic_sampling(sel, tmp_path / "dapo.npz")
    restored = load_dynamic_sampling(tmp_path / "dapo.npz", make("uniform", pool, seed=0))
    assert restored.config == sel.config and restored.seed == 5
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


def test_corrupt_or_foreign_state_is_rejected_without_change(pool: TaskPool) -> None:
    sel = dapo(pool, oversample=4.0)
    _loop(sel, range(4), seed=0)
    before = sel.state_dict()
    broken = sel.state_dict()
    broken["surplus"]["counts"] = broken["surplus"]["counts"] + 1
    with pytest.raises(ValueError, match="surplus"):
        sel.load_state_dict(broken)
    unknown = sel.state_dict() | {"extra": 1}
    with pytest.raises(ValueError, match=r"unknown field.*'extra'"):
        sel.load_state_dict(unknown)
    nested = sel.state_dict()
    nested["totals"]["mystery"] = 0
    with pytest.raises(ValueError, match="mystery"):
        sel.load_state_dict(nested)
    other = dapo(pool, oversample=4.0).state_dict()
    other["config"]["oversample"] = 2.0
    with pytest.raises(ValueError, match="config"):
        sel.load_state_dict(other)
    inner_bad = sel.state_dict()
    inner_bad["inner"]["base"]["times_selected"] = np.zeros(3, dtype=np.uint8)
    with pytest.raises(ValueError):
        sel.load_state_dict(inner_bad)
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


def test_the_dynamic_sampling_example_runs_and_adaptive_spends_fewer_rollouts() -> None:
    import runpy

    path = Path(__file__).resolve().parents[1] / "examples" / "dynamic_sampling_loop.py"
    module = runpy.run_path(str(path), run_name="dynamic_sampling_loop")
    (skill_fixed, spent_fixed), (skill_adaptive, spent_adaptive) = (
        module["run"](False),
        module["run"](True),
    )
    assert skill_adaptive >= skill_fixed - 0.05
    assert spent_adaptive < spent_fixed


# ------------------------------------------------------------------ a failing collaborator
class _FlakyJudge:
    """HeuristicJudge that raises on the calls numbered in `fail_on` (user code failing)."""

    def __init__(self, fail_on: set[int]):
        from frontier_rft.selectors.metis import HeuristicJudge

        self.inner, self.fail_on, self.calls = HeuristicJudge(), fail_on, 0
        self.is_llm = False

    def __call__(self, prompts: list[str]) -> list[str]:
        self.calls += 1
        if self.calls in self.fail_on:
            raise RuntimeError("judge server down")
        return self.inner(prompts)


@pytest.mark.parametrize("method", ["candidates", "select"])
def test_a_judge_failing_inside_the_wrapped_selector_changes_nothing(
    pool: TaskPool, method: str
) -> None:
    """The judge lives on the inner METIS selector; a failure while the wrapper asks it for
    ids unfolds the pending feedback and restores every RNG, so the run continues exactly as
    one whose judge never failed."""

    def run(fail_on: set[int]) -> list[Any]:
        sel = DynamicSampling(make("metis", pool, seed=3, judge=_FlakyJudge(fail_on)))
        rng, out = np.random.default_rng(0), []
        for t in range(4):
            before = sel.state_dict()
            for _ in range(2):  # at most one retry: the flaky judge fails once per step
                try:
                    ids = getattr(sel, method)(4)
                    break
                except RuntimeError:
                    assert_state_equal(sel.state_dict(), before)  # pending not folded, rng kept
            task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 4)
            feedback = Feedback(task_ids, rewards, step=t)
            sel.update(feedback)  # stays pending until the next candidates()/select()
            out.append((ids, groups_of(sel.filter_groups(feedback, 2))))
        out.append(sel.state_dict())
        return out

    clean, failed = run(set()), run({2, 4, 6})  # the judge fails at steps 1, 2 and 3
    for (a_ids, a_groups), (b_ids, b_groups) in zip(clean[:-1], failed[:-1], strict=True):
        np.testing.assert_array_equal(a_ids, b_ids)
        assert a_groups == b_groups
    assert_state_equal(clean[-1], failed[-1])
