"""FrontierSampler driven by verl's real RLHFDataset, StatefulDataLoader and DataProto."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from verl_batches import assert_tree_equal, expected_feedback, make_loader, verl_step_batch
from verl_data import write_parquet

from frontier_rft import Feedback, make_selector
from frontier_rft.integrations.verl import (
    FrontierSampler,
    VerlSamplerConfig,
    install_feedback_hook,
    read_task_ids,
)

pytestmark = pytest.mark.integration

B, N_ROLLOUTS = 4, 4


def forever(loader: Any) -> Iterator[dict[str, Any]]:
    """Batches across epochs, re-iterating the loader as verl's trainers do."""
    while True:
        yield from loader


def report(dataset: Any, batch: Any) -> None:
    # Exactly RayPPOTrainer.fit's call after each step.
    if hasattr(dataset, "on_batch_end"):
        dataset.on_batch_end(batch=batch)


def test_dataset_positions_follow_stable_ids_through_filtering(make_dataset: Any) -> None:
    ds = make_dataset(48)  # rows 6, 13, ... are overlong and filtered out by RLHFDataset
    assert len(ds) == 48 - 6
    ids = read_task_ids(ds)
    assert ids.tolist() == [1000 + i for i in range(48) if i % 7 != 6]
    sampler = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, selector="uniform"))
    batch = next(iter(make_loader(ds, sampler, B)))
    drawn = sampler.state_dict()["outstanding_ids"][0]
    # The dataloader fetched exactly the rows the selector chose, and they carry those ids.
    assert batch["index"].tolist() == ids[drawn].tolist()
    assert sampler.positions_of(batch["index"]).tolist() == drawn.tolist()


@pytest.mark.parametrize("selector", ["bots", "prioritized"])
def test_every_reward_reaches_the_selector_as_a_direct_call_would(
    make_dataset: Any, selector: str
) -> None:
    ds = make_dataset(48)
    sampler = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, selector=selector, seed=3))
    install_feedback_hook(ds, sampler)
    assert sampler.selector.pool.prompts is not None  # built from the dataset's prompt text
    reference = make_selector(selector, sampler.selector.pool, seed=3)
    ids_of = read_task_ids(ds)
    rewards_seen = []
    for step, batch_dict in zip(range(12), forever(make_loader(ds, sampler, B)), strict=False):
        chosen = reference.select(B)
        assert batch_dict["index"].tolist() == ids_of[chosen].tolist()
        batch = verl_step_batch(batch_dict, N_ROLLOUTS, step)
        report(ds, batch)
        task_ids, rewards = expected_feedback(batch)
        rewards_seen.append(rewards)
        reference.update(
            Feedback(task_ids=sampler.positions_of(task_ids), rewards=rewards, step=step)
        )
    assert 0 < np.concatenate(rewards_seen).mean() < 1  # mixed outcomes, not a trivial signal
    sampler.selector.flush()
    reference.flush()
    assert sampler.selector.metrics()["feedback/rollouts"] == 12 * B * N_ROLLOUTS
    assert_tree_equal(sampler.selector.state_dict(), reference.state_dict())
    assert sampler.metrics()["verl/outstanding_draws"] == 0


def test_late_rewards_are_paired_with_the_draw_that_produced_them(make_dataset: Any) -> None:
    # Batch t+1 is drawn before batch t's rewards arrive (a prefetching trainer).
    ds = make_dataset(48)
    sampler = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, selector="bots", seed=1))
    install_feedback_hook(ds, sampler)
    reference = make_selector("bots", sampler.selector.pool, seed=1)
    it = forever(make_loader(ds, sampler, B))
    held = [next(it)]
    reference.select(B)
    for step in range(8):
        held.append(next(it))
        reference.select(B)
        batch = verl_step_batch(held.pop(0), N_ROLLOUTS, step)
        report(ds, batch)
        task_ids, rewards = expected_feedback(batch)
        reference.update(
            Feedback(task_ids=sampler.positions_of(task_ids), rewards=rewards, step=step)
        )
    assert sampler.metrics()["verl/max_feedback_lag"] == 1
    assert sampler.metrics()["verl/outstanding_draws"] == 1
    # The sampler folds each reported step in at once (the next draw would fold the same):
    assert sampler.selector.metrics()["feedback/pending_rollouts"] == 0
    reference.flush()
    assert_tree_equal(sampler.selector.state_dict(), reference.state_dict())


