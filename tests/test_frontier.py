"""Frontier-curriculum replay (Vizcarra & Kim, sec. 3.1, App. B)."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.selectors import frontier as frontier_module
from frontier_rft.selectors.frontier import (
    FrontierReplayConfig,
    FrontierReplaySelector,
    frontier_priority,
    retrieval_scores,
)
from frontier_rft.tasks.countdown_features import (
    countdown_embedding,
    countdown_features,
    countdown_key,
    countdown_keys,
)
from helpers import build, drive, world_pass_rates, world_pool


def _feed(sel: FrontierReplaySelector, groups: dict[int, list[float]], step: int) -> None:
    """Deliver one rollout group per task and fold it in."""
    ids = np.concatenate([np.full(len(r), t) for t, r in groups.items()])
    rewards = np.concatenate([np.asarray(r, dtype=float) for r in groups.values()])
    sel.update(Feedback(ids, rewards, step=step))
    sel.flush()


def _frontier(pool: TaskPool, **overrides: object) -> FrontierReplaySelector:
    sel = make_selector("frontier", pool, seed=0, **overrides)
    assert isinstance(sel, FrontierReplaySelector)
    return sel


# ---------------------------------------------------------------- priority and memory
def test_priority_is_4p_one_minus_p() -> None:
    k4 = frontier_priority(np.arange(5), np.full(5, 4))
    np.testing.assert_allclose(k4, [0.0, 0.75, 1.0, 0.75, 0.0])
    # K = 8, s = 3: 4 * 3/8 * 5/8 = 0.9375; K = 7 cannot reach p = 1/2: s = 3 -> 48/49.
    np.testing.assert_allclose(
        frontier_priority(np.array([3, 3]), np.array([8, 7])), [0.9375, 48 / 49]
    )


def test_appendix_b1_loo_contrast_by_hand() -> None:
    """App. B.1: with s of K correct, A+ = (K-s)/(K-1), A- = -s/(K-1), mean A^2 =
    s(K-s)/(K-1)^2, and f = 4p(1-p) is that contrast rescaled to a maximum of 1."""
    # K = 8, s = 3: A+ = 5/7, A- = -3/7, mean A^2 = (3*25 + 5*9) / (8*49) = 15/49.
    rewards = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    batch = GroupBatch.from_rollouts(0, np.zeros(8, np.int64), rewards, np.full(8, -1))
    adv = batch.advantages("rloo")
    np.testing.assert_allclose(adv, [5 / 7] * 3 + [-3 / 7] * 5, rtol=1e-12)
    assert np.mean(adv**2) == pytest.approx(15 / 49, rel=1e-12)
    # f = 4 * 3/8 * 5/8 = 15/16 = (4 (K-1)^2 / K^2) * 15/49 = (196/64) * (15/49).
    np.testing.assert_allclose(frontier_priority(np.array([3]), np.array([8])), [15 / 16])


def test_config_defaults_are_the_papers_where_it_gives_them() -> None:
    """Sec. 3.1 / 4.1: rho = 0.10 and the plain frontier rule (0 < s < K). Memory size,
    minimum and top pool are not stated in the paper (documented choices)."""
    cfg = FrontierReplayConfig()
    assert (cfg.replay_ratio, cfg.memory_rule) == (0.10, "frontier")
    assert (cfg.memory_size, cfg.min_memory, cfg.top_pool_factor) == (256, 16, 4.0)
    assert _frontier(world_pool()).config == cfg


def test_success_means_full_reward_only() -> None:
    sel = _frontier(world_pool())
    _feed(
        sel,
        {
            1: [1.0, 0.1, 0.1, 0.1],  # one full success: frontier, p = 1/4
            2: [0.1, 0.1, 0.0, 0.0],  # mixed rewards but no success: not frontier
            3: [1.0, 1.0, 1.0, 1.0],  # all solved
            4: [0.0, 0.0, 0.0, 0.0],  # all failed
            5: [1.0, 0.0, 1.0, 0.1],  # p = 1/2
        },
        step=0,
    )
    mem = sel.memory()
    np.testing.assert_array_equal(mem["task_ids"], [1, 5])
    np.testing.assert_allclose(mem["priority"], [0.75, 1.0])


def test_memory_is_bounded_recent_and_reentry_updates() -> None:
    sel = _frontier(world_pool(), memory_size=3, min_memory=1)
    _feed(sel, {1: [1, 0, 0, 0], 2: [1, 0, 0, 0]}, step=0)
    _feed(sel, {3: [1, 1, 0, 0], 4: [1, 1, 0, 0]}, step=1)
    np.testing.assert_array_equal(sel.memory()["task_ids"], [2, 3, 4])  # oldest (1) evicted
    _feed(sel, {2: [1, 1, 0, 0]}, step=2)  # re-entry: new priority, now the newest
    mem = sel.memory()
    np.testing.assert_array_equal(mem["task_ids"], [3, 4, 2])
    np.testing.assert_allclose(mem["priority"], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(mem["step"], [1, 1, 2])
    # Late feedback from an older step is older than everything held: it never displaces
    # newer entries, and it does not overwrite a newer observation of the same prompt.
    _feed(sel, {5: [1, 0, 0, 0], 3: [1, 0, 0, 0]}, step=0)
    mem = sel.memory()
    np.testing.assert_array_equal(mem["task_ids"], [3, 4, 2])
    np.testing.assert_allclose(mem["priority"], [1.0, 1.0, 1.0])
    assert sel.metrics()["frontier/memory_size"] == 3.0


def test_memory_deduplicates_by_canonical_key() -> None:
    base = world_pool()
    keys = [f"k{i % 45}" for i in range(90)]  # task i and i + 45 are one instance
    pool = TaskPool(num_tasks=90, features=base.features, keys=keys)
    sel = _frontier(pool)
    _feed(sel, {3: [1, 0, 0, 0]}, step=0)
    _feed(sel, {48: [1, 1, 0, 0]}, step=1)
    mem = sel.memory()
    np.testing.assert_array_equal(mem["task_ids"], [48])
    np.testing.assert_allclose(mem["priority"], [1.0])


def test_failure_only_variant_stores_all_failed_prompts() -> None:
    sel = _frontier(world_pool(), memory_rule="failure")
    _feed(sel, {1: [0, 0, 0, 0], 2: [1, 0, 0, 0], 3: [0.1, 0.1, 0.0, 0.1], 4: [1, 1, 1, 1]}, step=0)
    mem = sel.memory()
    np.testing.assert_array_equal(mem["task_ids"], [1, 3])  # partial credit is still failure
    np.testing.assert_allclose(mem["priority"], [1.0, 1.0])  # 4p(1-p) = 0 would mute retrieval


def test_goldilocks_variant_keeps_only_prompts_near_one_half() -> None:
    groups = {s: [1.0] * s + [0.0] * (8 - s) for s in range(9)}  # task s has s/8 successes
    plain = _frontier(world_pool())
    gold = _frontier(world_pool(), memory_rule="goldilocks")  # band 0.25: p in [1/4, 3/4]
    narrow = _frontier(world_pool(), memory_rule="goldilocks", goldilocks_band=0.125)
    for sel in (plain, gold, narrow):
        _feed(sel, groups, step=0)
    np.testing.assert_array_equal(plain.memory()["task_ids"], [1, 2, 3, 4, 5, 6, 7])
    np.testing.assert_array_equal(gold.memory()["task_ids"], [2, 3, 4, 5, 6])
    np.testing.assert_array_equal(narrow.memory()["task_ids"], [3, 4, 5])


# ---------------------------------------------------------------- retrieval
def test_retrieval_score_hand_example() -> None:
    cand = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [0.0, 0.0]])
    memory = np.array([[2.0, 0.0], [0.0, 1.0]])
    prio = np.array([0.5, 1.0])
    # cos(c, m_j) * u_j, max over j: [max(.5, 0), max(0, 1), max(.5/sqrt2, 1/sqrt2), 0]
    expected = [0.5, 1.0, 1 / np.sqrt(2), 0.0]
    np.testing.assert_allclose(retrieval_scores(cand, memory, prio), expected)


def test_blockwise_scoring_matches_the_formula(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frontier_module, "_BLOCKS_PER_GATHER", 2)  # 600-row blocks, 3 gathers
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((3000, 5))
    sel = _frontier(TaskPool(num_tasks=3000, features=feats), candidate_sample=None)
    _feed(sel, {int(t): [1.0, 0.0, 0.0, float(t % 2)] for t in range(0, 60, 3)}, step=0)
    mem = sel.memory()
    cand = np.arange(3000)
    want = retrieval_scores(feats, feats[mem["task_ids"]], mem["priority"])
    np.testing.assert_allclose(sel._score(None), want, rtol=0, atol=1e-6)  # float32 products
    np.testing.assert_allclose(sel._score(cand[::7]), want[::7], rtol=0, atol=1e-6)


def _dedup_pool() -> TaskPool:
    # Tasks 0-5 point one way, 6-11 the other; task k and k + 3 (k < 3) share a key.
    feats = np.repeat(np.eye(2), 6, axis=0) + 0.01 * np.arange(12)[:, None]
    keys = [f"k{i % 3}" if i < 6 else f"u{i}" for i in range(12)]
    return TaskPool(num_tasks=12, features=feats, keys=keys)


def test_retrieval_filters_memory_uniform_part_and_repeats_by_key() -> None:
    pool = _dedup_pool()
    keys = np.array(pool.keys)
    seen_retrieved: set[int] = set()
    for seed in range(40):
        sel = make_selector("frontier", pool, seed=seed, min_memory=1, replay_ratio=0.5)
        assert isinstance(sel, FrontierReplaySelector)
        _feed(sel, {0: [1, 0, 1, 0]}, step=0)
        ids = sel.select(4)
        got = sel.last_retrieved
        uniform = ids[:2]
        assert got.size == 2 and np.array_equal(ids[2:], got)
        assert not set(keys[got]) & {keys[0]}, "memory key retrieved"  # excludes 0 and 3
        assert not set(keys[got]) & set(keys[uniform]), "uniform-part key retrieved"
        assert len(set(keys[got])) == got.size, "one instance retrieved twice"
        seen_retrieved.update(got.tolist())
    assert 0 not in seen_retrieved and 3 not in seen_retrieved
    assert seen_retrieved & {1, 2, 4, 5}  # the arithmetic neighbours of task 0 do come back


def test_exact_top_pool_is_the_best_eligible_scores() -> None:
    pool = world_pool()
    sel = _frontier(
        pool, candidate_sample=None, min_memory=1, top_pool_factor=1.0, replay_ratio=0.5
    )
    _feed(sel, {2: [1, 0, 1, 0], 5: [1, 0, 0, 0]}, step=0)
    ids = sel.select(10)
    uniform, got = ids[:5], sel.last_retrieved
    mem = sel.memory()
    assert pool.features is not None
    scores = retrieval_scores(pool.features, pool.features[mem["task_ids"]], mem["priority"])
    scores[np.concatenate([uniform, mem["task_ids"]])] = -np.inf
    np.testing.assert_array_equal(np.sort(got), np.sort(np.argsort(-scores, kind="stable")[:5]))
    got_mean = sel.metrics()["frontier/retrieval_score_mean"]
    np.testing.assert_allclose(got_mean, scores[got].mean(), rtol=0, atol=1e-6)  # float32


def test_falls_back_to_uniform_until_memory_reaches_its_minimum() -> None:
    pool = world_pool()
    sel = _frontier(pool, min_memory=3, replay_ratio=0.5)
    _feed(sel, {2: [1, 0, 1, 0], 5: [1, 0, 0, 0]}, step=0)
    ids = sel.select(8)
    m = sel.metrics()
    assert (m["frontier/retrieved"], m["frontier/fallback"]) == (0.0, 4.0)
    assert np.unique(ids).size == 8
    _feed(sel, {8: [1, 0, 0, 0]}, step=1)
    sel.select(8)
    m = sel.metrics()
    assert (m["frontier/retrieved"], m["frontier/fallback"]) == (4.0, 0.0)
    assert m["frontier/retrieved_total"] == 4.0 and m["frontier/fallback_total"] == 4.0


def test_identical_to_uniform_while_memory_is_inactive() -> None:
    """The paper: early training is identical to vanilla RLOO until memory is big enough."""
    pool = world_pool()
    a = drive(build("uniform", pool, seed=4), steps=40, batch=7)
    b = drive(build("frontier", pool, seed=4, min_memory=256, replay_ratio=0.3), steps=40, batch=7)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_too_few_candidates_fall_back_for_the_missing_slots() -> None:
    pool = world_pool(num_tasks=12)
    sel = _frontier(pool, min_memory=1, replay_ratio=1.0)
    _feed(sel, {t: [1, 0, 0, 0] for t in range(8)}, step=0)  # 8 of 12 keys in memory
    ids = sel.select(6)  # all six slots are retrieval slots; only 4 candidates survive
    m = sel.metrics()
    assert (m["frontier/retrieved"], m["frontier/fallback"]) == (4.0, 2.0)
    assert np.unique(ids).size == 6
    assert set(sel.last_retrieved.tolist()) == {8, 9, 10, 11}


@pytest.mark.parametrize(
    ("ratio", "batch", "want"),
    [(0.10, 64, 6), (0.05, 64, 3), (0.12, 64, 8), (0.15, 64, 10), (0.10, 5, 1), (0.10, 4, 0)],
)
def test_replay_count_rounds_half_up(ratio: float, batch: int, want: int) -> None:
    sel = _frontier(world_pool(num_tasks=100), replay_ratio=ratio)
    assert sel.replay_count(batch) == want
    assert frontier_module.replay_slots(ratio, batch) == want


def test_nearby_ratios_coincide_at_small_batches() -> None:
    # The real-RL benchmark's batch of 16: 0.10 -> 1.6 -> 2 and 0.15 -> 2.4 -> 2.
    assert [frontier_module.replay_slots(r, 16) for r in (0.05, 0.10, 0.15)] == [1, 2, 2]
    assert [frontier_module.replay_slots(r, 8) for r in (0.05, 0.10, 0.15)] == [0, 1, 1]


def test_active_batch_has_replay_ratio_share_retrieved() -> None:
    pool = world_pool(num_tasks=600)
    sel = _frontier(pool)
    drive(sel, steps=8, batch=64)
    sel.select(64)  # "a batch of 64 prompts contains ... 58 uniform and 6 retrieved"
    assert sel.metrics()["frontier/retrieved"] == 6.0
    assert sel.last_retrieved.size == 6


# ---------------------------------------------------------------- behaviour
def _mixed_share(name: str, **overrides: object) -> tuple[float, float]:
    pool = world_pool(num_tasks=3000)
    sel = build(name, pool, seed=1, **overrides)
    is_mixed = world_pass_rates(pool) == 0.5
    retrieved: list[np.ndarray] = []
    picked = []
    rng = np.random.default_rng(7)
    rates = world_pass_rates(pool)
    for t in range(60):
        ids = sel.select(32)
        picked.append(ids)
        if isinstance(sel, FrontierReplaySelector):
            retrieved.append(sel.last_retrieved)
        rep = np.repeat(ids, 4)
        sel.update(Feedback(rep, (rng.random(rep.size) < rates[rep]).astype(float), step=t))
    overall = float(is_mixed[np.concatenate(picked)].mean())
    got = np.concatenate(retrieved) if retrieved else np.zeros(0, np.int64)
    return overall, float(is_mixed[got].mean()) if got.size else float("nan")


def test_retrieval_pulls_in_mixed_tasks_more_than_uniform() -> None:
    uniform, _ = _mixed_share("uniform")
    frontier, retrieved_purity = _mixed_share("frontier")  # default rho = 0.10, sampled bank
    boosted, _ = _mixed_share("frontier", replay_ratio=0.5)
    assert abs(uniform - 1 / 3) < 0.05
    assert retrieved_purity > 0.95  # uniform would give 1/3
    assert frontier > uniform + 0.04  # ~ 0.9/3 + 0.1 = 0.40 expected
    assert boosted > uniform + 0.25  # ~ 0.5/3 + 0.5 = 0.67 expected


# ---------------------------------------------------------------- configuration
@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"replay_ratio": 1.5}, "replay_ratio"),
        ({"memory_size": 0}, "memory_size"),
        ({"min_memory": 300}, "min_memory"),
        ({"top_pool_factor": 0.5}, "top_pool_factor"),
        ({"memory_rule": "hard"}, "memory_rule"),
        ({"goldilocks_band": 0.7}, "goldilocks_band"),
        ({"candidate_sample": 0}, "candidate_sample"),
    ],
)
def test_bad_config_is_a_clear_error(overrides: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        _frontier(world_pool(), **overrides)


def test_missing_features_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"TaskPool\.features"):
        make_selector("frontier", TaskPool(num_tasks=10))
    with pytest.raises(ValueError, match=r"TaskPool.features must have shape \(10, k>=1\)"):
        make_selector("frontier", TaskPool(num_tasks=10, features=np.zeros((10, 0))))


def test_metrics_report_memory_and_retrieval() -> None:
    sel = _frontier(world_pool(), min_memory=2, replay_ratio=0.5)
    _feed(sel, {2: [1, 0, 1, 0], 5: [1, 0, 0, 0]}, step=0)
    sel.select(6)
    m = sel.metrics()
    assert m["frontier/memory_size"] == 2.0
    np.testing.assert_allclose(m["frontier/memory_mean_priority"], (1.0 + 0.75) / 2)
    assert m["frontier/retrieved"] == 3.0 and m["frontier/fallback"] == 0.0
    assert 0.0 < m["frontier/retrieval_score_mean"] <= 1.0


# ---------------------------------------------------------------- Countdown embedding
def test_countdown_embedding_worked_example() -> None:
    # t = 98, a = (50, 3, 25, 7): n = 4, S = 85, mean 21.25, population std sqrt(344.1875),
    # S - t = -13, three odd numbers of four.
    phi = countdown_embedding([50, 3, 25, 7], 98, normalize=False)
    want = [
        0.98,
        1.0,
        0.03,
        0.50,
        0.2125,
        np.sqrt(344.1875) / 100,
        85 / 300,
        -13 / 300,
        13 / 300,
        0.75,
        0.03,
        0.07,
        0.25,
        0.50,
    ]
    np.testing.assert_allclose(phi, want)
    e = countdown_embedding([50, 3, 25, 7], 98)
    np.testing.assert_allclose(e, np.array(want) / np.linalg.norm(want))
    np.testing.assert_allclose(np.linalg.norm(e), 1.0)


def test_countdown_embedding_pads_three_numbers_with_zeros() -> None:
    phi = countdown_embedding([12, 4, 9], 60, normalize=False)
    assert phi.shape == (14,)
    np.testing.assert_allclose(phi[[1, 6, 7, 9]], [0.75, 25 / 300, -35 / 300, 1 / 3])
    np.testing.assert_allclose(phi[10:], [0.04, 0.09, 0.12, 0.0])
    bank = countdown_features([[12, 4, 9], [50, 3, 25, 7]], [60, 98], normalize=False)
    np.testing.assert_allclose(bank[0], phi)
    with pytest.raises(ValueError, match="numbers"):
        countdown_features([[1, 2, 3, 4, 5]], [10])


def test_countdown_keys_identify_the_arithmetic_instance() -> None:
    assert countdown_key([50, 3, 25, 7], 98) == countdown_key([3, 7, 25, 50], 98)
    assert countdown_key([3, 7, 25, 50], 98) != countdown_key([3, 7, 25, 50], 99)
    assert countdown_keys([[1, 2, 3], [3, 2, 1]], [6, 6]) == ["6|1,2,3", "6|1,2,3"]


def test_countdown_features_plug_into_the_selector() -> None:
    rng = np.random.default_rng(0)
    numbers = [rng.integers(1, 100, size=rng.integers(3, 5)) for _ in range(200)]
    targets = rng.integers(10, 200, size=200)
    pool = TaskPool(
        num_tasks=200,
        features=countdown_features(numbers, targets),
        keys=countdown_keys(numbers, targets),
    )
    sel = _frontier(pool, min_memory=2)
    drive(sel, steps=10, batch=20, pass_rates=np.full(200, 0.5))
    sel.select(20)
    assert sel.metrics()["frontier/retrieved"] == 2.0
