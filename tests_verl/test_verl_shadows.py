"""Shadows beside a verl run (VerlSamplerConfig.shadows, docs/shadow.md): verl's real
RLHFDataset, StatefulDataLoader and DataProto, the sampler's feedback hook as RayPPOTrainer
calls it, and verl's own rollout dump (`trainer.rollout_data_dir`) for the replay.
Generation is stood in for (verl_batches.verl_step_batch: scripted rewards, shuffled as
verl's _balance_batch reorders a batch)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from verl.trainer.ppo.ray_trainer import RayPPOTrainer
from verl_batches import assert_tree_equal, expected_feedback, make_loader, verl_step_batch

from frontier_rft.integrations.verl import FrontierSampler, VerlSamplerConfig, install_feedback_hook
from frontier_rft.integrations.verl.preflight import check_verl_config
from frontier_rft.shadow.replay import replay

pytestmark = pytest.mark.integration

B, N = 4, 4
STEPS = 24  # over two passes of the pool (48 rows, 42 after verl's overlong filter)
RULES = ["greso", "screen2", "skip+screen3"]


def forever(loader: Any) -> Iterator[dict[str, Any]]:
    while True:
        yield from loader


class Run:
    """A sampler on a 48-prompt verl dataset and verl's loop around it."""

    def __init__(self, make_dataset: Any, **fields: Any) -> None:
        self.ds = make_dataset(48)
        self.sampler = FrontierSampler(self.ds, config=VerlSamplerConfig(batch_size=B, **fields))
        install_feedback_hook(self.ds, self.sampler)
        self.loader = make_loader(self.ds, self.sampler, B)
        self.it = forever(self.loader)

    def steps(self, steps: range) -> list[Any]:
        """Draw, roll out (scripted), report as RayPPOTrainer.fit does after each step."""
        out = []
        for step in steps:
            batch = verl_step_batch(next(self.it), N, step)
            self.ds.on_batch_end(batch=batch)
            out.append(batch)
        return out


def test_shadows_change_nothing_of_the_run(make_dataset: Any) -> None:
    plain = Run(make_dataset, selector="greso", seed=3)
    shadowed = Run(make_dataset, selector="greso", seed=3, shadows=RULES)
    a, b = plain.steps(range(STEPS)), shadowed.steps(range(STEPS))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(expected_feedback(x)[0], expected_feedback(y)[0])
    assert_tree_equal(plain.sampler.selector.state_dict(), shadowed.sampler.selector.state_dict())
    metrics = shadowed.sampler.log_metrics()  # every shadow's, whatever the verbosity
    for rule in RULES:
        passes = (STEPS - 1) * B // len(shadowed.ds) + 1  # a step counts in its first's pass
        assert metrics[f"curriculum/shadow/{rule}/epoch"] == passes
        assert f"curriculum/shadow/{rule}/informative_lost" in metrics
    assert metrics["curriculum/shadow/screen2/rollouts_saved"] > 0
    assert metrics["curriculum/shadow/greso/skipped"] > 0  # greso skips in its second epoch
    assert not any("shadow" in k for k in plain.sampler.log_metrics())


