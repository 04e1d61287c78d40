"""verl's own DAPO filter (`algorithm.filter_groups`) with our sampler and greso inside, on the
v1 trainer: the combination docs/integrations/verl.md recommends for dynamic sampling.

The real PPOTrainerSync is built from verl's Hydra config with FrontierReplayBuffer; its
replay buffer runs verl's filter over a real TransferQueue on a local Ray instance. Only
generation is stood in for (it needs a model server): the agent loop manager writes each
submitted prompt's finished group to TransferQueue at once, in the agent loop's layout.
Even task ids are solved (every rollout scores 1: zero variance), odd ones mixed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from test_verl_v1_replay_buffer import N, transfer_queue  # noqa: F401 - a fixture
from verl_data import build_tokenizer, write_parquet

pytestmark = [pytest.mark.integration, pytest.mark.slow]

B = 4


def compose(
    train_file: Path, tmp_path: Path, *, filter_on: bool, extra: tuple[str, ...] = ()
) -> Any:
    import os

    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    overrides = [
        f"data.train_files=['{train_file}']",
        f"data.val_files=['{train_file}']",
        f"data.train_batch_size={B}",
        "data.gen_batch_size=1",  # verl's sync DAPO refills prompt by prompt
        "data.dataloader_num_workers=0",
        "data.max_prompt_length=16",
        "data.filter_overlong_prompts_workers=1",
        f"++data.cache_dir={tmp_path / 'verl_cache'}",
        f"actor_rollout_ref.rollout.n={N}",
        "trainer.use_v1=true",
        "trainer.v1.trainer_mode=sync",
        "trainer.v1.sampler.custom_sampler.path=pkg://frontier_rft.integrations.verl.v1",
        "trainer.v1.sampler.custom_sampler.name=FrontierReplayBuffer",
        "++trainer.v1.sampler.sampler_kwargs.selector=greso",
        "++trainer.v1.sampler.sampler_kwargs.seed=0",
        f"algorithm.filter_groups.enable={str(filter_on).lower()}",
        "algorithm.filter_groups.metric=reward",
        *extra,
    ]
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return hydra_compose("ppo_trainer", overrides=overrides)


class InstantRollouts:
    """Stands in for verl's AgentLoopManager: every submitted prompt's group is finished at
    once (status, trajectories with rm_scores, index and uid), as the agent loop leaves it;
    with `fail_first`, the first prompt's group fails instead (no trajectory, status
    failure), as the agent loop leaves a group whose every session errored."""

    def __init__(self, tq: Any, trainer: Any, *, fail_first: bool = False):
        self.tq, self.trainer = tq, trainer
        self.generated: list[tuple[int, float]] = []  # (stable task id, reward) per rollout
        self.fail_next = fail_first

    def generate_sequences(self, batch: Any) -> None:
        from verl.utils.tensordict_utils import list_of_dict_to_tensordict

        step = int(self.trainer.global_steps)
        uids = [str(u) for u in batch["uid"]]
        index = [int(getattr(v, "data", v)) for v in batch["index"]]
        keys, fields, failed = [], [], []
        for uid, task in zip(uids, index, strict=True):
            if self.fail_next:
                self.fail_next = False
                failed.append(uid)
                continue
            for session in range(N):
                reward = 1.0 if task % 2 == 0 else float(session == 0)
                scores = torch.zeros(5)
                scores[-1] = reward
                keys.append(f"{uid}_{session}_0")
                fields.append({"rm_scores": scores, "index": task, "uid": uid})
                self.generated.append((task, reward))
        if keys:
            self.tq.kv_batch_put(
                keys=keys,
                fields=list_of_dict_to_tensordict(fields),
                tags=[{"status": "success", "global_steps": step} for _ in keys],
                partition_id="train",
            )
        self.tq.kv_batch_put(
            keys=uids,
            partition_id="train",
            tags=[{"is_prompt": True, "global_steps": step,
                   "status": "failure" if u in failed else "finished"} for u in uids],
        )  # fmt: skip


def build(
    tmp_path: Path,
    tq: Any,
    *,
    filter_on: bool,
    extra: tuple[str, ...] = (),
    fail_first: bool = False,
) -> tuple[Any, InstantRollouts]:
    from verl.trainer.ppo.v1 import get_trainer_cls

    train_file = write_parquet(tmp_path / "train.parquet", 40)
    config = compose(train_file, tmp_path, filter_on=filter_on, extra=extra)
    trainer = get_trainer_cls("sync")(config=config)
    trainer.tokenizer, trainer.processor = build_tokenizer(), None  # no hub model
    trainer._init_dataloader()
    rollouts = InstantRollouts(tq, trainer, fail_first=fail_first)
    trainer.agent_loop_manager = rollouts
    return trainer, rollouts


def run_steps(trainer: Any, tq: Any, steps: int) -> list[tuple[list[int], list[float], dict]]:
    """verl's sync step, prompt side: submit a batch, sample B finished groups from the
    buffer (which evicts, refills and discards as verl's filter does), consume them."""
    out = []
    for step in range(1, steps + 1):
        trainer.global_steps = step
        trainer.prepare_step()  # one train_batch_size of prompts to the "rollout"
        meta, metrics = trainer.replay_buffer.sample(
            global_steps=step, partition_id="train", batch_size=B
        )
        data = tq.kv_batch_get(
            keys=meta.keys, partition_id="train", select_fields=["index", "rm_scores"]
        )
        ids = [int(getattr(v, "data", v)) for v in data["index"]]
        rewards = [float(v.float().sum()) for v in data["rm_scores"]]
        tq.kv_clear(keys=meta.keys, partition_id="train")  # the trainer consumes the batch
        out.append((ids, rewards, metrics))
    return out


def test_verls_filter_runs_with_our_buffer_and_every_rollout_reaches_greso(
    tmp_path: Path,
    transfer_queue: Any,  # noqa: F811 - the fixture
) -> None:
    trainer, rollouts = build(tmp_path, transfer_queue, filter_on=True)
    buffer = trainer.replay_buffer
    assert buffer.filter_groups_metric == "reward"  # algorithm.filter_groups reached the buffer
    steps = run_steps(trainer, transfer_queue, 3)
    for ids, rewards, _ in steps:
        groups = np.asarray(rewards).reshape(-1, N)
        assert groups.shape == (B, N)  # a full batch ...
        assert bool((groups.max(axis=1) > groups.min(axis=1)).all())  # ... of mixed groups only
        assert all(t % 2 for t in ids)
    evicted = sum(m.get("training/filter_groups/evicted_samples", 0) for _, _, m in steps)
    assert evicted > 0  # verl's filter dropped the solved groups ...
    sampler = buffer.frontier
    sampler.selector.flush()
    generated = len(rollouts.generated)
    metrics = sampler.selector.metrics()
    # ... and greso received every rollout generated, the dropped groups' included: once each.
    assert metrics["feedback/rollouts"] == generated
    assert sampler.metrics()["verl/outstanding_draws"] == 0
    assert metrics["feedback/rollouts"] > 3 * B * N  # more than the trained groups alone
    # greso learned that the even tasks come out all correct: each has an easy streak.
    even = {t for t, _ in rollouts.generated if t % 2 == 0}
    assert len(even) > 0 and metrics["greso/easy_streak_tasks"] == len(even)


def test_the_docs_snippet_turns_the_filter_on_with_our_buffer(tmp_path: Path) -> None:
    from test_verl_docs_config import compose_snippet, yaml_blocks

    (snippet,) = [b for b in yaml_blocks() if "filter_groups" in b]
    cfg = compose_snippet(tmp_path, snippet)
    assert cfg.algorithm.filter_groups.enable and cfg.algorithm.filter_groups.metric == "reward"
    assert cfg.trainer.v1.sampler.custom_sampler.name == "FrontierReplayBuffer"
    assert cfg.trainer.v1.sampler.sampler_kwargs.selector == "greso"
    assert cfg.trainer.use_v1 and cfg.data.gen_batch_size == 1


def test_without_the_filter_every_group_is_trained(
    tmp_path: Path,
    transfer_queue: Any,  # noqa: F811 - the fixture
) -> None:
    trainer, rollouts = build(tmp_path, transfer_queue, filter_on=False)
    assert trainer.replay_buffer.filter_groups_metric is None
    ((ids, _, metrics),) = run_steps(trainer, transfer_queue, 1)
    assert len(rollouts.generated) == B * N and sorted(ids) == sorted(
        t for t, _ in rollouts.generated
    )
    assert "training/filter_groups/evicted_samples" not in metrics


def test_sync_refill_failed_groups_reaches_our_buffer_with_the_filter_off(tmp_path: Path) -> None:
    """As verl's _build_replay_buffer gives it to its own buffer (it was dropped unless the
    filter was on); no Ray: building the trainer needs none."""
    from verl.trainer.ppo.v1 import get_trainer_cls

    refill = "trainer.v1.sampler.sync_refill_failed_groups"
    for on in (True, False):
        config = compose(write_parquet(tmp_path / "train.parquet", 8), tmp_path,
                         filter_on=False, extra=(f"{refill}={str(on).lower()}",))  # fmt: skip
        buffer = get_trainer_cls("sync")(config=config).replay_buffer
        assert buffer.sync_refill_failed_groups is on and buffer.filter_groups_metric is None
        assert buffer.gen_batch_size == (1 if on else None)  # verl's: refills one by one


def test_sync_refill_failed_groups_is_honoured_with_the_filter_off(
    tmp_path: Path,
    transfer_queue: Any,  # noqa: F811 - the fixture
) -> None:
    """verl's trainer.v1.sampler.sync_refill_failed_groups reaches our buffer without the
    filter too (it was dropped): a failed group is replaced, the batch is full."""
    trainer, rollouts = build(
        tmp_path, transfer_queue, filter_on=False, fail_first=True,
        extra=("trainer.v1.sampler.sync_refill_failed_groups=true",),
    )  # fmt: skip
    buffer = trainer.replay_buffer
    assert buffer.sync_refill_failed_groups and buffer.filter_groups_metric is None
    ((ids, rewards, metrics),) = run_steps(trainer, transfer_queue, 1)
    assert len(ids) == len(rewards) == B * N  # the failed group was replaced, not trained short
    assert metrics["training/rollout_failure/evicted_samples"] == 1
    assert "training/filter_groups/evicted_samples" not in metrics
    assert len(rollouts.generated) == B * N  # B groups generated besides the failed one
