"""The TRL adapter against the real GRPOTrainer / RLOOTrainer on a tiny local model, on CPU.

Tasks come in three kinds by `task_id % 3`: always rewarded 1, always 0, and mixed (the
parity of a checksum of the sampled completion, so about half the completions score 1).
Rewards depend only on the task and the completion text, so a resumed run that replays
the same completions gets the same rewards. `tiny_lm` sits beside this file (pytest puts
this directory on sys.path; the two-process workers get it through PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from datasets import Dataset
from tiny_lm import char_tokenizer, task_dataset, tiny_grpo_args, tiny_llama, tiny_reward_model
from transformers import TrainerCallback
from trl import GRPOConfig, RLOOConfig
from trl.trainer.utils import RepeatSampler
from two_ranks import leave_process_group

from frontier_rft import Feedback, TaskPool, load_selector, make_selector
from frontier_rft.integrations.trl import (
    FrontierConfig,
    FrontierGRPOTrainer,
    FrontierRepeatSampler,
    FrontierRLOOTrainer,
    task_rows,
)
from frontier_rft.integrations.trl.state import state_digest
from frontier_rft.metrics_log import SUMMARY_KEYS
from frontier_rft.shadow.foreign_logs import read_foreign_log
from frontier_rft.shadow.run_rewards import read_run_rewards, read_run_seed

NUM_TASKS = 24
NUM_GENERATIONS = 4


def task_kind(task_id: int) -> int:
    """0: always 1, 1: always 0, 2: mixed."""
    return task_id % 3


def base_reward(task_id: int, completion: str) -> float:
    kind = task_kind(task_id)
    if kind == 2:
        return float(zlib.crc32(completion.encode()) & 1)
    return 1.0 if kind == 0 else 0.0


class RecordingReward:
    """A TRL reward function that records every reward it returns, with its task id and
    its completion's length in tokens (the `completion_ids` TRL passes it)."""

    def __init__(self, name: str = "task_reward", none_for_odd: bool = False):
        self.__name__ = name
        self.none_for_odd = none_for_odd
        self.task_ids: list[int] = []
        self.rewards: list[float | None] = []
        self.lengths: list[int] = []

    def __call__(
        self, prompts: list[str], completions: list[str], task_id: list[int], **kwargs: Any
    ) -> list[float | None]:
        out: list[float | None] = []
        for t, c in zip(task_id, completions, strict=True):
            out.append(None if self.none_for_odd and t % 2 else base_reward(int(t), c))
        self.task_ids.extend(int(t) for t in task_id)
        self.rewards.extend(out)
        self.lengths.extend(len(ids) for ids in kwargs.get("completion_ids", ()))  # TRL's
        return out


class UpdateSpy:
    """Records every Feedback the real selector receives, then passes it on unchanged."""

    def __init__(self, selector: Any):
        self.calls: list[tuple[np.ndarray, np.ndarray, int]] = []
        update = selector.update

        def spy(feedback: Feedback, **kwargs: Any) -> None:
            ids = np.asarray(feedback.task_ids).copy()
            self.calls.append((ids, np.asarray(feedback.rewards).copy(), int(feedback.step)))
            update(feedback, **kwargs)

        selector.update = spy

    def ids(self) -> np.ndarray:
        return np.concatenate([c[0] for c in self.calls])

    def rewards(self) -> np.ndarray:
        return np.concatenate([c[1] for c in self.calls])


def dataset(num_tasks: int | None = None, shuffled: bool = True) -> Dataset:
    """Rows in a different order than task ids, so the id -> row map is exercised."""
    ids = np.arange(NUM_TASKS if num_tasks is None else num_tasks)
    if shuffled:
        ids = np.random.default_rng(7).permutation(ids.shape[0])
    return task_dataset(ids)


def config(cls: type, out: Path, *, steps: int, prompts: int, **kw: Any) -> Any:
    return tiny_grpo_args(out, prompts=prompts, n=NUM_GENERATIONS, cls=cls, max_steps=steps, **kw)


def grpo(
    out: Path,
    selector: Any,
    *,
    steps: int,
    prompts: int = 4,
    rewards: list[Any] | None = None,
    frontier: FrontierConfig | None = None,
    callbacks: list[Any] | None = None,
    **kw: Any,
) -> FrontierGRPOTrainer:
    tok = char_tokenizer()
    return FrontierGRPOTrainer(
        model=tiny_llama(tok, seed=0),
        reward_funcs=rewards if rewards is not None else [RecordingReward()],
        args=config(GRPOConfig, out, steps=steps, prompts=prompts, **kw),
        train_dataset=dataset(),
        processing_class=tok,
        callbacks=callbacks,
        selector=selector,
        frontier=frontier,
    )


