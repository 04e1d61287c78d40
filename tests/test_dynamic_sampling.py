"""DynamicSampling (DAPO) wrapper: a step's rounds, fresh groups first, surplus and staleness,
adaptive and GRESO sizing, pass-through to the inner selector, state."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import SELECTORS, GroupBatch, TaskPool, load_selector, save_selector
from frontier_rft import make_selector as make
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.dynamic_sampling import (
    DynamicSampling,
    DynamicSamplingConfig,
    FilteredBatch,
)
from frontier_rft.sampling.sampler_file import load_sampler, save_sampler
from helpers import (
    assert_state_equal,
    selector_kwargs,
    world_pass_rates,
    world_pool,
    world_rewards,
)


def dapo(
    pool: TaskPool, seed: int = 0, inner: str = "uniform", **overrides: Any
) -> DynamicSampling:
    """DAPO's recipe: `inner` (uniform) inside dynamic sampling, config overrides applied."""
    return DynamicSampling(make(inner, pool, seed=seed), DynamicSamplingConfig(**overrides))


def world(pool: TaskPool, seed: int, n: int = 4) -> Any:
    """rollout(ids) -> n Bernoulli rewards per id from the world pool's pass rates."""
    rng, rates = np.random.default_rng(seed), world_pass_rates(pool)

    def rollout(ids: np.ndarray) -> np.ndarray:
        return world_rewards(ids, rates, rng, n)[1]

    return rollout


def always(rewards: list[float]) -> Any:
    """rollout(ids) giving every group the same rewards."""
    return lambda ids: np.tile(np.asarray(rewards, dtype=float), ids.size)


def groups_of(out: FilteredBatch) -> dict[tuple[int, int], list[float]]:
    """{(task, step): rewards} of a filtered batch."""
    return {
        (int(t), int(s)): out.rewards[out.offsets[g] : out.offsets[g + 1]].tolist()
        for g, (t, s) in enumerate(zip(out.task_ids, out.steps, strict=True))
    }


MIXED = [1.0, 0.0, 1.0, 0.0]


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
    with pytest.raises(ValueError, match=r"wrapper now.*dynamic_sampling: dapo"):
        load_selector(tmp_path / "dapo.npz")


def test_module_imports_no_registry() -> None:
    import frontier_rft.sampling.dynamic_sampling as mod

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


# ------------------------------------------------------------------ fresh groups first
def test_default_trains_no_group_of_an_older_step() -> None:
    """The issue's repro (B = 4, n = 4, every group mixed): each step rolls out 12 prompts
    and trains on 4 of its own; none comes from an older step (surplus is discarded)."""
    ds = dapo(TaskPool(num_tasks=100), seed=0)
    for t in range(6):
        out = ds.sample(t, 4, 4, always(MIXED))
        assert [r.task_ids.size for r in out.rounds] == [12]
        assert out.train.num_groups == 4 and out.train.stale_share == 0.0
        assert (out.train.steps == t).all() and not out.train.from_surplus.any()
        assert set(out.train.task_ids.tolist()) <= set(out.rounds[0].task_ids.tolist())
    assert ds.metrics()["dapo/surplus_groups"] == 0.0


def test_kept_surplus_only_covers_a_deficit_and_sizes_round_one() -> None:
    """With max_surplus > 0, round 1 is sized for B minus the usable surplus, fresh groups
    train first, and surplus fills only what they leave open."""
    ds = dapo(TaskPool(num_tasks=100), seed=0, max_surplus=100)
    first = ds.sample(0, 4, 4, always(MIXED))  # 12 mixed: 4 trained, 8 kept
    assert first.train.stale_share == 0.0 and ds.metrics()["dapo/surplus_groups"] == 8.0
    second = ds.sample(1, 4, 4, always(MIXED))  # 8 usable >= B: nothing to roll out
    assert second.rounds == () and second.train.from_surplus.all()
    assert (second.train.steps == 0).all()
    # Half the rollouts mixed: round 1 is sized for 4 - usable and its fresh groups come first.
    ds2 = dapo(TaskPool(num_tasks=100), seed=0, max_surplus=100)
    ds2.sample(0, 4, 4, always(MIXED))
    ds2._sur_ids, ds2._sur_steps = ds2._sur_ids[:2], ds2._sur_steps[:2]  # keep 2 usable
    ds2._sur_counts, ds2._sur_rewards = ds2._sur_counts[:2], ds2._sur_rewards[:8]
    third = ds2.sample(1, 4, 4, always(MIXED))
    assert [r.task_ids.size for r in third.rounds] == [6]  # ceil((4 - 2) * 3)
    assert third.train.from_surplus.tolist() == [False, False, False, False]


