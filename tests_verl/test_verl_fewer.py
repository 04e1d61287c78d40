"""`rollouts: kept` on verl: uniform's schedule, only the prompts the selector keeps rolled out.

The real PPOTrainerSync is built from verl's Hydra config with FrontierReplayBuffer and
`rollouts: kept`; its dataloader (rebuilt over our window batches), its `prepare_step`, its
replay buffer over a real TransferQueue on a local Ray instance and its `_balance_batch`
(verl's padding, cut by the adapter to what the ranks need: test_verl_kept_step.py) run as in
a step. Only
generation is stood in for (it needs a model server), on a scripted pool: a third of the
prompts always solved, a third never, a third mixed.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from test_verl_v1_replay_buffer import transfer_queue  # noqa: F401 - a fixture
from torchdata.stateful_dataloader import StatefulDataLoader
from verl_batches import assert_tree_equal, make_loader, verl_step_batch
from verl_data import build_tokenizer, write_parquet

from frontier_rft import make_selector
from frontier_rft.integrations.verl import FrontierSampler, VerlSamplerConfig
from frontier_rft.sampling.fewer_rollouts import FewerRollouts

pytestmark = [pytest.mark.integration, pytest.mark.slow]

B, N, ROWS, EPOCHS = 4, 4, 24, 2
MINI = 2  # actor.ppo_mini_batch_size (prompts): two mini-batches in uniform's step
DP = 2  # data-parallel ranks the stand-in worker group reports


def reward(task: int, session: int) -> float:
    """The scripted pool: task ids 1000 + i; i % 3 == 0 solved, 1 never, 2 mixed."""
    kind = (task - 1000) % 3
    return 1.0 if kind == 0 else 0.0 if kind == 1 else float(session % 2)


KEPT_KWARGS = ("selector=greso", "seed=0", "rollouts=kept")
"""The sampler_kwargs these tests run with (`compose`'s default)."""


def compose(
    train_file: Path, tmp_path: Path, *extra: str, kwargs: tuple[str, ...] = KEPT_KWARGS
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
        "data.dataloader_num_workers=0",
        "data.max_prompt_length=16",
        "data.filter_overlong_prompts_workers=1",
        f"++data.cache_dir={tmp_path / 'verl_cache'}",
        f"actor_rollout_ref.rollout.n={N}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={MINI}",
        "algorithm.adv_estimator=grpo",
        f"trainer.total_epochs={EPOCHS}",
        "trainer.use_v1=true",
        "trainer.v1.trainer_mode=sync",
        "trainer.v1.sampler.custom_sampler.path=pkg://frontier_rft.integrations.verl.v1",
        "trainer.v1.sampler.custom_sampler.name=FrontierReplayBuffer",
        *(f"++trainer.v1.sampler.sampler_kwargs.{kv}" for kv in kwargs),
        *extra,
    ]
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return hydra_compose("ppo_trainer", overrides=overrides)


class ScriptedRollouts:
    """Stands in for verl's AgentLoopManager: every submitted prompt's group of N is
    finished at once, in the agent loop's layout, with the scripted rewards."""

    def __init__(self, tq: Any, trainer: Any):
        self.tq, self.trainer = tq, trainer
        self.submitted: list[list[int]] = []  # stable task ids per generate call

    def generate_sequences(self, batch: Any) -> None:
        from verl.utils.tensordict_utils import list_of_dict_to_tensordict

        step = int(self.trainer.global_steps)
        uids = [str(u) for u in batch["uid"]]
        index = [int(getattr(v, "data", v)) for v in batch["index"]]
        self.submitted.append(index)
        keys, fields, tags = [], [], []
        for uid, task in zip(uids, index, strict=True):
            for session in range(N):
                length = 2 + (task + session) % 3
                prompts = torch.full((3,), 5, dtype=torch.int64)
                responses = torch.full((length,), 6, dtype=torch.int64)
                input_ids = torch.cat([prompts, responses])
                scores = torch.zeros(length)
                scores[-1] = reward(task, session)
                keys.append(f"{uid}_{session}_0")
                fields.append(
                    {  # the agent loop's fields (agent_loop_tq._agent_loop_postprocess)
                        "prompts": prompts,
                        "responses": responses,
                        "response_mask": torch.ones(length, dtype=torch.int64),
                        "loss_mask": torch.ones(length, dtype=torch.int64),
                        "input_ids": input_ids,
                        "attention_mask": torch.ones_like(input_ids),
                        "position_ids": torch.arange(input_ids.numel()),
                        "rm_scores": scores,
                        "index": task,
                        "uid": uid,
                    }
                )
                tags.append(
                    {
                        "status": "success",
                        "prompt_len": 3,
                        "response_len": length,
                        "seq_len": 3 + length,
                        "global_steps": step,
                        "min_global_steps": step,
                        "max_global_steps": step,
                    }
                )
        self.tq.kv_batch_put(
            keys=keys, fields=list_of_dict_to_tensordict(fields), tags=tags, partition_id="train"
        )
        self.tq.kv_batch_put(
            keys=uids,
            partition_id="train",
            tags=[{"is_prompt": True, "status": "finished", "global_steps": step} for _ in uids],
        )


def build(
    tmp_path: Path, tq: Any, *extra: str, kwargs: tuple[str, ...] = KEPT_KWARGS
) -> tuple[Any, ScriptedRollouts]:
    from verl.trainer.ppo.v1 import get_trainer_cls

    train = write_parquet(tmp_path / "train.parquet", ROWS, long_every=0)
    trainer = get_trainer_cls("sync")(config=compose(train, tmp_path, *extra, kwargs=kwargs))
    trainer.tokenizer, trainer.processor = build_tokenizer(), None  # no hub model
    trainer._init_dataloader()
    rollouts = ScriptedRollouts(tq, trainer)
    trainer.agent_loop_manager = rollouts
    # _balance_batch asks the actor worker group for its data-parallel layout
    trainer.actor_rollout_wg = SimpleNamespace(_dispatch_info={"actor": list(range(DP))})
    return trainer, rollouts


def reference_windows(pool: Any, steps: int) -> list[list[int]]:
    """The reference trainer's rule on the same pool: FewerRollouts(greso) with the skip,
    each step's prompts (dataset positions) as its `sample` rolls them out."""
    wrapper = FewerRollouts(make_selector("greso", pool, seed=0))
    out: list[list[int]] = []

    def rollout(ids: np.ndarray) -> np.ndarray:
        out.append([int(i) for i in ids])
        return np.array([reward(1000 + int(i), s) for i in ids for s in range(N)])

    for step in range(steps):
        wrapper.sample(step, B, N, rollout)
    return out


def test_kept_keeps_verls_schedule_and_rolls_out_fewer_on_a_scripted_pool(
    tmp_path: Path,
    transfer_queue: Any,  # noqa: F811 - the fixture
) -> None:
    from verl.trainer.ppo.core_algos import agg_loss

    trainer, rollouts = build(tmp_path, transfer_queue)
    steps = trainer.total_training_steps
    # verl's schedule is uniform's: len(dataset) // train_batch_size steps an epoch
    assert (trainer.steps_per_epoch, steps) == (ROWS // B, EPOCHS * ROWS // B)
    assert trainer.config.actor_rollout_ref.actor.optim.total_training_steps == steps
    multiple = math.lcm(DP, MINI * N)  # verl's own _get_required_batch_multiple
    trained_rows = 0
    for step in range(1, steps + 1):
        trainer.global_steps = step
        trainer.prepare_step()  # one window of uniform's batch to the "rollout"
        meta, _ = trainer.replay_buffer.sample(
            global_steps=step, partition_id="train", batch_size=B
        )
        kept = len(rollouts.submitted[-1])
        assert 1 <= kept <= B and len(meta) == kept * N  # every kept group, nothing waited for
        trained_rows += len(meta)
        balanced = trainer._balance_batch(meta, metrics={})
        # the kept step's padding: every rank the same rows, verl's number of updates, and
        # never more rows than verl's own padding to whole mini-batches
        layout = trainer.replay_buffer.kept_step.layout
        assert len(balanced) == layout.padded and len(balanced) % DP == 0
        assert layout.updates == (math.ceil(len(meta) / (MINI * N)),)
        assert len(meta) <= len(balanced) <= -(-len(meta) // multiple) * multiple
        pads = [
            k for k, tag in zip(balanced.keys, balanced.tags, strict=True) if tag.get("is_padding")
        ]
        assert len(pads) == len(balanced) - len(meta)
        if pads:
            data = transfer_queue.kv_batch_get(
                keys=pads, partition_id="train", select_fields=["response_mask", "rm_scores"]
            )
            assert all(int(m.sum()) == 0 for m in data["response_mask"])  # no loss term
        transfer_queue.kv_clear(keys=balanced.keys, partition_id="train")  # the trainer's step 7
    generated = sum(len(ids) for ids in rollouts.submitted) * N
    uniform = steps * B * N
    sampler = trainer.replay_buffer.frontier
    sampler.selector.flush()
    assert sampler.selector.metrics()["feedback/rollouts"] == generated == trained_rows
    # The reference trainer's rule, on the same pool and rewards, rolls out the same prompts.
    expected = reference_windows(sampler.selector.pool, steps)
    positions = [sampler.positions_of(ids).tolist() for ids in rollouts.submitted]
    assert positions == expected
    first_epoch = sum(len(ids) for ids in rollouts.submitted[: steps // EPOCHS]) * N
    assert first_epoch == uniform // EPOCHS  # greso skips nothing before a prompt's first group
    assert (generated, uniform) == (160, 192)
    print(f"\nverl rollouts: kept: {generated} rollouts, uniform {uniform}")

    # How verl normalises the padded batch (core_algos.agg_loss, as the actor calls it):
    # token-mean over the real tokens (pads have mask 0), seq-mean over the mini-batch's rows.
    loss = torch.rand(2 * N, 5)
    mask = torch.ones(2 * N, 5)
    mask[N:] = 0  # one real group, one group of padding rows
    real = agg_loss(loss[:N], mask[:N], "token-mean")
    assert torch.allclose(agg_loss(loss, mask, "token-mean", batch_num_tokens=mask.sum()), real)
    seq = agg_loss(loss, mask, "seq-mean-token-mean", global_batch_size=2 * N)
    assert torch.allclose(seq, agg_loss(loss[:N], mask[:N], "seq-mean-token-mean") / 2)


def test_kept_batches_through_verls_dataloader_are_the_reference_trainers(
    tmp_path: Path, tokenizer: Any
) -> None:
    # The same pool without Ray: verl's RLHFDataset, collate_fn and a StatefulDataLoader over
    # the window batches, each step's rewards reported as the v1 buffer reports them.
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from conftest import data_config

    path = write_parquet(tmp_path / "train.parquet", ROWS, long_every=0)
    ds = RLHFDataset(data_files=str(path), tokenizer=tokenizer, config=data_config(tmp_path))
    config = VerlSamplerConfig(batch_size=B, selector="greso", seed=0, rollouts="kept")
    sampler = FrontierSampler(ds, config=config)
    loader = StatefulDataLoader(ds, batch_sampler=sampler.batches(), collate_fn=collate_fn)
    assert len(loader) == ROWS // B  # verl's steps an epoch
    seen: list[list[int]] = []
    for _ in range(EPOCHS):
        for batch_dict in loader:
            ids = [int(i) for i in batch_dict["index"]]
            seen.append(ids)
            tasks = np.repeat(ids, N)
            rewards = [reward(task, s) for task in ids for s in range(N)]
            sampler.report(tasks, rewards, np.repeat([str(i) for i in ids], N))
    assert len(seen) == EPOCHS * ROWS // B
    positions = [sampler.positions_of(ids).tolist() for ids in seen]
    assert positions == reference_windows(sampler.selector.pool, len(seen))
    assert [len(ids) for ids in seen] == [4, 4, 4, 4, 4, 4, 4, 2, 4, 2, 2, 2]
    assert sum(len(ids) for ids in seen) * N == 160  # uniform: 12 x 4 x 4 = 192
    assert sampler.metrics()["fewer_rollouts/kept"] == 2


def test_kept_resumes_exactly_from_verls_dataloader_checkpoint(make_dataset: Any) -> None:
    from verl.utils.dataset.rl_dataset import collate_fn

    def loader_of(ds: Any) -> tuple[FrontierSampler, StatefulDataLoader]:
        config = VerlSamplerConfig(batch_size=B, selector="greso", seed=4, rollouts="kept")
        sampler = FrontierSampler(ds, config=config)
        batches = sampler.batches()
        return sampler, StatefulDataLoader(ds, batch_sampler=batches, collate_fn=collate_fn)

    def run(sampler: FrontierSampler, it: Any, start: int, count: int) -> list[list[int]]:
        seen = []
        for step in range(start, start + count):
            batch_dict = next(it)
            seen.append(batch_dict["index"].tolist())
            sampler.update(verl_step_batch(batch_dict, N, step))
        return seen

    def forever(loader: StatefulDataLoader) -> Any:
        while True:
            yield from loader

    ds = make_dataset(48)  # 42 prompts after filtering: 10 windows an epoch
    k, m = 13, 14  # saved mid-epoch (the second), continued into the third
    sampler, loader = loader_of(ds)
    it = forever(loader)
    run(sampler, it, 0, k)
    saved = loader.state_dict()
    uninterrupted = run(sampler, it, k, m)
    ds2 = make_dataset(48)
    sampler2, loader2 = loader_of(ds2)
    loader2.load_state_dict(saved)
    resumed = run(sampler2, forever(loader2), k, m)
    assert resumed == uninterrupted
    assert any(len(ids) < B for ids in uninterrupted)  # windows did shrink
    assert_tree_equal(sampler2.selector.state_dict(), sampler.selector.state_dict())


def test_kept_is_refused_where_verl_cannot_shrink_a_step(make_dataset: Any) -> None:
    ds = make_dataset(48)
    config = VerlSamplerConfig(batch_size=B, selector="greso", rollouts="kept")
    sampler = FrontierSampler(ds, config=config)
    # The legacy RayPPOTrainer's dataloader (and verl <= 0.7's) takes a per-prompt sampler.
    with pytest.raises(ValueError, match=r"v1 sync trainer.*Fewer rollouts on verl"):
        len(make_loader(ds, sampler, B))
    with pytest.raises(ValueError, match="v1 sync trainer"):
        iter(sampler)
    assert sampler.metrics()["verl/draws"] == 0  # refused before anything moved
    with pytest.raises(ValueError, match="does not walk the data"):
        VerlSamplerConfig(batch_size=B, selector="bots", rollouts="kept")
    with pytest.raises(ValueError, match="does not walk the data"):
        FrontierSampler(ds, config=config, selector=make_selector("bots", sampler.selector.pool))
    with pytest.raises(ValueError, match="rollouts must be auto"):
        VerlSamplerConfig(batch_size=B, rollouts="some")


def test_kept_with_verls_dapo_filter_or_an_async_trainer_is_refused(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    from frontier_rft.integrations.verl.v1 import FrontierReplayBufferAsync

    class Trainer:  # what the buffer reads of verl's trainer before it refuses
        config = OmegaConf.create(
            {"algorithm": {"filter_groups": None}, "trainer": {"v1": {"sampler": {}}}}
        )

        def _init_dataloader(self) -> None: ...

    common = {
        "trainer_config": OmegaConf.create({}),
        "max_off_policy_threshold": None,
        "max_off_policy_strategy": "drop",
        "sampler_kwargs": {"rollouts": "kept"},
        "refill_fn": Trainer()._init_dataloader,
    }
    with pytest.raises(ValueError, match="trainer_mode: sync"):
        FrontierReplayBufferAsync(trainer_mode="colocate_async", **common)
    train = write_parquet(tmp_path / "train.parquet", ROWS, long_every=0)
    from verl.trainer.ppo.v1 import get_trainer_cls

    config = compose(
        train,
        tmp_path,
        "algorithm.filter_groups.enable=true",
        "algorithm.filter_groups.metric=reward",
        "data.gen_batch_size=1",
    )
    with pytest.raises(ValueError, match=r"filter_groups\.enable=false"):
        get_trainer_cls("sync")(config=config)
    config = compose(
        train,
        tmp_path,
        "trainer.v1.sampler.sync_refill_failed_groups=true",
        "data.gen_batch_size=1",
    )
    with pytest.raises(ValueError, match="sync_refill_failed_groups"):
        get_trainer_cls("sync")(config=config)
    with pytest.raises(ValueError, match="unset gen_batch_size"):
        get_trainer_cls("sync")(config=compose(train, tmp_path, "data.gen_batch_size=2"))


def test_full_rollouts_with_the_same_selector_fill_every_batch(make_dataset: Any) -> None:
    # The former default stays under rollouts: full: B prompts per batch.
    ds = make_dataset(48)
    config = VerlSamplerConfig(batch_size=B, selector="greso", rollouts="full")
    sampler = FrontierSampler(ds, config=config)
    batches = [b["index"].tolist() for b in make_loader(ds, sampler, B)]
    assert batches and all(len(ids) == B for ids in batches)
    assert "fewer_rollouts/kept" not in sampler.metrics()


def test_the_docs_snippet_turns_kept_on(tmp_path: Path) -> None:
    from test_verl_docs_config import compose_snippet, yaml_blocks

    (snippet,) = [b for b in yaml_blocks() if "rollouts: kept" in b]
    cfg = compose_snippet(tmp_path, snippet)
    assert cfg.trainer.v1.sampler.custom_sampler.name == "FrontierReplayBuffer"
    assert cfg.trainer.v1.trainer_mode == "sync"
    kwargs = dict(cfg.trainer.v1.sampler.sampler_kwargs)
    config = VerlSamplerConfig(batch_size=cfg.data.train_batch_size, **kwargs)
    assert (config.selector, config.rollouts) == ("greso", "kept")