def test_prefetching_worker_lag_is_absorbed(make_dataset: Any) -> None:
    # verl's default dataloader_num_workers > 0: indices are drawn ahead of training.
    ds = make_dataset(48)
    sampler = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, selector="prioritized"))
    install_feedback_hook(ds, sampler)
    loader = make_loader(ds, sampler, B, num_workers=1)
    for step, batch_dict in zip(range(6), loader, strict=False):
        report(ds, verl_step_batch(batch_dict, N_ROLLOUTS, step))
    m = sampler.metrics()
    assert m["verl/max_feedback_lag"] >= 1  # draws ran ahead of the rewards
    sampler.selector.flush()
    assert sampler.selector.metrics()["feedback/rollouts"] == 6 * B * N_ROLLOUTS
    assert sampler.selector.latest_step == 5  # each step's rewards filed under its own draw


def run(
    loader_iter: Iterator[dict[str, Any]], ds: Any, first_step: int, count: int
) -> list[list[int]]:
    drawn = []
    for step in range(first_step, first_step + count):
        batch_dict = next(loader_iter)
        drawn.append(batch_dict["index"].tolist())
        report(ds, verl_step_batch(batch_dict, N_ROLLOUTS, step))
    return drawn


@pytest.mark.parametrize("k", [3, 9])  # 9 crosses the epoch boundary (10 batches per epoch)
def test_dataloader_checkpoint_resumes_the_curriculum_exactly(
    make_dataset: Any, tmp_path: Path, k: int
) -> None:
    m = 4
    config = VerlSamplerConfig(batch_size=B, selector="bots", seed=7)
    ds = make_dataset(48)
    sampler = FrontierSampler(ds, config=config)
    install_feedback_hook(ds, sampler)
    loader = make_loader(ds, sampler, B)
    it = forever(loader)
    run(it, ds, 0, k)
    torch.save(loader.state_dict(), tmp_path / "data.pt")  # what verl's _save_checkpoint writes
    uninterrupted = run(it, ds, k, m)
    final = sampler.selector.state_dict()

    ds2 = type(ds)(data_files=ds.original_data_files, tokenizer=ds.tokenizer, config=ds.config)
    sampler2 = FrontierSampler(ds2, config=config)
    install_feedback_hook(ds2, sampler2)
    loader2 = make_loader(ds2, sampler2, B)
    loader2.load_state_dict(torch.load(tmp_path / "data.pt", weights_only=False))
    resumed = run(forever(loader2), ds2, k, m)
    assert resumed == uninterrupted
    assert_tree_equal(sampler2.selector.state_dict(), final)


def test_missing_or_default_task_ids_are_refused(make_dataset: Any) -> None:
    with pytest.raises(ValueError, match="no extra_info column"):
        FrontierSampler(make_dataset(16, extra_info=False), config=VerlSamplerConfig(batch_size=B))
    with pytest.raises(ValueError, match=r"every one of the \d+ task ids is 0"):
        FrontierSampler(make_dataset(16, index=lambda i: 0), config=VerlSamplerConfig(batch_size=B))
    with pytest.raises(ValueError, match="unique"):
        FrontierSampler(
            make_dataset(16, index=lambda i: i // 2), config=VerlSamplerConfig(batch_size=B)
        )


def test_batches_without_stable_ids_are_refused(make_dataset: Any) -> None:
    ds = make_dataset(48)
    sampler = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B))
    dicts = [d for d, _ in zip(forever(make_loader(ds, sampler, B)), range(4), strict=False)]
    batch = verl_step_batch(dicts[0], N_ROLLOUTS, 0)
    before = sampler.selector.state_dict()

    zeroed = verl_step_batch(dicts[1], N_ROLLOUTS, 1)
    zeroed.non_tensor_batch["extra_info"] = np.array(
        [{"index": 0} for _ in range(len(zeroed))], dtype=object
    )
    with pytest.raises(ValueError, match="every task id in the batch is 0"):
        sampler.update(zeroed)
    no_ids = verl_step_batch(dicts[2], N_ROLLOUTS, 2)
    no_ids.pop(non_tensor_batch_keys=["extra_info"])
    with pytest.raises(ValueError, match="carries no task ids"):
        sampler.update(no_ids)
    no_reward = verl_step_batch(dicts[3], N_ROLLOUTS, 3)
    no_reward.pop(batch_keys=["token_level_scores"])
    with pytest.raises(ValueError, match="reward key 'token_level_scores'"):
        sampler.update(no_reward)
    assert_tree_equal(sampler.selector.state_dict(), before)  # nothing half-applied

    sampler.update(batch)
    with pytest.raises(ValueError, match="already reported"):
        sampler.update(batch)


