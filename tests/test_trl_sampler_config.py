"""The TRL adapter's `sampler:` key: a step sampler by kind, as `frontier train --sampler`
names it, beside the shorthand keys (dynamic_sampling, rollouts, screen, loss_scale); read
into one spec (never written back into the shorthand keys), refused where TRL's step does not
run the kind, and checked by check-config."""

from __future__ import annotations

from typing import Any

import pytest

from frontier_rft.integrations import plan
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.config_check import check_trl_config
from frontier_rft.integrations.trl.fewer_config import TRL
from frontier_rft.integrations.trl.resolve import TrlRun, resolve_step

SHORTHAND = ("dynamic_sampling", "dynamic_sampling_config", "rollouts", "screen", "loss_scale")
"""The shorthand keys of the step."""


@pytest.mark.parametrize(
    ("named", "shorthand"),
    [
        ({"sampler": "passthrough"}, {"rollouts": "full"}),
        (
            {"sampler": "dynamic_sampling", "sampler_config": {"max_rounds": 20}},
            {
                "dynamic_sampling": "fixed",
                "dynamic_sampling_config": {"max_rounds": 20},
                "rollouts": "full",  # what auto resolves to beside dynamic sampling
            },
        ),
        (
            {"sampler": "dynamic_sampling", "sampler_config": {"round_rule": "dapo"}},
            {"dynamic_sampling": "dapo", "rollouts": "full"},
        ),
        ({"sampler": "fewer_rollouts"}, {"rollouts": "kept"}),
        (
            {"sampler": "fewer_rollouts", "sampler_config": {"skip": False, "screen": 4}},
            {"rollouts": "full", "screen": 4},
        ),
        (
            {"sampler": "fewer_rollouts", "sampler_config": {"screen": 2, "loss_scale": "kept"}},
            {"rollouts": "kept", "screen": 2, "loss_scale": "kept"},
        ),
    ],
)
def test_a_named_sampler_is_the_spec_its_shorthand_spells(
    named: dict[str, Any], shorthand: dict[str, Any]
) -> None:
    by_name = FrontierConfig(selector="greso", **named)
    by_keys = FrontierConfig(selector="greso", **shorthand)
    assert by_name.sampler_spec() == by_keys.sampler_spec()
    assert by_name.sampler_spec() is by_name.sampler_spec()  # built once, then cached
    # one way: the shorthand keys keep what was given, the spec is what every check reads
    default = FrontierConfig()
    assert {k: getattr(by_name, k) for k in SHORTHAND} == {
        k: getattr(default, k) for k in SHORTHAND
    }
    plan = resolve_step(by_keys, TrlRun()).plan
    assert plan is not None and resolve_step(by_name, TrlRun()).plan == plan
    both = FrontierConfig(selector="greso", **named, **shorthand)  # the same thing twice
    assert both.sampler_spec() == by_keys.sampler_spec()
    assert {k: getattr(both, k) for k in shorthand} == shorthand  # as given


def test_a_yaml_sampler_key_is_not_rewritten_into_the_shorthand_keys() -> None:
    """A file's `sampler:` stays the one spelling of its step: the config, what a trainer
    would record of it and what check-config prints say the sampler, not rollouts: kept."""
    import yaml

    text = "selector: greso\nsampler: fewer_rollouts\nsampler_config: {screen: 2}\n"
    config = FrontierConfig(**yaml.safe_load(text))
    assert (config.rollouts, config.screen, config.loss_scale) == ("auto", 0, "batch")
    assert (config.dynamic_sampling, config.dynamic_sampling_config) == ("off", None)
    assert (
        config.sampler_spec().kind == "fewer_rollouts" and config.sampler_spec().config.screen == 2
    )
    report = check_trl_config({**yaml.safe_load(text), "num_generations": 4}, processes=1)
    assert report.sampler == ["fewer_rollouts (screen: 2) runs each generation step"]
    assert not any("checked as" in line for line in report.render("grpo.yaml").splitlines())


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"sampler": "fewer_rollouts", "screen": 4}, "screen"),
        ({"sampler": "passthrough", "rollouts": "kept"}, "rollouts"),
        ({"sampler": "dynamic_sampling", "dynamic_sampling": "adaptive"}, "dynamic_sampling"),
        ({"sampler": "fewer_rollouts", "loss_scale": "kept"}, "loss_scale"),
        ({"sampler": "fewer_rollouts", "dynamic_sampling": "fixed"}, "dynamic_sampling"),
    ],
)
def test_a_named_sampler_beside_another_shorthand_names_both_keys(
    options: dict[str, Any], key: str
) -> None:
    with pytest.raises(ValueError) as info:
        FrontierConfig(selector="greso", **options)
    text = str(info.value)
    assert "\n" not in text
    assert f"sampler: {options['sampler']} and {key}: " in text
    assert f"drop {key}, or drop sampler and sampler_config" in text


