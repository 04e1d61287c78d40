"""The TRL adapter resolves a run's step once (integrations/trl/resolve.py): the trainer and
`frontier check-config trl` ask the same function, so the plan a YAML file's check prints is
the plan its run builds; the trainer's constructor reads its arguments into that plan and
builds from it."""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.config_check import check_trl_config
from frontier_rft.integrations.trl.resolve import TrlRun, resolve_step
from frontier_rft.integrations.trl.seam_check import (
    installed_trl,
    seam_problem,
    source_seam_problem,
)
from frontier_rft.selectors.registry import SELECTORS

TRL_DIR = Path(__file__).resolve().parents[1] / "src" / "frontier_rft" / "integrations" / "trl"

FILES: list[dict[str, Any]] = [
    {"selector": "uniform"},
    {"selector": "scalerl", "num_train_epochs": 1, "use_vllm": False},
    {"selector": "scalerl", "num_train_epochs": 1, "scale_rewards": "batch"},
    {"selector": "skip", "num_train_epochs": 1, "trainer": "rloo"},
    {"selector": "greso", "dynamic_sampling": "fixed", "num_generations": 4},
    {"selector": "greso", "rollouts": "kept", "screen": 2, "num_generations": 4},
    {"selector": "greso", "sampler": "fewer_rollouts", "sampler_config": {"screen": 2}},
    {"selector": "skip", "rollouts": "fewer_steps", "num_train_epochs": 2},
    {"selector": "skip", "rollouts": "fewer_steps", "max_steps": 4},
]
"""YAML files' values: auto's choices (full, kept, full for a setting or the trainer), a step
set by the shorthand keys or by `sampler:`, and runs ended by their passes or their steps."""


@pytest.mark.parametrize("values", FILES)
def test_check_config_prints_the_plan_the_resolution_returns(values: dict[str, Any]) -> None:
    frontier = {k: v for k, v in values.items() if k in FrontierConfig.__dataclass_fields__}
    run = TrlRun(
        settings=values,
        trainer=values.get("trainer", "grpo"),
        processes=1,
        seam=source_seam_problem,
        version=installed_trl(),
    )
    resolution = resolve_step(FrontierConfig(**frontier), run)
    report = check_trl_config(values, processes=1)
    assert resolution.plan is not None and not report.problems, report.problems
    # the plan line names the step; why it is so (auto's ~1,500-character paragraph, or how a
    # fewer_steps run ends) is said once, on the auto or rollouts line (issue 91, item 9)
    assert report.plan == [replace(resolution.plan, reason="").words()]
    if resolution.plan.reason:
        assert report.render("grpo.yaml").count(resolution.plan.reason) == 1
    auto = [line for line in report.choices if line.startswith("rollouts will be")]
    assert bool(auto) == resolution.chosen  # an auto line only where auto chose
    if resolution.chosen:
        assert f"rollouts will be {resolution.plan.rollouts}" in auto[0]
        assert resolution.plan.reason in auto[0]


def test_the_resolution_says_why_and_how_the_run_ends() -> None:
    run = TrlRun(settings={"num_train_epochs": 1, "scale_rewards": "batch"}, version=None)
    plan = resolve_step(FrontierConfig(selector="scalerl"), run).check()
    assert (plan.rollouts, plan.ends_by) == ("full", "steps")
    assert "scale_rewards: batch" in plan.reason and plan.reason in plan.words()
    passes = resolve_step(FrontierConfig(selector="skip", rollouts="fewer_steps"), TrlRun())
    assert passes.check().ends_by == "passes" and not passes.chosen
    steps = TrlRun(settings={"max_steps": 4})
    assert resolve_step(FrontierConfig(selector="skip", rollouts="fewer_steps"), steps).check(
    ).ends_by == "steps"  # fmt: skip


