"""The TRL script's evaluation and the mistakes that used to cost a model load.

- A held-out split (a hub-style dataset's `dataset_test_split`, or `eval_dataset_files`) is
  scored by the same reward functions at `eval_steps`, and each evaluation reaches TRL's
  logging callbacks (every `report_to` backend) and the JSONL file beside the rollouts
  spent and distinct prompts trained by then.
- Several reward functions without `reward_range`, a selector's missing metadata, and an
  evaluation without a held-out set are one line before the model loads: the model
  directory holds a config.json and no weights, so loading it would fail otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from datasets import Dataset
from tiny_lm import char_tokenizer, tiny_llama
from transformers import TrainerCallback
from trl import GRPOConfig

from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
from frontier_rft.integrations.trl.grpo import cli, main

RUN = ["--output_dir", "out", "--use_cpu", "true", "--bf16", "false", "--report_to", "none",
       "--num_generations", "4", "--per_device_train_batch_size", "8",
       "--per_device_eval_batch_size", "8", "--max_completion_length", "4",
       "--save_strategy", "no", "--disable_tqdm", "true", "--logging_steps", "1"]  # fmt: skip


def rows(lo: int, hi: int) -> str:
    return "".join(json.dumps({"prompt": f"{i} + 1 =", "answer": str(i + 1)}) + "\n"
                   for i in range(lo, hi))  # fmt: skip


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """models/tiny (real), models/hollow (no weights); a hub-style dataset folder with train
    and test files; a training file and a held-out file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    tok = char_tokenizer()
    tiny_llama(tok).save_pretrained(tmp_path / "models" / "tiny")
    tok.save_pretrained(tmp_path / "models" / "tiny")
    tiny_llama(tok).config.save_pretrained(tmp_path / "models" / "hollow")
    for folder in ("arith", "data"):
        (tmp_path / folder).mkdir()
    (tmp_path / "arith" / "train.jsonl").write_text(rows(0, 16))
    (tmp_path / "arith" / "test.jsonl").write_text(rows(16, 20))
    (tmp_path / "data" / "train.jsonl").write_text(rows(0, 16))
    (tmp_path / "data" / "heldout.jsonl").write_text(rows(14, 20))  # shares 2 prompts
    return tmp_path


