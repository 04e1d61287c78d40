"""The contract every step sampler obeys, checked for each sampler and mode (as
tests/test_contract.py checks every selector, the habit of optax's and river's shared suites).

The cases are found, not listed: every kind of `KINDS` at its defaults and at each
configuration its class names (`test_configs`: DynamicSampling's modes and its one-call step,
Allocation's values, a lean budget and pilots, FewerRollouts' skip, screen and both,
Pilot-Commit's picks, C-GRPO's scores, ...), around a selector its facts ask for; every wrap
of `WRAPS` at each of its own `test_configs`, around every kind at each configuration it
accepts; besides them, PassThrough and some kinds over other selectors, and the sampler
TrainConfig.step_sampler builds for each setting of the reference trainer (spelled as its
sampler and sampler_config, or as the `frontier train` flags that fill them).

The contract:
- `kind` is declared on the class and `config` is its frozen config (None: no settings),
  each field documented; the state names both;
- `sample(step, B, n, rollout)` returns a well-formed step: ids of the pool, rewards as the
  fake rollout gives them for that prompt, groups of the declared size, at most B trained,
  and `rollouts` equal to what the rollout function was asked for;
- `metrics()` are finite floats under names that stay the same from step to step;
- `state_dict()` round-trips through the saved file (sampling/sampler_file.py), with the
  selector nested or saved apart, and the resumed sampler continues bit-identically;
- `load_state_dict` of another kind or config is refused in one line, nothing changed;
- a rejected `sample` call (bad step, B or n, a rollout that is not a function) calls no
  rollout and changes no state.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft.core.config import field_docs
from frontier_rft.sampling.allocation import AllocationConfig
from frontier_rft.sampling.conformal_stop import ConformalStopConfig
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.sampler_file import load_sampler, save_sampler
from frontier_rft.sampling.sampler_flags import SamplerFlags
from frontier_rft.sampling.spec import KINDS, SamplerSpec
from frontier_rft.sampling.step import Rolled, Sampler, StepSamples
from frontier_rft.sampling.step_plan import WRAPS, StepPlan, Wrap
from frontier_rft.sampling.wraps_sampler import WrapsSampler
from frontier_rft.training.config import TrainConfig
from helpers import assert_state_equal, build, world_pool

POOL = world_pool(30)  # 5 steps an epoch: prompts come back before, across and after a save
TYPES = np.asarray(POOL.categories)  # 0: always solved, 1: never solved, 2: mixed
B, N = 6, 4
WARM = 4  # steps before a save, a refused load or a refused call: some state of its own

Make = Callable[[int], Sampler]


def _plain(inner: str) -> Make:
    return lambda seed: PassThrough(build(inner, POOL, seed=seed))


def _inner(spec: SamplerSpec) -> str:
    """The selector a kind set so runs around: one that walks the data where it rolls out the
    kept prompts of uniform's window (asked of its row), else uniform."""
    return "greso" if spec.fact("rolls_kept") else "uniform"


def _kind(kind: str, fields: dict[str, Any], inner: str | None = None) -> Make:
    """A kind of `KINDS` with `fields` of its config set (the rest default), as
    `SamplerSpec.build` builds it for every door, around `inner` (None: `_inner`'s)."""
    spec = SamplerSpec.read(kind, fields)
    around = inner or _inner(spec)
    return lambda seed: spec.build(build(around, POOL, seed=seed), seed=seed)


def _trainer(selector: str, sampler: str = "passthrough", **settings: Any) -> Make:
    """The sampler the reference trainer builds for this TrainConfig sampler and config."""
    config = TrainConfig(selector=selector, sampler=sampler, sampler_config=settings)
    return lambda seed: config.step_sampler(build(selector, POOL, seed=seed))


def _flags(selector: str, **flags: Any) -> Make:
    """The sampler the reference trainer builds for these `frontier train` flags."""
    sampler, settings = SamplerFlags(**flags).sampler()
    return _trainer(selector, sampler, **settings)


