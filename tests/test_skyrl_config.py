"""The SkyRL adapter's settings on a machine without SkyRL: `frontier.*` read as the verl
sampler's config with SkyRL's meanings, and `frontier check-config skyrl` / the entrypoint
naming every mistake, one line each, before SkyRL is imported or Ray starts. (The adapter
against SkyRL's real trainer: tests_skyrl, in .venv-skyrl.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from frontier_rft.cli.main import main as cli
from frontier_rft.integrations.skyrl.config import (
    KEPT_WITH_DYNAMIC_SAMPLING,
    KEPT_WITH_FULLY_ASYNC,
    SHADOWS_WITH_FULLY_ASYNC,
    SKYRL_FIELDS,
    skyrl_sampler_config,
)
from frontier_rft.integrations.skyrl.main import main as skyrl_main
from frontier_rft.integrations.skyrl.main import split_arguments
from frontier_rft.integrations.skyrl.preflight import check_skyrl_config


def test_the_settings_are_the_verl_samplers_with_skyrls_batch_size() -> None:
    config = skyrl_sampler_config({"selector": "skip", "seed": 2}, train_batch_size=16)
    assert (config.selector, config.seed, config.batch_size) == ("skip", 2, 16)
    default = skyrl_sampler_config(None, 8)
    assert (default.selector, default.rollouts, default.shadows) == ("uniform", "auto", None)
    assert [r.name for r in default.shadow_configs()] == ["skip"]  # the default shadow
    assert "batch_size" not in SKYRL_FIELDS
    assert skyrl_sampler_config({"rollouts": "kept"}, 8).rollouts == "kept"


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"batch_size": 8}, "SkyRL's trainer.train_batch_size"),
        ({"reward_key": "acc"}, "reward_key is verl's"),
        ({"dynamic_sampling": "greso"}, "trainer.algorithm.dynamic_sampling.type=filter"),
        ({"selectr": "greso"}, "'selectr' (did you mean 'selector'?)"),
        ([1, 2], "must be a mapping"),
    ],
)
def test_settings_with_no_meaning_on_skyrl_are_refused_in_one_line(
    fields: object, says: str
) -> None:
    with pytest.raises(ValueError, match=r"^frontier") as err:
        skyrl_sampler_config(fields, 8)
    assert says in str(err.value) and "\n" not in str(err.value)


def _data(tmp_path: Path, **extra: object) -> Path:
    path = tmp_path / "train.jsonl"
    row = {"prompt": [{"role": "user", "content": "q"}], "source": "a", **extra}
    path.write_text(json.dumps(row) + "\n")
    return path


def test_check_names_every_mistake_at_once(tmp_path: Path) -> None:
    data = _data(tmp_path)
    report = check_skyrl_config(
        {
            "frontier": {
                "selector": "greso",
                "rollouts": "kept",
                "seed": -1,
                "task_id_key": "problem_id",
                "category_keys": ["topic"],
                "selector_config": {"p_int": 0.1},
                "reward_kee": "acc",
            },
            "trainer": {
                "train_batch_size": 0,
                "algorithm": {"dynamic_sampling": {"type": "flter"}},
            },
            "data": {"train_data": [str(data)]},
        }
    )
    text = "\n".join(report.problems)
    for says in (
        "frontier: unknown setting 'reward_kee' (did you mean 'reward_range'?)",
        "frontier: seed must be a non-negative int",
        "p_int",
        "trainer.train_batch_size: must be a positive int, got 0",
        "dynamic_sampling.type: must be filter, replace or null",
        "task_id_key: no column 'problem_id'",
        "category_keys: no column 'topic'",
    ):
        assert says in text, (says, text)
    assert len(report.problems) == 7


def test_a_good_config_passes_and_says_task_ids_are_positions(tmp_path: Path) -> None:
    report = check_skyrl_config(
        {"frontier": {"selector": "greso"}, "data": {"train_data": [str(_data(tmp_path))]}}
    )
    assert report.problems == []
    assert any("task ids are row positions" in n for n in report.notes)
    with_ids = check_skyrl_config(
        {
            "data.train_data": [str(_data(tmp_path, index=3))],
            "frontier": {"category_keys": "source"},
        }
    )
    assert with_ids.problems == [] and not any("positions" in n for n in with_ids.notes)


def test_check_config_skyrl_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"data:\n  train_data: [{_data(tmp_path)}]\nfrontier:\n  selector: greso\n")
    assert cli(["check-config", "skyrl", str(config)]) == 0
    assert cli(["check-config", "skyrl", str(config), "frontier.selector=gresso"]) == 1
    out = capsys.readouterr().out
    assert "1 problem" in out and "gresso" in out and "Traceback" not in out


def test_the_entrypoint_refuses_bad_settings_before_skyrl_or_ray(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "trainer.train_batch_size=4",
        "trainer.algorithm.dynamic_sampling.type=filter",
        "frontier.selector=gresso",
        "frontier.rollouts=kept",
    ]
    assert skyrl_main(argv) == 2
    err = capsys.readouterr().err
    assert "gresso" in err and "rollouts: kept with trainer.algorithm" in err
    assert "Traceback" not in err
    assert "skyrl" not in sys.modules  # refused before SkyRL (and Ray) are imported


def test_the_entrypoint_splits_skyrls_arguments_from_ours() -> None:
    argv = [
        "trainer.override_entrypoint=frontier_rft.integrations.skyrl.main",
        "trainer.epochs=2",
        "frontier.seed=1",
        "+frontier.selector=skip",
    ]
    assert split_arguments(argv) == (
        ["trainer.epochs=2"],
        ["frontier.seed=1", "+frontier.selector=skip"],
    )


def test_check_config_names_shadows_beside_the_filter_and_a_screen_too_large() -> None:
    report = check_skyrl_config(
        {
            "frontier": {"shadows": ["greso", "screen4"]},
            "generator": {"n_samples_per_prompt": 4},
            "trainer": {"algorithm": {"dynamic_sampling": {"type": "filter"}}},
        }
    )
    text = "\n".join(report.problems)
    assert "screens with 4 rollouts" in text and "generator.n_samples_per_prompt above 4" in text
    assert "shadows with trainer.algorithm.dynamic_sampling.type set" in text
    fine = check_skyrl_config(
        {"frontier": {"shadows": ["greso", "screen4"]}, "generator": {"n_samples_per_prompt": 8}}
    )
    assert not fine.problems


def test_check_config_takes_rollouts_kept_and_names_what_it_cannot_run_beside() -> None:
    good = {"frontier": {"selector": "greso", "rollouts": "kept"}, "trainer": {}}
    assert check_skyrl_config(good).problems == []
    mini = {"train_batch_size": 64, "policy_mini_batch_size": 16}
    notes = check_skyrl_config({**good, "trainer": mini}).notes
    assert any("ceil(K/16) optimizer steps, not 4" in n and "LR scheduler" in n for n in notes)
    for kind in ("filter", "replace"):
        report = check_skyrl_config(
            {**good, "trainer": {"algorithm": {"dynamic_sampling": {"type": kind}}}}
        )
        assert len(report.problems) == 1 and "\n" not in report.problems[0]
        assert (
            "rollouts: kept with trainer.algorithm.dynamic_sampling.type set"
            in (report.problems[0])
        )
    beside = check_skyrl_config(
        {"frontier": {"selector": "uniform", "rollouts": "kept", "shadows": ["greso"]}}
    )
    assert any("rollouts: kept does not roll out" in p for p in beside.problems)
    assert check_skyrl_config({"frontier": {"selector": "dots", "rollouts": "kept"}}).problems


def test_check_config_names_what_skyrls_fully_async_trainer_cannot_run() -> None:
    fully_async = {"trainer": {"fully_async": {"enabled": True}}}
    assert check_skyrl_config({**fully_async, "frontier": {"selector": "greso"}}).problems == []
    kept = check_skyrl_config({**fully_async, "frontier": {"rollouts": "kept"}}).problems
    assert kept == [f"frontier: {KEPT_WITH_FULLY_ASYNC}"]
    shadows = check_skyrl_config({**fully_async, "frontier": {"shadows": ["skip"]}}).problems
    assert shadows == [f"frontier: {SHADOWS_WITH_FULLY_ASYNC}"]
    # Off (SkyRL's default), both run on the synchronous trainer.
    off = {"trainer": {"fully_async": {"enabled": False}}}
    assert check_skyrl_config({**off, "frontier": {"rollouts": "kept"}}).problems == []
    bad = check_skyrl_config({"trainer": {"fully_async": {"enabled": "yes"}}}).problems
    assert len(bad) == 1 and "trainer.fully_async.enabled" in bad[0] and "true or false" in bad[0]


def test_the_entrypoint_refuses_kept_with_fully_async_before_skyrl_or_ray(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["trainer.fully_async.enabled=true", "frontier.rollouts=kept"]
    assert skyrl_main(argv) == 2
    err = capsys.readouterr().err
    assert KEPT_WITH_FULLY_ASYNC in err and "Traceback" not in err
    assert "skyrl" not in sys.modules


@pytest.mark.parametrize(
    ("config", "because"),
    [
        ({}, None),
        ({"trainer": {"fully_async": {"enabled": True}}}, KEPT_WITH_FULLY_ASYNC),
        (
            {"trainer": {"algorithm": {"dynamic_sampling": {"type": "filter"}}}},
            KEPT_WITH_DYNAMIC_SAMPLING,
        ),
        ({"frontier": {"shadows": ["greso"]}}, "shadows follow uniform's whole batches"),
        ({"frontier": {"selector": "uniform"}}, "selector 'uniform' passes over no prompt"),
        ({"frontier": {"selector": "bots"}}, "selector 'bots' does not walk the data"),
    ],
    ids=["default", "fully-async", "dynamic-sampling", "shadows", "uniform", "bots"],
)
@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_check_config_says_what_rollouts_auto_will_be(
    config: dict[str, object], because: str | None
) -> None:
    """auto's decision on SkyRL, for a selector measured free of loss with kept up to 2
    epochs (planted: conftest's `skip_kept_to_two_epochs`), named in the config."""
    frontier = config.get("frontier", {})
    assert isinstance(frontier, dict)
    config = {**config, "frontier": {"selector": "skip", **frontier}}
    report = check_skyrl_config(config)
    assert report.problems == []
    (choice,) = report.choices
    if because is None:
        assert choice == (
            "rollouts will be kept: the run is 1 epoch, within the 2 epochs over which kept was "
            "measured within noise; each step generates only the prompts 'skip' keeps among "
            "SkyRL's batch (same steps, fewer rollouts)"
        )
    else:
        assert choice == f"rollouts will be full (uniform's bill) because {because}"
    frontier = config["frontier"]
    assert isinstance(frontier, dict)
    assert (
        check_skyrl_config({**config, "frontier": {**frontier, "rollouts": "full"}}).choices == []
    )


def test_the_default_is_uniforms_batches_with_skip_as_a_shadow_where_it_can_run() -> None:
    """Issue 70: check-config says the default follows skip as a shadow; beside SkyRL's
    dynamic sampling or its fully-async trainer the default shadow is dropped, not refused."""
    report = check_skyrl_config({})
    assert report.problems == [] and report.choices == [
        "rollouts will be full (uniform's bill) because selector 'uniform' passes over no prompt"
    ]
    assert len(report.shadows) == 1 and report.shadows[0].startswith("the run will follow skip")
    for config in (
        {"trainer": {"fully_async": {"enabled": True}}},
        {"trainer": {"algorithm": {"dynamic_sampling": {"type": "filter"}}}},
        {"frontier": {"shadows": []}},
        {"frontier": {"selector": "greso"}},
    ):
        report = check_skyrl_config(config)
        assert (report.problems, report.shadows) == ([], []), config


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_auto_resolves_as_check_config_says_and_notes_skyrls_lr_schedule() -> None:
    from frontier_rft.integrations.skyrl.config import resolved_plan

    default = skyrl_sampler_config({"selector": "skip"}, 8)
    assert resolved_plan(default, fully_async=False, dynamic_sampling=None).rollouts == "kept"
    assert resolved_plan(default, fully_async=True, dynamic_sampling=None).rollouts == "full"
    assert resolved_plan(default, fully_async=False, dynamic_sampling="filter").rollouts == "full"
    full = skyrl_sampler_config({"rollouts": "full"}, 8)
    plan = resolved_plan(full, fully_async=False, dynamic_sampling=None, group_size=4)
    assert (plan.rollouts, plan.reason, plan.shape().generated) == ("full", "", 32)
    mini = {
        "trainer": {"train_batch_size": 64, "policy_mini_batch_size": 16},
        "frontier": {"selector": "skip"},
    }
    assert any("ceil(K/16) optimizer steps" in n for n in check_skyrl_config(mini).notes)


def test_check_config_skyrl_prints_what_auto_will_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("trainer:\n  fully_async:\n    enabled: true\n")
    assert cli(["check-config", "skyrl", str(config)]) == 0
    out = capsys.readouterr().out
    assert "  auto: rollouts will be full (uniform's bill) because selector 'uniform' passes " \
        "over no prompt" in out  # fmt: skip
    assert "defaults apply (selector uniform, rollouts auto, seed 0)" in out
    assert "shadows:" not in out  # the fully-async trainer: the default shadow is dropped
