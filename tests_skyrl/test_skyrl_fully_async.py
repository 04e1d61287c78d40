"""frontier-rft's SkyRL fully-async trainer driven through SkyRL's real
FullyAsyncRayPPOTrainer.train(): its generation workers (asyncio tasks), staleness manager,
generation buffer, `_AsyncDataloader`, mini-batch collection (sample_full_batch's drops
included), postprocessing, consumed-uid bookkeeping, save_checkpoints and load_checkpoints
(fully_async_state.pt). Stood in for, as in conftest: generation (one call per group, seeded
Bernoulli(p) rewards), the tokenizer, the policy workers (forward passes, advantages,
updates, weight sync) and the per-node checkpoint clean-up."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from conftest import (
    BATCH,
    N_SAMPLES,
    SEED,
    Run,
    generator_output,
    pass_rates,
    skyrl_config,
    task_ids,
)
from frontier_rft.integrations.skyrl.config import (
    KEPT_WITH_FULLY_ASYNC,
    OWN_STATE_FILE,
    SHADOWS_WITH_FULLY_ASYNC,
)
from frontier_rft.integrations.skyrl.trainer import (
    FrontierFullyAsyncRayPPOTrainer,
    FrontierRayPPOTrainer,
    trainer_class,
)

P = dict(zip(task_ids().tolist(), pass_rates().tolist(), strict=True))


class GroupGenerator:
    """SkyRL's generator stood in for, one group a call (the fully-async trainer's): rewards
    Bernoulli(p), seeded by the pick (draw step, from the uid) and the repetition, so a
    resumed run that regenerates a group draws the rewards the uninterrupted run drew."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def generate(self, gi: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)  # a real engine yields to the event loop
        rollouts = []
        uids = {t.instance_id for t in gi["trajectory_ids"]}
        assert len(uids) == 1, "the fully-async trainer generates one group a call"
        uid = uids.pop()
        # Never raise here: SkyRL ends the process (os._exit) when a generation worker fails.
        _, _, draw_text = uid.partition("@")
        draw = int(draw_text) if draw_text.isdigit() else -1
        for extras, tid in zip(gi["env_extras"], gi["trajectory_ids"], strict=True):
            rng = np.random.default_rng([SEED, draw + 1, extras["index"], tid.repetition_id])
            rollouts.append((int(extras["index"]), float(rng.random() < extras["p"])))
        task = rollouts[0][0]
        self.calls.append({"uid": uid, "task": task, "draw": draw, "rollouts": rollouts})
        return generator_output([r for _, r in rollouts])


def async_config(
    ckpt: Path, steps: int, staleness: int, workers: int | None = None, **trainer: Any
) -> Any:
    cfg = skyrl_config(ckpt, steps, **trainer)
    cfg.trainer.fully_async.enabled = True
    cfg.trainer.fully_async.max_staleness_steps = staleness
    cfg.trainer.fully_async.num_parallel_generation_workers = workers or BATCH * (staleness + 1)
    # SkyRL's fully-async trainer refuses losses that recompute old logprobs.
    cfg.trainer.algorithm.policy_loss_type = "rollout_is"
    return cfg


def async_run(data_file: Path, cfg: Any, frontier: dict[str, Any] | None = None) -> Run:
    return Run(
        data_file,
        cfg,
        frontier or {"selector": "greso", "seed": 3},
        generator=GroupGenerator(),
        trainer_class=FrontierFullyAsyncRayPPOTrainer,
    )


def picked(run: Run, first: int = 0) -> list[tuple[int, int]]:
    """Every pick as (task id, draw step), in draw order (`first`: draws before this run)."""
    return [(task, first + k) for k, tasks in enumerate(run.picks) for task in tasks]


def generated(run: Run) -> list[tuple[int, int]]:
    return [(c["task"], c["draw"]) for c in run.generator.calls]


def test_the_entrypoint_picks_the_fully_async_trainer_by_skyrls_key(tmp_path: Path) -> None:
    cfg = skyrl_config(tmp_path, 1)
    assert trainer_class(cfg) is FrontierRayPPOTrainer
    cfg.trainer.fully_async.enabled = True
    assert trainer_class(cfg) is FrontierFullyAsyncRayPPOTrainer