def test_stale_surplus_is_dropped_not_trained() -> None:
    ds = dapo(TaskPool(num_tasks=100), seed=0, max_surplus=100, max_staleness=1)
    ds.sample(0, 4, 4, always(MIXED))  # 8 kept from step 0
    later = ds.sample(2, 4, 4, always([1.0, 1.0, 1.0, 1.0]))  # 2 steps later: all stale
    assert later.train.num_groups == 0 and later.train.deficit == 4
    assert ds.metrics()["dapo/stale_dropped"] == 8.0


def test_zero_spread_groups_are_never_trained(pool: TaskPool) -> None:
    ds = dapo(pool, seed=1)
    for t in range(5):
        out = ds.sample(t, 6, 4, world(pool, t))
        spread = [
            max(out.train.rewards[a:b]) > min(out.train.rewards[a:b])
            for a, b in zip(out.train.offsets[:-1], out.train.offsets[1:], strict=True)
        ]
        assert all(spread) and len(set(out.train.task_ids.tolist())) == out.train.num_groups
        assert len(out.rounds) <= 10 and out.rollouts == 4 * sum(
            r.task_ids.size for r in out.rounds
        )
        for g, (r, i) in enumerate(
            zip(out.train.source_round, out.train.source_group, strict=True)
        ):
            assert out.rounds[r].task_ids[i] == out.train.task_ids[g]


def test_rounds_top_up_until_the_batch_is_full_or_max_rounds() -> None:
    pool = world_pool(num_tasks=300)
    ds = dapo(pool, seed=0, max_rounds=3)
    out = ds.sample(0, 16, 8, world(pool, 0, n=8))  # a third of the pool is mixed
    assert 1 <= len(out.rounds) <= 3
    assert out.train.num_groups == 16 or len(out.rounds) == 3
    sizes = [r.task_ids.size for r in out.rounds]
    assert sizes[0] == 48  # 3x the batch before anything is measured


# ------------------------------------------------------------------ selection
def test_select_returns_exactly_n_and_sizes_oversample(pool: TaskPool) -> None:
    sel, ref = dapo(pool, seed=4), make("uniform", pool, seed=4)
    np.testing.assert_array_equal(sel.inner.select(5), ref.select(5))  # contract: exactly n ids
    assert sel.num_candidates(6) == 18  # DAPO's recipe: 3x the training batch
    assert dapo(pool, oversample=2.5).num_candidates(5) == 13  # ceil(12.5)
    assert dapo(pool, oversample=1.0).num_candidates(7) == 7
    assert sel.num_candidates(60) == pool.num_tasks  # capped at the pool without repeats
    with pytest.raises(ValueError, match="batch_size"):
        sel.num_candidates(0)


def test_wrapper_proposes_exactly_what_the_inner_selector_would(pool: TaskPool) -> None:
    sel, ref = dapo(pool, seed=9, max_rounds=1), make("uniform", pool, seed=9)
    for t in range(8):
        out = sel.sample(t, 4, 4, world(pool, t))
        np.testing.assert_array_equal(out.rounds[0].task_ids, ref.select(12))