class LogRecorder(TrainerCallback):
    """What TRL hands its logging callbacks (TensorBoard, W&B, ... receive the same dicts)."""

    def __init__(self) -> None:
        self.logs: list[dict[str, float]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        self.logs.append(dict(logs or {}))


def pool() -> TaskPool:
    """Prompt text only, what a TRL user has (bots derives its features from it)."""
    return TaskPool(num_tasks=NUM_TASKS, prompts=[f"task {i}" for i in range(NUM_TASKS)])


# ---------------------------------------------------------------------- sampler alone
def test_sampler_reproduces_repeat_sampler_layout_exactly() -> None:
    # An easy-to-hard walk over difficulty = index selects 0..B-1, B..2B-1, ...: exactly
    # what TRL's RepeatSampler yields without shuffling, so the streams must be equal.
    n, b, mini, rep = 26, 4, 3, 2
    sel = make_selector(
        "offline", TaskPool(num_tasks=n, difficulty=np.arange(n)), seed=0, tie_break="index"
    )
    ours = FrontierRepeatSampler(
        sel, np.arange(n), mini_repeat_count=mini, batch_size=b, repeat_count=rep
    )
    trl_sampler = RepeatSampler(
        list(range(n)), mini_repeat_count=mini, batch_size=b, repeat_count=rep, shuffle=False
    )
    assert list(ours) == list(trl_sampler)
    assert len(ours) == len(trl_sampler)


def test_sampler_layout_with_an_adaptive_selector_and_row_map() -> None:
    n, b, mini, rep = 24, 5, 4, 3
    rows = np.random.default_rng(1).permutation(n)
    sel = make_selector("bots", TaskPool(num_tasks=n), seed=3, plugin="regression")
    sampler = FrontierRepeatSampler(
        sel, rows, mini_repeat_count=mini, batch_size=b, repeat_count=rep
    )
    stream = list(sampler)
    chunks = sampler.state_dict()["epoch_chunks"]
    assert chunks.shape == (n // b, b)
    expected = [
        int(rows[t]) for chunk in chunks for _ in range(rep) for t in chunk for _ in range(mini)
    ]
    assert stream == expected and len(stream) == len(sampler)
    assert all(np.unique(c).size == b for c in chunks)  # distinct prompts within a chunk
    assert sampler.selection_counts.sum() == chunks.size


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"epoch_chunks": np.full((2, 5), 99)}, "epoch_chunks"),  # task ids beyond the pool
        ({"epoch_chunks": np.full((2, 5), -1)}, "epoch_chunks"),
        ({"selection_counts": np.full(24, -3)}, "selection_counts"),
        ({"chunks_selected": np.asarray(1.5)}, "chunks_selected"),
        ({"version": np.asarray("x")}, "version"),
        ({"layout": None}, "missing 'layout'"),
        ({"zz_unknown": np.asarray(1)}, "unknown field.*'zz_unknown'"),
    ],
)
def test_tampered_sampler_state_is_refused_and_changes_nothing(
    change: dict[str, object], phrase: str
) -> None:
    sel = make_selector("bots", TaskPool(num_tasks=24), seed=3, plugin="regression")
    sampler = FrontierRepeatSampler(
        sel, np.arange(24), mini_repeat_count=2, batch_size=5, repeat_count=1
    )
    stream = iter(sampler)
    for _ in range(12):
        next(stream)  # part of an epoch
    before = sampler.state_dict()
    state = {**before, **change}
    state = {k: v for k, v in state.items() if v is not None}
    with pytest.raises(ValueError, match=phrase):
        sampler.load_state_dict(state)
    after = sampler.state_dict()
    assert all(np.array_equal(np.asarray(after[k]), np.asarray(before[k])) for k in before)