def kind_configs(kind: str) -> list[dict[str, Any]]:
    """The configs the contract runs `kind` at: its defaults and each of its class's
    `test_configs` (found there: a new kind names its own)."""
    return [{}, *KINDS[kind].sampler.test_configs]  # type: ignore[attr-defined]


CASES: dict[str, Make] = {
    **{  # discovered: every kind at every config its class names
        f"kind-{kind}-{i}": _kind(kind, fields)
        for kind in KINDS
        for i, fields in enumerate(kind_configs(kind))
    },
    **{f"passthrough-{name}": _plain(name) for name in ("uniform", "greso", "skip", "bots")},
    # the same kinds around other selectors than `_inner`'s
    "dynamic-adaptive-greso": _kind("dynamic_sampling", {"adaptive": True}, "greso"),
    "allocation-lean-greso": _kind("allocation", {"budget": 0.5}, "greso"),
    "allocation-pilot-mixed-skip": _kind("allocation", {"pilot": 2, "commit": "mixed"}, "skip"),
    "fewer-kept-skip": _kind("fewer_rollouts", {"loss_scale": "kept"}, "skip"),
    "trainer-plain": _trainer("uniform"),
    "trainer-dynamic": _trainer("uniform", "dynamic_sampling"),
    "trainer-dynamic-adaptive": _flags("greso", dynamic_sampling=True, adaptive_oversample=True),
    "trainer-dynamic-dapo-rule": _flags(
        "uniform", dynamic_sampling=True, dapo_round_rule="dapo", dapo_max_rounds=3
    ),
    "trainer-allocation": _trainer("greso", "allocation", value="knapsack"),
    "trainer-allocation-pilot": _flags(
        "uniform", allocation=True, pilot_rollouts=2, commit="mixed", rollout_budget=0.75
    ),
    "trainer-rollouts-kept": _flags("skip", rollouts="kept"),
    "trainer-screen": _trainer(
        "uniform", "fewer_rollouts", skip=False, screen=2, loss_scale="kept"
    ),
    "trainer-kept-screen": _flags("greso", rollouts="kept", screen=2),
    "trainer-pilot-commit": _flags("uniform", pilot_commit=True, pc_buffer_pick="max_variance"),
    "trainer-cgrpo": _trainer("greso", "cgrpo", recalibrate_every=2, calibration_prompts=10),
}
NAMES = sorted(CASES)


class FakeRollout:
    """rollout(ids[, counts]): type-0 prompts always solved, type-1 never, type-2 mixed
    (rewards alternate 1, 0, ... from the prompt's parity, so any two of them differ).
    Deterministic in (prompt, position); counts every rollout it was asked for."""

    def __init__(self, group_size: int = N):
        self.group_size = group_size
        self.calls = 0
        self.generated = 0

    def __call__(self, ids: Any, counts: Any = None) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        sizes = np.full(ids.shape[0], self.group_size) if counts is None else np.asarray(counts)
        rows = [expected_rewards(int(t), int(k)) for t, k in zip(ids, sizes, strict=True)]
        self.calls += 1
        out = np.concatenate(rows) if rows else np.zeros(0)
        self.generated += out.shape[0]
        return out


def expected_rewards(task: int, size: int) -> np.ndarray:
    kind = TYPES[task]
    if kind == 2:
        return ((np.arange(size) + task) % 2 == 0).astype(np.float64)
    return np.full(size, 1.0 if kind == 0 else 0.0)


def drive(sampler: Sampler, steps: range, rollout: FakeRollout | None = None) -> list[StepSamples]:
    rollout = rollout or FakeRollout()
    return [sampler.sample(t, B, N, rollout) for t in steps]


def same_step(a: StepSamples, b: StepSamples) -> None:
    """Two steps sampled the same rounds and trained the same groups, bit for bit."""
    assert a.step == b.step and len(a.rounds) == len(b.rounds)
    for x, y in zip(a.rounds, b.rounds, strict=True):
        np.testing.assert_array_equal(x.task_ids, y.task_ids)
        np.testing.assert_array_equal(x.rewards, y.rewards)
        np.testing.assert_array_equal(x.sizes, y.sizes)
    for field in ("task_ids", "steps", "counts", "rewards", "from_surplus", "source_round"):
        np.testing.assert_array_equal(getattr(a.train, field), getattr(b.train, field))
    assert a.train.deficit == b.train.deficit and a.loss_scale == b.loss_scale


