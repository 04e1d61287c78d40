"""What the TRL script and trainer check before a model loads: the model path, the logging
backends and the data's columns, each a one-line error; and `--help`, frontier-rft first.

The "before the model" claims are tested with a model directory that holds a config.json and
no weights: loading it would fail with another error, so the error seen proves the order.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from datasets import Dataset
from tiny_lm import char_tokenizer, tiny_llama
from trl import GRPOConfig

from frontier_rft.core.config import field_docs
from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
from frontier_rft.integrations.trl.grpo import cli, make_parser

N = 8


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's folder: models/ with a weightless model, data/ with a question-style file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hollow = tmp_path / "models" / "hollow"
    hollow.mkdir(parents=True)
    tiny_llama(char_tokenizer()).config.save_pretrained(hollow)  # config.json, no weights
    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "q.jsonl", "w") as fh:
        for i in range(N):
            row = {"question": f"{i} + 1 =", "answer": str(i + 1), "source": "add"}
            fh.write(json.dumps(row) + "\n")
    return tmp_path


def script_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    base = ["--output_dir", "out", "--use_cpu", "true", "--bf16", "false", "--report_to", "none"]
    assert cli(base + argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if " error: " in line]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_help_shows_frontier_rft_keys_first_with_help_and_default() -> None:
    text = make_parser().format_help()
    heading = text.index("frontier-rft: the selector and the columns it reads:")
    assert heading < text.index("--output_dir") < text.index("--model_name_or_path")
    assert text.index("frontier-rft script: rewards, trainer, local data:") < text.index(
        "--output_dir"
    )
    assert text.startswith("usage: python -m frontier_rft.integrations.trl.grpo --config")
    section = text[heading : text.index("frontier-rft script:")]
    docs = field_docs(FrontierConfig)
    defaults = FrontierConfig()
    for f in fields(FrontierConfig):
        entry = re.search(rf"--{f.name}\b.*?(?=\n  --|\Z)", section, flags=re.S)
        assert entry is not None, f.name
        body = " ".join(entry.group(0).split())
        first_words = " ".join(docs[f.name].split()[:4])
        assert first_words in body, (f.name, body)  # the field's docstring is its help
        assert f"(default: {getattr(defaults, f.name)})" in body, (f.name, body)


@pytest.mark.parametrize(
    "model", ["models/qwen7b", "/nowhere/qwen7b", "~/nowhere-qwen7b", "./qwen7b"]
)
def test_a_mistyped_local_model_path_is_one_line_before_any_hub_call(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # a hub call would now be attempted and fail
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # differently: connection refused
    error = script_error(capsys, ["--model_name_or_path", model, "--dataset_files", "data/q.jsonl"])
    assert ": no such directory. A name that looks like a path" in error, error
    assert "model_name_or_path " in error and "fix the path, or give a hub id" in error


def test_column_mistakes_are_named_before_the_model_loads(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--model_name_or_path", "models/hollow", "--dataset_files", "data/q.jsonl"]
    error = script_error(capsys, base)
    assert "(columns: question, answer, source): no prompt column 'prompt'" in error
    assert (
        "set prompt_column: COLUMN in the config file (--prompt_column COLUMN on the command "
        "line) to the column that holds the prompts" in error
    )
    error = script_error(
        capsys, [*base, "--prompt_column", "questoin", "--category_columns", "sourc"]
    )
    assert (
        "no prompt column 'questoin' (did you mean 'question'?): set prompt_column: question "
        in error
    )
    assert "(--prompt_column question on the command line) to the column" in error
    assert "category_columns: no column 'sourc' (did you mean 'source'?)" in error
    error = script_error(
        capsys,
        [*base, "--prompt_column", "question", "--dataset_train_split", "trian"],
    )
    assert "has no split 'trian' (did you mean 'train'?)" in error
    rows = workdir / "data" / "no_answer.jsonl"
    rows.write_text(json.dumps({"prompt": "1 + 1 =", "solution": "2"}) + "\n")
    error = script_error(capsys, ["--model_name_or_path", "models/hollow", "--dataset_files",
                                  str(rows)])  # fmt: skip
    assert "reward function 'answer_match' reads column 'answer', which the data lacks" in error


def test_a_missing_logging_backend_is_one_line(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as on a fresh [trl] install
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    base = ["--model_name_or_path", "models/hollow", "--dataset_files", "data/q.jsonl"]
    assert cli([*base, "--output_dir", "out", "--use_cpu", "true", "--report_to", "tensorboard"])
    err = capsys.readouterr().err
    assert "report_to tensorboard: the tensorboard package is not installed; pip install " in err
    assert "Traceback" not in err


def test_prompt_column_hands_its_column_to_trl(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A data file without `prompt`: --prompt_column question trains (TRL reads `prompt`)."""
    tok = char_tokenizer()
    tiny_llama(tok).save_pretrained(workdir / "models" / "tiny")
    tok.save_pretrained(workdir / "models" / "tiny")
    argv = ["--model_name_or_path", "models/tiny", "--dataset_files", "data/q.jsonl"]
    argv += ["--prompt_column", "question", "--output_dir", "out", "--use_cpu", "true"]
    argv += ["--bf16", "false", "--report_to", "none", "--max_steps", "1", "--num_generations"]
    argv += ["4", "--per_device_train_batch_size", "4", "--max_completion_length", "4"]
    argv += ["--save_strategy", "no", "--disable_tqdm", "true", "--selector", "uniform"]
    assert cli(argv) == 0, capsys.readouterr().err
    assert (workdir / "out" / "frontier_metrics.jsonl").is_file()


