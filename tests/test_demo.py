"""`frontier demo` shows the product: the adapters' default on a 2-epoch run and what the rule
it follows as a shadow (skip with kept) saves there, simulated and labelled so, and closes
with what `rollouts: auto` decides, from the code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_rft.bench.simulation import demo
from frontier_rft.cli.main import build_parser, main
from frontier_rft.integrations.plan import planned_epochs, resolve_auto
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.selectors import SELECTORS
from frontier_rft.simulation.scenario import SCENARIOS

TINY = ["--seeds", "2", "--batch", "8", "--rollouts", "4", "--jobs", "1"]


def test_the_demo_runs_the_default_on_a_run_of_two_epochs() -> None:
    """Issue 63: it ran 11 epochs (360 steps of 512 prompts), where auto keeps full batches."""
    args = build_parser().parse_args(["demo"])
    pool = SCENARIOS[args.scenario].num_tasks
    steps = round(demo.DEMO_EPOCHS * pool / args.batch)  # what the demo runs by default
    epochs = planned_epochs(
        demo.DEMO_EPOCHS + 1, steps=steps, prompts_per_step=args.batch, rows=pool
    )
    assert epochs == demo.DEMO_EPOCHS == 2
    choice = demo.default_choice(epochs)
    config = FrontierConfig()
    assert (choice.selector, choice.mode) == (
        config.selector,
        resolve_auto(SELECTORS[config.selector], [], epochs)[0],
    )
    assert (choice.selector, choice.mode) == ("uniform", "full")  # issue 70: uniform's bill
    labels = {e.label: e for e in demo.demo_entries(choice)}
    assert set(SELECTORS) <= set(labels)  # every selector beside it, full batches
    assert labels[choice.label].sampler == SamplerSpec()
    kept = SamplerSpec(FewerRollouts.kind, FewerRolloutsConfig(skip=True))
    assert labels[f"{demo.OPT_IN}-kept"].sampler == kept  # the opt-in


@pytest.mark.parametrize("default", ["uniform", "skip"])
def test_the_closing_says_what_auto_decides(monkeypatch: pytest.MonkeyPatch, default: str) -> None:
    """The closing is worded from auto's decision and the default's selector: were the
    default skip, measured free of loss with kept up to 2 epochs (planted), the 2-epoch run
    would be kept, and the demo would say so and run it so, with no shadow to speak of."""
    if default == "skip":
        monkeypatch.setattr(demo, "FrontierConfig", lambda: FrontierConfig(selector="skip"))
        monkeypatch.setattr(SELECTORS["skip"], "kept_level_epochs", 2.0)
    cls = SELECTORS[default]
    choice = demo.default_choice(2)
    mode = resolve_auto(cls, [], 2.0)[0]
    assert choice.mode == mode == ("kept" if default == "skip" else "full")
    text = demo.closing(choice)
    assert f"On this run of 2 epochs `auto` is {mode}" in text
    assert "not this simulator" in text and "docs/ab_test.md" in text
    other = "full" if mode == "kept" else "kept"
    assert f"`auto` is {other}:" not in text
    assert ("follows skip as a shadow" in text) == (default == "uniform")
    assert "It is not the default because, with rollouts: kept it lost held-out score" in text
    kept = [e for e in demo.demo_entries(choice) if e.sampler.kind == FewerRollouts.kind]
    assert [e.label for e in kept] == [f"{demo.OPT_IN}-kept"]


def test_the_demo_prints_what_the_default_saves_labelled_simulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--steps", "6", *TINY, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"frontier demo ({demo.SIMULATED})")
    table = out.split(f"\n{demo.SIMULATED}: what skip with rollouts: kept saves on a run of ")[1]
    assert "| rollouts generated |" in table and "| generated tokens" in table
    assert "the simulator gives every completion one length" in table
    assert "final held-out score (paired difference)" in table
    last = out.strip().splitlines()[-1]
    assert last == demo.closing(demo.default_choice(6 * 8 / SCENARIOS["large-pool"].num_tasks))
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["advice"] == last and results["settings"]["steps"] == 6
    assert "ETR ↑" not in out and "ETR = effective task ratio" in out


def test_the_committed_demo_output_is_todays() -> None:
    """benchmarks/results/demo.md is `frontier demo`'s output: its command at the top, and
    its closing paragraph the one the code words today (issue 63: it quoted 11 epochs)."""
    page = (Path(__file__).resolve().parents[1] / "benchmarks/results/demo.md").read_text()
    assert "Command: `frontier demo`" in page.splitlines()[2]
    text = page.split("```text\n", 1)[1].split("\n```", 1)[0]
    assert text.splitlines()[-1] == demo.closing(demo.default_choice(demo.DEMO_EPOCHS))
    assert text.startswith(f"frontier demo ({demo.SIMULATED})")
    assert f"\n{demo.SIMULATED}: what skip with rollouts: kept saves on a run of 2 epochs" in text