def warmed(name: str, seed: int = 3) -> Sampler:
    sampler = CASES[name](seed)
    drive(sampler, range(WARM))
    return sampler


# ---------------------------------------------------------------------------- declared
@pytest.mark.parametrize("name", NAMES)
def test_kind_and_config_are_declared(name: str) -> None:
    sampler = CASES[name](0)
    kind = type(sampler).__dict__.get("kind")
    assert isinstance(kind, str) and kind == sampler.kind, "kind is declared on the class"
    config = sampler.config
    if config is not None:
        assert dataclasses.is_dataclass(config) and type(config).__dataclass_params__.frozen
        fields = {f.name for f in dataclasses.fields(config)}
        assert set(field_docs(type(config))) == fields, "every config field has its docstring"
    state = sampler.state_dict()
    assert state["kind"] == kind
    assert state["config"] == ({} if config is None else dataclasses.asdict(config))


# ---------------------------------------------------------------------------- one step
@pytest.mark.parametrize("name", NAMES)
def test_sample_returns_a_well_formed_step(name: str) -> None:
    sampler = CASES[name](0)
    config = sampler.config
    for step in range(12):
        rollout = FakeRollout()
        samples = sampler.sample(step, B, N, rollout)
        assert samples.step == step
        assert rollout.calls == len(samples.rounds) >= 1
        assert samples.rollouts == rollout.generated > 0, "rollouts counts every one generated"
        for r in samples.rounds:
            ids = r.task_ids
            assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() < POOL.num_tasks
            assert r.sizes.shape == ids.shape and np.all(r.sizes >= 1)
            assert r.rewards.shape == (int(r.sizes.sum()),)
        train = samples.train
        assert train.num_groups <= B and train.deficit >= 0
        assert np.array_equal(np.diff(train.offsets), train.counts)
        assert train.rewards.shape == (int(train.counts.sum()),)
        assert np.all(train.steps <= step) and np.all(train.steps >= 0)
        if train.num_groups:
            assert train.task_ids.min() >= 0 and train.task_ids.max() < POOL.num_tasks
            assert np.unique(train.task_ids).size == train.num_groups, "a prompt trains once"
        if isinstance(config, AllocationConfig):
            assert np.all(train.counts >= config.min_rollouts)
            assert np.all(train.counts <= config.max_rollouts)
        elif isinstance(config, ConformalStopConfig):
            assert set(train.counts.tolist()) <= set(config.budgets(N)), "a budget of the grid"
            assert train.num_groups == B
        else:
            assert np.all(train.counts == N), "every trained group has group_size rollouts"
        for g in range(train.num_groups):  # rewards as the rollout gave them for that prompt
            rewards = train.rewards[train.offsets[g] : train.offsets[g + 1]]
            kind = TYPES[train.task_ids[g]]
            if kind == 2:  # its first part alone holds two rollouts or more: both rewards
                assert rewards.min() == 0.0 and rewards.max() == 1.0
            else:
                assert np.all(rewards == (1.0 if kind == 0 else 0.0))
        for held in sampler.held():
            assert len(held) == 3 and all(isinstance(v, int) for v in held)
            assert held[0] <= step


@pytest.mark.parametrize("name", NAMES)
def test_metrics_are_finite_floats_under_stable_names(name: str) -> None:
    sampler = CASES[name](0)
    names = None
    for samples in (sampler.sample(t, B, N, FakeRollout()) for t in range(16)):
        metrics = sampler.metrics()
        assert all(isinstance(k, str) and type(v) is float for k, v in metrics.items())
        if names is not None:
            assert set(metrics) == names, f"step {samples.step} changed the metric names"
        names = set(metrics)
    bad = {k: v for k, v in sampler.metrics().items() if not math.isfinite(v)}
    # 16 steps of 6 from a pool of 30: tried prompts come back (Allocation measures them)
    assert not bad, f"not finite after 16 steps: {bad}"