def test_inner_selector_receives_every_reward_exactly_once(pool: TaskPool) -> None:
    sel = dapo(pool, seed=2, max_surplus=50)
    received: list[GroupBatch] = []
    inner_observe = sel.inner._observe

    def spy(batch: GroupBatch) -> None:
        received.append(batch)
        inner_observe(batch)

    sel.inner._observe = spy  # type: ignore[method-assign]
    sent: dict[tuple[int, int], list[float]] = {}
    for t in range(10):
        out = sel.sample(t, 4, 4, world(pool, t))
        for r in out.rounds:
            for task, rew in zip(r.task_ids.tolist(), r.group_rewards.tolist(), strict=True):
                sent.setdefault((t, task), []).extend(rew)
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
    assert sel.metrics()["feedback/rollouts"] == float(total)


def test_metrics_are_the_inner_ones_unchanged_plus_dapo_keys(pool: TaskPool) -> None:
    sel = dapo(pool)
    m = sel.metrics()
    assert math.isnan(m["dapo/zero_variance_rate"])
    sel.sample(0, 3, 4, world(pool, 0))
    m = sel.metrics()
    inner = sel.inner.metrics()
    assert {k: m[k] for k in inner} == pytest.approx(inner, nan_ok=True)
    own = set(m) - set(inner)
    assert own and all(k.startswith("dapo/") for k in own)
    assert {"dapo/rounds", "dapo/candidates", "dapo/stale_share"} <= own
    assert all(isinstance(v, float) for v in m.values())


def test_refresh_features_and_evidence_pass_through() -> None:
    pool = world_pool()
    sel = dapo(pool, inner="pcl")
    new = np.random.default_rng(0).standard_normal((pool.num_tasks, 3))
    assert sel.inner.refresh_features(new) is True
    assert sel.metrics()["evidence/features/refreshed"] == 1.0
    assert dapo(pool).inner.refresh_features(new) is False  # uniform reads no features


@pytest.mark.parametrize("inner", sorted(SELECTORS))
def test_wraps_every_registered_selector(inner: str) -> None:
    pool = world_pool()
    kwargs = selector_kwargs(inner, pool)
    sel = DynamicSampling(make(inner, pool, seed=0, **kwargs))
    assert type(sel.inner) is SELECTORS[inner]
    for t in range(3):
        sel.sample(t, 5, 4, world(pool, t))
    other = DynamicSampling(make(inner, pool, seed=0, **kwargs))
    other.load_state_dict(sel.state_dict())
    a, b = sel.sample(3, 5, 4, world(pool, 9)), other.sample(3, 5, 4, world(pool, 9))
    np.testing.assert_array_equal(a.train.task_ids, b.train.task_ids)


def test_wrapper_refuses_what_is_not_a_selector(pool: TaskPool) -> None:
    with pytest.raises(ValueError, match="wraps a built selector"):
        DynamicSampling("uniform")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="DynamicSamplingConfig"):
        DynamicSampling(make("uniform", pool), {"oversample": 2})  # type: ignore[arg-type]


def test_bad_sample_arguments_raise_and_change_nothing(pool: TaskPool) -> None:
    ds = dapo(pool)
    before = ds.state_dict()
    for args, needle in (
        ((-1, 4, 4), "step"),
        ((0, 0, 4), "batch_size"),
        ((0, 4, 0), "group_size"),
    ):
        with pytest.raises(ValueError, match=needle):
            ds.sample(*args, always(MIXED))
    with pytest.raises(ValueError, match="rollout returned"):
        ds.sample(0, 2, 4, lambda ids: np.zeros(3))
    before["inner"] = ds.inner.state_dict() | {}  # the bad rollout's select moved the inner
    assert_state_equal(before, ds.state_dict())


# ------------------------------------------------------------------ adaptive sizing
def test_adaptive_sizes_follow_grescos_rule_hand_computed(pool: TaskPool) -> None:
    sel = dapo(pool, adaptive=True)  # margin 1.25, clamps [1, 3] per slot
    assert sel.num_candidates(8) == 24  # nothing measured yet: oversample (3x)
    assert sel.num_candidates(8, z=0.25) == 14  # ceil(8 / 0.75 * 1.25) = ceil(13.33)
    assert sel.num_candidates(3, z=0.25) == 5
    assert sel.num_candidates(4, z=0.5) == 10  # 4 / 0.5 * 1.25 = 10 exactly
    assert sel.num_candidates(8, z=0.0) == 10
    assert sel.num_candidates(8, z=0.9) == 24  # 100 -> upper clamp
    assert sel.num_candidates(8, z=1.0) == 24
    # A step measured z: the next step's round 1 is sized from it.
    big = world_pool(num_tasks=300)
    ds = dapo(big, adaptive=True)
    ds.sample(0, 8, 4, world(big, 0))
    z = ds.zero_variance_rate
    assert z is not None and 0.0 < z < 1.0
    out = ds.sample(1, 8, 4, world(big, 1))
    assert out.rounds[0].task_ids.size == ds.num_candidates(8, z=z)


