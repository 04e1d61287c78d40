"""Issue 72 items 6 and 7: files from outside are parsed with bounds, and a damaged one is
one ValueError that names the problem (the CLI prints it as one line), never a traceback
from a RecursionError, MemoryError, KeyError, TypeError or AttributeError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_rft.inference.rollouts import FORMAT, VERSION, RolloutSet
from frontier_rft.service.journal import read_log
from frontier_rft.tasks.base import TaskItem, load_jsonl, save_jsonl

DEEP = "[" * 100_000 + "]" * 100_000
HEADER = json.dumps({"format": FORMAT, "version": VERSION, "samples": 2, "meta": {}})
ROW = {
    "task_id": 0,
    "level": 1,
    "prompt_ids": [1, 2],
    "completion_ids": [[3], [4]],
    "texts": ["a", "b"],
    "rewards": [0.0, 1.0],
    "reference": {},
}


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["[1, 2]"], "not a ZIP-RC rollout file"),
        ([DEEP], "not JSON .*nesting depth"),
        ([json.dumps({"format": FORMAT, "version": VERSION})], "'samples' must be"),
        ([HEADER, "[1, 2]"], "line 2: a rollout row must be a JSON object"),
        ([HEADER, DEEP], "line 2 is not JSON"),
        ([HEADER, json.dumps({**ROW, "texts": None})], "texts must be 2 strings"),
        ([HEADER, json.dumps({k: v for k, v in ROW.items() if k != "rewards"})], "lacks rewards"),
        ([HEADER, json.dumps({**ROW, "rewards": [0.0]})], "rewards must be 2 numbers"),
    ],
)
def test_a_bad_rollout_file_is_one_clear_error(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        RolloutSet.load(_write(tmp_path / "r.jsonl", *lines))


def test_a_good_rollout_file_still_loads(tmp_path: Path) -> None:
    loaded = RolloutSet.load(_write(tmp_path / "r.jsonl", HEADER, json.dumps(ROW)))
    assert loaded.task_ids == [0] and loaded.rewards.tolist() == [[0.0, 1.0]]


def test_ziprc_train_with_a_bad_rollouts_file_is_a_value_error(tmp_path: Path) -> None:
    """The path `frontier ziprc train --rollouts FILE` takes: _resume reads the file first."""
    from frontier_rft.inference.rollouts import _resume

    path = _write(tmp_path / "r.jsonl", "[1, 2]")
    with pytest.raises(ValueError, match="not a ZIP-RC rollout file"):
        _resume(path, {}, [])


ITEM = TaskItem(task_id=0, domain="countdown", prompt="p", reference={"t": 1}, level=2)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (DEEP, "line 1 is not JSON .*nesting depth"),
        ("[1, 2]", "line 1 must be a JSON object"),
        (json.dumps({"task_id": 0, "domain": "d"}), "missing prompt"),
        (json.dumps({"task_id": 0, "domain": "d", "prompt": "p", "x": 1}), "unknown fields x"),
        (json.dumps({"task_id": "0", "domain": "d", "prompt": "p"}), "task_id must be int"),
        ("x" * ((1 << 24) + 1), "longer than"),
    ],
)
def test_a_bad_task_file_is_one_clear_error(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_jsonl(_write(tmp_path / "t.jsonl", line))


def test_a_good_task_file_still_loads(tmp_path: Path) -> None:
    save_jsonl([ITEM], tmp_path / "t.jsonl")
    assert load_jsonl(tmp_path / "t.jsonl") == [ITEM]
    with pytest.raises(ValueError, match="nesting depth"):
        TaskItem.from_json(DEEP)


def _journal(tmp_path: Path, *lines: bytes) -> Path:
    (tmp_path / "wal-000000000001.jsonl").write_bytes(b"".join(lines))
    return tmp_path


def test_a_damaged_journal_is_a_clear_error(tmp_path: Path) -> None:
    good = b'{"seq": 1, "op": "update"}\n'
    # A record nested 100,000 deep in the middle of the log: corruption, not RecursionError.
    (tmp_path / "a").mkdir()
    deep = _journal(tmp_path / "a", DEEP.encode() + b"\n", good)
    with pytest.raises(ValueError, match="unreadable record in the middle"):
        read_log(deep)
    # A list where a record belongs: corruption too, not a TypeError.
    (tmp_path / "b").mkdir()
    with pytest.raises(ValueError, match="unreadable record in the middle"):
        read_log(_journal(tmp_path / "b", b"[1]\n", good))
    # A torn tail, however deep, is skipped as before.
    (tmp_path / "c").mkdir()
    assert read_log(_journal(tmp_path / "c", good, DEEP.encode())) == [{"seq": 1, "op": "update"}]


def test_an_overlong_journal_line_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import frontier_rft.service.journal as journal

    monkeypatch.setattr(journal, "MAX_RECORD_BYTES", 64)
    with pytest.raises(ValueError, match="longer than 64 bytes"):
        read_log(_journal(tmp_path, b'{"seq": 1, "pad": "' + b"x" * 100 + b'"}\n'))


@pytest.mark.parametrize("epochs", ["two", float("inf"), 1.5, -1, 0, True])
def test_check_config_skyrl_refuses_an_epoch_count_skyrl_cannot_run(epochs: object) -> None:
    from frontier_rft.integrations.skyrl.preflight import check_skyrl_config

    report = check_skyrl_config({"trainer": {"epochs": epochs}})
    assert any(p.startswith("trainer.epochs: must be a positive int") for p in report.problems)


@pytest.mark.parametrize("epochs", [1, 3, "${oc.env:EPOCHS}", None])
def test_check_config_skyrl_takes_a_whole_epoch_count(epochs: object) -> None:
    from frontier_rft.integrations.skyrl.preflight import check_skyrl_config

    report = check_skyrl_config({"trainer": {"epochs": epochs}})
    assert not [p for p in report.problems if "trainer.epochs" in p]


def test_the_skyrl_entrypoint_refuses_epochs_two_before_skyrl(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    from frontier_rft.integrations.skyrl.main import main as skyrl_main

    assert skyrl_main(["trainer.epochs=two"]) == 2
    err = capsys.readouterr().err
    assert "trainer.epochs: must be a positive int" in err and "Traceback" not in err
    assert "skyrl" not in sys.modules


def test_replay_refuses_a_pool_it_could_not_hold_in_2_gib(tmp_path: Path) -> None:
    """A replay took 2.1 GB at the old bound (2^27 prompts): the bound is 2^24 now."""
    import numpy as np

    from frontier_rft.shadow.replay import MAX_POOL, replay, reward_record

    assert MAX_POOL == 1 << 24
    log = tmp_path / "rewards.jsonl"
    log.write_text(reward_record(0, 1 << 27, 0, np.array([0, 1]), np.array([[1.0, 0.0]] * 2)))
    with pytest.raises(ValueError, match="more than the 16,777,216 prompts"):
        replay(log, ["greso"])


def test_replay_refuses_a_one_line_csv_before_reading_the_line_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import frontier_rft.shadow.log_reading as log_reading
    from frontier_rft.shadow.foreign_logs import read_foreign_log

    monkeypatch.setattr(log_reading, "MAX_LINE_CHARS", 1000)
    table = tmp_path / "completions.csv"
    table.write_text("step,prompt,completion,accuracy\n" + "1," + "x" * 5000 + ",c,1\n")
    with pytest.raises(ValueError, match="line 2 is longer than 1,000 characters"):
        read_foreign_log(table, "trl", rewards=None)


@pytest.mark.parametrize("name", ["rewards.py:score", "./rewards.py:score", "sub/r.py:score"])
def test_a_file_and_function_reward_name_says_the_dotted_path(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was an AttributeError ('module has no attribute py:score') or a TypeError."""
    from frontier_rft.integrations.trl.config import reward_name_problem
    from frontier_rft.integrations.trl.grpo import _reward

    (tmp_path / "rewards.py").write_text("def score(completions, **kw):\n    return [0.0]\n")
    monkeypatch.chdir(tmp_path)
    dotted = "sub.r.score" if name.startswith("sub") else "rewards.score"
    problem = reward_name_problem(name)
    assert problem is not None and f"dotted path, {dotted}" in problem
    with pytest.raises(ValueError, match=f"dotted path, {dotted}"):
        _reward(name)


