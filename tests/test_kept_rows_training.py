"""A kept step in the reference trainer does only the kept work: on a pool whose prompts are
planted solved, unsolvable or mixed, the rows that reach the policy's forward pass in the
update (counted in the model's own calls) are exactly the kept groups' rows, and nothing is
generated for a skipped prompt."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.training.grpo import Trainer
from test_training_model import TEST_TRAIN

pytestmark = pytest.mark.integration

STEPS = 12
"""Three of uniform's epochs over 12 prompts in batches of 3: the skip acts from epoch 2."""
CONFIG = dataclasses.replace(
    TEST_TRAIN,
    train_size=12,
    steps=STEPS,
    eval_every=0,
    checkpoint_every=1000,
    selector="skip",
    sampler="fewer_rollouts",
    noise_every=0,  # the update's forward rows are counted: no noise meter's passes among them
)
SOLVED, UNSOLVABLE, MIXED = set(range(0, 4)), set(range(4, 8)), set(range(8, 12))
"""Planted outcomes: tasks 0-3 always solved, 4-7 never, 8-11 half of each group."""


def planted(task: int, n: int) -> np.ndarray:
    if task in SOLVED:
        return np.ones(n)
    if task in UNSOLVABLE:
        return np.zeros(n)
    return np.arange(n) % 2 * 1.0  # mixed: 0, 1, 0, 1, ...


class Counted:
    """What one step sent to the policy: the tasks generated for, and the update's forward
    passes' rows (prompt rows, one per group; completion rows, one per rollout)."""

    def __init__(self) -> None:
        self.generated: list[int] = []
        self.prompt_rows: list[list[int]] = []
        self.completion_rows = 0
        self.forward_rows = 0


@contextmanager
def counting(trainer: Trainer) -> Iterator[list[Counted]]:
    """Plant the outcomes and count, per step, the rollouts and the update's forward rows."""
    steps: list[Counted] = []
    in_update = [False]
    original_rollout, original_update = trainer._rollout, trainer._update

    def rollout(ids: np.ndarray, counts: np.ndarray) -> Any:
        completions, _, seconds, padded = original_rollout(ids, counts)
        steps[-1].generated += ids.tolist()
        rewards = np.concatenate(
            [planted(int(t), int(c)) for t, c in zip(ids, counts, strict=True)]
        )
        return completions, rewards, seconds, padded

    def update(*args: Any, **kwargs: Any) -> Any:
        in_update[0] = True
        try:
            return original_update(*args, **kwargs)
        finally:
            in_update[0] = False

    def hook(_module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        if not in_update[0]:
            return
        ids = kwargs.get("input_ids", args[0] if args else None)
        assert isinstance(ids, torch.Tensor)
        step = steps[-1]
        step.forward_rows += int(ids.shape[0])
        if kwargs.get("past_key_values") is not None and kwargs.get("position_ids") is not None:
            step.completion_rows += int(ids.shape[0])  # the completions on the prompts' cache
        else:
            step.prompt_rows += [row.tolist() for row in ids]

    handle = trainer.model.register_forward_pre_hook(hook, with_kwargs=True)
    trainer._rollout = rollout  # type: ignore[method-assign]
    trainer._update = update  # type: ignore[method-assign]
    try:
        yield steps
    finally:
        handle.remove()


def test_the_policys_forward_pass_sees_only_the_kept_groups(sft_dir: Path, tmp_path: Path) -> None:
    trainer = Trainer(CONFIG, sft_dir, tmp_path / "run", log=lambda _: None)
    n, batch = CONFIG.group_size, CONFIG.batch_size
    pad = trainer.model.generation_config.pad_token_id
    with counting(trainer) as steps:
        for _ in range(STEPS):
            steps.append(Counted())
            metrics = trainer.step()
            step = steps[-1]
            kept = step.generated
            # the trained rows are the kept groups' rows, all of them, nothing more
            assert metrics["train/rollouts"] == len(kept) * n
            assert metrics["train/trained_rows"] == len(kept) * n
            assert step.completion_rows == len(kept) * n
            assert step.forward_rows == len(kept) * (n + 1)  # + one prompt row a group
            # ...and their prompts are the kept prompts, one row a group, in order
            got = [[t for t in row if t != pad] for row in step.prompt_rows]
            assert got == [list(trainer.prompt_ids[t]) for t in kept]
    per_epoch = len(range(0, 12, batch))
    epochs = [
        [t for s in steps[e : e + per_epoch] for t in s.generated]
        for e in range(0, STEPS, per_epoch)
    ]
    assert sorted(epochs[0]) == list(range(12)), "the first epoch rolls out every prompt"
    for walked in epochs[1:]:  # later epochs pass over planted solved/unsolvable ones only
        assert set(walked) >= MIXED, "a mixed prompt was passed over"
        assert len(walked) == len(set(walked))
    assert sum(len(w) for w in epochs[1:]) < 2 * 12, "nothing was passed over"