def test_prompts_are_the_selectors_picks_and_late_rewards_arrive_once(
    data_file: Path, tmp_path: Path
) -> None:
    # Workers draw up to 2 steps ahead of training: rewards arrive after later draws.
    run = async_run(data_file, async_config(tmp_path / "ckpt", steps=12, staleness=2)).train()
    made = generated(run)
    # SkyRL generated only the selector's picks, each once (a task picked again within one
    # SkyRL epoch is generated again: its uids differ by draw), in the order the workers
    # pulled them; every pick of the draws trained on was generated.
    assert len(set(made)) == len(made) and set(made) <= set(picked(run))
    last = len(run.picks) - 1
    assert all(draw > last - 3 for _, draw in set(picked(run)) - set(made))
    # Beyond the 12 steps trained, only what the staleness bound let the workers start.
    assert 12 * BATCH <= len(made) <= (12 + 2 + 1) * BATCH
    # Every reward the trainer took reached the selector once, with its task id and draw:
    # the 12 steps' groups, no more, each group whole.
    rollouts = Counter(
        (task, c["draw"], r) for c in run.generator.calls for task, r in c["rollouts"]
    )
    told = Counter(run.feedback)
    assert told <= rollouts
    assert len(run.feedback) == 12 * BATCH * N_SAMPLES
    groups = Counter((t, s) for t, s, _ in run.feedback)
    assert set(groups.values()) == {N_SAMPLES}
    # Late rewards happened and are counted: the lag of each report, from the spy, is the
    # sampler's max_feedback_lag.
    lags = [
        draws - 1 - step
        for kind, draws, told_now in run.events
        if kind == "feedback"
        for _, step, _ in told_now
    ]
    assert max(lags) >= 1
    assert run.sampler.metrics()["verl/max_feedback_lag"] == max(lags)
    assert run.sampler.metrics()["verl/updates"] == 12
    # The selector's metrics reached SkyRL's tracker with each step's.
    logged = [step for step in run.logged() if "trainer/global_step" in step]
    assert len(logged) == 12
    assert all(any(k.startswith("curriculum/") for k in step) for step in logged)


def test_greso_stops_picking_solved_prompts_once_seen_solved(
    data_file: Path, tmp_path: Path
) -> None:
    frontier = {
        "selector": "greso",
        "seed": 3,
        "selector_config": {"p_init": 0.001, "p_min": 0.001, "p_max": 0.001, "min_keep": 1e-4},
    }
    cfg = async_config(tmp_path / "ckpt", steps=16, staleness=1)
    cfg.generator.n_samples_per_prompt = 8
    run = async_run(data_file, cfg, frontier).train()
    solved = {t for t, p in P.items() if p == 1.0}
    seen_solved: dict[int, int] = {}
    for kind, index, what in run.events:
        if kind == "pick":
            for task in what:
                if task in seen_solved:
                    pytest.fail(f"solved task {task} picked at draw {index} after seen solved")
        else:
            by_task: dict[int, list[float]] = {}
            for task, _, reward in what:
                by_task.setdefault(task, []).append(reward)
            for task, rewards in by_task.items():
                if task in solved and all(r == 1.0 for r in rewards):
                    seen_solved.setdefault(task, index)
    assert set(seen_solved) == solved
    # Picked before their rewards came back (at most the staleness bound ahead), then never.
    picks = Counter(t for tasks in run.picks for t in tasks)
    assert all(picks[t] <= 2 for t in solved)


def test_sample_full_batch_drops_are_reported_once(data_file: Path, tmp_path: Path) -> None:
    cfg = async_config(tmp_path / "ckpt", steps=10, staleness=1)
    cfg.trainer.fully_async.sample_full_batch = True
    cfg.trainer.algorithm.zero_variance_filter = True
    run = async_run(data_file, cfg, {"selector": "uniform", "seed": 1})
    # What SkyRL's own bookkeeping says it trained on and dropped (an epoch's last partial
    # mini-batch included), every epoch.
    marked: dict[str, list[str]] = {"trained": [], "dropped": []}
    loader = run.trainer.async_train_dataloader
    consumed, filtered = loader.mark_consumed_uids, loader.mark_filtered_uids

    async def spy_consumed(uids: Any) -> None:
        marked["trained"] += list(uids)
        await consumed(uids)

    async def spy_filtered(uids: Any) -> None:
        marked["dropped"] += list(uids)
        await filtered(uids)

    loader.mark_consumed_uids = spy_consumed
    loader.mark_filtered_uids = spy_filtered
    run.train()
    by_uid = {c["uid"]: c for c in run.generator.calls}
    assert len(marked["trained"]) == 10 * BATCH
    assert marked["dropped"], "SkyRL dropped no group: the test shows nothing"
    # Every group SkyRL trained on or dropped reached the selector once, whole, with its
    # task id and draw; nothing else did.
    expected = Counter(
        (task, by_uid[uid]["draw"], r)
        for uid in marked["trained"] + marked["dropped"]
        for task, r in by_uid[uid]["rollouts"]
    )
    assert Counter(run.feedback) == expected
    assert all(P[by_uid[u]["task"]] in (0.0, 1.0) for u in marked["dropped"][:1])