def test_a_reward_module_that_fails_to_import_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from frontier_rft.integrations.trl.grpo import _reward

    (tmp_path / "broken_reward_r6.py").write_text("raise RuntimeError('oops')\n")
    (tmp_path / "const_reward_r6.py").write_text("score = 3\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="cannot be imported \\(RuntimeError: oops\\)"):
        _reward("broken_reward_r6.score")
    with pytest.raises(ValueError, match="is not callable"):
        _reward("const_reward_r6.score")
    with pytest.raises(ValueError, match="unknown reward function 'r6:score'"):
        _reward("r6:score")


def test_a_misspelt_data_file_is_named_before_the_datasets_library_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from frontier_rft.integrations.trl.grpo import _local_files, missing_data_files

    (tmp_path / "train.jsonl").write_text('{"prompt": "p"}\n')
    monkeypatch.chdir(tmp_path)
    assert missing_data_files(["train.jsonl", "hf://x/y.jsonl", "data/*.jsonl"], "o") == []
    assert missing_data_files(["trian.jsonl"], "dataset_files") == [
        "dataset_files: trian.jsonl: no such file (did you mean 'train.jsonl'?)"
    ]
    with pytest.raises(ValueError, match=r"eval_dataset_files: nope/x\.jsonl: no such file$"):
        _local_files(["nope/x.jsonl"], "eval_dataset_files")
