"""Shadows in the TRL adapter's settings (FrontierConfig.shadows), checked without TRL or
torch: refused by the rules the reference trainer's TrainConfig uses, in FrontierConfig and in
`frontier check-config trl`."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.cli.main import main
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.shadow.rule import ShadowConfig


def test_rules_are_parsed_and_a_single_rule_is_a_list() -> None:
    config = FrontierConfig(shadows=["greso", "screen4", "greso+screen4"])
    assert [c.name for c in config.shadow_configs(8)] == ["greso", "screen4", "greso+screen4"]
    assert FrontierConfig(shadows="screen2").shadow_configs() == (ShadowConfig(screen=2),)  # type: ignore[arg-type]
    # Unset: skip beside uniform's whole batches (the default), none beside another
    # selector, a partial step or an explicit []; the trainer's selector decides when passed.
    assert FrontierConfig().shadow_configs() == (ShadowConfig(selector="skip"),)
    assert FrontierConfig(selector="greso").shadow_configs() == ()
    assert FrontierConfig().shadow_configs(selector="greso") == ()
    assert FrontierConfig(shadows=[]).shadow_configs() == ()
    assert FrontierConfig(dynamic_sampling="fixed").shadow_configs() == ()
    assert FrontierConfig(screen=2).shadow_configs() == ()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"shadows": ["bots"]}, "re-draws from the whole pool"),
        ({"shadows": ["gerso"]}, "unknown selector 'gerso'"),
        ({"shadows": ["greso", "greso"]}, "names a rule twice"),
        ({"shadows": ["screen1"]}, "k >= 2 rollouts"),
        ({"shadows": ["greso"], "screen": 2}, "which screen does not roll out"),
        ({"shadows": ["greso"], "rollouts": "kept"}, "rollouts: kept does not roll out"),
        ({"shadows": ["greso"], "dynamic_sampling": "fixed"}, "dynamic_sampling does not"),
        ({"shadows": [3]}, "shadows must be a list of rules"),
        ({"shadows": {"greso": 1}}, "shadows must be a list of rules"),
    ],
)
def test_shadow_settings_are_refused_by_name(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FrontierConfig(**fields)


def test_a_screen_must_be_below_num_generations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match="needs num_generations above 4 \\(now 4\\)"):
        FrontierConfig(shadows=["screen4"]).shadow_configs(4)
    path = tmp_path / "grpo.yaml"
    path.write_text("output_dir: out\nnum_generations: 4\nshadows: [greso, screen4]\n")
    assert main(["check-config", "trl", str(path)]) != 0
    out = capsys.readouterr()
    assert "needs num_generations above 4" in out.out + out.err
    path.write_text("output_dir: out\nnum_generations: 8\nshadows: [greso, screen4]\n")
    assert main(["check-config", "trl", str(path)]) == 0
