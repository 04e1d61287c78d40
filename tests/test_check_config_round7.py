"""check-config after issue 83's review: `rollouts: fewer_steps` with a learning-rate schedule
that is not a function of the step is a problem, as the TRL adapter refuses it before the model
loads (item 22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trl" / "grpo_frontier.yaml"
FEWER = ["selector=skip", "rollouts=fewer_steps", "num_train_epochs=2", "max_steps=-1"]


@pytest.mark.parametrize("schedule", ["reduce_lr_on_plateau", "greedy"])
def test_fewer_steps_with_a_schedule_not_of_the_step_is_invalid(
    schedule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check-config", "trl", str(EXAMPLE), *FEWER, f"lr_scheduler_type={schedule}"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert f"lr_scheduler_type {schedule} is not a schedule of the step" in out


def test_fewer_steps_with_a_step_schedule_and_full_rollouts_are_not_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    full = [*FEWER[:1], "rollouts=full", "lr_scheduler_type=reduce_lr_on_plateau"]
    for overrides in ([*FEWER, "lr_scheduler_type=cosine"], full):
        main(["check-config", "trl", str(EXAMPLE), *overrides])
        assert "not a schedule of the step" not in capsys.readouterr().out


def test_check_configs_schedules_are_the_trl_adapters() -> None:
    pytest.importorskip("transformers")
    from frontier_rft.cli.check_config import NOT_A_STEP_SCHEDULE
    from frontier_rft.integrations.trl.fewer_steps import NOT_LAMBDA

    assert NOT_A_STEP_SCHEDULE == NOT_LAMBDA