def test_state_from_another_dataset_is_refused(make_dataset: Any) -> None:
    config = VerlSamplerConfig(batch_size=B)
    a = FrontierSampler(make_dataset(48), config=config)
    b = FrontierSampler(make_dataset(48, long_every=5), config=config)
    with pytest.raises(ValueError, match="different dataset"):
        b.load_state_dict(a.state_dict())


def test_reward_range_rescales_and_metrics_are_logged(make_dataset: Any, tmp_path: Path) -> None:
    ds = make_dataset(48)
    log = tmp_path / "selector.jsonl"
    config = VerlSamplerConfig(
        batch_size=B, selector="bots", reward_range=(-1.0, 1.0), metrics_jsonl=str(log)
    )
    sampler = FrontierSampler(ds, config=config)
    batch = verl_step_batch(next(iter(make_loader(ds, sampler, B))), N_ROLLOUTS, 0)
    ids, raw = expected_feedback(batch)
    signed = torch.zeros_like(batch.batch["token_level_scores"])
    signed[:, 0] = torch.from_numpy(raw * 2 - 1)  # rewards in {-1, 1}
    batch.batch["token_level_scores"] = signed
    sampler.update(batch)
    sampler.selector.flush()
    reference = make_selector("bots", sampler.selector.pool, seed=0)
    reference.select(B)
    reference.update(Feedback(task_ids=sampler.positions_of(ids), rewards=raw, step=0))
    reference.flush()
    assert_tree_equal(sampler.selector.state_dict()["algo"], reference.state_dict()["algo"])
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and '"curriculum/verl/updates": 1.0' in lines[0]


def test_rewards_outside_the_unit_range_name_reward_range_and_the_range_clips(
    make_dataset: Any,
) -> None:
    ds = make_dataset(48)
    plain = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, selector="uniform"))
    batch = verl_step_batch(next(iter(make_loader(ds, plain, B))), N_ROLLOUTS, 0)
    batch.batch["token_level_scores"] = batch.batch["token_level_scores"] * 0 + 0.5  # sums > 1
    before = plain.selector.state_dict()
    with pytest.raises(ValueError, match=r"set VerlSamplerConfig\.reward_range"):
        plain.update(batch)
    assert_tree_equal(before, plain.selector.state_dict())
    ranged = FrontierSampler(
        ds, config=VerlSamplerConfig(batch_size=B, selector="uniform", reward_range=(0.0, 1.0))
    )
    batch = verl_step_batch(next(iter(make_loader(ds, ranged, B))), N_ROLLOUTS, 0)
    batch.batch["token_level_scores"] = batch.batch["token_level_scores"] * 0 + 0.5
    ranged.update(batch)  # beyond the declared range: clipped to 1, as in the TRL adapter
    ranged.selector.flush()
    assert ranged.selector.metrics()["feedback/rollouts"] == B * N_ROLLOUTS


def test_parquet_helper_writes_verl_format(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.read_parquet(write_parquet(tmp_path / "x.parquet", 5))
    assert list(frame.columns) == ["data_source", "prompt", "reward_model", "extra_info"]


def test_a_rejected_report_changes_nothing_and_its_retry_counts_once(tmp_path: Path) -> None:
    rows = [{"prompt": [{"role": "user", "content": f"q{i}"}], "index": 100 + i} for i in range(16)]
    config = VerlSamplerConfig(
        batch_size=4, selector="prioritized", metrics_jsonl=str(tmp_path / "m.jsonl")
    )
    sampler = FrontierSampler(rows, config=config)
    drawn = iter(sampler)
    ids = sampler.task_ids[[next(drawn) for _ in range(8)]]  # two draws of 4
    before = sampler.selector.state_dict()
    with pytest.raises(ValueError, match="NaN"):  # bad reward in the second draw's part
        sampler.report(ids, [0.5] * 4 + [float("nan")] + [0.5] * 3)
    assert_tree_equal(sampler.selector.state_dict(), before)  # the first part not applied
    sampler.report(ids, np.full(8, 0.5))
    assert sampler.selector.metrics()["feedback/rollouts"] == 8  # the retry counted once
    with pytest.raises(ValueError, match="at least one rollout"):
        sampler.report([], [])


def test_a_misspelt_prompt_key_is_an_error() -> None:
    rows = [{"prompt": f"q{i}", "index": i + 1} for i in range(8)]
    with pytest.raises(ValueError, match="prompt_key 'promt' is not a column"):
        FrontierSampler(rows, config=VerlSamplerConfig(batch_size=4, prompt_key="promt"))


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"pending": [999, -5]}, "pending holds values outside"),
        ({"draws": -3}, "draws must be"),
        ({"in_epoch": 10**9}, "in_epoch must be"),
        ({"stats": {}}, "stats must hold"),
        ({"outstanding_steps": [0]}, "differ in length"),
    ],
)
def test_tampered_sampler_state_is_refused_whole(change: dict[str, Any], phrase: str) -> None:
    rows = [{"prompt": f"q{i}", "index": 100 + i} for i in range(16)]
    config = VerlSamplerConfig(batch_size=4, selector="prioritized")
    saved = FrontierSampler(rows, config=config)
    drawn = iter(saved)
    for _ in range(8):
        next(drawn)
    sampler = FrontierSampler(rows, config=config)
    before = sampler.state_dict()
    with pytest.raises(ValueError, match=phrase):
        sampler.load_state_dict({**saved.state_dict(), **change})
    assert_tree_equal(sampler.state_dict(), before)  # the selector was not loaded either


