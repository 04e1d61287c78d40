"""pad_rows: a kept step's generation padded up to a few batch shapes (issue 71, item 2).

The bucket of each kept count is the one counted by hand; `auto` is off on a CPU; a padded
run generates the bucket's rows and then is the unpadded run in everything else: with
generation made independent of the batch's shape, the parameters after every step are
bitwise the unpadded run's (so is every loss); with the model's own sampling, the prompts,
rollouts, feedback, reward log and trained rows are the unpadded run's in count and shape,
and resume is exact."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft.training.config import TrainConfig, train_config

MODEL_FREE = TrainConfig(selector="skip", sampler="fewer_rollouts")


# ----------------------------------------------------------------------------- buckets


@pytest.mark.parametrize(
    ("batch_size", "by_hand"),
    [
        # B = 8: buckets 2, 4, 6, 8
        (8, {1: 2, 2: 2, 3: 4, 4: 4, 5: 6, 6: 6, 7: 8, 8: 8}),
        # B = 16 (the SmolLM2 testbed's): buckets 4, 8, 12, 16
        (16, {1: 4, 4: 4, 5: 8, 8: 8, 9: 12, 12: 12, 13: 16, 16: 16}),
        # B = 3 (the tests' trainer): ceil(3/4), ceil(6/4), ceil(9/4), 3 = 1, 2, 3, 3
        (3, {1: 1, 2: 2, 3: 3}),
        # B = 5: 2, 3, 4, 5
        (5, {1: 2, 2: 2, 3: 3, 4: 4, 5: 5}),
        (1, {1: 1}),
    ],
)
def test_the_bucket_of_each_kept_count_is_the_one_counted_by_hand(
    batch_size: int, by_hand: dict[int, int]
) -> None:
    from frontier_rft.training.pad_rows import bucket

    assert {g: bucket(g, batch_size) for g in by_hand} == by_hand
    if batch_size == 16:  # every count, not only the edges
        got = [bucket(g, 16) for g in range(1, 17)]
        assert got == [4] * 4 + [8] * 4 + [12] * 4 + [16] * 4
    assert bucket(batch_size + 2, batch_size) == batch_size + 2  # more than B: as it is


def test_the_padding_prompts_repeat_the_calls_own_from_the_first() -> None:
    from frontier_rft.training.pad_rows import padding

    assert padding([8, 8, 8], 8) == [8]  # 3 -> 4
    assert padding([2], 16) == [2, 2, 2]  # 1 -> 4
    assert padding([3, 5], 16) == [3, 5]  # 2 -> 4: the counts cycle with the prompts
    assert padding([8] * 8, 8) == []  # a full batch is not padded
    assert padding([], 8) == []


def test_auto_is_buckets_on_cuda_for_kept_steps_and_off_elsewhere() -> None:
    passthrough = TrainConfig()
    assert MODEL_FREE.pad_rows == "auto"
    assert not MODEL_FREE.pads_rows("cpu")  # a CPU step costs by its rows: no padding
    assert MODEL_FREE.pads_rows("cuda")
    assert not passthrough.pads_rows("cuda")  # whole batches: nothing to pad
    assert dataclasses.replace(MODEL_FREE, pad_rows="buckets").pads_rows("cpu")
    assert not dataclasses.replace(MODEL_FREE, pad_rows="off").pads_rows("cuda")
    assert not dataclasses.replace(passthrough, pad_rows="off").pads_rows("cuda")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pad_rows": "on"}, "pad_rows must be one of"),
        ({"pad_rows": "buckets"}, "set pad_rows auto or off"),  # plain GRPO: whole batches
        ({"pad_rows": "buckets", "dynamic_sampling": True}, "sampler 'dynamic_sampling'"),
    ],
)
def test_invalid_settings_are_refused_in_one_line(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        train_config(fields)
    assert "\n" not in str(info.value)


def test_the_cli_flag_refuses_an_unknown_mode_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from frontier_rft.cli.main import main

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    argv = ["train", "--model", str(tmp_path / "model"), "--out", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as exited:  # argparse's own refusal of a choice
        main([*argv, "--pad-rows", "always"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err
    assert "--pad-rows: invalid choice: 'always' (choose from 'auto', 'off', 'buckets')" in err
    code = main([*argv, "--pad-rows", "buckets"])  # plain GRPO: refused by the config
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--rollouts kept" in err
    assert not (tmp_path / "run").exists()


def test_end_rows_leaves_every_padding_row_only_its_eos() -> None:
    torch = pytest.importorskip("torch")
    from frontier_rft.training.pad_rows import EndRows

    scores = torch.randn(5, 7)
    out = EndRows(3, eos=2)(None, scores)
    assert torch.equal(out[:3], scores[:3])  # the real rows untouched
    assert torch.equal(out[3:].softmax(-1), torch.eye(7)[[2, 2]])


# ----------------------------------------------------------------------------- the trainer

BATCH, STEPS = 8, 8
"""Four of uniform's epochs over 16 prompts in batches of 8 (buckets of 2, 4, 6 and 8
prompts): the skip acts from step 2, and keeps odd counts of prompts, which are padded. One
torch thread (`_config`): CPU kernels with several can sum in another order from run to run,
and bitwise equal weights are the claim."""
SOLVED, UNSOLVABLE = set(range(0, 5)), set(range(5, 10))
"""Planted outcomes: tasks 0-4 always solved, 5-9 never, 10-15 half of each group."""


def planted(task: int, n: int) -> np.ndarray:
    if task in SOLVED:
        return np.ones(n)
    if task in UNSOLVABLE:
        return np.zeros(n)
    return np.arange(n) % 2 * 1.0


def _config(pad_rows: str, **changes: Any) -> TrainConfig:
    from test_training_model import TEST_TRAIN

    fields: dict[str, Any] = {
        "train_size": 16,
        "batch_size": BATCH,
        "steps": STEPS,
        "eval_every": 0,
        "checkpoint_every": 1000,
        "selector": "skip",
        "sampler": "fewer_rollouts",
        "reward_log": True,
        "pad_rows": pad_rows,
        "threads": 1,
    }
    return dataclasses.replace(TEST_TRAIN, **{**fields, **changes})


class Seen:
    """What a run sent to generation and to its selector."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        """(prompts, rows) of each `generate_completions` call."""
        self.ends: list[int] = []
        """Where each padded call's padding rows began (EndRows.first)."""
        self.padding_ended: list[bool] = []
        """Model sampling: whether each padded call's padding rows came back as [EOS]."""
        self.feedback: list[tuple[list[int], list[float], int]] = []
        """Every Feedback the selector received: task ids, rewards, step."""