def test_screen_counts_are_hand_counted_and_equal_the_replay_of_verls_own_dump(
    make_dataset: Any, tmp_path: Path
) -> None:
    run = Run(make_dataset, selector="uniform", shadows=["screen2"])
    dump = tmp_path / "rollout_data"
    saved = screened = lost = tokens = tokens_saved = 0
    for step, batch in enumerate(run.steps(range(STEPS))):
        ids, rewards = expected_feedback(batch)
        lengths = batch.batch["response_mask"].sum(-1).numpy()  # each response's tokens
        tokens += int(lengths.sum())
        for task in np.unique(ids):
            group = rewards[ids == task]  # in the batch's order, as the shadow reads it
            if group[0] == group[1]:  # screened out after 2: the other N - 2 not spent
                screened += 1
                saved += N - 2
                lost += int(not np.all(group == group[0]))
                tokens_saved += int(lengths[ids == task][2:].sum())
        # What verl writes with trainer.rollout_data_dir (the decoded prompt: here its id; a
        # response as many characters as it has tokens).
        RayPPOTrainer._write_generations(
            [f"prompt {t}" for t in ids], ["x" * n for n in lengths], [None] * ids.size,
            rewards.tolist(), {}, str(dump), step + 1,  # verl's global_steps start at 1
        )  # fmt: skip
    live = run.sampler.metrics()
    assert live["shadow/screen2/rollouts_saved"] == saved > 0
    assert live["shadow/screen2/screened_out"] == screened
    assert live["shadow/screen2/informative_lost"] == lost > 0
    # Tokens as well: the responses' lengths (response_mask), summed by hand.
    assert live["shadow/screen2/tokens_saved"] == tokens_saved > 0
    assert live["shadow/screen2/tokens_saved_share"] == pytest.approx(tokens_saved / tokens)
    assert tokens_saved / tokens != pytest.approx(saved / (STEPS * B * N))  # not the rollouts'
    (replayed,) = replay(dump, ["screen2"], log_format="verl", pool_size=len(run.ds))
    # The same counts over the run, tokens too (the dump's characters, one per token here).
    # Per pass they split differently: the replay counts a pass as pool // batch steps
    # (verl's own loader drops each epoch's remainder, docs/shadow.md), while this run's
    # FrontierSampler crossed the epoch without dropping (42 rows, batches of 4).
    additive = ("steps", "groups", "rollouts", "rollouts_saved", "skipped", "screened_out",
                "left_out", "informative_lost", "token_steps", "tokens",
                "tokens_saved")  # fmt: skip
    totals = [
        {k: sum(p[k] for p in shadow.passes() if p["pass"] > 0) for k in additive}  # 0: all
        for shadow in (replayed, run.sampler.shadows.shadows[0])
    ]
    assert totals[0] == totals[1] and totals[0]["steps"] == STEPS


