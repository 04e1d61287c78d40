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