def trainer_kwargs(**kw: Any) -> dict[str, Any]:
    tok = char_tokenizer()
    values: dict[str, Any] = {
        "model": tiny_llama(tok),
        "reward_funcs": [lambda completions, **_: [0.0] * len(completions)],
        "args": GRPOConfig(output_dir="out", use_cpu=True, bf16=False, report_to="none",
                           num_generations=4, per_device_train_batch_size=4),
        "processing_class": tok,
        "train_dataset": Dataset.from_dict({"prompt": ["a", "b", "c", "d"], "src": list("xyxy")}),
    }  # fmt: skip
    values.update(kw)
    return values


def test_the_trainer_checks_the_same_before_loading_a_model(workdir: Path) -> None:
    with pytest.raises(ValueError, match=r"model models/qwen7b \(resolved from .*\): no such"):
        FrontierGRPOTrainer(**trainer_kwargs(model="models/qwen7b"))
    questions = Dataset.from_dict({"question": ["a", "b", "c", "d"]})
    with pytest.raises(ValueError, match=r"no 'prompt' column, which TRL's trainer generates "):
        FrontierGRPOTrainer(**trainer_kwargs(model="models/hollow", train_dataset=questions))
    with pytest.raises(ValueError, match=r"category_columns: no column 'source'"):
        FrontierGRPOTrainer(
            **trainer_kwargs(model="models/hollow"),
            frontier=FrontierConfig(selector="sec", category_columns=["source"]),
        )

    def needs_answer(completions: list[str], answer: list[str], **kwargs: Any) -> list[float]:
        return [0.0] * len(completions)

    with pytest.raises(ValueError, match="'needs_answer' reads column 'answer'"):
        FrontierGRPOTrainer(**trainer_kwargs(model="models/hollow", reward_funcs=[needs_answer]))


def test_a_mistyped_choice_on_the_command_line_gets_a_did_you_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--rollouts Kept`: argparse's refusal lists every value (fewer_steps too) and the
    script adds the closest one (issue 91, item 6)."""
    with pytest.raises(SystemExit) as info:
        make_parser().parse_args_and_config(["--output_dir", "out", "--rollouts", "Kept"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "invalid choice: 'Kept'" in err and "'fewer_steps'" in err
    assert err.rstrip().endswith("(did you mean 'kept'?)"), err
