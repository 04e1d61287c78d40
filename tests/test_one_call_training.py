"""DAPO's filter in one generation call (bench entry dapo-onecall) in the reference trainer:
each step calls generate once, for the candidates GRESO's rule sizes from the measured
zero-variance share, and trains only the mixed groups among them (at most the batch); a
larger step of uniform makes one call of its rows; resume is exact."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.training import grpo
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN, straight_and_resumed

pytestmark = pytest.mark.integration

BASE = dataclasses.replace(TEST_TRAIN, train_size=24, steps=6, eval_every=0, checkpoint_every=100)
ONE_CALL = {
    "sampler": "dynamic_sampling",
    "sampler_config": {"adaptive": True, "max_rounds": 1},
}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows of every call to generate, in order."""
    seen: list[int] = []
    real = grpo.generate_completions

    def counting(model: Any, prompts: list[Any], n: Any, *args: Any, **kw: Any) -> Any:
        seen.append(sum(n) if isinstance(n, list) else n * len(prompts))
        return real(model, prompts, n, *args, **kw)

    monkeypatch.setattr(grpo, "generate_completions", counting)
    return seen


def run(config: TrainConfig, sft_dir: Path, out: Path, n: int) -> tuple[Trainer, list[dict]]:
    trainer = Trainer(config, sft_dir, out, log=lambda _: None)
    return trainer, [trainer.step() for _ in range(n)]


def test_one_call_a_step_sized_by_the_zero_variance_share(
    sft_dir: Path, tmp_path: Path, calls: list[int]
) -> None:
    config = dataclasses.replace(BASE, **ONE_CALL)
    _, metrics = run(config, sft_dir, tmp_path / "a", 6)
    b, n = config.batch_size, config.group_size
    assert len(calls) == 6  # one call to generate a step
    z_prev = None
    for rows, m in zip(calls, metrics, strict=True):
        assert m["train/sampling_rounds"] == 1
        candidates = rows // n
        # GRESO's rule: ceil(B / (1 - z) x 1.25) clamped to [1, 3] x B; 3 x B before any z
        if z_prev is None or z_prev >= 1.0:
            want = 3 * b
        else:
            want = min(3 * b, max(b, math.ceil(b / (1 - z_prev) * 1.25)))
        assert candidates == want and m["train/rollouts"] == rows
        trained = m["train/groups_trained"]
        assert trained == min(b, m["train/informative_groups"])  # mixed groups only
        assert m["train/trained_rows"] == trained * n
        flat = candidates - m["train/informative_groups"]
        z_prev = flat / candidates


def test_a_larger_uniform_step_is_one_call_of_its_rows(
    sft_dir: Path, tmp_path: Path, calls: list[int]
) -> None:
    config = dataclasses.replace(BASE, batch_size=12)
    _, metrics = run(config, sft_dir, tmp_path / "b", 2)
    assert calls == [12 * config.group_size] * 2
    assert all(m["train/trained_rows"] == 12 * config.group_size for m in metrics)


def test_resume_is_exact(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(BASE, **ONE_CALL, checkpoint_every=3)
    expected, got, _, _ = straight_and_resumed(config, sft_dir, tmp_path, 6, 3)
    assert got == expected


def test_the_probe_trains_only_mixed_groups_padded_with_replayed_ones(
    sft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'Train only mixed groups, pad with replayed mixed groups' (bench entry
    dapo-onecall-backfill, issue 90 item 7): one-call DAPO inside Backfill, which the plan takes
    from one fact of DynamicSampling's class (`frees_slots`). It builds as the entry spells it,
    trains each step's mixed groups with the slots left filled by mixed groups of earlier
    steps, and resumes exactly (the held groups cross the save)."""
    from frontier_rft.bench.real_rl.entries import STEP_SIZE_ENTRIES

    entry = next(e for e in STEP_SIZE_ENTRIES if e.label == "dapo-onecall-backfill")
    config = dataclasses.replace(BASE, **ONE_CALL, backfill="replay", checkpoint_every=3)
    plan = config.step_plan()
    assert (plan.sampler, plan.wraps) == (entry.plan().sampler, entry.plan().wraps)
    seen: list[dict[str, float]] = []
    step = Trainer.step

    def recorded(trainer: Trainer) -> dict[str, float]:
        seen.append(step(trainer))
        return seen[-1]

    monkeypatch.setattr(Trainer, "step", recorded)
    rollout = Trainer._rollout

    def planted(trainer: Trainer, ids: Any, counts: Any) -> Any:
        """Every fifth prompt mixed, the rest flat: a one-call step often short of B mixed."""
        completions, _, seconds, padded = rollout(trainer, ids, counts)
        rewards = [
            float((i % 2 == 0) if task % 5 == 0 else task % 2)
            for task, k in zip(ids.tolist(), counts, strict=True)
            for i in range(int(k))
        ]
        return completions, np.asarray(rewards), seconds, padded

    monkeypatch.setattr(Trainer, "_rollout", planted)
    held: list[int] = []
    expected, got, _, _ = straight_and_resumed(
        config, sft_dir, tmp_path, 6, 3, lambda t: held.append(t.sampler.store.size)
    )
    assert got == expected and held[0] > 0
    straight = seen[:6]
    b = config.batch_size
    assert all(m["train/sampling_rounds"] == 1 for m in straight)  # one call a step
    assert any(m["backfill/replayed_groups"] > 0 for m in straight), "no slot was filled"
    for m in straight:  # the step's own mixed groups (at most B), then replayed ones to B
        fresh = m["train/groups_trained"]
        assert fresh == min(b, m["train/informative_groups"])
        assert fresh + m["backfill/replayed_groups"] <= b