class LogRecorder(TrainerCallback):
    """What TRL hands every logging backend's callback."""

    def __init__(self) -> None:
        self.logs: list[dict[str, Any]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        self.logs.append(dict(logs or {}))


def test_a_hub_style_test_split_is_scored_and_logged_beside_the_rollouts(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newcomer's `--eval_strategy steps --dataset_test_split test` on a dataset_name:
    it trains, and each evaluation carries the A/B's x-axes."""
    recorder = LogRecorder()
    real_init = FrontierGRPOTrainer.__init__

    def with_recorder(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, callbacks=[recorder], **kwargs)

    monkeypatch.setattr(FrontierGRPOTrainer, "__init__", with_recorder)
    argv = ["--model_name_or_path", "models/tiny", "--dataset_name", "arith", "--eval_strategy",
            "steps", "--eval_steps", "2", "--dataset_test_split", "test", "--eval_on_start",
            "true", "--max_steps", "4", "--selector", "uniform", *RUN]  # fmt: skip
    trainer = main(argv)
    assert len(trainer.eval_dataset) == 4  # the test split, with TRL's prompt column
    evals = [log for log in recorder.logs if "eval_reward" in log]
    assert [e["curriculum/trl/rollouts_delivered"] for e in evals] == [0.0, 16.0, 32.0]
    assert all("curriculum/tasks/distinct_trained" in e for e in evals)
    assert all("eval_rewards/answer_match/mean" in e for e in evals)
    lines = (workdir / "out" / "frontier_metrics.jsonl").read_text().splitlines()
    logged = [json.loads(line) for line in lines if "eval_reward" in line]
    assert [(r["step"], r["curriculum/trl/rollouts_delivered"]) for r in logged] == [
        (0, 0.0), (2, 16.0), (4, 32.0)
    ]  # fmt: skip
    train_logs = [log for log in recorder.logs if "loss" in log]
    assert all("curriculum/trl/rollouts_delivered" in log for log in train_logs)  # by default


def test_held_out_files_are_checked_and_shared_prompts_said(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "data" / "bad.jsonl").write_text(json.dumps({"prompt": "1 + 1 ="}) + "\n")
    base = ["--model_name_or_path", "models/hollow", "--dataset_files", "data/train.jsonl",
            "--eval_strategy", "steps", *RUN]  # fmt: skip
    assert cli([*base, "--eval_dataset_files", "data/bad.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "eval_dataset_files data/bad.jsonl (columns: prompt): reward function " in err
    assert "'answer_match' reads column 'answer', which the data lacks" in err
    argv = ["--model_name_or_path", "models/tiny", "--dataset_files", "data/train.jsonl",
            "--eval_dataset_files", "data/heldout.jsonl", "--eval_strategy", "steps",
            "--eval_steps", "1", "--max_steps", "1", *RUN]  # fmt: skip
    assert cli(argv) == 0
    err = capsys.readouterr().err
    assert "2 of the 6 held-out prompts are also training prompts" in err


@pytest.mark.parametrize(
    ("extra", "phrase"),
    [
        (["--eval_strategy", "steps"],
         "eval_strategy steps needs a held-out set, and dataset_files has only a training "
         "split: set eval_dataset_files: [data/heldout.jsonl]"),
        (["--reward_funcs", "answer_match", "answer_match"],
         "2 reward functions (answer_match, answer_match): TRL sums them, weighted, so the "
         "reward reaches 2 where each gives 1, and selector 'uniform' reads rewards in [0, 1]: "
         "add the YAML line `reward_range: [0, 2]`"),
        (["--selector", "bots", "--selector_config", '{"plugin": "interpolation"}'],
         "selector 'bots' needs reference pass rates (the interpolation plug-in reads "
         "weak/strong reference pass rates): set pass_rate_columns: [WEAK, STRONG]"),
        (["--report_to", "tensorbord"],
         "report_to tensorbord: not a logging backend (did you mean 'tensorboard'?)"),
    ],
    ids=["eval without held-out", "two rewards", "bots interpolation", "report_to typo"],
)  # fmt: skip
def test_mistakes_are_one_line_before_the_model_loads(
    workdir: Path, capsys: pytest.CaptureFixture[str], extra: list[str], phrase: str
) -> None:
    argv = ["--model_name_or_path", "models/hollow", "--dataset_files", "data/train.jsonl"]
    assert cli([*argv, *RUN, *extra]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if " error: " in line]
    assert len(errors) == 1 and phrase in errors[0] and "Traceback" not in err, err


def test_a_missing_test_split_is_named_before_the_model_loads(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--model_name_or_path", "models/hollow", "--dataset_name", "arith",
            "--eval_strategy", "steps", "--dataset_test_split", "validation", *RUN]  # fmt: skip
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert "dataset_name arith has no split 'validation'" in err
    assert "(splits: train, test); set dataset_test_split" in err


def test_the_trainer_checks_rewards_and_metadata_before_the_model(workdir: Path) -> None:
    def a(completions: list[str], **kw: Any) -> list[float]:
        return [0.0] * len(completions)

    def b(completions: list[str], **kw: Any) -> list[float]:
        return [1.0] * len(completions)

    args = GRPOConfig(output_dir="out", use_cpu=True, bf16=False, report_to="none",
                      num_generations=4, per_device_train_batch_size=4)  # fmt: skip
    data = Dataset.from_dict({"prompt": ["p", "q", "r", "s"]})
    kwargs = {"model": "models/hollow", "args": args, "train_dataset": data}
    with pytest.raises(ValueError, match=r"FrontierConfig\(reward_range=\(0, 2\)\)"):
        FrontierGRPOTrainer(reward_funcs=[a, b], **kwargs)
    with pytest.raises(ValueError, match="set pass_rate_columns: \\[WEAK, STRONG\\]"):
        FrontierGRPOTrainer(
            reward_funcs=[a],
            frontier=FrontierConfig(selector="bots", selector_config={"plugin": "interpolation"}),
            **kwargs,
        )
    args.reward_weights = [0.5, 0.5]  # the sum stays in [0, 1]: nothing to add
    with pytest.raises(Exception) as past:  # past the checks: the hollow model fails to load
        FrontierGRPOTrainer(reward_funcs=[a, b], **kwargs)
    assert "reward_range" not in str(past.value)