def test_task_id_column_is_validated() -> None:
    ds = dataset(6, shuffled=False)
    assert task_rows(ds, "task_id", 6).tolist() == list(range(6))
    with pytest.raises(ValueError, match="no 'task' column"):
        task_rows(ds, "task", 6)
    with pytest.raises(ValueError, match="6 rows but the selector's TaskPool has 7"):
        task_rows(ds, "task_id", 7)
    dup = Dataset.from_dict({"prompt": ["a", "b", "c"], "task_id": [0, 0, 2]})
    with pytest.raises(ValueError, match=r"permutation of 0\.\.2: id 0 appears 2 times and id 1"):
        task_rows(dup, "task_id", 3)
    bad = Dataset.from_dict({"prompt": ["a", "b"], "task_id": [0, 5]})
    with pytest.raises(ValueError, match="id 5 outside"):
        task_rows(bad, "task_id", 2)
    with pytest.raises(ValueError, match="train_dataset is empty"):
        task_rows(Dataset.from_dict({"prompt": [], "task_id": []}), "task_id", 0)


def test_trainer_rejects_dataset_without_task_ids_and_dropped_columns(tmp_path: Path) -> None:
    tok = char_tokenizer()
    sel = make_selector("uniform", pool(), seed=0)
    no_ids = Dataset.from_dict({"prompt": [f"task {i}:" for i in range(NUM_TASKS)]})
    with pytest.raises(ValueError, match="no 'task_id' column"):
        FrontierGRPOTrainer(
            model=tiny_llama(tok),
            reward_funcs=[RecordingReward()],
            args=config(GRPOConfig, tmp_path, steps=1, prompts=4),
            train_dataset=no_ids,
            processing_class=tok,
            selector=sel,
        )
    with pytest.raises(ValueError, match="remove_unused_columns=False"):
        grpo(tmp_path, sel, steps=1, remove_unused_columns=True)