def test_config_values_of_the_wrong_kind_are_named() -> None:
    for bad, phrase in [
        ({"selector_config": "lam=0.2"}, "selector_config must be a mapping"),
        ({"reward_range": (0, 1, 2)}, "reward_range must be"),
        ({"batch_size": True}, "batch_size must be a positive int"),
    ]:
        with pytest.raises(ValueError, match=phrase):
            VerlSamplerConfig(**{"batch_size": 4, **bad})
    with pytest.raises(ValueError, match="neither gen_batch_size nor train_batch_size"):
        VerlSamplerConfig.from_verl_data_config({"sampler": {"frontier": {}}})


def test_a_fresh_sampler_state_loads_and_array_like_settings_are_accepted() -> None:
    from omegaconf import OmegaConf

    rows = [{"prompt": f"q{i}", "index": i + 1} for i in range(8)]
    config = VerlSamplerConfig(batch_size=4, selector="prioritized")
    fresh = FrontierSampler(rows, config=config)
    FrontierSampler(rows, config=config).load_state_dict(fresh.state_dict())  # epoch -1
    for pair in (OmegaConf.create([-1, 1]), np.array([-1, 1]), (np.float32(-1), np.float32(1))):
        assert VerlSamplerConfig(batch_size=4, reward_range=pair).reward_range == (-1.0, 1.0)
    with pytest.raises(ValueError, match="task_id_key must be a string"):
        VerlSamplerConfig.from_verl_data_config(
            {"train_batch_size": 4, "sampler": {"frontier": {"task_id_key": 5}}}
        )


def test_a_task_id_key_column_is_what_the_sampler_and_its_updates_both_read(
    tmp_path: Path, tokenizer: Any
) -> None:
    # Row i's own id is problem_id = (5 i) mod 48, not extra_info.index: a reward must be
    # credited to the row that earned it, whichever key names the ids.
    import pandas as pd
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl_data import write_parquet

    from conftest import data_config

    path = write_parquet(tmp_path / "train.parquet", 48, long_every=0)
    frame = pd.read_parquet(path)
    frame["problem_id"] = [(5 * i) % 48 for i in range(48)]
    frame.to_parquet(path)
    ds = RLHFDataset(data_files=str(path), tokenizer=tokenizer, config=data_config(tmp_path))
    assert read_task_ids(ds, "problem_id").tolist() == frame["problem_id"].tolist()
    config = VerlSamplerConfig(batch_size=B, selector="uniform", task_id_key="problem_id")
    sampler = FrontierSampler(ds, config=config)
    batch_dict = next(iter(make_loader(ds, sampler, B)))
    drawn = sampler.state_dict()["outstanding_ids"][0]
    assert np.asarray(batch_dict["problem_id"]).tolist() == frame["problem_id"][drawn].tolist()
    assert sampler.positions_of(batch_dict["problem_id"]).tolist() == drawn.tolist()
    with pytest.raises(ValueError, match="task_id_key 'problem_idx' is not a column"):
        FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, task_id_key="problem_idx"))


def test_v1_sampler_kwargs_are_checked_by_name_and_type() -> None:
    from frontier_rft.integrations.verl.v1 import _sampler_config

    assert _sampler_config({"selector": "bots", "reward_range": [-1, 1]}, 8).reward_range == (
        -1.0,
        1.0,
    )
    with pytest.raises(ValueError, match="did you mean 'selector'"):
        _sampler_config({"selecter": "bots"}, 8)
    with pytest.raises(ValueError, match=r"sampler_kwargs\.batch_size is not read"):
        _sampler_config({"batch_size": 8}, 8)
    with pytest.raises(ValueError, match="must be a mapping"):
        _sampler_config(["bots"], 8)
