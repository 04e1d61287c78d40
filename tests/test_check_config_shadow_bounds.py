"""check-config says when a shadow holds rewards to a range the run's selector does not: such a
step is refused at run time (nothing moves, issue 63's red team), which a config cannot show,
so the config names reward_range before the run instead of calling itself plainly valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import check_config

REPO = Path(__file__).resolve().parents[1]
VERL_SEC = str(REPO / "examples" / "verl" / "sec.yaml")
KWARGS = "trainer.v1.sampler.sampler_kwargs"


def test_verl_a_bounded_shadow_beside_an_unbounded_selector_names_reward_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = check_config(capsys, "verl", VERL_SEC, f"+{KWARGS}.shadows=[screen2,greso]")
    assert code == 0, out
    line = next(x for x in out.splitlines() if "shadow 'greso'" in x)
    assert "[0, 1]" in line and "selector 'sec' takes any" in line, line
    assert f"set {KWARGS}.reward_range" in line, line


@pytest.mark.parametrize(
    "extra",
    [
        [f"+{KWARGS}.reward_range=[0,2]"],  # the run maps its rewards itself
        [f"+{KWARGS}.shadows=[screen2]"],  # a screen reads any reward
    ],
)
def test_verl_no_note_when_nothing_can_be_refused(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["verl", VERL_SEC, *extra]
    if not any("shadows" in x for x in extra):
        argv.append(f"+{KWARGS}.shadows=[greso]")
    code, out = check_config(capsys, *argv)
    assert code == 0 and "reads rewards in" not in out, out


def test_skyrl_and_trl_say_it_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sky = tmp_path / "s.yaml"
    sky.write_text(
        "frontier:\n  selector: sec\n  shadows: [greso]\ngenerator:\n  n_samples_per_prompt: 8\n"
    )
    _, out = check_config(capsys, "skyrl", str(sky))
    assert "shadow 'greso' reads rewards in [0, 1] and selector 'sec' takes any" in out, out
    trl = tmp_path / "t.yaml"
    trl.write_text(
        (REPO / "examples" / "trl" / "grpo_frontier.yaml").read_text()
        + "\nselector: sec\nshadows: [greso]\nrollouts: full\n"
    )
    _, out = check_config(capsys, "trl", str(trl))
    assert "shadow 'greso' reads rewards in [0, 1] and selector 'sec' takes any" in out, out
    assert "set reward_range" in out, out
