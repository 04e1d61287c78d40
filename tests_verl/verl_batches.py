"""verl's batches as its trainers build them, and the dataloader RayPPOTrainer uses."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import torch
from torchdata.stateful_dataloader import StatefulDataLoader
from verl import DataProto
from verl.trainer.ppo.ray_trainer import RayPPOTrainer
from verl.trainer.ppo.reward import extract_reward
from verl.utils.dataset.rl_dataset import collate_fn

RESPONSE_LEN = 6


def make_loader(
    dataset: Any, sampler: Any, batch_size: int, num_workers: int = 0
) -> StatefulDataLoader:
    """The train dataloader exactly as verl's RayPPOTrainer._create_dataloader builds it."""
    kwargs: dict[str, Any] = {}
    if num_workers:
        kwargs["prefetch_factor"] = 2
    return StatefulDataLoader(
        dataset=dataset,
        batch_size=batch_size,
        num_workers=num_workers,
        drop_last=True,
        collate_fn=collate_fn,
        sampler=sampler,
        **kwargs,
    )


def solved(task_ids: np.ndarray, rollout: np.ndarray, step: int) -> np.ndarray:
    """Deterministic toy verifier: pass rate depends on the task, outcome on rollout and step."""
    rate = (task_ids % 5) / 4.0  # 0, .25, .5, .75, 1
    u = ((task_ids * 7919 + rollout * 104729 + step * 15485863) % 1000) / 1000.0
    return (u < rate).astype(np.float32)


def verl_step_batch(
    batch_dict: dict[str, Any], n: int, step: int, *, shuffle_seed: int | None = 0
) -> DataProto:
    """The DataProto RayPPOTrainer.fit holds when it reports a step, built with verl's own code.

    Generation needs a model server, so the rollout output is made here in the layout
    the agent loop returns (responses, response_mask, rm_scores at the last token);
    every other stage is verl's: from_single_dict, uid, _get_gen_batch, repeat, union,
    extract_reward, and a reorder like _balance_batch.
    """
    batch = DataProto.from_single_dict(batch_dict)
    batch.non_tensor_batch["uid"] = np.array(
        [str(uuid.uuid4()) for _ in range(len(batch.batch))], dtype=object
    )
    gen_batch = RayPPOTrainer._get_gen_batch(None, batch)
    gen_out = gen_batch.repeat(repeat_times=n, interleave=True)
    ids = np.array([e["index"] for e in gen_out.non_tensor_batch["extra_info"]], dtype=np.int64)
    rollout = np.tile(np.arange(n), len(batch.batch))
    scores = solved(ids, rollout, step)
    lengths = torch.from_numpy((ids + rollout) % RESPONSE_LEN + 1)
    mask = (torch.arange(RESPONSE_LEN)[None, :] < lengths[:, None]).long()
    rm_scores = torch.zeros(len(ids), RESPONSE_LEN)
    rm_scores[torch.arange(len(ids)), lengths - 1] = torch.from_numpy(scores)
    output = DataProto.from_dict(
        tensors={
            "responses": torch.ones(len(ids), RESPONSE_LEN, dtype=torch.long),
            "response_mask": mask,
            "rm_scores": rm_scores,
        },
        non_tensors={"__num_turns__": np.full(len(ids), 2, dtype=np.int32)},
        meta_info={"reward_extra_keys": []},
    )
    batch = batch.repeat(repeat_times=n, interleave=True)
    batch = batch.union(output)
    reward_tensor, _ = extract_reward(batch)
    batch.batch["token_level_scores"] = reward_tensor
    batch.batch["token_level_rewards"] = reward_tensor
    if shuffle_seed is not None:
        perm = np.random.default_rng(shuffle_seed + step).permutation(len(batch))
        batch.reorder(torch.from_numpy(perm))
    return batch


def expected_feedback(batch: DataProto) -> tuple[np.ndarray, np.ndarray]:
    """(stable task ids, sequence rewards) of a reported batch, read independently."""
    ids = np.array([e["index"] for e in batch.non_tensor_batch["extra_info"]], dtype=np.int64)
    return ids, batch.batch["token_level_scores"].sum(-1).numpy().astype(np.float64)


def assert_tree_equal(a: Any, b: Any, path: str = "") -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=path)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            assert_tree_equal(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_tree_equal(x, y, f"{path}/{i}")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), path
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"
