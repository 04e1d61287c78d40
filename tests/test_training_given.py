"""What a training run gives its selector (prompts + self-embeddings by default, richer
metadata only when asked), feature refreshes, and DAPO's dynamic sampling in the trainer."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.training.given import parse_given
from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN, tiny_models

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sft_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models(tmp_path_factory)[1]


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
    cfg = dataclasses.replace(
        TEST_TRAIN,
        selector="uniform",
        dynamic_sampling=True,
        adaptive_oversample=adaptive,
        steps=3,
        dapo_max_rounds=2,
    )
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    assert trainer.dynamic is not None and trainer.dynamic.inner is trainer.selector
    total = 0.0
    for _ in range(2):
        candidates = trainer.dynamic.num_candidates(cfg.batch_size)  # 3x until z is measured
        m = trainer.step()
        assert m["train/rollouts"] >= candidates * cfg.group_size
        assert "curriculum/dapo/filtered_share" in m and "curriculum/uniform/epoch" in m
        assert m["train/rollouts"] % cfg.group_size == 0
        assert 1 <= m["train/sampling_rounds"] <= cfg.dapo_max_rounds
        assert m["train/groups_trained"] <= cfg.batch_size
        adv = trainer.last["advantages"]
        assert adv.size == m["train/groups_trained"] * cfg.group_size
        if adv.size:  # every trained group has reward spread: no zero-advantage group
            groups = adv.reshape(-1, cfg.group_size)
            assert np.all(np.abs(groups).sum(axis=1) > 0)
        total += m["train/rollouts"]
    assert trainer.rollouts == total
    trainer.save()
    stash = {k: len(v) for k, v in trainer._stash.items()}
    resumed = Trainer(cfg, sft_dir, tmp_path / "run", resume=True, log=lambda _: None)
    assert {k: len(v) for k, v in resumed._stash.items()} == stash
    assert resumed.rollouts == total
    assert resumed.dynamic is not None
    assert resumed.dynamic.zero_variance_rate == trainer.dynamic.zero_variance_rate
    resumed.step()  # surplus groups buffered before the checkpoint are found after it
    plain = dataclasses.replace(cfg, dynamic_sampling=False)
    with pytest.raises(ValueError, match="resume"):
        Trainer(plain, sft_dir, tmp_path / "run", resume=True, log=lambda _: None)


def test_selector_dapo_in_a_config_says_how_to_get_it() -> None:
    with pytest.raises(ValueError, match="wrapper now: use dynamic_sampling: true"):
        dataclasses.replace(TEST_TRAIN, selector="dapo")
