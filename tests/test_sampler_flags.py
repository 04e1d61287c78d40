"""TrainConfig names its step sampler once (`sampler`) and configures it once
(`sampler_config`, parsed into the sampler's own config class); the flat fields that spelled
it before are `frontier train` flags that fill the pair, and the one translation of older
run.json / spec.json configs (frontier_rft.sampling.sampler_flags)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.cli.common import UsageError, apply_config_file
from frontier_rft.cli.main import build_parser
from frontier_rft.cli.train import _resumed_config, _sampler_args
from frontier_rft.sampling import Allocation, AllocationConfig, DynamicSamplingConfig
from frontier_rft.sampling.fewer_rollouts import FewerRolloutsConfig
from frontier_rft.sampling.pilot_commit import PilotCommitConfig
from frontier_rft.sampling.sampler_flags import (
    FLAG_NAMES,
    SAMPLER_NAMES,
    SamplerFlags,
    legacy_train_fields,
)
from frontier_rft.training.config import TrainConfig, train_config
from helpers import build, world_pool

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "fit_run" / "run.json"

LEGACY = [  # flat fields as run.json held them, and the sampler they ran
    ({}, "passthrough", None),
    ({"dynamic_sampling": True}, "dynamic_sampling", DynamicSamplingConfig()),
    (
        {"dynamic_sampling": True, "adaptive_oversample": True, "dapo_max_rounds": 4},
        "dynamic_sampling",
        DynamicSamplingConfig(adaptive=True, max_rounds=4),
    ),
    (
        {"dynamic_sampling": True, "dapo_round_rule": "dapo"},
        "dynamic_sampling",
        DynamicSamplingConfig.dapo(),
    ),
    (
        {"allocation": True, "rollout_budget": 0.5, "pilot_rollouts": 2, "commit": "mixed"},
        "allocation",
        AllocationConfig(budget=0.5, pilot=2, commit="mixed"),
    ),
    ({"rollouts": "kept"}, "fewer_rollouts", FewerRolloutsConfig()),
    ({"screen": 4, "loss_scale": "kept"}, "fewer_rollouts", FewerRolloutsConfig(False, 4, "kept")),
    (
        {"pilot_commit": True, "pc_evict_at": None, "pc_buffer_pick": "max_variance"},
        "pilot_commit",
        PilotCommitConfig(evict_at=None, buffer_pick="max_variance"),
    ),
]


def test_the_sampler_is_one_name_and_one_config_of_its_own_class() -> None:
    assert SAMPLER_NAMES == (
        "passthrough",
        "dynamic_sampling",
        "allocation",
        "fewer_rollouts",
        "pilot_commit",
        "cgrpo",
    )
    config = TrainConfig(sampler="allocation", sampler_config={"budget": 0.5})
    assert config.sampler_settings() == AllocationConfig(budget=0.5)
    sampler = config.step_sampler(build("uniform", world_pool(30), seed=0))
    assert isinstance(sampler, Allocation) and sampler.config.budget == 0.5
    assert TrainConfig().sampler == "passthrough" and TrainConfig().sampler_settings() is None
    assert not set(FLAG_NAMES) & {f.name for f in dataclasses.fields(TrainConfig)}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"sampler": "dapo"}, "sampler must be one of"),
        ({"sampler_config": {"budget": 0.5}}, "'passthrough' takes no settings"),
        ({"sampler": "allocation", "sampler_config": {"budgt": 0.5}}, "did you mean 'budget'"),
        ({"sampler": "allocation", "sampler_config": {"budget": 0.0}}, "budget must be"),
        ({"sampler": "allocation", "sampler_config": "budget=0.5"}, "sampler_config must be"),
        ({"sampler": "dynamic_sampling", "sampler_config": {"max_surplus": 2}}, "max_surplus 0"),
    ],
)
def test_a_wrong_sampler_or_setting_is_refused_in_one_line(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as exc:
        TrainConfig(**fields)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(("flat", "name", "settings"), LEGACY)
def test_older_flat_fields_load_as_the_sampler_they_ran(
    flat: dict[str, Any], name: str, settings: Any
) -> None:
    config = train_config({"selector": "greso", **flat})
    assert config.sampler == name and config.sampler_settings() == settings
    # ... and the pair spells back as the same flags (the bench's ledger keeps its digests).
    back = SamplerFlags.of(config.sampler, config.sampler_config)
    assert back.sampler() == (config.sampler, config.sampler_config)
    assert {k: v for k, v in back.as_fields().items() if v != getattr(SamplerFlags(), k)} == flat


def test_a_run_json_written_before_the_pair_loads() -> None:
    saved = json.loads(FIXTURE_RUN.read_text())["config"]
    assert "dynamic_sampling" in saved and "sampler" not in saved  # the old layout
    config = train_config(saved)
    assert config.sampler == "passthrough" and config.selector == saved["selector"]
    assert legacy_train_fields({"selector": "bots"}) == {"selector": "bots"}  # a new one: as is


def test_both_spellings_at_once_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="keep one spelling") as exc:
        train_config({"sampler": "allocation", "allocation": True})
    assert "\n" not in str(exc.value)


def _train_args(*argv: str) -> Any:
    return build_parser().parse_args(["train", "--model", "m", "--out", "o", *argv])


def _resume_args(run: Path, *argv: str) -> Any:
    return build_parser().parse_args(["train", "--resume", "--out", str(run), *argv])


def test_the_flags_are_sugar_for_the_pair(tmp_path: Path) -> None:
    args = _train_args("--dynamic-sampling", "--oversample", "2", "--dapo-max-rounds", "5")
    pair = _sampler_args(args)
    assert pair["sampler"] == "dynamic_sampling"
    assert TrainConfig(**pair).sampler_settings() == DynamicSamplingConfig(
        oversample=2.0, max_rounds=5
    )
    args = _train_args("--sampler", "allocation", "--sampler-config", "budget=0.5")
    assert _sampler_args(args) == {"sampler": "allocation", "sampler_config": {"budget": 0.5}}
    assert _sampler_args(_train_args()) == {"sampler_config": {}}  # TrainConfig's default
    with pytest.raises(UsageError, match="give one or the other"):
        _sampler_args(_train_args("--screen", "4", "--sampler", "fewer_rollouts"))
    with pytest.raises(UsageError, match="needs --sampler NAME"):
        _sampler_args(_train_args("--sampler-config", "budget=0.5"))
    with pytest.raises(UsageError, match="do not combine"):
        _sampler_args(_train_args("--screen", "4", "--allocation"))
    # A --config file sets them as its keys: the pair, or the flags.
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices["train"]  # type: ignore[union-attr]
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("sampler: allocation\nsampler_config: {budget: 0.5, pilot: 2}\n")
    apply_config_file(sub, str(yaml_file))
    args = parser.parse_args(["train", "--model", "m", "--out", "o"])
    assert TrainConfig(**_sampler_args(args)).sampler_settings() == AllocationConfig(
        budget=0.5, pilot=2
    )


def test_a_run_saved_with_the_flat_fields_resumes(tmp_path: Path) -> None:
    """--resume of a run written before the pair: same run, same sampler; another refused."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    old = dataclasses.asdict(TrainConfig(selector="greso"))
    old.pop("sampler"), old.pop("sampler_config")
    old.update(SamplerFlags(allocation=True, rollout_budget=0.5).as_fields())
    run = tmp_path / "run"
    run.mkdir()
    info = {"config": json.loads(json.dumps(old)), "model_dir": str(model)}
    (run / "run.json").write_text(json.dumps(info))
    config, _ = _resumed_config(_resume_args(run))
    assert config.sampler == "allocation" and config.sampler_settings().budget == 0.5
    same = _resume_args(run, "--allocation", "--rollout-budget", "0.5")
    assert _resumed_config(same)[0] == config
    other = _resume_args(run, "--sampler", "allocation")
    with pytest.raises(UsageError, match="drop --sampler"):
        _resumed_config(other)


def test_the_trainer_takes_an_older_run_json_for_the_same_run() -> None:
    """Trainer's resume check compares the saved run.json, translated, with this run's."""
    from frontier_rft.training.run_files import check_same_run, jsonable_config

    saved = json.loads(FIXTURE_RUN.read_text())["config"]
    saved["dynamic_sampling"] = True
    now = jsonable_config(train_config(saved))
    assert now["sampler"] == "dynamic_sampling"
    check_same_run(legacy_train_fields(saved), now)  # the same run: no complaint
    with pytest.raises(ValueError, match=r"different configuration \(sampler, sampler_config\)"):
        check_same_run(
            legacy_train_fields(saved),
            jsonable_config(train_config(saved | {"dynamic_sampling": False})),
        )