# ---------------------------------------------------------------------------- state
@pytest.mark.parametrize("with_inner", [True, False], ids=["selector-nested", "selector-apart"])
@pytest.mark.parametrize("name", NAMES)
def test_the_saved_file_resumes_bit_identically(
    name: str, with_inner: bool, tmp_path: Path
) -> None:
    straight, first = CASES[name](3), CASES[name](3)
    expected = drive(straight, range(WARM + 5))
    drive(first, range(WARM))
    save_sampler(first, tmp_path / "sampler.npz", with_inner=with_inner)
    assert bool(first.state_dict(with_inner=with_inner)["inner"]) == with_inner
    inner = CASES[name](99).inner  # another seed: everything must come from the saved state
    if not with_inner:  # a training checkpoint restores the selector from its own file
        inner.load_state_dict(first.inner.state_dict())
    resumed = load_sampler(tmp_path / "sampler.npz", inner)
    assert type(resumed) is type(first) and resumed.config == first.config
    assert_state_equal(resumed.state_dict(), first.state_dict())  # RNG included
    for want, got in zip(expected[WARM:], drive(resumed, range(WARM, WARM + 5)), strict=True):
        same_step(want, got)
    assert_state_equal(resumed.state_dict(), straight.state_dict())


def _foreign(name: str) -> list[tuple[str, dict[str, Any]]]:
    """States `name`'s sampler must refuse: one of each other kind, and one of its own kind
    under another config (where its kind has settings)."""
    mine = CASES[name](3)
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for other in NAMES:
        state = CASES[other](3).state_dict()
        if state["kind"] != mine.kind:
            out.setdefault(state["kind"], (other, state))
        elif state["config"] != mine.state_dict()["config"]:
            out.setdefault("config", (other, state))
    return sorted(out.values(), key=lambda pair: pair[0])


@pytest.mark.parametrize("name", NAMES)
def test_a_state_of_another_kind_or_config_is_refused_in_one_line_without_change(
    name: str,
) -> None:
    sampler = warmed(name)
    before = sampler.state_dict()
    foreign = _foreign(name)
    assert len(foreign) >= 4, "every other kind is tried"
    for other, state in foreign:
        with pytest.raises(ValueError) as refused:
            sampler.load_state_dict(state)
        assert "\n" not in str(refused.value), other
        assert_state_equal(sampler.state_dict(), before)  # the selector's RNG included
    twin = warmed(name)
    same_step(twin.sample(WARM, B, N, FakeRollout()), sampler.sample(WARM, B, N, FakeRollout()))


BAD_CALLS = [
    ((-1, B, N), "step"),
    ((2**53, B, N), r"^step must be a non-negative int below 2\*\*53"),
    ((2**63, B, N), r"^step must be a non-negative int below 2\*\*53"),
    ((np.uint64(2**63), B, N), r"^step must be a non-negative int below 2\*\*53"),
    ((2**64 + 5, B, N), r"^step must be a non-negative int below 2\*\*53"),
    ((float(WARM), B, N), "step"),
    ((WARM, 0, N), "batch_size"),
    ((WARM, -2, N), "batch_size"),
    ((WARM, float(B), N), "batch_size"),
    ((WARM, True, N), "batch_size"),
    ((WARM, 2**63, N), "batch_size"),
    ((WARM, B, 0), "group_size"),
    ((WARM, B, -4), "group_size"),
    ((WARM, B, float(N)), "group_size"),
    ((WARM, B, True), "group_size"),
    ((WARM, B, 2**63), "group_size"),
]


@pytest.mark.parametrize(("args", "needle"), BAD_CALLS, ids=lambda v: repr(v)[:24])
@pytest.mark.parametrize("name", NAMES)
def test_a_rejected_sample_changes_nothing(name: str, args: tuple[Any, ...], needle: str) -> None:
    """Refused by name before the selector moves: no rollout, the same state (the selector's
    RNG included), and the next step is the one it would have been."""
    sampler = warmed(name)
    before = sampler.state_dict()
    rollout = FakeRollout()
    with pytest.raises(ValueError, match=needle):
        sampler.sample(*args, rollout)
    assert rollout.calls == 0
    assert_state_equal(sampler.state_dict(), before)
    twin = warmed(name)
    same_step(twin.sample(WARM, B, N, FakeRollout()), sampler.sample(WARM, B, N, FakeRollout()))