def _shape_free(prompts: Any, counts: list[int], max_new_tokens: int) -> list[list[int]]:
    """Completions that depend on each row's prompt and its index among the prompt's samples
    alone, never on the batch's shape or the torch RNG: token ids >= 6 (no special token),
    1 to max_new_tokens of them."""
    rows = []
    for p, c in zip(prompts, counts, strict=True):
        for j in range(c):
            rng = np.random.default_rng([*p[-6:], j])
            length = int(rng.integers(1, max_new_tokens + 1))
            rows.append(rng.integers(6, 300, size=length).tolist())
    return rows


@contextmanager
def planted_run(trainer: Any, *, shape_free: bool) -> Iterator[Seen]:
    """Plant each task's rewards (so that both runs skip alike), record the shape of every
    generate call and the selector's feedback; with `shape_free`, generation itself is
    `_shape_free`. Everything is put back on exit."""
    from frontier_rft.training import grpo

    seen = Seen()
    real_generate, real_rollout = grpo.generate_completions, trainer._rollout

    def generate(
        model: Any,
        prompts: Any,
        num_samples: Any,
        max_new_tokens: int,
        temperature: float = 1.0,
        logits_processor: Any = (),
        top_p: float = 1.0,
    ) -> list[list[int]]:
        counts = [num_samples] * len(prompts) if isinstance(num_samples, int) else num_samples
        seen.calls.append((len(prompts), sum(counts)))
        if not shape_free:
            out: list[list[int]] = real_generate(
                model, prompts, num_samples, max_new_tokens, temperature, logits_processor, top_p
            )
        else:
            out = _shape_free(prompts, list(counts), max_new_tokens)
        if logits_processor:  # the padding rows, after the real ones: EndRows ends them
            (end,) = logits_processor
            seen.ends.append(end.first)
            if not shape_free:  # at their first token, by the model's own sampling
                eos = model.generation_config.eos_token_id
                seen.padding_ended.append(all(row == [eos] for row in out[end.first :]))
        return out

    def rollout(ids: np.ndarray, counts: np.ndarray) -> Any:
        completions, _, seconds, padded = real_rollout(ids, counts)
        assert len(completions) == int(np.sum(counts))  # the real rows only come back
        rewards = np.concatenate(
            [planted(int(t), int(c)) for t, c in zip(ids, counts, strict=True)]
        )
        return completions, rewards, seconds, padded

    real_update = trainer.selector.update

    def update(feedback: Any) -> None:
        seen.feedback.append(
            (feedback.task_ids.tolist(), feedback.rewards.tolist(), int(feedback.step))
        )
        real_update(feedback)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grpo, "generate_completions", generate)
        patch.setattr(trainer.selector, "update", update)
        patch.setattr(trainer, "_rollout", rollout)
        yield seen