@pytest.mark.parametrize("kind", ["allocation", "pilot_commit", "cgrpo"])
def test_kinds_trls_step_does_not_run_are_refused_with_the_plans_text(kind: str) -> None:
    with pytest.raises(ValueError) as info:
        FrontierConfig(sampler=kind)
    with pytest.raises(ValueError) as planned:
        plan.check_sampler(TRL, kind)
    assert str(info.value) == str(planned.value)
    assert f"frontier train --sampler {kind}" in str(info.value)


def test_sampler_settings_are_checked_in_their_own_words() -> None:
    with pytest.raises(ValueError, match="did you mean 'max_rounds'"):
        FrontierConfig(sampler="dynamic_sampling", sampler_config={"max_roundz": 3})
    with pytest.raises(ValueError, match=r"^sampler_config: max_surplus 2 is not supported"):
        FrontierConfig(sampler="dynamic_sampling", sampler_config={"max_surplus": 2})
    with pytest.raises(ValueError, match="sampler_config is set but sampler is not"):
        FrontierConfig(sampler_config={"screen": 4})
    with pytest.raises(ValueError, match="sampler must be one of"):
        FrontierConfig(sampler="dapo")
    with pytest.raises(ValueError, match="does not walk the data"):
        FrontierConfig(selector="sec", sampler="fewer_rollouts")
    with pytest.raises(ValueError, match="sampler_config must be a mapping"):
        FrontierConfig(sampler="fewer_rollouts", sampler_config="[1, 2")


def test_the_command_line_gives_sampler_config_as_json() -> None:
    transformers = pytest.importorskip("transformers")
    parser = transformers.HfArgumentParser(FrontierConfig)
    (config,) = parser.parse_args_into_dataclasses(
        ["--selector", "greso", "--sampler", "fewer_rollouts", "--sampler_config",
         '{"screen": 2, "loss_scale": "kept"}']
    )  # fmt: skip
    assert config.sampler_config == {"screen": 2, "loss_scale": "kept"}
    assert (config.rollouts, config.screen, config.loss_scale) == ("auto", 0, "batch")  # as given
    spec = config.sampler_spec()
    assert (spec.kind, spec.config.skip, spec.config.screen, spec.config.loss_scale) == (
        "fewer_rollouts",
        True,
        2,
        "kept",
    )


def test_check_config_reports_the_named_sampler_and_checks_it_as_its_keys() -> None:
    values = {"selector": "greso", "sampler": "fewer_rollouts", "num_generations": 4}
    report = check_trl_config({**values, "sampler_config": {"screen": 2}}, processes=1)
    assert not report.problems, report.problems
    assert report.sampler == ["fewer_rollouts (screen: 2) runs each generation step"]
    assert report.plan == ["sampler fewer_rollouts, rollouts kept, ended by steps"]
    assert "  sampler: fewer_rollouts (screen: 2)" in report.render("grpo.yaml")
    screened = check_trl_config({**values, "sampler_config": {"screen": 4}}, processes=1)
    assert any("screen 4 must be below num_generations 4" in p for p in screened.problems)
    refused = check_trl_config({"sampler": "allocation"}, processes=1)
    assert any("TRL runs no step sampler 'allocation'" in p for p in refused.problems)
    assert check_trl_config({"selector": "greso"}, processes=1).sampler == []


@pytest.mark.parametrize(
    "values",
    [
        {"selector": "greso", "sampler": "fewer_rollouts", "sampler_config": {"screen": 2}},
        {"selector": "greso", "shadows": ["screen2"], "num_generations": 4},
    ],
)
def test_check_config_builds_the_files_frontier_config_and_its_spec_once(
    monkeypatch: pytest.MonkeyPatch, values: dict[str, Any]
) -> None:
    """A valid file's FrontierConfig (and so its checks and its step sampler's spec) is
    built once; the sampler line, the shadows' checks and notes all read that one."""
    from frontier_rft.sampling.spec import SamplerSpec

    built: list[dict[str, Any]] = []
    init = FrontierConfig.__post_init__

    def counted(self: FrontierConfig) -> None:
        built.append({k: getattr(self, k) for k in ("selector", "sampler", "shadows")})
        init(self)

    monkeypatch.setattr(FrontierConfig, "__post_init__", counted)
    read: list[SamplerSpec] = []
    spec_of = FrontierConfig.sampler_spec

    def reading(self: FrontierConfig) -> SamplerSpec:
        read.append(spec_of(self))
        return read[-1]

    monkeypatch.setattr(FrontierConfig, "sampler_spec", reading)
    report = check_trl_config({**values, "num_generations": 4}, processes=1)
    assert not report.problems, report.problems
    whole = {k: values.get(k) for k in ("selector", "sampler", "shadows")}
    assert built.count(whole) == 1  # beside it: the defaults and the pool's options alone
    assert read and all(spec is read[0] for spec in read)  # one spec, built once
