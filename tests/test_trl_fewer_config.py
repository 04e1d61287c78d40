"""Fewer rollouts' settings in the TRL adapter (rollouts: kept, screen, loss_scale), checked
without TRL or torch: each refusal is one line, in FrontierConfig and in `frontier
check-config trl`."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.fewer_config import (
    auto_rollouts_blockers,
    fewer_problems,
    normalisation,
)
from frontier_rft.sampling.fewer_rollouts import FewerRolloutsConfig
from helpers import check_config_apart
from helpers import trl_step_problems as step_problems


def test_the_settings_build_the_samplers_config() -> None:
    default = FrontierConfig()
    assert (default.selector, default.rollouts) == ("uniform", "auto")  # the trainer resolves auto
    assert default.fewer_rollouts_settings() is None  # unresolved auto reads as full
    assert FrontierConfig(rollouts="kept").fewer_rollouts_settings() == FewerRolloutsConfig()
    assert FrontierConfig(
        selector="prioritized", screen=2, loss_scale="kept"
    ).fewer_rollouts_settings() == FewerRolloutsConfig(skip=False, screen=2, loss_scale="kept")
    assert [normalisation(t) for t in ("dapo", "grpo", "dr_grpo", "cispo")] == [
        "token", "row", "row", "token"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "phrase"),
    [
        ({"rollouts": "kep"}, "rollouts must be auto"),
        ({"screen": -1}, "screen must be 0 (off)"),
        ({"screen": True}, "screen must be 0 (off)"),
        ({"screen": 1}, "one reward is never mixed"),
        ({"loss_scale": "mean"}, "loss_scale must be one of batch, kept"),
        ({"rollouts": "kept", "selector": "bots"}, "selector 'bots' does not walk the data"),
        ({"screen": 2, "dynamic_sampling": "fixed"}, "they do not combine"),
    ],
)
def test_each_mistake_is_one_line_naming_it(fields: dict, phrase: str) -> None:
    with pytest.raises(ValueError) as info:
        FrontierConfig(**fields)
    assert phrase in str(info.value) and "\n" not in str(info.value)


def test_rollouts_auto_names_each_setting_that_keeps_it_full() -> None:
    def blockers(values: dict, trainer: str = "grpo", **kw: object) -> list[str]:
        given: dict = {"dynamic_sampling": "off", "shadows": None, "columns": ["prompt"]}
        return auto_rollouts_blockers(values, trainer, **{**given, **kw})  # type: ignore[arg-type]

    assert blockers({}) == [] and blockers({"loss_type": "grpo"}) == []
    assert blockers({}, dynamic_sampling="adaptive") == [
        "dynamic_sampling: adaptive is a step sampler of its own"
    ]
    assert blockers({}, shadows=["greso"]) == ["shadows follow uniform's whole batches"]
    assert "an image dataset" in blockers({}, columns=["prompt", "images"])[0]
    assert "loss_type: bnpo" in blockers({"loss_type": "bnpo"})[0]
    assert "trainer 'rloo' is not supported" in blockers({}, "rloo")[0]
    assert len(blockers({"scale_rewards": "batch", "loss_type": "bnpo"}, shadows=["skip"])) == 3
    assert step_problems({"rollouts": "auto", "loss_type": "bnpo"}) == []  # not refused


def test_trl_settings_fewer_rollouts_cannot_run_with() -> None:
    assert fewer_problems({}, "grpo", "full", 0) == []  # off
    assert fewer_problems({}, "grpo", "kept", 0) == []  # TRL's defaults: dapo, 8 generations
    (bnpo,) = fewer_problems({"loss_type": "bnpo"}, "grpo", "kept", 0)
    assert "loss_type: bnpo" in bnpo and "use loss_type dapo" in bnpo
    (screen,) = fewer_problems({}, "grpo", "full", 8)
    assert "screen 8 must be below num_generations 8" in screen
    (rloo,) = fewer_problems({}, "rloo", "kept", 0)
    assert "rollouts: kept runs inside TRL's GRPOTrainer" in rloo
    (adaptive,) = fewer_problems({"use_adaptive_entropy": True}, "grpo", "kept", 0)
    assert "rollouts: kept with use_adaptive_entropy" in adaptive and "\n" not in adaptive
    assert fewer_problems({"use_adaptive_entropy": True}, "grpo", "full", 0) == []  # off
    assert step_problems({"screen": 4, "num_generations": 4, "loss_type": "bnpo"}) != []
    assert step_problems({"rollouts": "nope", "loss_type": "bnpo"}) == []  # named elsewhere


def test_check_config_names_every_mistake_without_torch(tmp_path: Path) -> None:
    config = tmp_path / "grpo.yaml"
    config.write_text(
        "selector: prioritized\nrollouts: kept\nloss_type: bnpo\nnum_generations: 4\nscreen: 4\n"
    )
    out = check_config_apart("trl", config, 1)
    found = [line for line in out.splitlines() if line.startswith("  - ")]
    for phrase in (
        "selector 'prioritized' does not walk the data",
        "loss_type: bnpo",
        "screen 4 must be below num_generations 4",
    ):
        assert sum(phrase in line for line in found) == 1, (phrase, out)
    config.write_text("rollouts: kept\nscreen: 2\n")
    assert "the frontier-rft settings are valid" in check_config_apart("trl", config, 0)


def test_ci_installs_a_trl_the_step_samplers_are_tested_with() -> None:
    """rollouts: auto keeps full batches on a TRL outside TESTED_TRL; the tests that expect
    kept run on the TRL constraints.txt pins, which must be one of them."""
    from frontier_rft.integrations.trl.dynamic_config import TESTED_TRL

    text = (Path(__file__).parents[1] / "constraints.txt").read_text()
    pins = [line.split("==")[1].strip() for line in text.splitlines() if line.startswith("trl==")]
    assert len(pins) == 1 and pins[0] in TESTED_TRL