@pytest.mark.parametrize("rollout", [None, "rollout", [0.0, 1.0]], ids=repr)
@pytest.mark.parametrize("name", NAMES)
def test_a_rollout_that_is_not_a_function_is_refused_before_anything_moves(
    name: str, rollout: Any
) -> None:
    sampler = warmed(name)
    before = [sampler.state_dict(), sampler.inner.rng.bit_generator.state]
    with pytest.raises(ValueError, match=r"^rollout must be a function, rollout\(ids\)"):
        sampler.sample(WARM, B, N, rollout)
    assert_state_equal([sampler.state_dict(), sampler.inner.rng.bit_generator.state], before)
    twin = warmed(name)
    same_step(twin.sample(WARM, B, N, FakeRollout()), sampler.sample(WARM, B, N, FakeRollout()))


# ---------------------------------------------------------------------------- wraps
# Every sampler around a sampler (`WRAPS`, discovered: a new wrap is checked) around every kind
# it accepts: its facts are declared on its class, what it refuses is refused in one line before
# anything is built, and a saved file rebuilds it (its settings from its own state) and resumes
# bit-identically, as the trainer drives it (a wrap that holds groups is handed each step's
# fresh rows' log-probs back, `trained`).
def _wrap(name: str, settings: dict[str, Any] | None = None) -> Wrap:
    """`name` with `settings` (None: its class's first `test_configs`)."""
    return Wrap.of(name, **(settings or WRAPS[name].test_configs[0]))


WRAP_CASES = [
    (name, w, kind, k)
    for name, cls in WRAPS.items()
    for w in range(len(cls.test_configs))
    for kind in KINDS
    for k, fields in enumerate(kind_configs(kind))
    if cls.refusal(kind, SamplerSpec.read(kind, fields).config) is None
]
"""Every wrap at each of its class's `test_configs`, around every kind at each of its configs
it accepts: (wrap, its config's index, kind, the kind's config's index)."""


def _wrapped(name: str, w: int, kind: str, k: int, seed: int) -> Sampler:
    spec = SamplerSpec.read(kind, kind_configs(kind)[k])
    plan = StepPlan(spec, (_wrap(name, WRAPS[name].test_configs[w]),))
    return plan.build(build(_inner(spec), POOL, seed=seed), seed=seed)


def _payload_rollout(ids: Any, counts: Any = None) -> Rolled:
    """FakeRollout's rewards, each completion a token list 1 + (task + i) % 3 long."""
    sizes = np.full(len(ids), N) if counts is None else np.asarray(counts)
    rewards = FakeRollout()(ids, sizes)
    payloads = [
        [[int(t)] * (1 + (int(t) + i) % 3) for i in range(int(c))]
        for t, c in zip(ids, sizes, strict=True)
    ]
    return Rolled(rewards, payloads)


def _drive_wrapped(sampler: Sampler, steps: range) -> list[StepSamples]:
    out = []
    for t in steps:
        samples = sampler.sample(t, B, N, _payload_rollout)
        if sampler.replays:  # the trainer's part: the fresh rows' log-probs handed back
            fresh = samples.train.num_groups - samples.replayed
            rows = [c for g in range(fresh) for p in samples.train.payload_parts(g) for c in p]
            sampler.trained([np.full(len(c), -0.5 - t, dtype=np.float32) for c in rows])
        out.append(samples)
    return out


def test_every_wrap_accepts_some_kind() -> None:
    assert {name for name, *_ in WRAP_CASES} == set(WRAPS)


def test_every_class_names_configs_its_spec_accepts() -> None:
    """Each kind's and wrap's test configurations are settings its own door accepts."""
    for kind in KINDS:
        for fields in kind_configs(kind):
            SamplerSpec.read(kind, fields)
    for name, cls in WRAPS.items():
        assert cls.test_configs, name
        for settings in cls.test_configs:
            _wrap(name, settings)


