"""C-GRPO's stop rule as the step sampler 'cgrpo' (sampling/conformal_stop.py, issue 70 item 4).

(a) our equations against trl-cgrpo 0.2.0's own `conformal.py` on thousands of seeded random
cases, and our step against its trainer's own calibrate-then-stop loop (`CGRPOTrainer.calibrate`
and `_generate_single_turn`, the model stood in by planted completions); a failure where the
package is absent (make test installs it); (b) each equation by hand; (c) a step through the
sampler API with a planted rollout, its rollouts counted by hand, and the kind at the
simulator's and the adapters' doors; (d) resume exactness across a recalibration; (e) bad
settings, calls and states refused by name, nothing changed."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from frontier_rft.core.pool import TaskPool
from frontier_rft.integrations import plan
from frontier_rft.integrations.trl.fewer_config import TRL
from frontier_rft.integrations.verl.config import VERL
from frontier_rft.sampling.conformal_stop import (
    ConformalStop,
    ConformalStopConfig,
    aps_score,
    auto_delta,
    conformal_quantile,
    first_success_score,
    pass_rate_score,
    prediction_set,
    resolves_singleton,
)
from frontier_rft.sampling.sampler_file import load_sampler, save_sampler
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.selectors import make_selector
from frontier_rft.simulation.runner import Entry, RunSpec, run_one
from frontier_rft.simulation.scenario import SCENARIOS
from frontier_rft.training.config import TrainConfig
from helpers import assert_state_equal

CASES = 2000
"""Random cases per function in the differential tests (the brief asks for >= 1,000)."""


# ---------------------------------------------------------------- (a) against the package
INSTALL = "pip install --no-deps trl-cgrpo==0.2.0 (make test installs it)"


def _package(module: str) -> Any:
    """trl-cgrpo's `module`; a failure, not a skip, where it is absent: `make test` installs
    it, so a missing package would let these checks pass without running."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"trl-cgrpo is not installed ({exc}): {INSTALL}", pytrace=False)


@pytest.fixture(scope="module")
def pkg() -> Any:
    """trl-cgrpo's conformal.py (numpy only; its package __init__ imports TRL)."""
    return _package("trl_cgrpo.conformal")


def _answers(rng: np.random.Generator) -> tuple[list[str], np.ndarray, int]:
    """A random group of answers as the package spells them (strings, '' = no answer) and as
    we do (floats, NaN = no answer), and a budget k <= its length."""
    n = int(rng.integers(1, 33))
    alphabet = int(rng.integers(1, 6))
    codes = rng.integers(-1, alphabet, size=n)  # -1: a failed extraction
    strings = ["" if c < 0 else f"a{c}" for c in codes]
    floats = np.where(codes < 0, np.nan, codes.astype(np.float64))
    return strings, floats, int(rng.integers(1, n + 1))


def _keys(strings: list[str], k: int, seed: int) -> tuple[list[float], float]:
    """The draws the package makes from random.Random(seed): one tie key per distinct answer
    among the first k, in the order each first appears, then U."""
    draw = random.Random(seed)
    distinct = list(dict.fromkeys(a for a in strings[:k] if a != ""))
    return [draw.random() for _ in distinct], draw.random()


def test_the_quantile_is_the_packages(pkg: Any) -> None:
    rng = np.random.default_rng(0)
    for _ in range(CASES):
        m = int(rng.integers(0, 60))
        scores = rng.random(m)
        if m and rng.random() < 0.3:  # ties and the 1.0 of an unsolved prompt
            scores = np.round(scores * 4) / 4
        delta = float(rng.choice([rng.random(), 1e-4, 0.95, 0.05]))
        assert conformal_quantile(scores, delta) == pkg.conformal_quantile(scores.tolist(), delta)


def test_the_aps_score_is_the_packages(pkg: Any) -> None:
    rng = np.random.default_rng(1)
    hits = 0
    for case in range(CASES):
        strings, floats, k = _answers(rng)
        gold_code = int(rng.integers(0, 4))
        keys, u = _keys(strings, k, case)
        ours = aps_score(float(gold_code), floats, k, keys, u)
        theirs = pkg.aps_score(f"a{gold_code}", strings, k, random.Random(case))
        assert ours == theirs, (strings, k, gold_code)
        hits += ours < 1.0
    assert hits > CASES // 4  # gold was sampled in many cases, not only the 1.0 ones