def _untimed(metrics: dict[str, float]) -> dict[str, float]:
    """A step's metrics less its timings and the padding's own count (what a padded step may
    log otherwise)."""
    return {
        k: v
        for k, v in metrics.items()
        if not k.startswith("perf/") and not k.endswith("_ms") and k != "train/padded_rows"
    }


def _trained(
    pad_rows: str, sft_dir: Path, out: Path, shape_free: bool
) -> tuple[Any, list[dict[str, float]], list[list[Any]], Seen]:
    """STEPS planted steps of a run: the trainer, each step's metrics and parameters after it,
    and what it sent to generation and to its selector."""
    from frontier_rft.training.grpo import Trainer

    trainer = Trainer(_config(pad_rows), sft_dir, out, log=lambda _: None)
    metrics, params = [], []
    with planted_run(trainer, shape_free=shape_free) as seen:
        for _ in range(STEPS):
            metrics.append(trainer.step())
            params.append([p.detach().clone() for p in trainer.model.parameters()])
    return trainer, metrics, params, seen


@pytest.fixture(autouse=True)
def _torch_threads() -> Iterator[None]:
    """Trainer sets torch's (process-wide) thread count: give the next test its own back."""
    try:
        import torch
    except ImportError:  # the model-free tests run without the train extra
        yield
        return
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.integration
def test_a_padded_step_trains_bitwise_as_the_unpadded_one(sft_dir: Path, tmp_path: Path) -> None:
    """Generation made blind to the batch's shape: the padded run's parameters after every
    step, its losses and every count are the unpadded run's exactly, while its generate calls
    ran over the buckets' rows."""
    torch = pytest.importorskip("torch")
    on, m_on, p_on, seen_on = _trained("buckets", sft_dir, tmp_path / "on", True)
    off, m_off, p_off, seen_off = _trained("off", sft_dir, tmp_path / "off", True)
    assert not off.pad_rows and "train/padded_rows" not in m_off[0]
    for step, (a, b) in enumerate(zip(p_on, p_off, strict=True)):
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True)), step
    for a, b in zip(m_on, m_off, strict=True):
        assert _untimed(a) == _untimed(b)
    trained = [m["train/groups_trained"] for m in m_on]
    assert min(trained) < BATCH and "loss/policy" in m_on[-1]  # kept steps trained
    n = on.config.group_size
    # unpadded: the kept prompts; padded: their bucket (B = 8: 2, 4, 6, 8), the padding ended
    assert [rows for _, rows in seen_off.calls] == [int(m["train/rollouts"]) for m in m_off]
    from frontier_rft.training.pad_rows import bucket

    assert seen_on.calls == [(bucket(p, BATCH), bucket(p, BATCH) * n) for p, _ in seen_off.calls]
    padded = [(bucket(p, BATCH) - p) * n for p, _ in seen_off.calls]
    assert [m["train/padded_rows"] for m in m_on] == padded and sum(padded) > 0
    assert seen_on.ends == [
        rows for (_, rows), pad in zip(seen_off.calls, padded, strict=True) if pad
    ]
    assert seen_on.feedback == seen_off.feedback
    assert _log(tmp_path / "on") == _log(tmp_path / "off")  # rewards.jsonl: the same lines


