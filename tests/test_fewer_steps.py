"""fewer_steps: full batches of the prompts a selector keeps, the run ended by its passes over
the prompts. The passes a walk counts, by hand on planted pools; the reference trainer's end,
checkpoint and exact resume; refusals by name."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from frontier_rft import TaskPool
from frontier_rft.core.feedback import Feedback
from frontier_rft.selectors import SELECTORS
from frontier_rft.selectors.scalerl import ScaleRLConfig, ScaleRLSelector
from helpers import build, drive

POOL, BATCH = 12, 3


def _retiring(order: str) -> ScaleRLSelector:
    """ScaleRL's rule is deterministic: a prompt whose pass rate reached the cap is passed over
    from the second pass on. In pool order the walk's order is known too."""
    return ScaleRLSelector(TaskPool(num_tasks=POOL), ScaleRLConfig(order=order), seed=0)


def _steps_to(selector: ScaleRLSelector, passes: float, solved: set[int]) -> list[float]:
    """Full batches until the walk has made `passes` passes (the trainer's end rule), every
    prompt in `solved` answered right, the others wrong; the passes walked after each step."""
    walked = []
    step = 0
    while selector.passes_walked() < passes:
        ids = selector.select(BATCH)
        rewards = np.repeat([1.0 if int(i) in solved else 0.0 for i in ids], 4)
        selector.update(Feedback(task_ids=np.repeat(ids, 4), rewards=rewards, step=step))
        step += 1
        walked.append(selector.passes_walked())
    return walked


def test_passes_counted_by_hand_on_a_planted_pool() -> None:
    """Prompts 0-5 solved in the first pass are passed over in the second, which then takes
    6-8 and 9-11: two passes in 4 + 2 = 6 steps, uniform's 8."""
    walked = _steps_to(_retiring("pool"), 2.0, solved=set(range(6)))
    assert walked == [0.25, 0.5, 0.75, 1.0, 1.75, 2.0]


def test_a_pass_whose_tail_is_passed_over_ends_one_step_into_the_next() -> None:
    """Prompts 6-11 solved: the second pass takes 0-2 and 3-5, and its passed-over tail is
    walked only by the next step, which takes 0-2 of the third pass (the walk stops after its
    last taken prompt): 7 steps, the last one ending 0.25 into the third pass."""
    walked = _steps_to(_retiring("pool"), 2.0, solved=set(range(6, 12)))
    assert walked == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.25]


def test_uniform_walks_a_batch_a_step() -> None:
    uniform = SELECTORS["uniform"](TaskPool(num_tasks=POOL), seed=3)
    for step in range(1, 9):
        uniform.select(BATCH)
        assert uniform.passes_walked() == pytest.approx(step * BATCH / POOL)


def test_every_walking_selector_counts_its_passes(selector_name: str, pool: TaskPool) -> None:
    """Each selector that walks the data says how far its walk has come: at least uniform's
    share after as many full batches (passing over only adds to it), never less than before."""
    sel = build(selector_name, pool)
    if not sel.walks_windows():
        pytest.skip(f"{selector_name} does not walk the data")
    before = 0.0
    for step in range(1, 6):
        drive(sel, 1, batch=6, start_step=step)
        now = sel.passes_walked()
        assert now >= max(before, step * 6 / pool.num_tasks) - 1e-9
        before = now


def test_a_selector_that_does_not_walk_the_data_has_no_passes() -> None:
    prioritized = SELECTORS["prioritized"](TaskPool(num_tasks=POOL), seed=0)
    with pytest.raises(ValueError, match="does not walk the data"):
        prioritized.passes_walked()


# ---------------------------------------------------------------- the reference trainer

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.training.config import TrainConfig, train_config  # noqa: E402
from frontier_rft.training.grpo import Trainer  # noqa: E402
from test_training_model import TEST_TRAIN  # noqa: E402

BASE = dataclasses.replace(
    TEST_TRAIN, train_size=POOL, steps=12, eval_every=0, checkpoint_every=100, fewer_steps=True
)
"""Twelve prompts of batch 3: 12 of uniform's steps are three passes."""


def _passes(run: Path) -> list[float]:
    return _column(run, "train/passes_walked")