def test_the_prediction_set_and_singleton_rule_are_the_packages(pkg: Any) -> None:
    rng = np.random.default_rng(2)
    stops = 0
    for case in range(CASES):
        strings, floats, k = _answers(rng)
        qhat = float(rng.choice([rng.random(), 1.0, 0.5]))
        keys, _ = _keys(strings, k, case)
        ours = prediction_set(floats, k, qhat, keys)
        theirs = pkg.prediction_set(strings, k, qhat, random.Random(case))
        assert [f"a{int(v)}" for v in ours] == theirs
        stop = resolves_singleton(floats, k, qhat, keys)
        assert stop == pkg.resolves_singleton(strings, k, qhat, random.Random(case))
        stops += stop
    assert 0 < stops < CASES  # both outcomes were compared


def test_the_execution_scores_and_auto_delta_are_the_packages(pkg: Any) -> None:
    rng = np.random.default_rng(3)
    for _ in range(CASES):
        n = int(rng.integers(1, 33))
        passes = rng.random(n) < rng.random()
        k = int(rng.integers(1, n + 1))
        assert first_success_score(passes, k) == pkg.first_success_score(passes.tolist(), k)
        assert pass_rate_score(passes, k) == pkg.pass_rate_score(passes.tolist(), k)
        scores = np.where(rng.random(n) < 0.4, 1.0, rng.random(n))
        margin = float(rng.random() * 0.2)
        assert auto_delta(scores, margin) == pkg.select_delta_auto(scores.tolist(), margin)