def test_greso_preset_runs_grescos_rounds_hand_computed() -> None:
    cfg = DynamicSamplingConfig.greso()
    assert (cfg.oversample, cfg.adaptive_margin, cfg.min_oversample, cfg.max_oversample) == (
        1.5,
        1.25,
        0.5,
        1.5,
    )
    pool = TaskPool(num_tasks=1000)
    # Half the groups mixed: round 1 = 1.5 x 16 = 24 -> 12 mixed; need 4: estimate
    # int(4 / 0.5 * 1.25) = 10 <= cap 24 -> last round, floored at 0.5 x 16 = 8 -> 10.
    flip = np.array([1.0, 0.0, 1.0, 0.0])

    def half_mixed(ids: np.ndarray) -> np.ndarray:
        mixed = ids % 2 == 0
        return np.concatenate([flip if m else np.ones(4) for m in mixed])

    ds = DynamicSampling(make("uniform", pool, seed=0), cfg)
    out = ds.sample(0, 16, 4, half_mixed)
    sizes = [r.task_ids.size for r in out.rounds]
    assert sizes[0] == 24
    mixed1 = int(out.rounds[0].mixed.sum())
    need = 16 - mixed1
    if need > 0:
        est = int(need / (1 - (24 - mixed1) / 24) * 1.25)
        assert sizes[1] == max(min(est, 24), 8)
        assert len(sizes) == 2  # the estimate fit under the cap: the last round
    # A short batch is allowed after the last round: nothing forces more rounds.
    none_mixed = DynamicSampling(make("uniform", pool, seed=0), cfg)
    out = none_mixed.sample(0, 16, 4, always([1.0, 1.0, 1.0, 1.0]))
    assert [r.task_ids.size for r in out.rounds] == [24] + [24] * 9  # z = 1: cap, never last
    assert out.train.num_groups == 0


def test_adaptive_with_greso_inside_rolls_out_fewer_prompts_per_trained_group() -> None:
    """GRESO skips the prompts it predicts zero-variance, so the measured z falls and
    adaptive sizing rolls out fewer candidates per trained group than fixed 3x."""
    pool = world_pool(num_tasks=300)

    def per_trained(adaptive: bool) -> float:
        ds = dapo(pool, seed=0, inner="greso", adaptive=adaptive)
        rolled = trained = 0
        for t in range(60):
            out = ds.sample(t, 16, 8, world(pool, t, n=8))
            rolled += sum(r.task_ids.size for r in out.rounds)
            trained += out.train.num_groups
        return rolled / trained

    fixed, adaptive = per_trained(False), per_trained(True)
    assert adaptive < 0.8 * fixed, (adaptive, fixed)


