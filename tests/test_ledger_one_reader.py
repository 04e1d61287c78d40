"""One reader for the ledger (issue 83, item 21): the readers behind
benchmarks/regime_stats.py (bench/real_rl/skip_cost.read_record), first_epoch_table.py and the
first-epoch ceiling read a record through the ledger's own checked reader, so a cut-off or
damaged .gz, a value the ledger refuses (a pass@1 of 5.0) or a record past MAX_RECORD_BYTES
decompressed is a ValueError naming the file, never EOFError, BadGzipFile or a table."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.bench.real_rl import ledger as ledger_module
from frontier_rft.bench.real_rl.skip_cost import read_record
from helpers import REPO, benchmark_script

DIGEST = "15805e4bbe8b"


@pytest.fixture(scope="module")
def table() -> Iterator[Any]:
    with benchmark_script("first_epoch_table") as module:
        yield module


def _copy(tmp_path: Path) -> Path:
    """A committed uniform record, at its place in a ledger under tmp_path."""
    source = next(
        iter(sorted((REPO / "benchmarks/ledger" / DIGEST / "cpu/uniform").glob("*/seed0.json.gz")))
    )
    path = tmp_path / DIGEST / "cpu" / "uniform" / source.parent.name / source.name
    path.parent.mkdir(parents=True)
    shutil.copy(source, path)
    return path


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    with gzip.open(path, "rt") as fh:
        record = json.load(fh)
    change(record)
    path.write_bytes(gzip.compress(json.dumps(record).encode()))


def _pass_at_1_of_5(record: dict[str, Any]) -> None:
    column = record["columns"]["eval/pass@1"]
    column[next(i for i, v in enumerate(column) if v is not None)] = 5.0


def test_the_committed_record_reads_as_the_ledger_reads_it(tmp_path: Path, table: Any) -> None:
    path = _copy(tmp_path)
    assert read_record(path)["entry"] == "uniform"
    assert table._record(DIGEST, "uniform", 0, (tmp_path,))["seed"] == 0


def test_a_cut_off_gz_is_a_value_error_naming_the_file(tmp_path: Path, table: Any) -> None:
    path = _copy(tmp_path)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ValueError, match=r"seed0.json.gz is not a run ledger record"):
        read_record(path)
    with pytest.raises(ValueError, match="not a run ledger record"):
        table._record(DIGEST, "uniform", 0, (tmp_path,))


def test_a_record_the_ledger_refuses_makes_no_table(tmp_path: Path, table: Any) -> None:
    path = _copy(tmp_path)
    _rewrite(path, _pass_at_1_of_5)
    with pytest.raises(ValueError, match=r"eval/pass@1 at step \d+ is 5.0, not in \[0, 1\]"):
        read_record(path)
    with pytest.raises(ValueError, match="not in"):
        table._record(DIGEST, "uniform", 0, (tmp_path,))


def test_first_epoch_tables_reader_is_size_bounded(
    tmp_path: Path, table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy(tmp_path)
    with gzip.open(path, "rb") as fh:
        size = len(fh.read())
    monkeypatch.setattr(ledger_module, "MAX_RECORD_BYTES", size - 1)
    with pytest.raises(ValueError, match=rf"larger than {size - 1} bytes decompressed"):
        table._record(DIGEST, "uniform", 0, (tmp_path,))
