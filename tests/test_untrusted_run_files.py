"""A run directory's line files are read with bounds: a hostile line is a ValueError naming
the file and line, never a RecursionError; and skip's keep floor bounds a walk, as greso's."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.metrics_log import read_metrics_jsonl
from frontier_rft.reporting.runs import _failures
from frontier_rft.selectors.skip import SkipConfig

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_metrics_line_is_named_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\n' + DEEP + '\n{"step": 1}\n')
    with pytest.raises(ValueError, match="line 2 is not a metrics record"):
        read_metrics_jsonl(path)


def test_a_deeply_nested_evaluation_record_is_named(tmp_path: Path) -> None:
    path = tmp_path / "eval_records.jsonl"
    path.write_text('{"failure": null}\n' + DEEP + "\n")
    with pytest.raises(ValueError, match="line 2 is not an evaluation record"):
        _failures(path)
    path.write_text('{"failure": "format_error"}\n{"failure": null}\n')
    assert _failures(path) == ["format_error", None]


def test_skip_min_keep_has_the_floor_greso_has() -> None:
    with pytest.raises(ValueError, match=r"min_keep must lie in \[0.0001, 1\]"):
        SkipConfig(min_keep=1e-9)
    assert SkipConfig(min_keep=1e-4).min_keep == 1e-4


@pytest.mark.parametrize("name", ["metrics.jsonl", "rewards.jsonl"])
@pytest.mark.parametrize("where", ["middle", "last"])
def test_resume_names_a_deeply_nested_log_line_and_changes_no_file(
    tmp_path: Path, name: str, where: str
) -> None:
    # What `frontier train --resume` reads before it goes on: both logs, bounded; a line
    # 100,000 deep is a ValueError naming the file and line (the CLI prints it as one line).
    from frontier_rft.training.run_files import truncate_logs

    good = '{"step": 0}\n{"step": 1}\n'
    text = good + DEEP + "\n" if where == "last" else '{"step": 0}\n' + DEEP + '\n{"step": 1}\n'
    (tmp_path / name).write_text(text)
    other = "rewards.jsonl" if name == "metrics.jsonl" else "metrics.jsonl"
    (tmp_path / other).write_text(good + '{"step": 7}\n')  # a tail the resume would drop
    line = 3 if where == "last" else 2
    with pytest.raises(ValueError, match=rf"{name}: line {line} is not a {name[:-6]} record"):
        truncate_logs(tmp_path, 1, print)
    assert (tmp_path / name).read_text() == text
    assert (tmp_path / other).read_text() == good + '{"step": 7}\n'  # read first, not rewritten


def test_a_deeply_nested_fewer_rollouts_record_is_named(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    from frontier_rft.integrations.trl.state import FEWER_FILE, check_fewer_settings

    (tmp_path / FEWER_FILE).write_text("[" * 20_000 + "]" * 20_000)  # a small file, deep
    with pytest.raises(ValueError, match=rf"{FEWER_FILE} is not readable as .*nesting depth"):
        check_fewer_settings(tmp_path, {"rollouts": "full", "screen": 0, "loss_scale": "batch"})
    (tmp_path / FEWER_FILE).write_text('{"rollouts": "full"}')
    with pytest.raises(ValueError, match=r"is damaged \(keys \['rollouts'\]\); resume from an"):
        check_fewer_settings(tmp_path, {"rollouts": "full", "screen": 0, "loss_scale": "batch"})