# ---------------------------------------------------------------------- training runs
@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One 30-step GRPO run per selector, same model, data and seeds."""
    out: dict[str, Any] = {}
    for name in ("uniform", "bots", "mopps", "prioritized"):
        sel = make_selector(name, pool(), seed=0)
        spy = UpdateSpy(sel)
        reward, recorder = RecordingReward(), LogRecorder()
        out_dir = tmp_path_factory.mktemp(name)
        verbosity = "all" if name == "bots" else "summary"  # the others log the default set
        trainer = grpo(
            out_dir,
            sel,
            steps=30,
            rewards=[reward],
            callbacks=[recorder],
            frontier=FrontierConfig(metrics_verbosity=verbosity),
        )
        trainer.train()
        out[name] = {
            "trainer": trainer,
            "selector": sel,
            "spy": spy,
            "reward": reward,
            "callback_logs": recorder.logs,
        }
    return out


def constant_share(counts: np.ndarray) -> float:
    kinds = np.arange(NUM_TASKS) % 3
    return float(counts[kinds != 2].sum() / counts.sum())


def test_selector_receives_every_reward_with_its_task_id(runs: dict[str, Any]) -> None:
    for name, run in runs.items():
        reward, spy, sel = run["reward"], run["spy"], run["selector"]
        assert len(reward.rewards) == 30 * 4 * NUM_GENERATIONS, name
        # Same rollouts, same order, same values: nothing lost, nothing invented.
        assert spy.ids().tolist() == reward.task_ids, name
        assert spy.rewards().tolist() == reward.rewards, name
        assert [c[2] for c in spy.calls] == list(range(30)), name  # one step per generation
        sel.flush()
        assert sel.metrics()["feedback/rollouts"] == 30 * 4 * NUM_GENERATIONS, name
        # Each generation round is a chunk the sampler handed out, in order.
        for k, (ids, _, _) in enumerate(spy.calls):
            chunk = np.unique(ids)
            assert chunk.size == 4 and (np.bincount(ids) == NUM_GENERATIONS)[chunk].all()
            assert np.isin(ids, chunk).all(), (name, k)


def test_selector_works_with_trls_one_batch_lag(runs: dict[str, Any]) -> None:
    # TRL's data loader reads batch c+1 before batch c is generated and scored, so when
    # chunk c is selected the newest rewards folded in are those of round c-2: round c-1's
    # rewards do not exist yet. They are folded in at the next select. Only the first chunk
    # of an epoch (a fresh data-loader iterator, no read-ahead) sees round c-1.
    per_epoch = NUM_TASKS // 4
    for name, run in runs.items():
        log = list(run["trainer"].frontier_sampler.select_log)
        assert [c for c, _ in log] == list(range(len(log))) and len(log) >= 30, name
        for chunk, folded in log:
            newest = chunk - 1 if chunk % per_epoch == 0 else chunk - 2
            assert folded == max(newest, -1), (name, chunk, folded)
        assert run["trainer"].frontier_metrics()["trl/feedback_lag"] == 1.0
        lagged = [c for c, f in log if f == c - 2]
        assert len(lagged) >= 20, name


def test_constant_reward_prompts_are_selected_less_than_uniform(runs: dict[str, Any]) -> None:
    shares = {
        n: constant_share(r["trainer"].frontier_sampler.selection_counts) for n, r in runs.items()
    }
    print("constant-reward share of selections:", {k: round(v, 3) for k, v in shares.items()})
    # Uniform without replacement: exactly 2/3 of every full epoch is constant-reward tasks.
    # Measured (24 tasks, 30 rounds of 4 prompts): uniform 0.667, mopps 0.283, bots 0.358,
    # prioritized 0.458 (two rounds in flight drain its heap of mixed tasks; see the docs).
    assert abs(shares["uniform"] - 2 / 3) < 0.03, shares
    assert shares["mopps"] < shares["uniform"] - 0.25, shares
    assert shares["bots"] < shares["uniform"] - 0.15, shares
    assert shares["prioritized"] < shares["uniform"] - 0.1, shares


def test_curriculum_metrics_reach_trl_logs_callbacks_and_jsonl(runs: dict[str, Any]) -> None:
    run = runs["bots"]
    trainer = run["trainer"]
    history = [h for h in trainer.state.log_history if "loss" in h]
    assert len(history) == 30
    metrics = trainer.frontier_metrics()
    finite = {"curriculum/" + k for k, v in metrics.items() if np.isfinite(v)}
    undefined = {"curriculum/" + k for k, v in metrics.items() if not np.isfinite(v)}
    assert {"curriculum/bots/posterior_mean", "curriculum/feedback/effective_task_ratio"} <= finite
    assert finite <= set(history[-1]), finite - set(history[-1])
    # NaN (bots/mu without reference pass rates) stays out of TRL's JSON logs ...
    assert undefined and not undefined & set(history[-1])
    # Callbacks (how report_to backends receive logs) see the same curriculum values.
    per_step = [c for c in run["callback_logs"] if "loss" in c]
    assert [c["curriculum/trl/rollouts_delivered"] for c in per_step] == [
        h["curriculum/trl/rollouts_delivered"] for h in history
    ]
    for h in history:  # folded-in rollouts trail delivered ones by at most one round
        lag = h["curriculum/trl/rollouts_delivered"] - h["curriculum/feedback/rollouts"]
        assert 0 <= lag <= 2 * 4 * NUM_GENERATIONS
    lines = (Path(trainer.args.output_dir) / "frontier_metrics.jsonl").read_text().splitlines()
    by_step = {r["step"]: r for r in map(json.loads, lines)}
    for h in history:
        r = by_step[h["step"]]
        for key in ("curriculum/trl/rollouts_delivered", "curriculum/feedback/rollouts"):
            assert r[key] == h[key], key
        assert all(r[key] is None for key in undefined)  # ... and is null in the JSONL
    assert history[-1]["curriculum/trl/rollouts_delivered"] == 30 * 4 * NUM_GENERATIONS


def test_default_logs_carry_a_short_summary_and_the_jsonl_everything(
    runs: dict[str, Any],
) -> None:
    trainer = runs["prioritized"]["trainer"]
    last = [h for h in trainer.state.log_history if "loss" in h][-1]
    logged = {k for k in last if k.startswith("curriculum/")}
    assert logged == {"curriculum/" + k for k in SUMMARY_KEYS if not k.startswith("verl/")}
    assert len(logged) <= 8 and "curriculum/prioritized/heap_size" not in logged
    lines = (Path(trainer.args.output_dir) / "frontier_metrics.jsonl").read_text().splitlines()
    assert "curriculum/prioritized/heap_size" in json.loads(lines[-1])


def test_the_jsonl_feeds_simulate_fit_at_the_rounds_it_describes(runs: dict[str, Any]) -> None:
    """`frontier simulate --fit` reads frontier_metrics.jsonl as TRL's run wrote it: each
    record's reward and ETR are of the selector's newest folded round, placed at that round,
    and the selector is named by its metric keys."""
    from frontier_rft import SELECTORS
    from frontier_rft.simulation.fit_log import read_run_log

    run = runs["prioritized"]  # default verbosity: the JSONL holds everything all the same
    path = Path(run["trainer"].args.output_dir) / "frontier_metrics.jsonl"
    log = read_run_log(path, 30, pool_size=NUM_TASKS, batch=4, rollouts=NUM_GENERATIONS,
                       steps=30, known_selectors=tuple(SELECTORS))  # fmt: skip
    assert log.selector == "prioritized" and log.reward_mean.size >= 20
    rounds = {step: rewards for _, rewards, step in run["spy"].calls}
    for at, mean in zip(log.steps_at.tolist(), log.reward_mean.tolist(), strict=True):
        assert mean == pytest.approx(rounds[at].mean()), at


def test_weighted_rewards_and_none_combine_as_trl_does(tmp_path: Path) -> None:
    sel = make_selector("bots", pool(), seed=0)
    spy = UpdateSpy(sel)
    main, bonus = RecordingReward(), RecordingReward("bonus", none_for_odd=True)
    trainer = grpo(
        tmp_path,
        sel,
        steps=3,
        rewards=[main, bonus],
        reward_weights=[0.75, 0.25],
        log_completions=True,
    )
    trainer.train()
    r1 = np.array(main.rewards, dtype=np.float64)
    r2 = np.array([np.nan if r is None else r for r in bonus.rewards], dtype=np.float64)
    expected = np.nansum(np.stack([0.75 * r1, 0.25 * r2]), axis=0)
    assert spy.ids().tolist() == main.task_ids
    np.testing.assert_allclose(spy.rewards(), expected, rtol=0, atol=1e-7)
    assert set(np.round(spy.rewards(), 6)) <= {0.0, 0.75, 1.0}
    # The run records its reward functions and weights (TRL's own files hold the weights
    # only in training_args.bin), and a replay of its completions log sums TRL's reward
    # columns with them, unasked: each step's rewards are the ones the selector received.
    assert read_run_rewards(tmp_path) == [("task_reward", 0.75), ("bonus", 0.25)]
    assert read_run_seed(tmp_path) == trainer.args.seed  # the replay's shadows seed as the run's
    steps, _, _ = read_foreign_log(tmp_path, "trl")
    assert len(steps) == len(spy.calls) == 3
    for (_, _, replayed, _), (_, received, _) in zip(steps, spy.calls, strict=True):
        np.testing.assert_allclose(np.sort(replayed, axis=None), np.sort(received), atol=1e-7)


def test_rewards_outside_unit_interval_need_reward_range(tmp_path: Path) -> None:
    def doubled(completions: list[str], task_id: list[int], **kw: Any) -> list[float]:
        return [2.0 * base_reward(int(t), c) for t, c in zip(task_id, completions, strict=True)]

    sel = make_selector("bots", pool(), seed=0)
    with pytest.raises(ValueError, match="reward_range"):
        grpo(tmp_path / "a", sel, steps=2, rewards=[doubled]).train()
    sel = make_selector("bots", pool(), seed=0)
    spy = UpdateSpy(sel)
    grpo(
        tmp_path / "b",
        sel,
        steps=2,
        rewards=[doubled],
        frontier=FrontierConfig(reward_range=(0, 2)),
    ).train()
    assert set(spy.rewards().tolist()) <= {0.0, 1.0}


def test_infinite_rewards_are_out_of_range_not_unscorable(tmp_path: Path) -> None:
    def infinite(completions: list[str], task_id: list[int], **kw: Any) -> list[float]:
        inf = {0: np.inf, 1: -np.inf}  # kind 2 keeps its finite reward
        pairs = zip(task_id, completions, strict=True)
        return [inf.get(task_kind(int(t)), base_reward(int(t), c)) for t, c in pairs]

    sel = make_selector("bots", pool(), seed=0)
    with pytest.raises(
        ValueError, match=r"reward of task \d+ is -?inf, not a finite .*reward_range"
    ):
        grpo(tmp_path / "a", sel, steps=1, rewards=[infinite]).train()
    assert sel.metrics()["feedback/pending_rollouts"] == sel.metrics()["feedback/rollouts"] == 0
    sel = make_selector("bots", pool(), seed=0)
    spy = UpdateSpy(sel)
    frontier = FrontierConfig(reward_range=(0, 1))
    trainer = grpo(tmp_path / "b", sel, steps=1, rewards=[infinite], frontier=frontier)
    trainer.train()  # one generation: TRL's own advantages of inf rewards are NaN
    kinds = spy.ids() % 3
    assert np.all(spy.rewards()[kinds == 0] == 1.0) and np.all(spy.rewards()[kinds == 1] == 0.0)
    metrics = trainer.frontier_metrics()
    assert metrics["trl/unscorable_dropped"] == 0.0  # clipped like any out-of-range reward
    assert spy.ids().size == metrics["trl/rollouts_delivered"] > 0


@pytest.mark.parametrize(
    ("first", "error"),
    [
        (np.inf, r"reward of task \d+ is inf, not a finite"),
        (2.0, r"task \d+ is 2.0, out of range: .* rewards in \[0, 1\]; .*reward_range"),
    ],
    ids=["infinite", "out-of-range"],
)
def test_a_rejected_reward_batch_changes_no_counter(
    tmp_path: Path, first: float, error: str
) -> None:
    def one_bad(completions: list[str], task_id: list[int], **kw: Any) -> list[float | None]:
        return [first] + [None] * (len(completions) - 1)  # the rest unscorable

    trainer = grpo(tmp_path, make_selector("bots", pool(), seed=0), steps=1, rewards=[one_bad])
    with pytest.raises(ValueError, match=error):
        trainer.train()
    metrics = trainer.frontier_metrics()
    assert metrics["trl/generations"] == metrics["trl/unscorable_dropped"] == 0.0
    assert metrics["trl/rollouts_delivered"] == metrics["feedback/pending_rollouts"] == 0.0


def test_infinities_that_cancel_are_an_error_naming_the_task() -> None:
    from frontier_rft.integrations.trl.rewards import check_combined_rewards, combine_rewards

    per_func = np.array([[1.0, np.nan], [np.inf, -np.inf], [np.nan, np.nan]])
    combined = combine_rewards(per_func, [1.0, 1.0])
    ids = np.array([7, 8, 9])
    for reward_range in (None, (0.0, 1.0)):
        with pytest.raises(ValueError, match="reward of task 8 is NaN though a reward function"):
            check_combined_rewards(ids[:2], combined[:2], reward_range)
    check_combined_rewards(ids[:1], combined[:1], None)


def test_one_feedback_per_generation_when_completions_are_reused(tmp_path: Path) -> None:
    # steps_per_generation=2 and num_iterations=2: each chunk is repeated 4 times in the
    # stream and generated once; 4 optimizer steps of 2 accumulated batches = 2 generations.
    sel = make_selector("bots", pool(), seed=0)
    spy, reward = UpdateSpy(sel), RecordingReward()
    trainer = grpo(
        tmp_path,
        sel,
        steps=4,
        prompts=2,
        rewards=[reward],
        steps_per_generation=2,
        num_iterations=2,
        gradient_accumulation_steps=2,
    )
    assert trainer.frontier_sampler.repeat_count == 4
    assert trainer.frontier_sampler.batch_size == 4  # 2 per step x 2 steps per generation
    trainer.train()
    assert [c[2] for c in spy.calls] == [0, 1]
    assert spy.ids().tolist() == reward.task_ids and len(reward.task_ids) == 2 * 4 * NUM_GENERATIONS
    assert spy.rewards().tolist() == reward.rewards


def test_a_reward_function_returning_nothing_is_named(tmp_path: Path) -> None:
    def forgetful(completions: list[str], **kw: Any) -> None:
        return None  # forgot the return statement

    sel = make_selector("uniform", pool(), seed=0)
    with pytest.raises(ValueError, match="a reward function returned NoneType"):
        grpo(tmp_path, sel, steps=1, rewards=[forgetful]).train()


def test_async_rewards_are_tapped_and_evaluation_is_not_feedback(tmp_path: Path) -> None:
    train_reward = RecordingReward()

    async def async_reward(completions: list[str], task_id: list[int], **kw: Any) -> list[float]:
        return train_reward(completions, completions, task_id)

    sel = make_selector("bots", pool(), seed=0)
    spy = UpdateSpy(sel)
    tok = char_tokenizer()
    trainer = FrontierGRPOTrainer(
        model=tiny_llama(tok),
        reward_funcs=[async_reward],
        args=config(
            GRPOConfig,
            tmp_path,
            steps=4,
            prompts=4,
            eval_strategy="steps",
            eval_steps=2,
            per_device_eval_batch_size=8,
        ),
        train_dataset=dataset(),
        eval_dataset=dataset().select(range(4)),
        processing_class=tok,
        selector=sel,
    )
    trainer.train()
    assert any("eval_loss" in h for h in trainer.state.log_history)  # evaluation ran
    # The reward function also scored the evaluation batches; only training ones are feedback.
    train_part = 4 * 4 * NUM_GENERATIONS
    assert len(train_reward.rewards) > train_part
    assert spy.ids().size == train_part
    assert [c[2] for c in spy.calls] == [0, 1, 2, 3]


def test_reward_model_scores_reach_the_selector(tmp_path: Path) -> None:
    import torch

    tok = char_tokenizer()
    scorer = tiny_reward_model(tok)
    scored: list[str] = []

    def record_texts(prompts: list[str], completions: list[str], **kw: Any) -> list[float]:
        """Weight 0: only records the texts the reward model scored."""
        scored.extend(p + c for p, c in zip(prompts, completions, strict=True))
        return [0.0] * len(prompts)

    sel = make_selector("bots", pool(), seed=0)
    spy = UpdateSpy(sel)
    trainer = FrontierGRPOTrainer(
        model=tiny_llama(tok),
        reward_funcs=[scorer, record_texts],
        reward_processing_classes=[tok, None],
        args=config(GRPOConfig, tmp_path, steps=2, prompts=4, reward_weights=[1.0, 0.0]),
        train_dataset=dataset(),
        processing_class=tok,
        selector=sel,
        frontier=FrontierConfig(reward_range=(-2.0, 2.0)),
    )
    trainer.train()
    with torch.no_grad():
        enc = tok(scored, return_tensors="pt", padding=True, padding_side="right")
        scores = scorer(**enc).logits[:, 0].numpy().astype(np.float64)
    expected = np.clip((scores + 2.0) / 4.0, 0.0, 1.0)
    np.testing.assert_allclose(spy.rewards(), expected, atol=1e-5)
    assert np.unique(spy.rewards()).size > 8  # real, varying scores


# ---------------------------------------------------------------------- resume
@pytest.mark.parametrize(
    ("name", "save_at", "accumulate"),
    [
        ("bots", 4, 1),
        ("prioritized", 4, 1),
        ("prioritized", 6, 1),  # mid-epoch (replay) and epoch end
        ("bots", 5, 1),  # mid-epoch, but the loader had already drawn the epoch's last chunk
        ("bots", 2, 2),  # the same with gradient accumulation
    ],
)
def test_resume_restores_the_selector_exactly(
    tmp_path: Path, name: str, save_at: int, accumulate: int
) -> None:
    full_sel = make_selector(name, pool(), seed=0)
    steps = 10 if accumulate == 1 else 5
    kw = {"gradient_accumulation_steps": accumulate} if accumulate > 1 else {}
    full = grpo(
        tmp_path / "full", full_sel, steps=steps, save_strategy="steps", save_steps=save_at, **kw
    )
    full.train()
    ckpt = tmp_path / "full" / f"checkpoint-{save_at}"
    assert (ckpt / "frontier_selector.npz").is_file() and (ckpt / "frontier_sampler.npz").is_file()
    saved = load_selector(ckpt / "frontier_selector.npz")

    probe_sel = make_selector(name, pool(), seed=0)
    grpo(tmp_path / "probe", probe_sel, steps=steps, **kw).load_frontier_state(ckpt)
    assert state_digest(probe_sel.state_dict()) == state_digest(saved.state_dict())

    resumed_sel = make_selector(name, pool(), seed=0)
    resumed = grpo(tmp_path / "resumed", resumed_sel, steps=steps, **kw)
    resumed.train(resume_from_checkpoint=str(ckpt))
    # The replayed chunks are not selected again and the later ones see the same rewards,
    # so the final selector equals the uninterrupted run's, bit for bit.
    assert state_digest(resumed_sel.state_dict()) == state_digest(full_sel.state_dict())
    np.testing.assert_array_equal(
        resumed.frontier_sampler.selection_counts, full.frontier_sampler.selection_counts
    )
    assert (
        resumed.frontier_metrics()["trl/generations"] == full.frontier_metrics()["trl/generations"]
    )


def test_resume_true_finds_the_last_checkpoint_and_missing_state_is_an_error(
    tmp_path: Path,
) -> None:
    sel = make_selector("bots", pool(), seed=0)
    grpo(tmp_path, sel, steps=4, save_strategy="steps", save_steps=2).train()
    again_sel = make_selector("bots", pool(), seed=0)
    again = grpo(tmp_path, again_sel, steps=6)
    again.train(resume_from_checkpoint=True)  # checkpoint-4
    assert again.frontier_metrics()["trl/generations"] == 6

    with pytest.raises(ValueError, match="checkpoint-9 does not exist"):
        grpo(tmp_path, make_selector("bots", pool(), seed=0), steps=6).load_frontier_state(
            tmp_path / "checkpoint-9"
        )
    (tmp_path / "checkpoint-4" / "frontier_sampler.npz").unlink()
    with pytest.raises(ValueError, match="no frontier-rft state"):
        grpo(tmp_path, make_selector("bots", pool(), seed=0), steps=6).train(
            resume_from_checkpoint=str(tmp_path / "checkpoint-4")
        )
    with pytest.raises(ValueError, match="saved by selector 'bots'"):
        grpo(tmp_path, make_selector("mopps", pool(), seed=0), steps=6).load_frontier_state(
            tmp_path / "checkpoint-2"
        )


# ---------------------------------------------------------------------- RLOO and reward models
def test_rloo_trainer_feeds_the_selector(tmp_path: Path) -> None:
    tok = char_tokenizer()
    sel = make_selector("prioritized", pool(), seed=0)
    spy = UpdateSpy(sel)
    reward = RecordingReward()
    trainer = FrontierRLOOTrainer(
        model=tiny_llama(tok),
        reward_funcs=[reward],
        args=config(RLOOConfig, tmp_path, steps=4, prompts=4),
        train_dataset=dataset(),
        processing_class=tok,
        selector=sel,
    )
    trainer.train()
    assert spy.ids().tolist() == reward.task_ids
    assert spy.rewards().tolist() == reward.rewards
    assert len(reward.rewards) == 4 * 4 * NUM_GENERATIONS
    assert "curriculum/feedback/steps" in trainer.state.log_history[-2]


# ---------------------------------------------------------------------- two processes
def _distributed_worker(out: Path) -> None:
    """One rank of a 2-process CPU (gloo) run; writes what it saw to out/rank<r>.json."""
    sel = make_selector("bots", pool(), seed=0)
    spy, reward = UpdateSpy(sel), RecordingReward()
    # 2 prompts per process: each generation round is 4 prompts split over the 2 ranks.
    trainer = grpo(
        out,
        sel,
        steps=6,
        prompts=2,
        rewards=[reward],
        frontier=FrontierConfig(shadows=["screen2"]),
        save_strategy="steps",
        save_steps=3,
    )
    trainer.train()
    rank = trainer.accelerator.process_index
    (shadow,) = trainer.frontier_shadows.shadows
    record = {
        "local_lengths": reward.lengths,
        "shadow_tokens": shadow.passes()[-1]["tokens"],
        "shadow_digest": state_digest(shadow.state_dict()),
        "num_processes": trainer.accelerator.num_processes,
        "digest": state_digest(sel.state_dict()),
        "chunks": trainer.frontier_sampler.state_dict()["epoch_chunks"].tolist(),
        "local_ids": reward.task_ids,
        "local_rewards": reward.rewards,
        "selector_ids": [c[0].tolist() for c in spy.calls],
        "selector_rewards": [c[1].tolist() for c in spy.calls],
    }
    (out / f"rank{rank}.json").write_text(json.dumps(record))
    # Leave the gloo group before exiting: a rank that exits with it still alive can abort
    # in teardown ("terminate called without an active exception"), failing the launcher.
    leave_process_group()


def test_two_processes_gather_rewards_and_keep_selectors_identical(tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parent)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    cmd += [__file__, str(tmp_path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["num_processes"] == 2 for r in ranks)
    # The same stream and the same selector on both processes ...
    assert ranks[0]["chunks"] == ranks[1]["chunks"]
    assert ranks[0]["digest"] == ranks[1]["digest"]
    # ... and the same shadow, which counted every rank's completions' generated tokens.
    assert ranks[0]["shadow_digest"] == ranks[1]["shadow_digest"]
    every_length = sum(ranks[0]["local_lengths"]) + sum(ranks[1]["local_lengths"])
    assert ranks[0]["shadow_tokens"] == every_length > 0
    # ... because each received every rank's rewards: round k = rank 0's slice, then rank 1's.
    per_round = 2 * NUM_GENERATIONS
    for rank in ranks:
        assert len(rank["selector_ids"]) == 6
        for k, (ids, rewards) in enumerate(
            zip(rank["selector_ids"], rank["selector_rewards"], strict=True)
        ):
            part = slice(k * per_round, (k + 1) * per_round)
            assert ids == ranks[0]["local_ids"][part] + ranks[1]["local_ids"][part]
            assert rewards == ranks[0]["local_rewards"][part] + ranks[1]["local_rewards"][part]


if __name__ == "__main__":  # a rank of the two-process test, started by torch.distributed.run
    _distributed_worker(Path(sys.argv[1]))
