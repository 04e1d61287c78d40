"""v1 trainer: the configured reward_key is what the selector gets, and the selector's metrics
come back from the replay buffer's `sample()`, which the trainer merges into the metrics it
logs. The real PPOTrainerSync, its replay buffer and a TransferQueue on local Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from test_verl_v1_replay_buffer import B, N, compose_config
from test_verl_v1_replay_buffer import transfer_queue as transfer_queue  # the fixture
from verl_data import build_tokenizer, write_parquet

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def finish_with_extra_info(tq: Any, batch: Any, step: int) -> tuple[list[float], list[float]]:
    """Finished groups whose reward_extra_info 'acc' differs from rm_scores' sum; returns
    (rm_scores sums, acc values) per trajectory."""
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    uids = [str(u) for u in batch["uid"]]
    index = [int(getattr(v, "data", v)) for v in batch["index"]]
    tq.kv_batch_put(
        keys=uids,
        partition_id="train",
        tags=[{"is_prompt": True, "status": "finished", "global_steps": step} for _ in uids],
    )
    keys, fields, scores, accs = [], [], [], []
    for uid, task in zip(uids, index, strict=True):
        for session in range(N):
            acc = float((task + session) % 2)
            rm = torch.zeros(5)
            rm[-1] = 0.5 + 0.25 * acc  # a shaped score that is not the success
            keys.append(f"{uid}_{session}_0")
            fields.append(
                {
                    "rm_scores": rm,
                    "index": task,
                    "uid": uid,
                    "extra_fields": {"reward_extra_info": {"acc": acc}},
                }
            )
            scores.append(float(rm.sum()))
            accs.append(acc)
    tq.kv_batch_put(
        keys=keys,
        fields=list_of_dict_to_tensordict(fields),
        tags=[{"status": "success", "global_steps": step} for _ in keys],
        partition_id="train",
    )
    return scores, accs


@pytest.mark.parametrize("reward_key", [None, "acc"])
def test_reward_key_is_honoured_and_metrics_reach_the_trainers_log(
    tmp_path: Path,
    transfer_queue: Any,
    reward_key: str | None,
) -> None:
    from verl.trainer.ppo.v1 import get_trainer_cls

    config = compose_config(write_parquet(tmp_path / "train.parquet", 40), tmp_path)
    if reward_key is not None:
        from omegaconf import open_dict

        with open_dict(config):  # what ++trainer.v1.sampler.sampler_kwargs.reward_key=acc does
            config.trainer.v1.sampler.sampler_kwargs.reward_key = reward_key
    trainer = get_trainer_cls("sync")(config=config)
    trainer.tokenizer, trainer.processor = build_tokenizer(), None
    trainer._init_dataloader()
    sampler = trainer.replay_buffer.frontier
    received: list[np.ndarray] = []
    update = sampler.selector.update
    sampler.selector.update = lambda fb, **kw: (
        received.append(fb.rewards.copy()),
        update(fb, **kw),
    )
    trainer.global_steps = 1
    batch = trainer._next_train_batch()
    scores, accs = finish_with_extra_info(transfer_queue, batch, 1)
    meta, metrics = trainer.replay_buffer.sample(global_steps=1, partition_id="train", batch_size=B)
    assert len(meta.keys) == B * N
    got = np.sort(np.concatenate(received))
    expected = accs if reward_key == "acc" else scores
    np.testing.assert_allclose(got, np.sort(expected))
    # The metrics sample() returns are merged by the trainer into what it logs.
    assert metrics["curriculum/feedback/steps"] == 1.0  # this step's rewards are in
    assert "curriculum/evidence/features/text" in metrics  # bots from the prompt text
    assert not any(k.startswith("curriculum/bots/") for k in metrics)  # the summary only
    assert not Path("frontier_metrics.jsonl").exists()  # the trainer logs them: no file