def test_the_seam_and_the_trl_version_are_part_of_the_resolution() -> None:
    """A kept step auto would choose becomes full, said why, where the trainer class lacks the
    seam a kept step wraps, or the TRL is not a tested one; a hand-set one is refused."""
    settings = {"num_train_epochs": 1, "use_vllm": False}
    kept = resolve_step(FrontierConfig(selector="scalerl"), TrlRun(settings=settings)).check()
    assert kept.rollouts == "kept"

    class NoSeam:  # a trainer class without _generate_and_score_completions
        pass

    seamless = TrlRun(settings=settings, seam=partial(seam_problem, NoSeam))
    chosen = resolve_step(FrontierConfig(selector="scalerl"), seamless)
    assert chosen.warn and chosen.check().rollouts == "full"
    assert "kept cannot wrap this TRL" in chosen.check().reason
    old = resolve_step(FrontierConfig(selector="scalerl"), TrlRun(settings=settings, version="0.1"))
    assert old.check().rollouts == "full" and "not 0.1" in old.check().reason
    refused = resolve_step(FrontierConfig(selector="scalerl", rollouts="kept"), seamless)
    assert refused.plan is None and len(refused.problems) == 1
    with pytest.raises(ValueError, match="_generate_and_score_completions"):
        refused.check()


def test_a_ready_selector_is_resolved_by_its_class() -> None:
    """A ready selector that does not walk the data: refused for kept and fewer_steps (the
    names FrontierConfig checks itself), one line each."""
    cls = SELECTORS["prioritized"]
    for rollouts in ("kept", "fewer_steps"):
        found = resolve_step(FrontierConfig(rollouts=rollouts), TrlRun(), cls)
        assert found.plan is None and len(found.problems) == 1
        assert "'prioritized'" in found.problems[0]


def test_images_are_the_datas_problem_of_a_driven_step() -> None:
    run = TrlRun(columns=("prompt", "image"))
    found = resolve_step(FrontierConfig(dynamic_sampling="fixed"), run)
    assert found.problems == () and len(found.data_problems) == 1
    assert "image datasets" in found.data_problems[0]


def test_the_trainers_constructor_reads_arguments_into_a_plan_then_builds() -> None:
    """Structural: `FrontierTrainerMixin.__init__` stays a short read of its arguments into a
    plan, TRL's constructor and the build from the plan (at most 60 lines), and trainer.py
    stays under 800 lines, its other concerns in modules named for them."""
    source = (TRL_DIR / "trainer.py").read_text()
    tree = ast.parse(source)
    mixin = next(
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "FrontierTrainerMixin"
    )
    init = next(n for n in mixin.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    assert init.end_lineno is not None and init.end_lineno - init.lineno + 1 <= 60
    assert len(source.splitlines()) < 800
    calls = {
        n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
        for n in ast.walk(init)
        if isinstance(n, ast.Call)
    }
    assert "_frontier_plan" in calls  # one resolution, before super().__init__
    for name in ("auto_rollouts", "fewer_problems", "trl_problems", "check_wrappable"):
        assert name not in source, f"trainer.py decides the step again ({name})"


def test_check_config_reads_the_seam_from_trls_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without importing TRL, check-config checks the seam a kept step wraps in TRL's own
    GRPOTrainer (its source): the installed, tested TRL has it; one whose `_prepare_inputs`
    no longer calls `_generate_and_score_completions` turns auto's kept into full, said."""
    pytest.importorskip("trl", reason="reads the installed TRL's source")
    from frontier_rft.integrations.trl import seam_check

    assert source_seam_problem("fewer_rollouts", 2) is None
    assert source_seam_problem("dynamic_sampling") is None
    moved = tmp_path / "grpo_trainer.py"
    moved.write_text(
        "class GRPOTrainer(Base):\n"
        "    def _prepare_inputs(self, inputs):\n"
        "        return self._generate_batch(inputs)\n"
        "    def _generate_and_score_completions(self, inputs):\n"
        "        return inputs\n"
    )
    monkeypatch.setattr(seam_check, "module_file", lambda name: moved)
    found = source_seam_problem("fewer_rollouts")
    assert found is not None and "no longer calls _generate_and_score_completions" in found
    values = {"selector": "scalerl", "num_train_epochs": 1, "use_vllm": False}
    report = check_trl_config(values, processes=1)
    assert report.plan == ["sampler passthrough, ended by steps"]
    assert (
        "rollouts will be full (uniform's bill) because kept cannot wrap this TRL"
        in (report.choices[0])
    )
