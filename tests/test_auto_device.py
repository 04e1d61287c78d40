"""`rollouts: auto` says, per device class, which mode's saving shows in that device's seconds
and on what evidence (issue 71, item 4): on a CPU kept's rollouts are its seconds; on a GPU a
step costs about the same however few rows it holds, so only fewer steps would save seconds.
auto itself stays full for a selector measured to lose held-out score with kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from frontier_rft.cli.main import main
from frontier_rft.integrations.plan import DEVICES, TrainerFacts, auto, device_saving
from frontier_rft.integrations.skyrl.config import SKYRL
from frontier_rft.integrations.trl.fewer_config import TRL
from frontier_rft.integrations.verl.config import VERL
from frontier_rft.selectors.registry import SELECTORS


def test_a_cpu_run_is_told_that_kept_saves_its_seconds() -> None:
    said = device_saving(TRL, SELECTORS["skip"], "cpu")
    assert "on a CPU a step's time follows its rows" in said
    assert "0.80x of uniform's CPU time at 0.83x its rollouts" in said


@pytest.mark.parametrize(
    ("facts", "where"),
    [
        (TRL, "rollouts: fewer_steps: "),
        (VERL, "in TRL and the reference trainer, not on verl yet"),
        (SKYRL, "in TRL and the reference trainer, not on SkyRL yet"),
    ],
)
def test_a_gpu_run_is_told_that_kept_saves_no_seconds_and_fewer_steps_would(
    facts: TrainerFacts, where: str
) -> None:
    said = device_saving(facts, SELECTORS["skip"], "gpu")
    assert "kept took 1.04x uniform's wall-clock at 0.78x its rollouts" in said
    assert "not seconds" in said and where in said
    assert str(SELECTORS["skip"].fewer_steps_saves) in said  # the fact lives on the class
    # a selector with no fewer_steps run says so rather than borrowing skip's figures
    assert "not yet measured with 'greso'" in device_saving(facts, SELECTORS["greso"], "gpu")


def test_nothing_is_said_where_nothing_is_passed_over_or_the_device_is_unknown() -> None:
    assert device_saving(TRL, SELECTORS["uniform"], "gpu") == ""
    assert device_saving(TRL, SELECTORS["skip"], "tpu") == ""
    assert DEVICES == ("cpu", "gpu")


def test_auto_stays_full_and_ends_its_reason_with_the_device() -> None:
    for facts in (TRL, VERL, SKYRL):
        mode, why, warn = auto(facts, SELECTORS["skip"], [], 2.0, device="gpu")
        assert mode == "full" and not warn
        assert why.startswith("selector 'skip': with rollouts: kept it lost held-out score")
        assert why.endswith(device_saving(facts, SELECTORS["skip"], "gpu"))
    assert (
        auto(TRL, SELECTORS["skip"], [], 2.0)[1]
        == auto(TRL, SELECTORS["skip"], [], 2.0, device=None)[1]
    )


@pytest.mark.parametrize(
    ("use_cpu", "said"), [(True, "on a CPU"), (False, "where a GPU step is latency-bound")]
)
def test_check_config_trl_names_the_device_of_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], use_cpu: bool, said: str
) -> None:
    pytest.importorskip("trl", reason="TRL's own keys are read from trl")
    config = tmp_path / "run.yaml"
    values = {"model_name_or_path": "m", "selector": "skip", "use_vllm": False}
    values["per_device_train_batch_size"] = 16  # 2 prompts a step (at 1 kept saves nothing)
    config.write_text(yaml.safe_dump({**values, "use_cpu": use_cpu}))
    main(["check-config", "trl", str(config)])
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  auto: ")]
    assert line.startswith("  auto: rollouts will be full (uniform's bill) because selector 'skip'")
    assert said in line