def _saved_state(folder: Path) -> dict[str, Any]:
    with open(folder / OWN_STATE_FILE, "rb") as f:
        state: dict[str, Any] = torch.load(f, weights_only=False)
    return state


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray | torch.Tensor):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b or (a != a and b != b))  # NaN equals NaN here


def _resumed(data_file: Path, ckpt: Path, steps: int, staleness: int, step: int) -> Run:
    """A run resumed from `ckpt`/global_step_`step`. Named, not SkyRL's latest: a run stopped
    by max_training_steps saves its final checkpoint as global_step_(N+1) holding N trained
    steps (skyrl 0.3.0), and resuming from it trains one step less."""
    cfg = async_config(ckpt, steps=steps, staleness=staleness, ckpt_interval=step)
    cfg.trainer.resume_mode = "from_path"
    cfg.trainer.resume_path = str(ckpt / f"global_step_{step}")
    return async_run(data_file, cfg)


@pytest.mark.parametrize("staleness", [0, 1])
def test_a_resumed_run_continues_from_the_selector_state_at_the_checkpoint(
    data_file: Path, tmp_path: Path, staleness: int
) -> None:
    # Checkpointed after step 6 (mid-epoch: 8 steps an epoch) and resumed to step 12.
    whole = async_run(
        data_file,
        async_config(tmp_path / "whole", steps=12, staleness=staleness, ckpt_interval=6),
    ).train()
    first = async_run(
        data_file,
        async_config(tmp_path / "part", steps=6, staleness=staleness, ckpt_interval=6),
    ).train()
    at_checkpoint = _saved_state(tmp_path / "part" / "global_step_6")
    resumed = _resumed(data_file, tmp_path / "part", 12, staleness, 6)
    # Restored from the own file, bit for bit, before any draw.
    original = resumed.trainer.load_checkpoints
    restored: list[dict[str, Any]] = []

    def load_and_look() -> Any:
        out = original()
        restored.append(resumed.sampler.state_dict())
        return out

    resumed.trainer.load_checkpoints = load_and_look  # type: ignore[method-assign]
    resumed.train()
    assert len(restored) == 1 and _same(restored[0], at_checkpoint)
    # The prompts drawn but not trained on at the checkpoint (generating or buffered, which
    # SkyRL regenerates) are generated again, with the rewards they had: nothing is lost.
    unreported = {
        (int(task_ids()[p]), step)
        for step, ids in zip(
            at_checkpoint["outstanding_steps"], at_checkpoint["outstanding_ids"], strict=True
        )
        for p in ids
    }
    assert unreported and unreported <= set(generated(resumed))
    # The rest it generated are the restored selector's draws (recorded by the spy).
    assert set(generated(resumed)) - unreported <= set(picked(resumed, at_checkpoint["draws"]))
    assert len(set(generated(resumed))) == len(generated(resumed))
    # Every reward of the 12 steps reached the selector once, across both parts.
    assert len(first.feedback) + len(resumed.feedback) == 12 * BATCH * N_SAMPLES
    groups = Counter((t, s) for t, s, _ in first.feedback + resumed.feedback)
    assert set(groups.values()) == {N_SAMPLES}
    if staleness == 0:
        # Generation waits for each step's training: the interleaving of draws and reports
        # is fixed (draw k+1 before the rewards of draw k), so the resumed run is the
        # uninterrupted one: the same checkpoint, groups, rewards and end state.
        assert _same(at_checkpoint, _saved_state(tmp_path / "whole" / "global_step_6"))
        assert set(generated(resumed)) == set(generated(whole)) - set(generated(first))
        assert Counter(first.feedback + resumed.feedback) == Counter(whole.feedback)
        assert _same(resumed.sampler.state_dict(), whole.sampler.state_dict())


def test_resume_without_the_own_file_is_refused_in_one_line(
    data_file: Path, tmp_path: Path
) -> None:
    async_run(
        data_file, async_config(tmp_path / "c", steps=2, staleness=0, ckpt_interval=2)
    ).train()
    (tmp_path / "c" / "global_step_2" / OWN_STATE_FILE).unlink()
    with pytest.raises(ValueError) as err:
        _resumed(data_file, tmp_path / "c", 4, 0, 2).train()
    assert OWN_STATE_FILE in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("frontier", "message"),
    [
        ({"selector": "greso", "rollouts": "kept"}, KEPT_WITH_FULLY_ASYNC),
        ({"selector": "greso", "shadows": ["skip"]}, SHADOWS_WITH_FULLY_ASYNC),
    ],
)
def test_what_the_fully_async_trainer_cannot_do_is_refused_in_one_line(
    data_file: Path, tmp_path: Path, frontier: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as err:
        async_run(data_file, async_config(tmp_path / "c", steps=2, staleness=0), frontier)
    assert str(err.value) == message and "\n" not in message
