"""`rollouts: auto` (the default) on verl's real trainers, for a selector measured free of loss
with kept up to 2 epochs (planted: conftest's `skip_kept_to_two_epochs`; no registered one is
today): kept with the v1 sync trainer through FrontierReplayBuffer, full with one warning
naming why beside each setting kept cannot run with, and `frontier check-config verl` saying
the same before launch. The default itself (uniform's batches, skip as a shadow): the test
after the first.

The trainers are verl's own (`get_trainer_cls`), built from verl's Hydra config as
test_verl_fewer.py builds them; the kept run drives real steps over TransferQueue with the
scripted rollouts there. The buffer decides before the dataloader is rebuilt, and its
decision is the one check-config prints for the composed config (verl.auto.auto_rollouts).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from test_verl_fewer import EPOCHS, ROWS, B, N, build, compose
from test_verl_v1_replay_buffer import transfer_queue  # noqa: F401 - a fixture
from verl_data import build_tokenizer, write_parquet

from frontier_rft.integrations.verl.config import (
    KEPT_NEEDS_SYNC,
    KEPT_WITH_FILTER_GROUPS,
    KEPT_WITH_REFILL,
    kept_gen_batch_size,
)
from frontier_rft.integrations.verl.preflight import check_verl_config
from frontier_rft.integrations.verl.sampler import WindowBatches

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.usefixtures("skip_kept_to_two_epochs"),
]

AUTO_LOG = "frontier_rft.integrations.verl.auto"
DEFAULTS = ("seed=0", "selector=skip")
"""sampler_kwargs naming the planted selector, with rollouts: auto."""


def _said(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the buffer said about rollouts: auto (one record)."""
    return [r for r in caplog.records if r.name == AUTO_LOG]


def _check_config_says(config: Any) -> str:
    """check-config's `auto:` line for verl's composed config."""
    plain = OmegaConf.to_container(config, resolve=True)
    assert isinstance(plain, dict)
    report = check_verl_config(plain)
    assert report.problems == [], report.problems
    (choice,) = report.choices
    return choice


