"""`frontier.rollouts: auto` (the default) on SkyRL's real trainers, for a selector measured free
of loss with kept up to 2 epochs (planted: conftest's `skip_kept_to_two_epochs`; no registered
one is today): kept with the synchronous FrontierRayPPOTrainer, full with one warning naming
why beside SkyRL's dynamic sampling and with its fully-async trainer; the entrypoint decides
before Ray starts, and `frontier check-config skyrl` says the same
(skyrl.config.skyrl_auto_rollouts). The default itself, uniform's batches with skip as a
shadow: the last tests."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from test_skyrl_fully_async import async_config, async_run

from conftest import BATCH, N_PROMPTS, N_SAMPLES, Run, skyrl_config
from frontier_rft.integrations.skyrl.config import (
    KEPT_WITH_DYNAMIC_SAMPLING,
    KEPT_WITH_FULLY_ASYNC,
)
from frontier_rft.integrations.skyrl.preflight import check_skyrl_config

AUTO_LOG = "frontier_rft.integrations.skyrl.config"
STEPS = 2 * N_PROMPTS // BATCH  # two epochs
SKIP = {"seed": 3, "selector": "skip"}
"""The planted selector, named."""

pytestmark = pytest.mark.usefixtures("skip_kept_to_two_epochs")


def _said(caplog: pytest.LogCaptureFixture) -> logging.LogRecord:
    (record,) = [r for r in caplog.records if r.name == AUTO_LOG]
    assert "\n" not in record.getMessage()
    return record


def test_auto_is_kept_with_the_synchronous_trainer(
    make_run: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        run = make_run(skyrl_config(tmp_path / "ckpt", steps=STEPS), SKIP)
    record = _said(caplog)
    assert record.levelname == "INFO" and record.getMessage() == (
        "frontier-rft: rollouts: auto is kept: the run is 2 epochs, within the 2 epochs over "
        "which kept was measured within noise; each step generates only the prompts 'skip' keeps "
        "among SkyRL's batch (the same steps and schedule, fewer rollouts)"
    )  # max_training_steps of train_batch_size prompts over the dataset's rows
    assert run.trainer.frontier_config.rollouts == "kept"
    assert check_skyrl_config({"frontier": SKIP}).choices[0].startswith("rollouts will be kept: ")
    run.train()
    sizes = [len(c["tasks"]) for c in run.generator.calls]
    assert len(sizes) == STEPS  # SkyRL's steps, as under uniform
    assert all(1 <= k <= BATCH for k in sizes) and sum(sizes) < STEPS * BATCH
    uniform = STEPS * BATCH * N_SAMPLES
    print(f"\nSkyRL rollouts: auto (skip): {sum(sizes) * N_SAMPLES}, uniform {uniform}")


def test_auto_is_full_on_a_run_longer_than_kept_was_measured_level_at(
    make_run: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """skip with kept ended below uniform over 4.5 and 11 epochs: on a 3-epoch run the
    default keeps SkyRL's whole batches, at INFO, and says why."""
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        run = make_run(skyrl_config(tmp_path / "ckpt", steps=3 * N_PROMPTS // BATCH), SKIP)
    record = _said(caplog)
    assert record.levelname == "INFO" and record.getMessage().startswith(
        "frontier-rft: rollouts: auto is full: the run is 3 epochs, longer than the 2 epochs "
        "over which selector 'skip' with kept was measured within noise"
    )
    assert run.trainer.frontier_config.rollouts == "full"


def test_auto_is_full_beside_skyrls_dynamic_sampling_and_says_why(
    make_run: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = skyrl_config(tmp_path / "ckpt", steps=4)
    cfg.trainer.algorithm.dynamic_sampling.type = "filter"
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        run: Run = make_run(cfg, SKIP)
    record = _said(caplog)
    assert record.levelname == "WARNING" and KEPT_WITH_DYNAMIC_SAMPLING in record.getMessage()
    assert run.trainer.frontier_config.rollouts == "full"
    settings = {
        "trainer": {"algorithm": {"dynamic_sampling": {"type": "filter"}}},
        "frontier": SKIP,
    }
    assert KEPT_WITH_DYNAMIC_SAMPLING in check_skyrl_config(settings).choices[0]
    run.train()
    assert all(len(c["tasks"]) == BATCH for c in run.generator.calls)


def test_auto_is_full_with_the_fully_async_trainer_and_says_why(
    data_file: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        run = async_run(data_file, async_config(tmp_path / "ckpt", steps=4, staleness=0), SKIP)
    record = _said(caplog)
    assert record.levelname == "WARNING" and KEPT_WITH_FULLY_ASYNC in record.getMessage()
    assert run.trainer.frontier_config.rollouts == "full"
    settings = {"trainer": {"fully_async": {"enabled": True}}, "frontier": SKIP}
    assert KEPT_WITH_FULLY_ASYNC in check_skyrl_config(settings).choices[0]


@pytest.mark.parametrize(
    ("argv", "mode", "because"),
    [
        ([], "kept", None),
        (["trainer.fully_async.enabled=true"], "full", KEPT_WITH_FULLY_ASYNC),
        (["trainer.algorithm.dynamic_sampling.type=filter"], "full", KEPT_WITH_DYNAMIC_SAMPLING),
        (["frontier.selector=uniform"], "full", None),
        (["trainer.epochs=3"], "full", None),  # longer than skip's kept was measured within noise
    ],
    ids=["default", "fully-async", "dynamic-sampling", "uniform", "three-epochs"],
)
def test_the_entrypoint_resolves_auto_before_ray_starts(
    argv: list[str],
    mode: str,
    because: str | None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import ray
    import skyrl.train.utils.utils as skyrl_utils

    from frontier_rft.integrations.skyrl.main import main

    handed: list[Any] = []

    class Task:  # ray.remote(...)(_run): what would run in the Ray task, never started
        def __init__(self, fn: Any) -> None:
            self.fn = fn

        def remote(self, cfg: Any, frontier_config: Any, plan: Any) -> None:
            handed.append(plan)

    said_before_ray: list[int] = []  # auto's log lines when Ray would start

    def initialize_ray(cfg: Any) -> None:
        said_before_ray.append(len([r for r in caplog.records if r.name == AUTO_LOG]))

    monkeypatch.setattr(skyrl_utils, "validate_cfg", lambda cfg: None)  # no model here
    monkeypatch.setattr(skyrl_utils, "initialize_ray", initialize_ray)
    monkeypatch.setattr(ray, "remote", lambda **kw: Task)
    monkeypatch.setattr(ray, "get", lambda ref: ref)
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        assert main(["trainer.train_batch_size=4", "frontier.selector=skip", *argv]) == 0
    err = capsys.readouterr().err.splitlines()
    at = next(
        i for i, line in enumerate(err) if line.startswith("frontier-rft (SkyRL): currency: ")
    )
    assert err[at + 1].startswith("frontier-rft (SkyRL): start plan: ")  # then the start
    (plan,) = handed  # the plan itself crosses into the Ray task, decided once
    assert plan.rollouts == mode and said_before_ray == [1]
    assert plan.shape().prompts == 4 and plan.shape().rollouts is not None
    record = _said(caplog)
    if because is None:
        assert record.levelname == "INFO"
    else:
        assert record.levelname == "WARNING" and because in record.getMessage()


def test_a_checkpoint_of_the_former_default_resumes_only_where_it_is_named(
    make_run: Any, tmp_path: Path
) -> None:
    ckpt = tmp_path / "ckpt"
    former = {"selector": "greso", "seed": 3, "rollouts": "full"}
    make_run(skyrl_config(ckpt, steps=3, ckpt_interval=3), former).train()
    resumed = make_run(skyrl_config(ckpt, steps=6, ckpt_interval=3, resume_mode="latest"), former)
    assert len(resumed.train().generator.calls) == 3  # steps 4 to 6, from the checkpoint
    default = make_run(skyrl_config(ckpt, steps=9, resume_mode="latest"), {"seed": 3})
    with pytest.raises(ValueError) as err:
        default.train()
    assert str(err.value) == (
        "the checkpoint's curriculum was saved with selector: greso, not selector: uniform: "
        "resume with selector: greso (and rollouts: full, if it ran with the former default), or "
        "start a fresh run"
    )


def test_the_default_trains_skyrls_whole_batches_with_skip_as_a_shadow(
    make_run: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The default (no selector, rollouts or shadows named): uniform's whole batches on SkyRL's
    steps, skip followed beside them, said at start-up; its figures land in SkyRL's logs."""
    with caplog.at_level(logging.INFO):
        run = make_run(skyrl_config(tmp_path / "ckpt", steps=STEPS), {"seed": 3})
    assert run.trainer.frontier_config.rollouts == "full"
    assert any("shadows: following skip" in r.getMessage() for r in caplog.records)
    run.train()
    assert [len(c["tasks"]) for c in run.generator.calls] == [BATCH] * STEPS
    logged = {k for step in run.logged() for k in step}
    assert any("shadow/skip/" in k for k in logged), sorted(logged)
