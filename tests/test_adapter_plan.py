"""verl's and SkyRL's step in every door's vocabulary (`integrations.plan.adapter_plan`): the
plan their `rollouts: auto` resolves to is the one their trainers take and their
check-configs print, reason included."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from frontier_rft.integrations.plan import adapter_plan
from frontier_rft.integrations.skyrl.config import resolved_plan as skyrl_resolved_plan
from frontier_rft.integrations.skyrl.config import skyrl_step_plan
from frontier_rft.integrations.skyrl.preflight import check_skyrl_config
from frontier_rft.integrations.verl.auto import resolved_plan, verl_step_plan
from frontier_rft.integrations.verl.config import VerlSamplerConfig
from frontier_rft.integrations.verl.preflight import check_verl_config
from frontier_rft.sampling.fewer_rollouts import FewerRollouts
from frontier_rft.sampling.step_plan import StepPlan, StepRows
from frontier_rft.selectors.registry import SELECTORS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "verl"


def test_kept_is_the_skip_in_uniforms_window_and_full_plain_grpo() -> None:
    kept = adapter_plan("kept", "kept", "why")
    assert kept.sampler.kind == FewerRollouts.kind and kept.sampler.config.skip
    assert kept.sampler.config.loss_scale == "kept" and kept.rollouts == "kept"
    assert kept.reason == "why" and kept.ends_by == "steps"
    assert adapter_plan("full") == StepPlan()
    with pytest.raises(ValueError, match="resolve auto first"):
        adapter_plan("auto")


@pytest.mark.parametrize("selector", ["uniform", "greso", "skip", "bots"])
def test_verl_resolves_auto_through_the_plan(selector: str) -> None:
    sampler = VerlSamplerConfig(batch_size=8, selector=selector)
    plan, _ = verl_step_plan(sampler, {}, selector=SELECTORS[selector], legacy=True)
    assert resolved_plan(sampler, {}, selector=SELECTORS[selector], legacy=True) == plan
    assert plan.reason and plan.rows == StepRows(8)  # verl's n: not in an empty config
    hand = VerlSamplerConfig(batch_size=8, selector=selector, rollouts="full")
    config = {"actor_rollout_ref": {"rollout": {"n": 4}}}
    assert verl_step_plan(hand, config, selector=SELECTORS[selector], legacy=True) == (
        StepPlan(rows=StepRows(8, 4)),
        False,
    )


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
@pytest.mark.parametrize("fully_async", [False, True])
def test_skyrl_resolves_auto_through_the_plan(fully_async: bool) -> None:
    sampler = VerlSamplerConfig(batch_size=8, selector="skip")
    plan, warn = skyrl_step_plan(sampler, fully_async=fully_async, dynamic_sampling=None)
    resolved = skyrl_resolved_plan(sampler, fully_async=fully_async, dynamic_sampling=None)
    assert resolved == plan and plan.rollouts == ("full" if fully_async else "kept")
    assert warn == fully_async and plan.reason


def test_check_config_verl_prints_the_plan_the_buffer_takes() -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        report = check_verl_config(yaml.safe_load(path.read_text()))
        assert len(report.plan) == 1, path
        line = report.plan[0]
        if report.choices:  # auto: the plan's reason is the auto line's why
            assert line.split(" (", 1)[1].rstrip(")") in report.choices[0], path
    kept = check_verl_config(yaml.safe_load((EXAMPLES / "skip.yaml").read_text())).plan
    assert kept == ["sampler fewer_rollouts, rollouts kept, ended by steps"]


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_check_config_skyrl_prints_the_plan_the_entrypoint_takes() -> None:
    auto = check_skyrl_config({"frontier": {"selector": "skip"}})
    assert auto.plan and auto.plan[0].startswith("sampler fewer_rollouts, rollouts kept")
    assert auto.plan[0].split(" (", 1)[1].rstrip(")") in auto.choices[0]
    full = check_skyrl_config({"frontier": {"selector": "skip", "rollouts": "full"}})
    assert full.plan == ["sampler passthrough, ended by steps"] and not full.choices
