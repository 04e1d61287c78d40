"""Shadows in the reference trainer: they never change what trains, their metrics are in the
logs, resume is exact, and a replay of the run's reward log gives the live numbers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.shadow.replay import REWARD_LOG, replay
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN

pytestmark = pytest.mark.integration

BASE = dataclasses.replace(
    TEST_TRAIN,
    train_size=12,
    steps=10,
    eval_every=0,
    checkpoint_every=100,
    given="prompts",
    threads=1,
)
"""Twelve prompts of batch 3: 10 steps are 2.5 of uniform's epochs. One torch thread: CPU
kernels with several can sum in another order from run to run, and bitwise equal weights
are the claim."""
RULES = ("greso", "screen2", "greso+screen2", "skip")
SHADOWED = dataclasses.replace(BASE, shadows=RULES, reward_log=True)


@pytest.fixture(autouse=True)
def _torch_threads() -> Iterator[None]:
    """Trainer sets torch's (process-wide) thread count: give the next test its own back."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _run(config: TrainConfig, sft_dir: Path, out: Path, n: int) -> tuple[Trainer, list, list]:
    trainer = Trainer(config, sft_dir, out, log=lambda _: None)
    metrics, drawn = [], []
    for _ in range(n):
        metrics.append(trainer.step())
        drawn.append((trainer.last["ids"].tolist(), trainer.last["rewards"].tolist()))
    return trainer, metrics, drawn


def test_shadows_never_change_training(sft_dir: Path, tmp_path: Path) -> None:
    plain, plain_m, plain_d = _run(BASE, sft_dir, tmp_path / "a", 10)
    shadowed, shadow_m, shadow_d = _run(SHADOWED, sft_dir, tmp_path / "b", 10)
    assert shadow_d == plain_d  # the same batches, the same rewards
    for a, b in zip(plain.model.parameters(), shadowed.model.parameters(), strict=True):
        assert torch.equal(a, b)
    timings = ("perf/", "curriculum/select/overhead_ms")
    for a, b in zip(plain_m, shadow_m, strict=True):
        assert {k: v for k, v in a.items() if not k.startswith(timings)} == {
            k: v for k, v in b.items() if not k.startswith((*timings, "curriculum/shadow/"))
        }
    last = shadow_m[-1]
    for rule in RULES:
        assert f"curriculum/shadow/{rule}/rollouts_saved" in last
        assert f"curriculum/shadow/{rule}/skip_precision" in last
    assert last["curriculum/shadow/screen2/rollouts_saved"] > 0  # screening saves from step 1
    # The trainer knows its completions' lengths: the shadows count generated tokens too, and
    # the reward log holds each rollout's, summing to what the step generated.
    for rule in RULES:
        assert 0 <= last[f"curriculum/shadow/{rule}/tokens_saved_share"] <= 1
    assert last["curriculum/shadow/screen2/tokens_saved"] > 0
    log = [json.loads(line) for line in (tmp_path / "b" / REWARD_LOG).read_text().splitlines()]
    assert [sum(map(sum, line["lengths"])) for line in log] == [
        m["train/generated_tokens"] for m in shadow_m
    ]


def test_resume_is_exact_and_replay_gives_the_live_numbers(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(SHADOWED, checkpoint_every=4)
    _, expected, _ = _run(config, sft_dir, tmp_path / "a", 9)
    first, _, _ = _run(config, sft_dir, tmp_path / "b", 6)
    first.save()  # at step 6, mid-epoch; the reward log holds steps 0-5
    with open(tmp_path / "b" / REWARD_LOG, "a") as fh:  # a step logged after the checkpoint
        fh.write('{"step": 6, "task_ids": [1], "rewa')  # and torn by a crash
    del first
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    got = [resumed.step() for _ in range(3)]
    shadow_keys = [k for k in expected[-1] if k.startswith("curriculum/shadow/")]
    for a, b in zip(expected[-3:], got, strict=True):
        np.testing.assert_equal([a[k] for k in shadow_keys], [b[k] for k in shadow_keys])
    log_a = (tmp_path / "a" / REWARD_LOG).read_text()
    assert (tmp_path / "b" / REWARD_LOG).read_text() == log_a
    assert [json.loads(line)["step"] for line in log_a.splitlines()] == list(range(9))
    # Offline: the reward log replayed gives what the live shadows logged.
    for shadow in replay(tmp_path / "a" / REWARD_LOG, ["greso", "screen2", "greso+screen2"]):
        live = {k.rsplit("/", 1)[1]: v for k, v in expected[-1].items() if f"/{shadow.name}/" in k}
        np.testing.assert_equal(shadow.metrics(), live)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"shadows": ("bots",)}, "re-draws from the whole pool"),
        ({"shadows": ("greso", "greso")}, "names a rule twice"),
        ({"shadows": ("screen4",)}, "needs group_size above 4"),
        (
            {"shadows": ("greso",), "sampler": "fewer_rollouts", "sampler_config": {"screen": 2}},
            "which screen does not roll out",
        ),
        ({"reward_log": True, "sampler": "dynamic_sampling"}, "dynamic_sampling does not"),
        ({"shadows": ("screen2",), "sampler": "allocation"}, "allocation does not"),
        ({"shadows": ("screen2",), "sampler": "pilot_commit"}, "pilot_commit does not"),
        ({"shadows": "greso"}, "must be a tuple"),
    ],
)
def test_shadow_settings_are_refused_by_name(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(BASE, **fields)