def test_auto_is_kept_on_the_v1_sync_buffer(
    tmp_path: Path,
    transfer_queue: Any,  # noqa: F811 - the fixture
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        trainer, rollouts = build(tmp_path, transfer_queue, kwargs=DEFAULTS)
    (record,) = _said(caplog)
    assert record.levelname == "INFO"
    assert record.getMessage() == (
        "frontier-rft: rollouts: auto is kept: the run is 2 epochs, within the 2 epochs over "
        "which kept was measured within noise; each step generates only the prompts 'skip' keeps "
        "among verl's batch (the same steps and schedule, fewer rollouts)"
    )
    sampler = trainer.replay_buffer.frontier
    assert (sampler.selector.name, sampler.config.rollouts) == ("skip", "kept")
    assert isinstance(trainer.train_dataloader.batch_sampler, WindowBatches)
    assert _check_config_says(trainer.config).startswith("rollouts will be kept: ")
    steps = trainer.total_training_steps
    assert steps == EPOCHS * ROWS // B  # verl's schedule, as under uniform
    for step in range(1, steps + 1):
        trainer.global_steps = step
        trainer.prepare_step()
        meta, _ = trainer.replay_buffer.sample(
            global_steps=step, partition_id="train", batch_size=B
        )
        assert (
            1 <= len(rollouts.submitted[-1]) <= B and len(meta) == len(rollouts.submitted[-1]) * N
        )
        transfer_queue.kv_clear(keys=meta.keys, partition_id="train")
    generated = sum(len(ids) for ids in rollouts.submitted) * N
    assert generated < steps * B * N  # skip passed over prompts seen all-equal in epoch 2
    print(f"\nverl rollouts: auto (skip): {generated} rollouts, uniform {steps * B * N}")


def test_the_default_trains_verls_whole_batches_with_skip_as_a_shadow(
    tmp_path: Path,
    transfer_queue: Any,  # noqa: F811 - the fixture
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No selector, rollouts or shadows named: uniform's whole batches on verl's schedule, skip
    followed beside them (said at start-up and by check-config); its figures are in the
    sampler's metrics, which verl logs."""
    with caplog.at_level(logging.INFO):
        trainer, rollouts = build(tmp_path, transfer_queue, kwargs=("seed=0",))
    sampler = trainer.replay_buffer.frontier
    assert (sampler.selector.name, sampler.config.rollouts) == ("uniform", "full")
    assert [s.config.name for s in sampler.shadows.shadows] == ["skip"]
    assert any("shadows: following skip" in r.getMessage() for r in caplog.records)
    plain = OmegaConf.to_container(trainer.config, resolve=True)
    assert isinstance(plain, dict)
    assert check_verl_config(plain).shadows[0].startswith("the run will follow skip")
    steps = trainer.total_training_steps
    for step in range(1, steps + 1):
        trainer.global_steps = step
        trainer.prepare_step()
        meta, _ = trainer.replay_buffer.sample(
            global_steps=step, partition_id="train", batch_size=B
        )
        assert len(rollouts.submitted[-1]) == B  # uniform's whole batch
        transfer_queue.kv_clear(keys=meta.keys, partition_id="train")
    assert any("shadow/skip/" in k for k in sampler.metrics()), sorted(sampler.metrics())
    # With each trajectory's tokens: the response_len tag the agent loop gives it, read back
    # from verl's replay buffer (the scripted responses have 2 + (task + session) % 3 tokens).
    tokens = sum(2 + (t + s) % 3 for ids in rollouts.submitted for t in ids for s in range(N))
    assert sampler.shadows.shadows[0].passes()[-1]["tokens"] == tokens
    assert "shadow/skip/tokens_saved_share" in sampler.metrics()


@pytest.mark.parametrize(
    ("extra", "mode", "said"),
    [
        (("trainer.total_epochs=3",), "full", "auto is full: the run is 3 epochs, longer than "
         "the 2 epochs over which selector 'skip' with kept was measured within noise"),
        (("trainer.total_epochs=5", f"++trainer.total_training_steps={ROWS // B}"), "kept",
         "auto is kept: the run is 1 epoch, within the 2 epochs"),  # steps over parquet rows
    ],
    ids=["3-epochs", "steps-of-1-epoch"],
)  # fmt: skip
def test_auto_follows_the_runs_length_in_epochs(
    extra: tuple[str, ...], mode: str, said: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """skip with kept ended below uniform over 4.5 and 11 epochs: the default keeps verl's
    whole batches on a longer run (at INFO), and check-config says the same before launch."""
    from verl.trainer.ppo.v1 import get_trainer_cls

    train = write_parquet(tmp_path / "train.parquet", ROWS, long_every=0)
    config = compose(train, tmp_path, *extra, kwargs=DEFAULTS)
    says = _check_config_says(config)
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        trainer = get_trainer_cls("sync")(config=config)
    (record,) = _said(caplog)
    assert record.levelname == "INFO" and said in record.getMessage(), record.getMessage()
    assert says.startswith(f"rollouts will be {mode}")
    assert trainer.replay_buffer._kept == (mode == "kept")


@pytest.mark.parametrize(
    ("extra", "kwargs", "because"),
    [
        (("++algorithm.filter_groups.enable=true", "++algorithm.filter_groups.metric=reward"),
         DEFAULTS, KEPT_WITH_FILTER_GROUPS),
        (("++trainer.v1.sampler.sync_refill_failed_groups=true", "data.gen_batch_size=1"),
         DEFAULTS, KEPT_WITH_REFILL),
        (("data.gen_batch_size=2",), DEFAULTS, kept_gen_batch_size(2)),
        ((), (*DEFAULTS, "shadows=[greso]"), "shadows follow uniform's whole batches"),
        ((), ("seed=0", "selector=uniform"), None),
    ],
    ids=["filter_groups", "refill", "gen_batch_size", "shadows", "uniform"],
)  # fmt: skip
def test_each_setting_kept_cannot_run_with_makes_auto_full_and_says_why(
    extra: tuple[str, ...],
    kwargs: tuple[str, ...],
    because: str | None,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from verl.trainer.ppo.v1 import get_trainer_cls

    train = write_parquet(tmp_path / "train.parquet", ROWS, long_every=0)
    config = compose(train, tmp_path, *extra, kwargs=kwargs)
    says = _check_config_says(config)  # before verl changes its config (gen_batch_size)
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        trainer = get_trainer_cls("sync")(config=config)
    (record,) = _said(caplog)
    message = record.getMessage()
    assert "\n" not in message
    if because is None:  # uniform passes over no prompt: full, no warning
        assert record.levelname == "INFO"
        assert message.endswith("auto is full: selector 'uniform' passes over no prompt")
        assert says == "rollouts will be full (uniform's bill) because selector 'uniform' " \
            "passes over no prompt"  # fmt: skip
    else:
        assert record.levelname == "WARNING"
        assert message.startswith("frontier-rft: rollouts: auto generates verl's whole batch")
        assert because in message and because in says and says.startswith("rollouts will be full")
    trainer.tokenizer, trainer.processor = build_tokenizer(), None
    trainer._init_dataloader()
    sampler = trainer.replay_buffer.frontier
    assert sampler.config.rollouts == "full" and not trainer.replay_buffer._kept
    assert not isinstance(trainer.train_dataloader.batch_sampler, WindowBatches)


def test_the_async_buffer_takes_auto_as_full_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from verl.trainer.ppo.v1 import get_trainer_cls

    train = write_parquet(tmp_path / "train.parquet", ROWS, long_every=0)
    async_mode = (
        "trainer.v1.trainer_mode=colocate_async",
        "trainer.v1.sampler.custom_sampler.name=FrontierReplayBufferAsync",
    )
    config = compose(train, tmp_path, *async_mode, kwargs=DEFAULTS)
    says = _check_config_says(config)
    with caplog.at_level(logging.INFO, logger=AUTO_LOG):
        trainer = get_trainer_cls("colocate_async")(config=config)
    (record,) = _said(caplog)
    assert record.levelname == "WARNING" and KEPT_NEEDS_SYNC in record.getMessage()
    assert f"trainer_mode colocate_async: {KEPT_NEEDS_SYNC}" in says
    assert type(trainer.replay_buffer).__name__ == "FrontierReplayBufferAsync"
    assert not trainer.replay_buffer._kept


@pytest.mark.parametrize("saved_with", ["full", "kept"])
def test_a_checkpoint_resumes_only_under_its_own_selector_and_rollouts(
    saved_with: str, tmp_path: Path
) -> None:
    # verl's data.pt, resumed by the real v1 trainer's rebuilt dataloader as verl's
    # _load_checkpoint does: a run of the former defaults (greso, full batches) resumes where
    # the config names them; under the new defaults (skip, auto: kept here), or after
    # rollouts changed either way, it is refused in one line naming what to set.
    import torch
    from verl.trainer.ppo.v1 import get_trainer_cls

    train = write_parquet(tmp_path / "train.parquet", ROWS, long_every=0)
    named = ("selector=greso", "seed=0", f"rollouts={saved_with}")

    def loader(kwargs: tuple[str, ...]) -> Any:
        trainer = get_trainer_cls("sync")(config=compose(train, tmp_path, kwargs=kwargs))
        trainer.tokenizer, trainer.processor = build_tokenizer(), None
        trainer._init_dataloader()
        return trainer.train_dataloader

    first = loader(named)
    it = iter(first)
    next(it), next(it)
    torch.save(first.state_dict(), tmp_path / "data.pt")
    expected = next(it)["index"].tolist()
    saved = torch.load(tmp_path / "data.pt", weights_only=False)
    again = loader(named)
    again.load_state_dict(saved)
    assert next(iter(again))["index"].tolist() == expected
    other = "kept" if saved_with == "full" else "full"
    fix = "greso and rollouts: full (the former default)" if saved_with == "full" else (
        "greso and rollouts: kept"
    )  # fmt: skip
    for kwargs, now in (
        (DEFAULTS, "skip and rollouts: kept"),  # skip, rollouts: auto (kept here)
        (("selector=greso", "seed=0", f"rollouts={other}"), f"greso and rollouts: {other}"),
    ):
        with pytest.raises(ValueError) as err:
            loader(kwargs).load_state_dict(saved)
        assert str(err.value) == (
            f"the checkpoint's curriculum was saved with selector: greso and rollouts: "
            f"{saved_with}, not selector: {now}: resume with selector: {fix}, or start a fresh run"
        )