# ------------------------------------------------------------------ config and state
def test_config_defaults_and_validation() -> None:
    cfg = DynamicSamplingConfig()
    defaults = (cfg.oversample, cfg.max_surplus, cfg.max_staleness, cfg.adaptive)
    assert defaults == (3.0, 0, 1, False)  # DAPO's recipe: surplus discarded
    assert (cfg.adaptive_margin, cfg.min_oversample, cfg.max_oversample) == (1.25, 1.0, 3.0)
    assert (cfg.max_rounds, cfg.round_rule) == (10, "standard")
    bad = {
        "oversample": (0.5, "oversample"),
        "max_surplus": (-1, "max_surplus"),
        "max_staleness": (1.5, "max_staleness"),
        "adaptive_margin": (0.9, "adaptive_margin"),
        "min_oversample": (0.0, "min_oversample"),
        "max_oversample": (0.5, "max_oversample"),
        "adaptive": ("yes", "adaptive"),
        "max_rounds": (0, "max_rounds"),
        "round_rule": ("verl", "round_rule"),
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
    return [sel.sample(t, 3, 4, world(sel.inner.pool, seed * 100 + t)).train for t in steps]


@pytest.mark.parametrize("adaptive", [False, True])
def test_state_round_trip_with_nontrivial_surplus(
    pool: TaskPool, tmp_path: Path, adaptive: bool
) -> None:
    sel = dapo(pool, seed=5, oversample=4.0, max_surplus=64, max_staleness=2, adaptive=adaptive)
    _loop(sel, range(6), seed=0)
    surplus = sel.state_dict()["surplus"]
    assert surplus["task_ids"].size >= 1
    save_sampler(sel, tmp_path / "dapo.npz")
    restored = load_sampler(tmp_path / "dapo.npz", make("uniform", pool, seed=0))
    assert restored.config == sel.config
    assert_state_equal(sel.state_dict(), restored.state_dict())
    for a, b in zip(_loop(sel, range(6, 12), 1), _loop(restored, range(6, 12), 1), strict=True):
        for name in ("task_ids", "steps", "rewards", "from_surplus", "source_round"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert_state_equal(sel.state_dict(), restored.state_dict())


def test_corrupt_or_foreign_state_is_rejected_without_change(pool: TaskPool) -> None:
    sel = dapo(pool, oversample=8.0, max_surplus=64)
    _loop(sel, range(4), seed=0)
    before = sel.state_dict()
    assert before["surplus"]["task_ids"].size > 0
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
    other = dapo(pool, oversample=8.0, max_surplus=64).state_dict()
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
    trained_dapo, trained_uniform, deficits = [], [], []
    for t in range(30):
        out = sel.sample(t, 16, 8, world(pool, t, n=8))
        trained_dapo.append(types[out.train.task_ids])
        deficits.append(out.train.deficit)
        trained_uniform.append(types[uni.select(16)])
    assert np.mean(np.concatenate(trained_dapo) == 2) == 1.0  # only p = 0.5 tasks have spread
    assert np.mean(np.concatenate(trained_uniform) == 2) < 0.45
    assert np.mean(deficits) < 1.0  # top-up rounds fill the batch


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


def test_a_judge_failing_inside_the_wrapped_selector_changes_nothing(pool: TaskPool) -> None:
    """The judge lives on the inner METIS selector; a failure while the wrapper asks it for
    ids unfolds the pending feedback and restores every RNG, so the run continues exactly as
    one whose judge never failed."""

    def run(fail_on: set[int]) -> list[Any]:
        sel = DynamicSampling(make("metis", pool, seed=3, judge=_FlakyJudge(fail_on)))
        out: list[Any] = []
        for t in range(4):
            before = sel.state_dict()
            for _ in range(2):  # at most one retry: the flaky judge fails once per step
                try:
                    got = sel.sample(t, 2, 4, world(pool, t))
                    break
                except RuntimeError:
                    assert_state_equal(sel.state_dict(), before)  # pending not folded, rng kept
            out.append((got.task_ids, groups_of(got.train)))
        out.append(sel.state_dict())
        return out

    clean, failed = run(set()), run({2, 4, 6})  # the judge fails at steps 1, 2 and 3
    for (a_ids, a_groups), (b_ids, b_groups) in zip(clean[:-1], failed[:-1], strict=True):
        np.testing.assert_array_equal(a_ids, b_ids)
        assert a_groups == b_groups
    assert_state_equal(clean[-1], failed[-1])


@pytest.mark.parametrize("z", [float("nan"), "0.5", -1, 2, float("inf"), True, [0.5]], ids=repr)
def test_num_candidates_refuses_a_z_that_is_not_a_share_by_name(pool: TaskPool, z: Any) -> None:
    """Issue 47: NaN gave an unnamed ValueError, a string a TypeError; -1, 2 and inf were
    used as shares."""
    sel = dapo(pool, adaptive=True)
    before = sel.state_dict()
    with pytest.raises(ValueError, match=r"^z must be a zero-variance share in \[0, 1\]"):
        sel.num_candidates(8, z=z)
    assert_state_equal(before, sel.state_dict())
    assert sel.num_candidates(8, z=0) == 10 and sel.num_candidates(8, z=1) == 24


# ------------------------------------------------------------------ DAPO's own rounds
def scripted(every: int = 20, mixed: int = 3, n: int = 4) -> Any:
    """rollout(ids): in each call, the groups at positions p with p % every < mixed are mixed,
    the others all 0 (a 15% mixed share by default, whatever ids the selector drew)."""

    def rollout(ids: np.ndarray) -> np.ndarray:
        rows = [MIXED[:n] if p % every < mixed else [0.0] * n for p in range(ids.size)]
        return np.asarray(rows, dtype=float).ravel()

    return rollout


def test_dapo_rule_rolls_out_full_batches_hand_computed() -> None:
    """B = 20 at a 15% mixed share (3 of every 20 positions of a round). DAPO's code rolls
    out gen_batch_size = 3 B = 60 prompts a round (9 mixed each) until 20 are kept: 9, 18,
    27 -> 3 rounds, 180 prompts, the first 20 kept trained and 7 discarded. 'fixed' sizes
    each round 3x the open slots: 60 (9 mixed), 33 (6), 15 (3), 6 (3, 2 needed) -> 4 rounds,
    114 prompts. The uniform walk over 1,000 tasks draws no task twice within the step."""
    pool = TaskPool(num_tasks=1000)
    dapo_rule = DynamicSampling(make("uniform", pool, seed=0), DynamicSamplingConfig.dapo())
    out = dapo_rule.sample(0, 20, 4, scripted())
    assert [r.task_ids.size for r in out.rounds] == [60, 60, 60]
    assert out.rollouts == 180 * 4 and out.train.num_groups == 20 and out.train.deficit == 0
    assert out.train.source_round.tolist() == [0] * 9 + [1] * 9 + [2] * 2  # truncated to B
    assert out.train.source_group.tolist()[-2:] == [0, 1]
    fixed = DynamicSampling(make("uniform", pool, seed=0), DynamicSamplingConfig.for_mode("fixed"))
    out = fixed.sample(0, 20, 4, scripted())
    assert [r.task_ids.size for r in out.rounds] == [60, 33, 15, 6]
    assert out.rollouts == 114 * 4 and out.train.num_groups == 20
    # At max_rounds DAPO's code raises; this rule trains the short batch: 2 x 9 of 20.
    capped = DynamicSamplingConfig(round_rule="dapo", max_rounds=2)
    out = DynamicSampling(make("uniform", pool, seed=0), capped).sample(0, 20, 4, scripted())
    assert [r.task_ids.size for r in out.rounds] == [60, 60] and out.train.deficit == 2
    # A round is never larger than the pool without repeats.
    small = DynamicSampling(make("uniform", TaskPool(num_tasks=50), seed=0), capped)
    assert [r.task_ids.size for r in small.sample(0, 20, 4, scripted()).rounds] == [50, 50]


def test_modes_name_the_settings_and_the_dapo_rule_refuses_adaptive() -> None:
    assert DynamicSamplingConfig.for_mode("fixed") == DynamicSamplingConfig()
    assert DynamicSamplingConfig.for_mode("adaptive") == DynamicSamplingConfig(adaptive=True)
    assert DynamicSamplingConfig.for_mode("greso") == DynamicSamplingConfig.greso()
    assert DynamicSamplingConfig.for_mode("dapo") == DynamicSamplingConfig(round_rule="dapo")
    with pytest.raises(ValueError, match="fixed, adaptive, greso, dapo"):
        DynamicSamplingConfig.for_mode("verl")
    with pytest.raises(ValueError, match=r"round_rule 'dapo'.*adaptive"):
        DynamicSamplingConfig(round_rule="dapo", adaptive=True)
