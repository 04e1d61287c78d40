"""What a training run gives its selector (prompts + self-embeddings by default, richer
metadata only when asked), feature refreshes, and DAPO's dynamic sampling in the trainer."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.sampling import DynamicSampling, DynamicSamplingConfig
from frontier_rft.sampling.sampler_flags import SamplerFlags, sampler_settings
from frontier_rft.simulation import get_scenario, runner
from frontier_rft.training.given import parse_given
from frontier_rft.training.grpo import Trainer
from helpers import assert_state_equal
from test_training_model import TEST_TRAIN

pytestmark = pytest.mark.integration


def test_parse_given() -> None:
    assert parse_given("self") == ("prompts", "self")
    assert parse_given("prompts") == ("prompts",)
    assert parse_given("rich") == ("prompts", "categories", "difficulty", "task_features")
    assert parse_given("categories, self") == ("prompts", "self", "categories")
    for bad in ("", "levels", "self,task_features", "rich,self"):
        with pytest.raises(ValueError):
            parse_given(bad)


def test_default_gives_prompts_and_self_embeddings(sft_dir: Path, tmp_path: Path) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, selector="pcl")
    assert cfg.given == "self"
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    pool = trainer.pool
    assert pool is not None and pool.prompts is not None
    assert pool.categories is None and pool.difficulty is None
    assert pool.reference_pass_rates is None
    hidden = trainer.model.config.hidden_size
    assert pool.features is not None and pool.features.shape == (cfg.train_size, hidden)
    np.testing.assert_allclose(np.linalg.norm(pool.features, axis=1), 1.0, atol=1e-5)
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["given"] == ["prompts", "self"]
    assert info["evidence"]["features"] == "policy"  # self-embeddings, named as such
    assert info["embed_seconds"] > 0
    metrics = trainer.step()
    assert metrics["curriculum/evidence/features/policy"] == 1.0


def test_prompts_only_and_rich(sft_dir: Path, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="prompt text"):
        text = Trainer(
            dataclasses.replace(TEST_TRAIN, selector="pcl", given="prompts"),
            sft_dir,
            tmp_path / "text",
            log=lambda _: None,
        )
    assert text.pool is not None and text.pool.features is None
    assert text.selector.evidence["features"] == "text"
    rich = Trainer(
        dataclasses.replace(TEST_TRAIN, selector="sec", given="rich"),
        sft_dir,
        tmp_path / "rich",
        log=lambda _: None,
    )
    pool = rich.pool
    assert pool is not None and pool.categories is not None and pool.difficulty is not None
    np.testing.assert_array_equal(pool.categories, [it.level for it in rich.items])
    assert pool.features is not None and pool.features.shape[1] == 14  # Countdown's phi(x)
    assert rich.selector.evidence["categories"] == "given"


def test_self_embeddings_refresh_every_k_steps(sft_dir: Path, tmp_path: Path) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, selector="frontier", refresh_features_every=2, steps=4)
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    before = np.array(trainer.selector._features, copy=True)
    first = trainer.step()
    assert "perf/embed_s" not in first
    second = trainer.step()
    assert second["perf/embed_s"] > 0
    assert trainer.selector.evidence["features"] == "refreshed"
    assert not np.allclose(before, trainer.selector._features)  # the policy moved (lr 3e-3)


@pytest.mark.parametrize(
    ("selector", "given"), [("sec", "self"), ("uniform", "self"), ("pcl", "prompts")]
)
def test_a_refresh_with_nothing_to_refresh_is_refused(
    sft_dir: Path, tmp_path: Path, selector: str, given: str
) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, selector=selector, given=given, refresh_features_every=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="--refresh-features-every re-embeds"):
            Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("adaptive", [False, True])
def test_dynamic_sampling_trains_only_mixed_groups_and_counts_rollouts(
    sft_dir: Path, tmp_path: Path, adaptive: bool
) -> None:
    rounds = 2
    cfg = dataclasses.replace(
        TEST_TRAIN,
        selector="uniform",
        sampler="dynamic_sampling",
        sampler_config={"adaptive": adaptive, "max_rounds": rounds},
        steps=3,
    )
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    ds = trainer.sampler
    assert isinstance(ds, DynamicSampling) and ds.inner is trainer.selector
    assert ds.config.max_rounds == rounds and ds.config.max_surplus == 0
    total = 0.0
    for _ in range(2):
        candidates = ds.num_candidates(cfg.batch_size)  # 3x until z is measured
        m = trainer.step()
        assert m["train/rollouts"] >= min(candidates, cfg.train_size) * cfg.group_size
        assert "curriculum/dapo/filtered_share" in m and "curriculum/uniform/epoch" in m
        assert m["curriculum/dapo/stale_share"] == 0.0  # never a group of an older step
        assert m["train/rollouts"] % cfg.group_size == 0
        assert 1 <= m["train/sampling_rounds"] <= rounds
        assert m["train/sampling_rounds"] == m["curriculum/dapo/rounds"]
        assert m["train/groups_trained"] <= cfg.batch_size
        adv = trainer.last["advantages"]
        assert adv.size == m["train/groups_trained"] * cfg.group_size
        if adv.size:  # every trained group has reward spread: no zero-advantage group
            groups = adv.reshape(-1, cfg.group_size)
            assert np.all(np.abs(groups).sum(axis=1) > 0)
        total += m["train/rollouts"]
    assert trainer.rollouts == total
    trainer.save()
    ckpt = tmp_path / "run" / "checkpoints" / "step_000002"
    assert load_dynamic_sampling_state(ckpt / "step_sampler.npz")["inner"] == {}
    resumed = Trainer(cfg, sft_dir, tmp_path / "run", resume=True, log=lambda _: None)
    assert resumed.rollouts == total
    assert isinstance(resumed.sampler, DynamicSampling)
    assert resumed.sampler.zero_variance_rate == ds.zero_variance_rate
    assert_state_equal(resumed.sampler.state_dict(), ds.state_dict())
    resumed.step()
    plain = dataclasses.replace(cfg, sampler="passthrough", sampler_config={})
    with pytest.raises(ValueError, match="resume"):
        Trainer(plain, sft_dir, tmp_path / "run", resume=True, log=lambda _: None)


@pytest.mark.parametrize("dynamic", [False, True])
def test_distinct_prompts_trained_counts_only_groups_that_reached_the_loss(
    sft_dir: Path, tmp_path: Path, dynamic: bool
) -> None:
    """The selector counts prompts with a mixed group rolled out; dynamic sampling drops
    surplus mixed groups untrained, so the trainer counts those that reached the loss."""
    cfg = dataclasses.replace(
        TEST_TRAIN,
        selector="uniform",
        sampler="dynamic_sampling" if dynamic else "passthrough",
        sampler_config={"max_rounds": 2} if dynamic else {},
        steps=3,
    )
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    trained: set[int] = set()
    mixed_trained = 0
    for _ in range(2):
        m = trainer.step()
        groups = trainer.last["advantages"].reshape(-1, cfg.group_size)
        mixed_trained += int(np.count_nonzero(np.abs(groups).sum(axis=1) > 0))
        rolled = m["curriculum/tasks/distinct_trained"]
        assert m["train/distinct_prompts_trained"] <= min(rolled, mixed_trained)
        if not dynamic:  # every group rolled out reaches the loss
            assert m["train/distinct_prompts_trained"] == rolled
        assert trainer.trained_tasks is not None
        trained = set(np.flatnonzero(trainer.trained_tasks).tolist())
    trainer.save()
    ckpt = tmp_path / "run" / "checkpoints" / "step_000002"
    state = json.loads((ckpt / "trainer.json").read_text())
    assert state["trained_tasks"] == sorted(trained)
    resumed = Trainer(cfg, sft_dir, tmp_path / "run", resume=True, log=lambda _: None)
    assert resumed.trained_tasks is not None
    assert set(np.flatnonzero(resumed.trained_tasks).tolist()) == trained
    # A checkpoint written before the count: unknown from then on, so not logged.
    del state["trained_tasks"]
    (ckpt / "trainer.json").write_text(json.dumps(state))
    old = Trainer(cfg, sft_dir, tmp_path / "run", resume=True, log=lambda _: None)
    assert old.trained_tasks is None
    assert "train/distinct_prompts_trained" not in old.step()


def test_dapo_round_rule_reaches_the_wrapper_and_refuses_adaptive() -> None:
    from frontier_rft.bench.real_rl.entries import BenchEntry, flags
    from frontier_rft.bench.real_rl.ledger import entry_definition
    from frontier_rft.bench.real_rl.testbed import testbed

    sampler, settings = SamplerFlags(dynamic_sampling=True, dapo_round_rule="dapo").sampler()
    cfg = dataclasses.replace(TEST_TRAIN, sampler=sampler, sampler_config=settings)
    assert cfg.sampler_settings() == DynamicSamplingConfig.dapo()
    fixed_flags = SamplerFlags(dynamic_sampling=True).sampler()
    assert sampler_settings(*fixed_flags) == DynamicSamplingConfig()  # fixed: unchanged
    with pytest.raises(ValueError, match=r"dapo_round_rule dapo.*adaptive_oversample"):
        SamplerFlags(
            dynamic_sampling=True, dapo_round_rule="dapo", adaptive_oversample=True
        ).sampler()
    with pytest.raises(ValueError, match=r"round_rule 'dapo'.*adaptive"):
        dataclasses.replace(cfg, sampler_config={"round_rule": "dapo", "adaptive": True})
    with pytest.raises(ValueError, match="dapo_round_rule"):
        SamplerFlags(dapo_round_rule="greso").sampler()
    with pytest.raises(ValueError, match="round_rule must be one of"):  # the trainer has no greso
        dataclasses.replace(cfg, sampler_config={"round_rule": "greso"})
    # A bench entry in mode dapo; an entry in mode fixed keeps its definition (and digest).
    tb = testbed("toy")
    dapo_flags = flags(dynamic_sampling=True, dapo_round_rule="dapo")
    dapo = tb.run_config(BenchEntry("x", "uniform", sampler=dapo_flags), 0)
    assert dapo.sampler_settings() == DynamicSamplingConfig.dapo()
    fixed_entry = BenchEntry("d", "uniform", sampler=flags(dynamic_sampling=True))
    fixed = entry_definition(tb.run_config(fixed_entry, 0))
    assert fixed["dynamic_sampling"]["round_rule"] == "standard"
    assert "dapo_round_rule" not in fixed


def load_dynamic_sampling_state(path: Path) -> dict:  # type: ignore[type-arg]
    """The state a step_sampler.npz holds, as written."""
    from frontier_rft.core.checkpoint_file import read_checkpoint
    from frontier_rft.core.persistence import unflatten_state

    header, arrays = read_checkpoint(path)
    state: dict = unflatten_state(header["state"], arrays, set())  # type: ignore[type-arg]
    return state


@pytest.mark.parametrize("dynamic", [False, True])
def test_trainer_and_simulator_drive_the_same_sampler(
    sft_dir: Path, tmp_path: Path, dynamic: bool, sample_calls: list[str]
) -> None:
    """Trainer.step has no branch on dynamic sampling: it calls `sample` on its sampler,
    PassThrough or DynamicSampling, the objects the simulator calls."""
    calls = sample_calls
    sampler = "dynamic_sampling" if dynamic else "passthrough"
    cfg = dataclasses.replace(TEST_TRAIN, selector="uniform", sampler=sampler, steps=2)
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    trainer.step()
    trainer.step()
    name = "DynamicSampling" if dynamic else "PassThrough"
    assert calls == [name, name]
    entry = runner.Entry(
        "d", "uniform", sampler=runner.sampler_spec(dynamic_sampling="fixed" if dynamic else None)
    )
    learner = runner.SimulatedLearner(get_scenario("hard"), seed=0)
    assert type(runner.sampler_for(entry, trainer.selector, learner)).__name__ == name
    source = textwrap.dedent(inspect.getsource(Trainer.step))
    branches = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.If | ast.IfExp)]
    named = [ast.unparse(n.test) for n in branches]
    assert not [t for t in named if "dynamic" in t or "sampler" in t or "ds" in t.split()]


def test_selector_dapo_in_a_config_says_how_to_get_it() -> None:
    with pytest.raises(ValueError, match=r"wrapper now.*dynamic_sampling: dapo"):
        dataclasses.replace(TEST_TRAIN, selector="dapo")
