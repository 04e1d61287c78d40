"""An evaluation grid on a cost axis (training.eval_grid): the points, the state that holds at
each, the trainer evaluating exactly those states without changing what it trains, and resume."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from frontier_rft.training.config import TrainConfig
from frontier_rft.training.eval_grid import (
    EvalClock,
    GridLine,
    cumulative,
    parse_grid,
    serving_steps,
    step_cost,
)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("h20:3", "did you mean 'h200'"),
        ("passes", "write AXIS:SPACING"),
        ("passes:0", "finite number > 0"),
        ("passes:nan", "finite number > 0"),
        ("rollouts:-4", "finite number > 0"),
    ],
)
def test_a_bad_grid_line_is_named(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        GridLine.parse(text)
    with pytest.raises(ValueError, match=words):
        TrainConfig(eval_grid=(text,))


def test_an_axis_named_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="names an axis twice"):
        parse_grid(["passes:0.25", "passes:0.5"])
    assert parse_grid(["h200:3.5", "passes:0.25"]) == (
        GridLine("h200", 3.5),
        GridLine("passes", 0.25),
    )


def test_the_state_at_a_point_is_the_last_step_ended_at_or_before_it() -> None:
    # spent after each step: 0.25 a step; points every 0.3 -> 0, 0.3, 0.6 (0.9 > 0.75: past the run)
    assert serving_steps([0.0, 0.25, 0.5, 0.75], 0.3) == [(0.0, 0), (0.3, 1), (0.6, 2)]
    # a point at a step's end is that step's state; a step spanning two points serves neither
    assert serving_steps([0.0, 1.0, 3.0], 1.0) == [(0.0, 0), (1.0, 1), (2.0, 1), (3.0, 2)]


def test_a_step_costs_its_prompts_rollouts_and_projected_seconds() -> None:
    row = {"train/prompts": 16.0, "train/rollouts": 128.0, "train/trained_rows": 128.0}
    assert step_cost("passes", row, pool_size=512, length=24) == 16 / 512
    assert step_cost("rollouts", row, pool_size=512, length=24) == 128.0
    from frontier_rft.bench.real_rl.device_seconds import projected_seconds

    # the grid prices a step as the bench's projection does
    projected = projected_seconds([row, row], {"config": {"max_new_tokens": 24}}, "h200")
    assert cumulative("h200", [row, row], pool_size=512, length=24) == projected


def test_the_clock_says_when_a_step_spans_a_point() -> None:
    clock = EvalClock([GridLine("passes", 0.25)], pool_size=24, length=12)
    row = {"train/prompts": 3.0}  # 0.125 of a pass a step
    # step 1 spans [0, 0.125): point 0 (state 0); step 2 [0.125, 0.25): none; step 3 0.25
    assert [clock.advance(row) for _ in range(4)] == [True, False, True, False]
    state = clock.state_dict()
    other = EvalClock([GridLine("passes", 0.25)], pool_size=24, length=12)
    other.load_state_dict(json.loads(json.dumps(state)))
    assert other.spent == clock.spent
    with pytest.raises(ValueError, match="resume with the saved eval_grid"):
        EvalClock([GridLine("rollouts", 8)], pool_size=24, length=12).load_state_dict(state)


# ------------------------------------------------------------------ the trainer
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.training.grpo import Trainer  # noqa: E402
from test_training_model import TEST_TRAIN  # noqa: E402

GRID = dataclasses.replace(
    TEST_TRAIN, steps=4, eval_every=0, eval_grid=("passes:0.25",), checkpoint_every=1
)
"""3 prompts a step of 24: 0.125 of a pass a step, a point every second step."""


def _rows(run: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _evals(run: Path) -> dict[int, float]:
    return {int(r["step"]): r["eval/pass@1"] for r in _rows(run) if "eval/pass@1" in r}


@pytest.mark.integration
def test_the_trainer_evaluates_the_state_at_each_point_and_trains_the_same(
    sft_dir: Path, tmp_path: Path
) -> None:
    # One torch thread: with several, a reduction's order may follow how the threads were
    # scheduled (seen on a loaded machine), and the claim is about what is trained, not that.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _evaluates_each_point_and_trains_the_same(sft_dir, tmp_path)
    finally:
        torch.set_num_threads(threads)


def _evaluates_each_point_and_trains_the_same(sft_dir: Path, tmp_path: Path) -> None:
    grid = Trainer(GRID, sft_dir, tmp_path / "grid", log=lambda _: None)
    grid.train()
    rows = [r for r in _rows(tmp_path / "grid") if "train/reward_mean" in r]
    spent = cumulative("passes", rows, pool_size=GRID.train_size, length=GRID.max_new_tokens)
    points = serving_steps(spent, 0.25)
    assert points == [(0.0, 0), (0.25, 2), (0.5, 4)]
    assert sorted(_evals(tmp_path / "grid")) == [0, 2, 4]  # each point's state, once
    # Every 2 steps without a grid: the same states evaluated, the same scores, the same weights
    plain_cfg = dataclasses.replace(GRID, eval_grid=(), eval_every=2)
    plain = Trainer(plain_cfg, sft_dir, tmp_path / "plain", log=lambda _: None)
    plain.train()
    assert _evals(tmp_path / "plain") == _evals(tmp_path / "grid")
    a, b = grid.model.state_dict(), plain.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.integration
def test_a_grid_run_resumes_exactly(
    sft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Trainer(GRID, sft_dir, tmp_path / "a", log=lambda _: None).train()
    crashed = Trainer(GRID, sft_dir, tmp_path / "b", log=lambda _: None)
    step = crashed.step

    def dies_in_step_3() -> dict[str, float]:
        if crashed.step_count == 2:  # checkpoint 2 saved; step 3 (and its point) lost
            raise RuntimeError("killed")
        return step()

    monkeypatch.setattr(crashed, "step", dies_in_step_3)
    with pytest.raises(RuntimeError, match="killed"):
        crashed.train()
    crashed.sink.close()
    resumed = Trainer(GRID, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    assert resumed.step_count == 2
    resumed.train()
    assert _evals(tmp_path / "b") == _evals(tmp_path / "a")
    assert [r["step"] for r in _rows(tmp_path / "b")] == [r["step"] for r in _rows(tmp_path / "a")]
