"""`frontier check-config trl` says before launch what the run would refuse or do (issue 91):
a step of more prompts than the data, a step of one prompt (kept saves nothing there), a
mistyped `rollouts` or vLLM mode beside another mistake, a model config.json no model is built
from, and quoted values read as TRL's parser reads them. Without TRL or torch."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from frontier_rft.cli.main import main
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.config_check import check_trl_config
from frontier_rft.integrations.trl.keys import TRL_TYPES, parsed_as_trl

REPO = Path(__file__).resolve().parents[1]


def data(tmp_path: Path, rows: int) -> str:
    """A JSON-lines training file of `rows` prompts."""
    path = tmp_path / "train.jsonl"
    path.write_text(
        "".join(json.dumps({"prompt": f"q{i}", "answer": "1"}) + "\n" for i in range(rows))
    )
    return str(path)


def check(
    tmp_path: Path, values: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """`frontier check-config trl` on a file of `values`: its exit status and output."""
    file = tmp_path / "grpo.yaml"
    file.write_text(yaml.safe_dump(values))
    code = main(["check-config", "trl", str(file)])
    out = capsys.readouterr()
    return code, out.out + out.err


# ---- item 1: a step of more prompts than the data ------------------------------------------
@pytest.mark.parametrize(
    ("settings", "processes", "fix"),
    [
        ({"generation_batch_size": 512, "per_device_train_batch_size": 64}, 1,
         "set generation_batch_size: 256"),
        ({"per_device_train_batch_size": 64}, 8, "set per_device_train_batch_size: 32"),
        ({"per_device_train_batch_size": 16, "gradient_accumulation_steps": 4}, 8,
         "set per_device_train_batch_size: 8, or a lower gradient_accumulation_steps"),
    ],
)  # fmt: skip
def test_a_step_of_more_prompts_than_the_data_is_named_with_the_keys(
    tmp_path: Path, settings: dict[str, Any], processes: int, fix: str
) -> None:
    values = {"dataset_files": [data(tmp_path, 32)], "num_generations": 8, **settings}
    report = check_trl_config(values, processes=processes)
    (line,) = [p for p in report.problems if "generation step of 64 prompts" in p]
    assert "more than the training data's 32 prompts" in line and fix in line, line
    fits = check_trl_config({**values, "dataset_files": [data(tmp_path, 64)]}, processes=processes)
    assert not [p for p in fits.problems if "generation step of" in p]


# ---- item 2: at one prompt a step kept saves nothing ---------------------------------------
ONE_PROMPT = {"selector": "skip", "per_device_train_batch_size": 8, "num_generations": 8}


def test_at_one_prompt_a_step_no_kept_saving_is_quoted() -> None:
    auto = check_trl_config(ONE_PROMPT, processes=1)
    kept = check_trl_config({**ONE_PROMPT, "rollouts": "kept"}, processes=1)
    for report, where in ((auto, auto.choices), (kept, kept.rollouts)):
        (line,) = [x for x in where if "1 prompt a generation step" in x]
        assert "kept saves nothing" in line
        assert "0.78x" not in report.render("grpo.yaml"), report.render("grpo.yaml")
    several = check_trl_config({**ONE_PROMPT, "per_device_train_batch_size": 16}, processes=1)
    assert "1 prompt a generation step" not in several.render("grpo.yaml")


def test_a_replay_that_skipped_but_saved_nothing_says_why() -> None:
    from frontier_rft.core.pool import TaskPool
    from frontier_rft.shadow.live import build_shadow, shadow_config
    from frontier_rft.shadow.replay import replay_table

    def shadow(prompts_a_step: int) -> Any:
        greso = build_shadow(shadow_config("greso"), TaskPool(num_tasks=4), 0)
        step = 0
        for _ in range(12):  # every group all-correct: greso learns to skip them
            for start in range(0, 4, prompts_a_step):
                ids = np.arange(start, start + prompts_a_step, dtype=np.int64)
                greso.observe(step, ids, np.ones(ids.size * 4), 4)
                step += 1
        return greso

    one = shadow(1)
    total = one.passes()[-1]
    assert total["skipped"] > 0 and total["rollouts_saved"] == 0
    (why,) = [line for line in replay_table([one]).splitlines() if not line.startswith("|")]
    assert why.startswith(f"greso: skipped {total['skipped']:.0f}, saved 0: each step")
    assert "at 1 prompt a step skipping saves nothing" in why
    two = shadow(2)
    assert two.passes()[-1]["rollouts_saved"] > 0
    assert all(line.startswith("|") for line in replay_table([two]).splitlines())


# ---- item 6: a refused value hides no other check -------------------------------------------
@pytest.mark.parametrize(("given", "hint"), [("half", ""), ("Kept", " (did you mean 'kept'?)")])
def test_a_mistyped_rollouts_lists_every_value_and_suggests_one(given: str, hint: str) -> None:
    with pytest.raises(ValueError) as info:
        FrontierConfig(rollouts=given)
    text = str(info.value)
    assert "fewer_steps (whole batches of the prompts it keeps" in text
    assert text.endswith(f"got {given!r}{hint}"), text


def test_a_mistyped_vllm_mode_does_not_hide_the_tensor_parallel_problem() -> None:
    values = {"use_vllm": True, "vllm_mode": "colocated", "vllm_tensor_parallel_size": 3}
    problems = check_trl_config(values, processes=8).problems
    assert any("vllm_mode must be server or colocate" in p and "'colocate'?" in p for p in problems)
    assert any("vllm_tensor_parallel_size 3 does not divide 8 processes" in p for p in problems)


# ---- item 19: a model config.json no model is built from ----------------------------------
@pytest.mark.parametrize("size", ["Infinity", "1e400", "9" * 401, "[" * 500_000 + "]" * 500_000])
def test_a_hostile_model_config_is_one_line_and_exit_1(
    tmp_path: Path, size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    fields = '"num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10'
    (model / "config.json").write_text(f'{{"hidden_size": {size}, {fields}}}')
    code, out = check(tmp_path, {"model_name_or_path": str(model), "report_to": "none"}, capsys)
    assert code == 1, out
    (line,) = [x for x in out.splitlines() if "config.json" in x]
    assert "hidden_size must be a whole number" in line or "depth 500001 exceeds 32" in line, line


# ---- item 22: quoted values read as TRL's parser reads them --------------------------------
def test_quoted_values_give_the_plan_and_currency_of_the_run() -> None:
    plain = {"selector": "scalerl", "num_train_epochs": 1, "use_vllm": False,
             "num_generations": 4, "max_steps": 10, "use_cpu": True,
             "max_completion_length": 1024, "screen": 2}  # fmt: skip
    quoted = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in plain.items()}
    assert quoted["use_cpu"] == "true" and quoted["num_generations"] == "4"
    a, b = check_trl_config(plain, processes=1), check_trl_config(quoted, processes=1)
    assert (a.plan, a.currency, a.problems, a.choices) == (
        b.plan,
        b.currency,
        b.problems,
        b.choices,
    )
    # and one the run refuses is refused in the check (TRL parses "true" as True)
    refused = check_trl_config({**quoted, "use_adaptive_entropy": "true"}, processes=1)
    assert any("with use_adaptive_entropy" in p for p in refused.problems)


def test_quoted_values_convert_after_trls_parser_resolved_our_fields() -> None:
    # HfArgumentParser replaces a dataclass field's postponed annotation ("int") with the type
    # (int); a check run after a parser was built (in a test session, or a script) reads both.
    transformers = pytest.importorskip("transformers")
    from frontier_rft.integrations.trl.config import FrontierConfig, FrontierScriptArguments

    transformers.HfArgumentParser((FrontierConfig, FrontierScriptArguments))
    screen = next(f for f in fields(FrontierConfig) if f.name == "screen")
    assert screen.type is int  # resolved, as in a session that built TRL's parser first
    report = check_trl_config(
        {"selector": "scalerl", "num_generations": "4", "use_cpu": "true", "screen": "2"},
        processes=1,
    )
    assert not any(p.startswith("screen must be") for p in report.problems), report.problems


def test_a_value_trls_parser_refuses_is_one_line() -> None:
    values, problems = parsed_as_trl(
        {"num_generations": "four", "use_cpu": "maybe", "selector": "4"},
        {"num_generations": "int | None", "use_cpu": "bool", "selector": "str"},
    )
    assert values == {"num_generations": "four", "use_cpu": "maybe", "selector": "4"}  # as written
    report = check_trl_config({"num_generations": "four", "use_cpu": "maybe"}, processes=1)
    assert sum(p.startswith("num_generations must be") for p in report.problems) == 1  # once
    assert any(p.startswith("use_cpu must be true or false") for p in report.problems)
    assert problems[0].startswith("num_generations must be a number (int), got 'four'")
    assert problems[1].startswith("use_cpu must be true or false")


def test_the_types_read_without_trl_are_trls() -> None:
    pytest.importorskip("trl")
    from frontier_rft.integrations.trl.keys import converter, dataclass_annotations_from_source

    found = dataclass_annotations_from_source("trl", "GRPOConfig")
    assert found is not None
    assert {k: converter(found[k]) for k in TRL_TYPES} == TRL_TYPES


# ---- issue 90, item 1: TRL's door asks a kind's row, not its name --------------------------
def test_trl_branches_on_a_sampler_kinds_name_at_most_three_times() -> None:
    pattern = (
        r"(==|!=|isinstance).*(Backfill|Rescue|HardGroups|FewerRollouts|DynamicSampling|"
        r"PassThrough|Allocation|PilotCommit|ConformalStop)(\.kind|\))"
    )
    files = sorted((REPO / "src" / "frontier_rft" / "integrations" / "trl").glob("*.py"))
    found = [
        f"{path.name}:{number}: {line}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(pattern, line)
    ]
    assert len(files) > 20 and len(found) <= 3, found