class _Stand:
    """The model of trl-cgrpo's trainer stood in: completion [1] (a pass) or [0] for prompt
    [t], each prompt's planted pattern of passes running on from call to call, as `Planted`
    does for our rollout(ids, counts)."""

    def __init__(self, patterns: dict[int, list[float]]):
        self.patterns = patterns
        self.asked: dict[int, int] = {}

    def next(self, task: int) -> float:
        done = self.asked.get(task, 0)
        self.asked[task] = done + 1
        pattern = self.patterns[task]
        return pattern[done % len(pattern)]

    def generate(self, prompt_ids: list[list[int]], *_: Any, **__: Any) -> tuple[list, None]:
        return [[int(self.next(ids[0]))] for ids in prompt_ids], None

    def rollout(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return np.array(
            [
                self.next(t)
                for t, c in zip(ids.tolist(), counts.tolist(), strict=True)
                for _ in range(c)
            ]
        )


class _Decode:
    eos_token_id = 2

    @staticmethod
    def batch_decode(ids: list[list[int]], skip_special_tokens: bool = True) -> list[str]:
        return [str(x[0]) for x in ids]


def _their_trainer(score: str, grid: list[int], stand: _Stand, calibration: list[int]) -> Any:
    """trl-cgrpo 0.2.0's CGRPOTrainer with every attribute its calibrate-and-stop loop reads
    set as its __init__ sets them, generation and tokenization stood in (no model)."""
    import collections
    import dataclasses
    import types

    trainer = _package("trl_cgrpo.cgrpo_trainer")
    config = _package("trl_cgrpo.cgrpo_config")
    ours = ("score", "budget_grid", "per_device_train_batch_size", "num_generations")
    defaults = {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        for f in dataclasses.fields(config.CGRPOConfig)
        if f.name in ("delta", "delta_margin", "split_delta", "recalibrate_every",
                      "num_calibration_samples", "calibration_batch_size", "seed")
    }  # fmt: skip
    assert set(ours).isdisjoint(defaults)
    t = trainer.CGRPOTrainer.__new__(trainer.CGRPOTrainer)
    t.args = types.SimpleNamespace(
        **defaults, score=score, budget_grid=grid, per_device_train_batch_size=grid[-1] * 4
    )
    t.num_generations, t.use_vllm, t.budget_grid = grid[-1], False, sorted(grid)
    t.qhats, t.delta, t._last_calibration_step = None, None, None
    t._rng, t._batch_inputs, t._padded_rows = random.Random(0), None, None
    t.state = types.SimpleNamespace(global_step=0)
    t._metrics = {"train": collections.defaultdict(list)}
    t.calibration_dataset = [{"prompt": c, "task": c} for c in calibration]
    t.verifier = lambda completions, **_: [c == "1" for c in completions]
    t.answer_extractor = None
    t._tokenizer = _Decode()
    t._tokenize_prompts = lambda prompts: ([[p] for p in prompts], None, {})
    t._base_generate = stand.generate
    return t


@pytest.mark.parametrize("score", ["first_success", "pass_rate"])
def test_a_step_stops_where_the_packages_own_trainer_loop_stops(score: str) -> None:
    """The package's trainer loop, not its formulas alone: CGRPOTrainer.calibrate on the
    calibration prompts, then _generate_single_turn drawing each prompt along the grid and
    padding it from its first singleton budget on; our sampler's step on the same planted
    passes gives the same thresholds, delta and rollouts per prompt, over 150 random pools."""
    n, batch, m = 8, 16, 20
    early = 0  # prompts stopped before the whole group: the rule was exercised
    for case in range(150):
        rng = np.random.default_rng(case)
        pool = TaskPool(num_tasks=64)
        rate = rng.choice([0.0, 0.1, 0.3, 0.5, 0.8, 1.0], size=64)
        patterns = {t: (rng.random(n) < rate[t]).astype(float).tolist() for t in range(64)}
        ours = ConformalStop(
            make_selector("uniform", pool, seed=case),
            ConformalStopConfig(score=score, calibration_prompts=m),  # type: ignore[arg-type]
            seed=case,
        )
        samples = ours.sample(0, batch, n, _Stand(patterns).rollout)
        ids = samples.rounds[1].task_ids.tolist()  # the step's prompts, in order

        stand = _Stand(patterns)
        theirs = _their_trainer(score, [2, 4, 8], stand, ours.calibration_ids.tolist())
        assert theirs._calibration_due()
        qhats = theirs.calibrate()
        theirs._batch_inputs = [{"prompt": t, "task": t} for t in ids for _ in range(n)]
        rows = [[t] for t in ids for _ in range(n)]
        completions, _ = theirs._generate_single_turn(rows, None, {}, n)
        padded = np.array(theirs._padded_rows).reshape(batch, n)

        assert ours.calibration.delta == pytest.approx(theirs.delta, abs=1e-12), case
        assert ours.calibration.qhats.tolist() == pytest.approx(list(qhats.values())), case
        used = (~padded).sum(axis=1)
        assert samples.train.counts.tolist() == used.tolist(), case
        early += int((used < n).sum())
        assert len(completions) == batch * n  # rectangular, padded with single-EOS rows
        for g in range(batch):  # the rewards we train on are the completions it keeps
            kept = [float(c[0]) for c in completions[g * n : g * n + int(used[g])]]
            got = samples.train.rewards[samples.train.offsets[g] : samples.train.offsets[g + 1]]
            assert got.tolist() == kept, case
    assert early > 150


# ---------------------------------------------------------------- (b) the equations by hand
def test_the_quantile_by_hand() -> None:
    scores = np.arange(1, 11) / 10  # 0.1 .. 1.0, shuffled below
    np.random.default_rng(0).shuffle(scores)
    assert conformal_quantile(scores, 0.2) == 0.9  # ceil(11 x 0.8) = 9th smallest
    assert conformal_quantile(scores, 0.5) == 0.6  # ceil(5.5) = 6th
    assert conformal_quantile(scores, 0.01) == 1.0  # ceil(10.89) = 11 > 10: the largest
    assert conformal_quantile(scores, 0.99) == 0.1  # ceil(0.11) = 1st
    assert conformal_quantile([], 0.3) == 1.0


def test_the_aps_score_by_hand() -> None:
    gold, a, b = 1.0, 2.0, 3.0
    answers = [a, gold, a, b]  # masses a 1/2, gold 1/4, b 1/4; keys by first appearance
    assert aps_score(gold, answers, 4, [0.5, 0.1, 0.9], 0.5) == 0.5 + 0.5 * 0.25  # b after gold
    assert aps_score(gold, answers, 4, [0.5, 0.9, 0.1], 0.5) == 0.75 + 0.5 * 0.25  # b first
    assert aps_score(gold, answers, 2, [0.1, 0.5], 0.4) == 0.5 + 0.4 * 0.5  # a's key first
    assert aps_score(gold, answers, 2, [0.5, 0.1], 0.4) == 0.4 * 0.5  # gold's key first
    assert aps_score(gold, [a, b, np.nan], 3, [0.1, 0.2], 0.5) == 1.0  # gold never sampled
    assert aps_score(gold, [gold, gold], 2, [0.3], 0.25) == 0.25  # u x 1


def test_the_singleton_rule_by_hand() -> None:
    ones = [1.0, 1.0, 1.0, 0.0]
    assert list(prediction_set(ones, 4, 0.7, [0.2, 0.8])) == [1.0]  # 3/4 >= 0.7
    assert resolves_singleton(ones, 4, 0.7, [0.2, 0.8])
    assert list(prediction_set(ones, 4, 0.8, [0.2, 0.8])) == [1.0, 0.0]  # 3/4 < 0.8: both
    assert not resolves_singleton(ones, 4, 0.8, [0.2, 0.8])
    assert resolves_singleton([0.0, 0.0], 2, 1.0, [0.5])  # qhat 1: every answer agrees
    assert not resolves_singleton([0.0, 1.0], 2, 1.0, [0.5, 0.6])
    lone = [5.0, np.nan, np.nan, np.nan]  # one answer among failed extractions: mass 1/4
    assert resolves_singleton(lone, 4, 0.2, [0.3])
    assert not resolves_singleton(lone, 4, 0.5, [0.3])  # a set of one that never reaches q


def test_the_execution_scores_and_delta_by_hand() -> None:
    assert first_success_score([False, False, True, True], 4) == 0.75
    assert first_success_score([False, False, True, True], 2) == 1.0  # none in the first 2
    assert pass_rate_score([True, False, True, False], 4) == 0.5
    assert auto_delta([0.2, 1.0, 0.5, 1.0], 0.05) == (0.55, 0.5)
    assert auto_delta([0.1, 0.2], 0.05) == (0.05, 1.0)  # 0 + 0.05
    assert auto_delta([1.0, 1.0], 0.05) == (0.95, 0.0)  # clipped from 1.05
    assert auto_delta([], 0.05) == (0.95, 0.0)


def test_the_default_grid_doubles_up_to_the_group_size() -> None:
    config = ConformalStopConfig()
    assert config.budgets(32) == (2, 4, 8, 16, 32)  # the package's default grid
    assert config.budgets(8) == (2, 4, 8)
    assert config.budgets(12) == (2, 4, 8, 12)
    assert config.budgets(2) == (2,) and config.budgets(3) == (2, 3)
    assert ConformalStopConfig(budget_grid=(8, 2, 4)).budget_grid == (2, 4, 8)  # sorted


# ---------------------------------------------------------------- (c) a planted step
N, B, M = 8, 6, 4  # group size, batch, calibration prompts


class Planted:
    """rollout(ids, counts): each prompt's rewards by its type, its pattern of 8 running on
    cyclically from call to call (a fresh prompt starts at its first); counts every rollout
    it was asked for."""

    PATTERNS: ClassVar[dict[str, list[float]]] = {
        "solved": [1.0] * N,
        "never": [0.0] * N,
        "first": [1.0, 0.0] * (N // 2),  # its first rollout passes
        "second": [0.0, 1.0] * (N // 2),  # its second does
    }

    def __init__(self, types: list[str]):
        self.types = types
        self.asked: dict[int, int] = {}
        self.generated = 0

    def __call__(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        out = []
        for t, c in zip(ids.tolist(), counts.tolist(), strict=True):
            done = self.asked.get(t, 0)  # the pattern runs on from where the last call left it
            out.append(np.array(self.PATTERNS[self.types[t]])[(done + np.arange(c)) % N])
            self.asked[t] = (done + c) % N
        self.generated += int(np.sum(counts))
        return np.concatenate(out)


def _planted(score: str, **settings: Any) -> tuple[ConformalStop, Planted]:
    pool = TaskPool(num_tasks=24)
    sampler = ConformalStop(
        make_selector("uniform", pool, seed=0),
        ConformalStopConfig(score=score, calibration_prompts=M, **settings),  # type: ignore[arg-type]
        seed=0,
    )
    cal = set(sampler.calibration_ids.tolist())
    kinds = ["first", "never", "second", "solved"]
    types = ["solved" if t in cal else kinds[t % 4] for t in range(24)]
    return sampler, Planted(types)


def test_a_step_stops_each_prompt_at_its_first_singleton_budget_counted_by_hand() -> None:
    """first_success with every calibration prompt solved at its first rollout: s_i(k) = 1/k,
    solve rate 1, delta 0.05, q_k = 1/k (the 4th of 4). A prompt stops at 2 exactly when its
    first rollout passes; every other one gets the whole group of 8."""
    sampler, rollout = _planted("first_success")
    samples = sampler.sample(0, B, N, rollout)
    assert sampler.calibration.qhats.tolist() == [1 / 2, 1 / 4, 1 / 8]
    assert sampler.calibration.delta == 0.05 and sampler.calibration.solve_rate == 1.0
    want = {"solved": 2, "first": 2, "never": N, "second": N}
    used = [want[rollout.types[t]] for t in samples.train.task_ids.tolist()]
    assert samples.train.counts.tolist() == used and samples.train.num_groups == B
    bill = M * N + sum(used)  # the calibration round is billed in the step that made it
    assert samples.rollouts == rollout.generated == bill
    assert [r.task_ids.shape[0] for r in samples.rounds][:2] == [M, B]  # calibration, then 2 each
    m = sampler.metrics()
    assert m["cgrpo/calibration_rollouts"] == M * N and m["cgrpo/mean_k"] == np.mean(used)
    assert m["cgrpo/rollout_savings"] == 1 - sum(used) / (B * N)
    assert m["cgrpo/stopped_early"] == sum(u < N for u in used)
    for g in range(B):  # each group is its parts joined, rewards as planted in order
        task = int(samples.train.task_ids[g])
        pattern = Planted.PATTERNS[rollout.types[task]][: used[g]]
        assert (
            samples.train.rewards[samples.train.offsets[g] : samples.train.offsets[g + 1]].tolist()
            == pattern
        )
    # step 1: no calibration (recalibrate_every 50), only the training rollouts
    before = rollout.generated
    second = sampler.sample(1, B, N, rollout)
    assert second.rollouts == rollout.generated - before == int(second.train.counts.sum())
    assert sampler.metrics()["cgrpo/calibrations_total"] == 1.0


def test_aps_on_reward_classes_stops_consensus_groups_early() -> None:
    """aps with delta 0.5 and calibration prompts always solved: s_i(k) = U x 1, q_k the
    ceil(2.5) = 3rd of 4 uniform draws. A prompt whose two rewards agree (all solved or all
    failed) is one answer of mass 1 >= q: it stops at 2; an alternating one never does (a
    mass of 1/2 at every budget, below q unless q <= 1/2)."""
    sampler, rollout = _planted("aps", delta=0.5)
    samples = sampler.sample(0, B, N, rollout)
    qhats = sampler.calibration.qhats
    assert np.all((qhats > 0) & (qhats < 1))
    for g, task in enumerate(samples.train.task_ids.tolist()):
        kind = rollout.types[task]
        if kind in ("solved", "never"):
            assert samples.train.counts[g] == 2
        elif np.all(qhats > 0.5):
            assert samples.train.counts[g] == N


def test_the_reference_trainer_and_the_simulator_build_it() -> None:
    config = TrainConfig(sampler="cgrpo", sampler_config={"score": "pass_rate"}, seed=7)
    assert config.sampler_spec() == SamplerSpec("cgrpo", ConformalStopConfig(score="pass_rate"))
    sampler = config.step_sampler(make_selector("uniform", TaskPool(num_tasks=16), seed=0))
    assert isinstance(sampler, ConformalStop) and sampler.seed == 7
    cfg = SCENARIOS["small-pool"].replace(num_tasks=32, eval_tasks=16)
    spec = SamplerSpec("cgrpo", ConformalStopConfig(calibration_prompts=8, recalibrate_every=2))
    rec = run_one(
        RunSpec(cfg, Entry("cgrpo", "uniform", sampler=spec), 0, steps=3, batch=8, rollouts=4)
    )
    assert rec["sampler"][0] == "cgrpo"
    rollouts = rec["rollouts"]
    assert rollouts[0] >= 8 * 4 + 8 * 2 and rollouts[1] <= 8 * 4  # a calibration, then none
    assert rollouts[2] >= 8 * 4  # recalibrated at step 2


def test_no_adapter_runs_it_and_each_says_where_it_runs() -> None:
    for facts in (TRL, VERL):
        with pytest.raises(ValueError, match=r"runs no step sampler 'cgrpo'.*--sampler cgrpo"):
            plan.check_sampler(facts, "cgrpo")


# ---------------------------------------------------------------- (d) resume
def _run(sampler: ConformalStop, rollout: Planted, steps: range) -> list[tuple[Any, ...]]:
    out = []
    for t in steps:
        s = sampler.sample(t, B, N, rollout)
        out.append((s.train.task_ids.tolist(), s.train.counts.tolist(), s.train.rewards.tolist()))
    return out


@pytest.mark.parametrize("score", ["aps", "first_success"])
def test_resume_is_exact_across_a_recalibration(score: str, tmp_path: Path) -> None:
    settings = {"recalibrate_every": 3}
    straight, rollout_a = _planted(score, **settings)
    expected = _run(straight, rollout_a, range(8))
    first, rollout_b = _planted(score, **settings)
    got = _run(first, rollout_b, range(4))
    save_sampler(first, tmp_path / "s.npz")
    inner = make_selector("uniform", TaskPool(num_tasks=24), seed=99)
    resumed = load_sampler(tmp_path / "s.npz", inner)
    assert isinstance(resumed, ConformalStop)
    assert_state_equal(resumed.state_dict(), first.state_dict())
    got += _run(resumed, rollout_b, range(4, 8))  # recalibrates at step 6 from the saved 3
    assert got == expected
    assert_state_equal(resumed.state_dict(), straight.state_dict())
    assert resumed.metrics()["cgrpo/calibrations_total"] == 3.0


# ---------------------------------------------------------------- (e) refusals
@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        ({"budget_grid": (1, 2, 4)}, "budget_grid must be distinct ints >= 2"),
        ({"budget_grid": (2, 2, 4)}, "budget_grid must be distinct ints >= 2"),
        ({"budget_grid": (2.0, 4)}, "budget_grid"),
        ({"delta": 0.0}, r"delta must be in \(0, 1\)"),
        ({"delta": 1.0}, r"delta must be in \(0, 1\)"),
        ({"delta_margin": -0.1}, "delta_margin"),
        ({"score": "entropy"}, "score must be one of"),
        ({"recalibrate_every": -1}, "recalibrate_every must be an int >= 0"),
        ({"calibration_prompts": 0}, "calibration_prompts must be an int >= 1"),
        ({"solved_at": 0.0}, "solved_at must be a reward > 0"),
        ({"solved_at": math.nan}, "solved_at"),
    ],
)
def test_bad_settings_are_refused_by_name(settings: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        ConformalStopConfig(**settings)
    with pytest.raises(ValueError, match=needle):
        TrainConfig(sampler="cgrpo", sampler_config=settings)


def test_a_grid_that_does_not_end_at_the_group_size_is_refused_before_anything_moves() -> None:
    with pytest.raises(ValueError, match=r"cgrpo: budget_grid \[2, 4\] must end at group_size 8"):
        TrainConfig(sampler="cgrpo", sampler_config={"budget_grid": [2, 4]}, group_size=8)
    sampler, rollout = _planted("aps", budget_grid=(2, 4))
    before = sampler.state_dict()
    with pytest.raises(ValueError, match="must end at group_size 8"):
        sampler.sample(0, B, N, rollout)
    assert rollout.generated == 0
    assert_state_equal(sampler.state_dict(), before)


def test_a_new_group_size_after_calibration_and_bad_rewards_are_refused() -> None:
    sampler, rollout = _planted("aps")
    sampler.sample(0, B, N, rollout)
    before = sampler.state_dict()
    with pytest.raises(ValueError, match=r"calibrated for budgets \[2, 4, 8\].*keep group_size"):
        sampler.sample(1, B, 4, rollout)
    assert_state_equal(sampler.state_dict(), before)

    def nan_rollout(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return np.full(int(counts.sum()), np.nan)

    fresh, _ = _planted("aps")
    with pytest.raises(ValueError, match="NaN or inf rewards"):
        fresh.sample(0, B, N, nan_rollout)
    assert fresh.calibration.step == -1  # nothing of the failed step was kept
    with pytest.raises(ValueError, match="rollout must be a function"):
        fresh.sample(0, B, N, None)  # type: ignore[arg-type]


def test_a_corrupt_state_is_refused_and_changes_nothing() -> None:
    sampler, rollout = _planted("aps")
    sampler.sample(0, B, N, rollout)
    good = sampler.state_dict()
    for key, value, needle in [
        ("qhats", np.array([0.5, 2.0, 0.5]), "outside"),
        ("qhats", np.array([0.5, 0.5]), "budgets and thresholds disagree"),
        ("budgets", np.array([2, 8, 4]), "not ascending"),
        ("delta", math.nan, "delta is NaN"),
        ("step", -2, "step"),
    ]:
        bad = {**good, "calibration": {**good["calibration"], key: value}}
        with pytest.raises(ValueError, match=needle):
            sampler.load_state_dict(bad)
        assert_state_equal(sampler.state_dict(), good)
    other = ConformalStop(sampler.inner, ConformalStopConfig(score="pass_rate"))
    with pytest.raises(ValueError, match="build the wrapper with that config first"):
        other.load_state_dict(good)
