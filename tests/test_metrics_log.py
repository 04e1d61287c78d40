"""Reading a trainer's metrics.jsonl back: prefixes and torn lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_rft.metrics_log import curriculum_metrics, read_metrics_jsonl


def test_records_keep_prefixed_keys_and_gain_unprefixed_ones(tmp_path: Path) -> None:
    row = {"step": 3, **curriculum_metrics({"bots/clock": 2.0}, "all")}
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (got,) = read_metrics_jsonl(path)
    assert got["curriculum/bots/clock"] == 2.0
    assert got["bots/clock"] == 2.0
    assert got["step"] == 3


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\n{"step": 1}\n{"step": 2, "train/rew')
    assert [r["step"] for r in read_metrics_jsonl(path)] == [0, 1]


def test_a_bad_line_before_the_last_is_named(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\nnot json\n{"step": 2}\n')
    with pytest.raises(ValueError, match="line 2 is not a metrics record"):
        read_metrics_jsonl(path)