@pytest.mark.parametrize("name", sorted(WRAPS))
def test_a_wrap_declares_its_facts_on_its_class(name: str) -> None:
    cls = WRAPS[name]
    assert cls.__dict__.get("name") == name, "its name is declared on its class"
    assert isinstance(cls.settings, tuple) and cls.settings
    # what it needs of the sampler it wraps is its class's (its own, or a base's it shares)
    assert cls.refusal.__func__ is not WrapsSampler.refusal.__func__  # type: ignore[attr-defined]
    for fact in ("uneven_groups", "holds_groups", "rescuable"):
        assert isinstance(getattr(cls, fact), bool)
    for kind in KINDS:
        why = cls.refusal(kind, SamplerSpec(kind).config)
        if why is not None:  # refused in one line, before anything is built
            assert "\n" not in why
            with pytest.raises(ValueError) as refused:
                StepPlan(SamplerSpec(kind), (_wrap(name),))
            assert str(refused.value) == why


@pytest.mark.parametrize(("name", "w", "kind", "k"), WRAP_CASES)
def test_a_wrapped_sampler_resumes_from_its_file_bit_identically(
    name: str, w: int, kind: str, k: int, tmp_path: Path
) -> None:
    straight, first = _wrapped(name, w, kind, k, 3), _wrapped(name, w, kind, k, 3)
    expected = _drive_wrapped(straight, range(WARM + 4))
    _drive_wrapped(first, range(WARM))
    state = first.state_dict()
    assert state["kind"] == kind and set(WRAPS[name].settings) <= set(state[name])
    save_sampler(first, tmp_path / "sampler.npz")
    resumed = load_sampler(tmp_path / "sampler.npz", _wrapped(name, w, kind, k, 99).inner)
    assert type(resumed) is type(first) and resumed.name == name  # type: ignore[attr-defined]
    assert_state_equal(resumed.state_dict(), first.state_dict())
    for want, got in zip(
        expected[WARM:], _drive_wrapped(resumed, range(WARM, WARM + 4)), strict=True
    ):
        same_step(want, got)
        assert want.rollouts == got.rollouts


EXTRA = 3  # != N: the fake below tells a wrap's own rollouts by their group size


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1.5, 1e300, -0.5], ids=repr)
@pytest.mark.parametrize(
    "name", sorted(n for n, cls in WRAPS.items() if cls.generates != "nothing")
)
def test_the_rollouts_a_wrap_makes_itself_are_checked_as_pass_rates(name: str, bad: float) -> None:
    """A wrap that generates (rescue's own call, hard_groups' extra rollouts) reads their rewards
    as pass rates, as every kind's own rounds that read them so do (`roll_unit_round`): a
    reward outside [0, 1] is refused by the wrap's name before it trains a group or marks a
    prompt solved (issue 91, item 24); rewards in [0, 1] run."""

    def rollout(ids: Any, counts: Any = None) -> np.ndarray:
        sizes = np.full(len(ids), N) if counts is None else np.asarray(counts)
        return np.concatenate([np.full(int(k), bad if k == EXTRA else 0.0) for k in sizes])

    plan = StepPlan(SamplerSpec(), (Wrap.of(name, extra=EXTRA),))
    sampler = plan.build(build("uniform", POOL, seed=0))
    with pytest.raises(ValueError) as refused:
        for step in range(8):  # hard_groups' extras begin once a prompt comes back, all wrong
            before = sampler.state_dict()
            sampler.sample(step, B, N, rollout)
    text = str(refused.value)
    assert text.startswith(f"{name} reads the rewards of its own rollouts as pass rates")
    assert "\n" not in text and repr(float(bad)) in text
    assert_state_equal(sampler.state_dict()[name], before[name])  # nothing marked solved
    fine = plan.build(build("uniform", POOL, seed=0))
    rolled = [fine.sample(step, B, N, FakeRollout()).rollouts for step in range(8)]
    assert sum(rolled) > 8 * B * N, "the wrap made rollouts of its own, in [0, 1]"