def test_the_v1_report_gives_the_shadows_each_trajectorys_response_len(
    make_dataset: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verl's v1 replay buffer: each trajectory's tokens are the `response_len` tag its agent
    loop writes (TransferQueue stood in for: what kv_batch_get returns for the keys)."""
    from types import SimpleNamespace

    from frontier_rft.integrations.verl import v1

    run = Run(make_dataset, selector="uniform", shadows=["screen2"])
    drawn = [int(e["index"]) for e in next(run.it)["extra_info"]]
    store, keys, tags = {}, [], []
    tokens = tokens_saved = 0
    for i, task in enumerate(drawn):
        # every other prompt solved by all (screened out after 2), the rest half the time
        rewards = [1.0] * N if i % 2 == 0 else [float(j % 2) for j in range(N)]
        for j, reward in enumerate(rewards):
            key, size = f"u{task}_{j}_0", 10 * (j + 1) + i
            store[key] = (task, f"u{task}", reward)
            keys.append(key)
            tags.append({"status": "success", "global_steps": 1, "response_len": size})
            tokens += size
            tokens_saved += size if i % 2 == 0 and j >= 2 else 0
    keys.append("pad")
    tags.append({"is_padding": True})  # verl pads a batch for its ranks: not a rollout

    def kv_batch_get(keys: list[str], partition_id: str, select_fields: list[str]) -> Any:
        rows = [store[k] for k in keys]
        return {
            "index": [r[0] for r in rows],
            "uid": [r[1] for r in rows],
            "rm_scores": [torch.tensor([0.0, r[2]]) for r in rows],
        }

    monkeypatch.setattr(v1, "tq", SimpleNamespace(kv_batch_get=kv_batch_get))
    meta = SimpleNamespace(keys=keys, tags=tags, partition_id="train")
    assert v1.report_sampled_batch(run.sampler, meta) == B * N
    live = run.sampler.metrics()
    assert live["shadow/screen2/screened_out"] == B // 2
    assert live["shadow/screen2/tokens_saved"] == tokens_saved
    assert live["shadow/screen2/tokens_saved_share"] == pytest.approx(tokens_saved / tokens)


@pytest.mark.parametrize("k", [5, 12])  # 12: at the epoch boundary
def test_a_checkpoint_resumes_the_shadows_exactly(
    make_dataset: Any, tmp_path: Path, k: int
) -> None:
    first = Run(make_dataset, selector="greso", seed=1, shadows=RULES)
    first.steps(range(k))
    torch.save(first.loader.state_dict(), tmp_path / "data.pt")  # verl's _save_checkpoint
    first.steps(range(k, STEPS))
    resumed = Run(make_dataset, selector="greso", seed=1, shadows=RULES)
    resumed.loader.load_state_dict(torch.load(tmp_path / "data.pt", weights_only=False))
    resumed.it = forever(resumed.loader)
    resumed.steps(range(k, STEPS))
    assert_tree_equal(resumed.sampler.shadows.state_dict(), first.sampler.shadows.state_dict())
    shadow = {k: v for k, v in first.sampler.metrics().items() if k.startswith("shadow/")}
    got = {k: v for k, v in resumed.sampler.metrics().items() if k.startswith("shadow/")}
    assert got == pytest.approx(shadow, nan_ok=True) and len(shadow) > 30


def test_a_state_of_other_shadows_is_refused_whole_and_an_old_state_loads(
    make_dataset: Any,
) -> None:
    saver = Run(make_dataset, selector="greso", shadows=["screen2"])
    saver.steps(range(3))
    state = saver.sampler.state_dict()
    other = Run(make_dataset, selector="greso", shadows=["greso"])
    before = other.sampler.state_dict()
    with pytest.raises(ValueError, match="screen2"):
        other.sampler.load_state_dict(state)
    assert_tree_equal(other.sampler.state_dict(), before)  # nothing changed
    none = Run(make_dataset, selector="greso")
    with pytest.raises(ValueError, match="resume with the shadows"):
        none.sampler.load_state_dict(state)
    old = {k: v for k, v in state.items() if k != "shadows"}  # saved before shadows existed
    none.sampler.load_state_dict(old)
    with pytest.raises(ValueError, match="resume with the shadows"):
        saver.sampler.load_state_dict(old)


@pytest.mark.parametrize(
    ("fields", "phrase"),
    [
        ({"shadows": ["screen4"], "rollouts": "kept"}, "rollouts: kept"),
        ({"shadows": ["bots"]}, "re-draws from the whole pool"),
        ({"shadows": ["greso", "greso"]}, "names a rule twice"),
        ({"shadows": "gresso"}, "unknown selector 'gresso'"),
        ({"shadows": [4]}, "list of rules"),
    ],
)
def test_bad_shadows_are_one_line_errors(fields: dict[str, Any], phrase: str) -> None:
    with pytest.raises(ValueError, match=phrase) as err:
        VerlSamplerConfig(batch_size=B, **fields)
    assert "\n" not in str(err.value)


def test_check_config_names_a_screen_too_large_for_the_group_and_the_dapo_filter() -> None:
    config = {
        "actor_rollout_ref": {"rollout": {"n": 4}},
        "algorithm": {"filter_groups": {"enable": True}},
        "data": {"train_batch_size": 8},
        "trainer": {
            "use_v1": True,
            "v1": {
                "trainer_mode": "sync",
                "sampler": {
                    "custom_sampler": {
                        "path": "pkg://frontier_rft.integrations.verl.v1",
                        "name": "FrontierReplayBuffer",
                    },
                    "sampler_kwargs": {"shadows": ["greso", "screen4"]},
                },
            },
        },
    }
    text = "\n".join(check_verl_config(config).problems)
    assert "screens with 4 rollouts" in text and "actor_rollout_ref.rollout.n" in text
    assert "shadows with algorithm.filter_groups" in text