@pytest.mark.integration
def test_uniform_ends_at_its_steps(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(BASE, selector="uniform")
    trainer = Trainer(config, sft_dir, tmp_path / "u", log=lambda _: None)
    trainer.train()
    assert trainer.step_count == 12
    assert _passes(tmp_path / "u") == pytest.approx([s * 0.25 for s in range(1, 13)])


@pytest.mark.integration
def test_a_skip_ends_when_its_passes_are_walked(sft_dir: Path, tmp_path: Path) -> None:
    """Each step a full batch; the run ends with the step that completes three passes."""
    config = dataclasses.replace(BASE, selector="greso")
    lines: list[str] = []
    trainer = Trainer(config, sft_dir, tmp_path / "g", log=lines.append)
    trainer.train()
    walked = _passes(tmp_path / "g")
    assert len(walked) == trainer.step_count <= 12
    assert walked[-1] >= 3.0 > walked[-2]
    assert any(line.startswith("fewer_steps: ") for line in lines)
    assert (tmp_path / "g" / "checkpoints" / f"step_{trainer.step_count:06d}").is_dir()
    with pytest.raises(ValueError, match="already finished"):  # the end is the end
        Trainer(config, sft_dir, tmp_path / "g", resume=True, log=lambda _: None)


@pytest.mark.integration
def test_resume_mid_pass_is_exact(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(BASE, selector="skip", checkpoint_every=5)
    straight = Trainer(config, sft_dir, tmp_path / "a", log=lambda _: None)
    straight.train()
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    first.train(steps=5)  # mid-pass: 5 x 3 of 12 prompts, and a checkpoint
    del first
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    resumed.train()
    assert resumed.step_count == straight.step_count
    assert _passes(tmp_path / "b") == _passes(tmp_path / "a")
    key = "train/reward_mean"  # each step's rollouts: the same prompts, the same policy
    assert _column(tmp_path / "b", key) == _column(tmp_path / "a", key)


def _column(run: Path, key: str) -> list[float]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [r[key] for r in rows if key in r]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"fewer_steps": True, "selector": "bots"}, "does not walk the data"),
        ({"fewer_steps": True, "selector": "skip", "rollouts": "kept"}, "drop --rollouts kept"),
        ({"fewer_steps": True, "dynamic_sampling": True}, "shapes the steps itself"),
        ({"fewer_steps": True, "rescue": 4}, "rescue 4 adds rollouts .*set rescue 0"),
    ],
)
def test_settings_are_refused_by_name(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        train_config(fields)


def test_passes_are_uniforms() -> None:
    assert TrainConfig(steps=64, batch_size=16, train_size=512).passes() == 2.0


def test_verl_refuses_it_in_one_line_saying_where_it_runs() -> None:
    """verl (and SkyRL, which reads verl's config) set their steps and learning-rate schedule
    from the dataloader before training: fewer_steps is refused there, naming where it runs;
    TRL takes it."""
    from frontier_rft.integrations.trl.fewer_config import settings_problems
    from frontier_rft.integrations.verl.config import VerlSamplerConfig

    assert settings_problems("fewer_steps", 0, "batch", "skip", "off") == []
    with pytest.raises(ValueError) as verl:
        VerlSamplerConfig(batch_size=4, rollouts="fewer_steps")
    line = str(verl.value)
    assert "\n" not in line
    assert "runs in the reference trainer and TRL only" in line
    # the reason is verl's own loop: its last checkpoint and final validation wait for the
    # total_training_steps fixed before training
    assert "verl fixes total_training_steps" in line
    assert "saves its last checkpoint and runs its final validation only at that step" in line
    from frontier_rft.integrations.plan import rollouts_refusal
    from frontier_rft.integrations.skyrl.config import SKYRL

    # SkyRL's reason is its own loop (issue 83, item 7): epochs x its data loader, nothing
    # that ends the run early, a schedule and last evaluation at total_training_steps; its
    # final checkpoint is saved after the loop, unlike verl's
    skyrl = rollouts_refusal(SKYRL, "fewer_steps")
    assert "SkyRL walks its data loader trainer.epochs times" in skyrl
    assert "a shortened epoch only starts the next one" in skyrl
    assert "total_training_steps = len(train_dataloader) x trainer.epochs" in skyrl
    assert "its final checkpoint is saved after the loop either way" in skyrl
    assert "validation" not in skyrl and "saves its last checkpoint" not in skyrl


def test_every_skyrl_path_refuses_it_in_skyrls_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SkyRL's settings, its `frontier check-config skyrl` and its entrypoint `python -m
    frontier_rft.integrations.skyrl.main` each refuse `rollouts: fewer_steps` with SkyRL's
    reason, never verl's (issue 91, item 7: SkyRL read verl's config class and so its words)."""
    from frontier_rft.cli.main import main
    from frontier_rft.integrations.skyrl import main as skyrl_main
    from frontier_rft.integrations.skyrl.config import SKYRL_FIELDS, skyrl_sampler_config

    def skyrls(text: str) -> None:
        assert "SkyRL walks its data loader trainer.epochs times" in text, text
        assert "verl fixes total_training_steps" not in text

    with pytest.raises(ValueError) as refused:
        skyrl_sampler_config({"rollouts": "fewer_steps"}, 8)
    skyrls(str(refused.value))
    path = tmp_path / "skyrl.yaml"
    path.write_text("trainer:\n  train_batch_size: 8\nfrontier:\n  rollouts: fewer_steps\n")
    assert main(["check-config", "skyrl", str(path)]) == 1
    skyrls(capsys.readouterr().out)
    args = ["frontier.rollouts=fewer_steps", "trainer.train_batch_size=8"]
    assert skyrl_main.main(args) == 2  # refused before SkyRL is imported
    skyrls(capsys.readouterr().err)
    assert skyrl_main.main(["frontier.rollouts=half", "trainer.train_batch_size=8"]) == 2
    assert "trainer.train_batch_size prompts per batch) or kept" in capsys.readouterr().err
    assert "trainer" not in SKYRL_FIELDS  # whose words it uses is a class fact, not a setting


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ([], "the run ended once they have walked num_train_epochs=2 passes"),
        (["max_steps=40"], "max_steps 40 sets the run's length: it keeps its 40 steps"),
    ],
)
def test_check_config_says_what_fewer_steps_will_do_in_trl(
    extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from frontier_rft.cli.main import main

    example = Path(__file__).resolve().parents[1] / "examples" / "trl" / "grpo_frontier.yaml"
    overrides = ["selector=skip", "rollouts=fewer_steps", "num_train_epochs=2", "max_steps=-1"]
    main(["check-config", "trl", str(example), *overrides, *extra])
    out = capsys.readouterr().out
    assert "  rollouts: fewer_steps" in out and says in out, out