def _log(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "rewards.jsonl").read_text().splitlines()]


@pytest.mark.integration
def test_with_the_models_own_sampling_every_count_is_the_unpadded_runs(
    sft_dir: Path, tmp_path: Path
) -> None:
    """Real generation at the buckets' shapes: other random draws, so other texts; the same
    prompts, rollouts, feedback, reward-log shapes and trained rows as the unpadded run."""
    _, m_on, _, seen_on = _trained("buckets", sft_dir, tmp_path / "on", False)
    _, m_off, _, seen_off = _trained("off", sft_dir, tmp_path / "off", False)
    same = (
        "train/rollouts",
        "train/rollouts_total",
        "train/groups_trained",
        "train/trained_rows",
        "train/loss_scale",
        "train/reward_mean",
        "train/effective_task_ratio",
        "train/distinct_prompts_trained",
        "curriculum/fewer_rollouts/kept",
    )
    assert [[m[k] for k in same] for m in m_on] == [[m[k] for k in same] for m in m_off]
    assert sum(m["train/padded_rows"] for m in m_on) > 0
    assert seen_on.padding_ended and all(seen_on.padding_ended)
    assert seen_on.feedback == seen_off.feedback  # the selector's: no padding row in it
    assert sum(len(ids) for ids, _, _ in seen_on.feedback) == m_on[-1]["train/rollouts_total"]
    log_on, log_off = _log(tmp_path / "on"), _log(tmp_path / "off")
    assert len(log_on) == len(log_off) == STEPS
    for a, b in zip(log_on, log_off, strict=True):
        assert {k: v for k, v in a.items() if k != "lengths"} == {
            k: v for k, v in b.items() if k != "lengths"
        }
        assert np.shape(a["lengths"]) == np.shape(b["lengths"])
    # the update ran over the trained rows alone (each completion scored once)
    assert [m["train/trained_rows"] for m in m_on] == [m["train/rollouts"] for m in m_on]


@pytest.mark.integration
def test_a_padded_run_resumes_exactly(sft_dir: Path, tmp_path: Path) -> None:
    """Padding is a function of a call's prompts and B: 6 steps straight and 4 + resume + 2
    draw the same prompts, rewards and parameters (the resume is mid-epoch 3, where kept
    steps are padded)."""
    torch = pytest.importorskip("torch")
    from frontier_rft.training.grpo import Trainer

    config = _config("buckets", reward_log=False, checkpoint_every=4)
    straight = Trainer(config, sft_dir, tmp_path / "a", log=lambda _: None)
    expected = []
    for _ in range(6):
        straight.step()
        expected.append((straight.last["ids"].tolist(), straight.last["rewards"].tolist()))
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    got = []
    for _ in range(4):
        first.step()
        got.append((first.last["ids"].tolist(), first.last["rewards"].tolist()))
    first.save()
    del first
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    padded = []
    for _ in range(2):
        padded.append(resumed.step()["train/padded_rows"])
        got.append((resumed.last["ids"].tolist(), resumed.last["rewards"].tolist()))
    assert got == expected
    assert sum(padded) > 0  # a padded kept step after the resume
    for x, y in zip(straight.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(x, y)


def test_the_page_documents_the_field_its_default_and_the_metric() -> None:
    page = (Path(__file__).parent.parent / "docs/selectors/fewer_rollouts.md").read_text()
    section = page[page.index("### Padding") : page.index("## Evidence")]
    default = next(f.default for f in dataclasses.fields(TrainConfig) if f.name == "pad_rows")
    assert f"| `pad_rows` | `{default}` |" in section
    assert "train/padded_rows" in section and "skip-kept-unpadded" in section
    assert "measured when a GPU is lent" in section
