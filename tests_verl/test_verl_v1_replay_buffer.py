"""verl v1 trainer seam: the real PPOTrainerSync builds FrontierReplayBuffer from config.

Constructed from verl's own Hydra config with the custom sampler turned on, the trainer
builds its dataloader (over our sampler), fetches prompts, and its replay buffer samples
finished groups from a real TransferQueue on a local Ray instance. Generation needs a
model server, so the finished trajectories are written to TransferQueue in the agent
loop's layout (keys `{uid}_{session}_0`, fields `rm_scores`, `index`, `uid`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from verl_batches import assert_tree_equal
from verl_data import build_tokenizer, write_parquet

from frontier_rft import Feedback, make_selector

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
B, N = 4, 3


def compose_config(train_file: Path, tmp_path: Path) -> Any:
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    overrides = [
        f"data.train_files=['{train_file}']",
        f"data.val_files=['{train_file}']",
        f"data.train_batch_size={B}",
        "data.dataloader_num_workers=0",
        "data.max_prompt_length=16",
        "data.filter_overlong_prompts_workers=1",
        f"++data.cache_dir={tmp_path / 'verl_cache'}",
        f"actor_rollout_ref.rollout.n={N}",
        "trainer.use_v1=true",
        "trainer.v1.trainer_mode=sync",
        # The snippet from docs/integrations/verl.md:
        "trainer.v1.sampler.custom_sampler.path=pkg://frontier_rft.integrations.verl.v1",
        "trainer.v1.sampler.custom_sampler.name=FrontierReplayBuffer",
        "++trainer.v1.sampler.sampler_kwargs.selector=bots",
        "++trainer.v1.sampler.sampler_kwargs.seed=2",
    ]
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose("ppo_trainer", overrides=overrides)


@pytest.fixture
def transfer_queue() -> Iterator[Any]:
    import ray
    import transfer_queue as tq
    from omegaconf import OmegaConf

    from frontier_rft.integrations.ray.local import init_local

    # A 180 s start-up timeout and 3 attempts, each failed one's processes stopped before
    # the next, so a busy 2-core machine does not fail with "The current node timed out
    # during startup" (integrations/ray/local.py).
    init_local(REPO / ".ray_tmp", num_cpus=2)
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
    try:
        yield tq
    finally:
        tq.close()
        ray.shutdown()


def finish_rollouts(tq: Any, batch: Any, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Write finished groups for `batch` as verl's agent loop does; returns (ids, rewards)."""
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    uids = [str(u) for u in batch["uid"]]
    index = [int(getattr(v, "data", v)) for v in batch["index"]]
    tq.kv_batch_put(
        keys=uids,
        partition_id="train",
        tags=[{"is_prompt": True, "status": "finished", "global_steps": step} for _ in uids],
    )
    keys, fields, ids, rewards = [], [], [], []
    for uid, task in zip(uids, index, strict=True):
        for session in range(N):
            reward = float((task + session + step) % 2)
            scores = torch.zeros(5)
            scores[-1] = reward
            keys.append(f"{uid}_{session}_0")
            fields.append({"rm_scores": scores, "index": task, "uid": uid})
            ids.append(task)
            rewards.append(reward)
    tq.kv_batch_put(
        keys=keys,
        fields=list_of_dict_to_tensordict(fields),
        tags=[{"status": "success", "global_steps": step} for _ in keys],
        partition_id="train",
    )
    return np.asarray(ids), np.asarray(rewards)


def test_v1_trainer_draws_from_the_selector_and_reports_every_sampled_reward(
    tmp_path: Path, transfer_queue: Any
) -> None:
    from verl.trainer.ppo.v1 import get_trainer_cls

    from frontier_rft.integrations.verl import FrontierSampler
    from frontier_rft.integrations.verl.v1 import FrontierReplayBuffer

    config = compose_config(write_parquet(tmp_path / "train.parquet", 40), tmp_path)
    trainer = get_trainer_cls("sync")(config=config)
    assert isinstance(trainer.replay_buffer, FrontierReplayBuffer)
    trainer.tokenizer, trainer.processor = (
        build_tokenizer(),
        None,
    )  # _init_tokenizer loads a hub model
    trainer._init_dataloader()
    sampler = trainer.replay_buffer.frontier
    assert isinstance(sampler, FrontierSampler)
    assert trainer.train_dataloader.sampler is sampler

    reference = make_selector("bots", sampler.selector.pool, seed=2)
    for step in (1, 2):
        trainer.global_steps = step
        batch = trainer._next_train_batch()  # verl's own prompt fetch
        chosen = reference.select(B)
        assert [int(getattr(v, "data", v)) for v in batch["index"]] == sampler.task_ids[
            chosen
        ].tolist()
        ids, rewards = finish_rollouts(transfer_queue, batch, step)
        meta, _ = trainer.replay_buffer.sample(
            global_steps=step, partition_id="train", batch_size=B
        )
        assert len(meta.keys) == B * N
        reference.update(
            Feedback(task_ids=sampler.positions_of(ids), rewards=rewards, step=step - 1)
        )
        transfer_queue.kv_clear(keys=meta.keys, partition_id="train")

    sampler.selector.flush()
    reference.flush()
    assert sampler.selector.metrics()["feedback/rollouts"] == 2 * B * N
    assert_tree_equal(sampler.selector.state_dict(), reference.state_dict())
    # verl's v1 checkpoint saves train_dataloader.state_dict(): the curriculum is in it.
    state = trainer.train_dataloader.state_dict()
    saved = state["_index_sampler_state"] or state["_sampler_iter_state"]["sampler_state"]
    assert_tree_equal(saved["selector"], sampler.selector.state_dict())
