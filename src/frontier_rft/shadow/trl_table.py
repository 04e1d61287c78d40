"""TRL's completions table, as `frontier shadow replay` reads it (docs/shadow.md): which of its
columns are reward functions' and with what weights, and its rows. No torch here; pyarrow
only for TRL's parquet files.

At each logging step `GRPOTrainer.log` (`GRPOConfig(log_completions=True)`) writes
`<output_dir>/completions/completions_<step:05d>.parquet`, one row per completion of the last
generation batch, with the columns `step`, `prompt`, `completion`, one column per reward
function, any `log_extra` column and `advantage`; with `report_to="wandb"` the same table is
logged as `completions` (exported as a `*.table.json` of `columns` and `data`, or as CSV). A
row's reward is the sum of its reward columns, `nansum` over the functions as TRL computes it
(each weighted by `reward_weights`, 1 unless given). The table does not say which columns are
reward functions' and which are `log_extra`'s, nor their weights: the frontier-rft TRL
adapter's record in the output dir does (shadow/run_rewards.py), else TRL's
`trainer_state.json` names them (`reward_names`, each weighted 1), else the caller names them
(`reward_columns` says which), else the table's one column besides TRL's own is read
(`summed_columns`); a column named that the table lacks is refused with the closest of its
columns. Only the columns a replay needs are read, a batch at a time.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from frontier_rft.core.config import did_you_mean
from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.shadow.log_reading import (
    HOW,
    MAX_ROWS,
    Read,
    bounded_lines,
    completion_texts,
    inner_suffix,
    json_lines,
    logged_number,
    logged_step,
    open_log,
    regular_file,
    step_files,
    text_digest,
)
from frontier_rft.shadow.run_rewards import REWARDS_FILE, read_run_rewards

__all__ = [
    "MAX_STATE_CHARS",
    "RewardColumns",
    "output_dir",
    "reward_columns",
    "reward_names",
    "summed_columns",
    "trl_records",
    "trl_rows",
]

MAX_STATE_CHARS = 1 << 26
"""Largest trainer_state.json read for its reward functions' names."""
_NOT_REWARDS = frozenset({"step", "prompt", "completion", "advantage", "image", "images"})
"""TRL's completion-table columns that are not reward functions."""
_CHECKPOINT = re.compile(r"checkpoint-(\d+)")
# TRL 1.16, trl/trainer/grpo_trainer.py: `_generate_and_score_completions` logs, per reward
# function name (`self.reward_func_names`), the metrics `rewards/<name>/mean` and `/std`
# (`eval_` prefixed in evaluation), which `Trainer.log` keeps in `trainer_state.json`'s
# `log_history`; `GRPOTrainer.log` writes the completions table as `step`, `prompt`,
# `completion`, `**self._logs["rewards"]` (one column per name), `**self._logs["extra"]`
# (`log_extra`'s columns, e.g. a gold answer or a length) and `advantage`.
_REWARD_METRIC = re.compile(r"(?:eval_)?rewards/(.+)/(?:mean|std)")


def output_dir(path: str | os.PathLike[str]) -> Path:
    """The TRL output dir of the log at `path` (the dir, its completions/, or a file in it)."""
    p = Path(path)
    base = p if p.is_dir() else p.parent
    return base.parent if base.name == "completions" else base


class RewardColumns(NamedTuple):
    """A TRL log's reward columns, how they are weighted, and who named them."""

    columns: list[tuple[str, float]]
    """(column, weight) per reward function, in TRL's order."""
    source: str
    """Who named them, for messages: --reward-column, or the file read."""
    how: str
    """Where the weights came from, for the replay's note."""

    def names(self) -> list[str]:
        return [name for name, _ in self.columns]


def reward_columns(
    path: str | os.PathLike[str], rewards: Sequence[tuple[str, float]] | None = None
) -> RewardColumns | None:
    """The reward columns and weights a replay sums a TRL log's reward from: `rewards` where
    given (--reward-column), else the run's reward functions and reward_weights as the
    frontier-rft TRL adapter recorded them in its output dir (`REWARDS_FILE`), else the
    reward functions TRL's trainer_state.json names (`reward_names`), each weighted 1 (TRL
    keeps reward_weights only in training_args.bin, never read); None where none names them
    (the table's one reward column is then read, weighted 1)."""
    if rewards:
        return RewardColumns(
            [(n, float(w)) for n, w in rewards], "--reward-column", "as --reward-column names them"
        )
    out = output_dir(path)
    if (recorded := read_run_rewards(out)) is not None:
        where = out / REWARDS_FILE
        how = f"the run's reward_weights, as the frontier-rft TRL adapter recorded them ({where})"
        return RewardColumns(recorded, str(where), how)
    if (found := reward_names(path)) is not None:
        how = (
            f"the reward functions {found[1]} names, each weighted 1 (TRL keeps reward_weights "
            "only in training_args.bin, never read: give a weighted run's with --reward-column "
            "NAME=WEIGHT)"
        )
        return RewardColumns([(n, 1.0) for n in found[0]], str(found[1]), how)
    return None


def reward_names(path: str | os.PathLike[str]) -> tuple[list[str], Path] | None:
    """The reward functions of the TRL run whose log is at `path`, as TRL's own files name
    them (`rewards/<name>/mean` in `trainer_state.json`'s log_history: the output dir's, else
    its latest checkpoint's), and that file; None where no such file is found."""
    out = output_dir(path)
    states = [out / "trainer_state.json"]
    try:
        checkpoints = [
            (int(m.group(1)), d) for d in out.iterdir() if (m := _CHECKPOINT.fullmatch(d.name))
        ]
    except OSError:
        checkpoints = []
    states += [d / "trainer_state.json" for _, d in sorted(checkpoints, reverse=True)]
    fix = "name the reward columns with --reward-column NAME (repeat)"
    for state in states:
        if not state.exists():
            continue
        regular_file(state, fix)
        if state.stat().st_size > MAX_STATE_CHARS:
            raise ValueError(f"{state}: larger than {MAX_STATE_CHARS:,} bytes; {fix}")
        try:
            record = loads_bounded(
                state.read_text(encoding="utf-8", errors="replace"),
                max_chars=MAX_STATE_CHARS,
                max_depth=16,
            )
        except ValueError as exc:
            raise ValueError(f"{state}: not TRL's trainer state ({str(exc)[:60]}); {fix}") from None
        history = record.get("log_history") if isinstance(record, dict) else None
        names: list[str] = []
        for entry in history if isinstance(history, list) else []:
            for key in entry if isinstance(entry, dict) else ():
                m = _REWARD_METRIC.fullmatch(key) if isinstance(key, str) else None
                if m and m.group(1) not in names:
                    names.append(m.group(1))
        if names:
            return names, state
    return None


def _guess(names: Sequence[str], where: str) -> RewardColumns:
    """The reward column of a table that names none: the one column besides TRL's own, or a
    refusal listing the candidates (a `log_extra` column is never summed in)."""
    candidates = [k for k in names if k not in _NOT_REWARDS]
    if not candidates:
        raise ValueError(f"{where}: no reward column; {HOW['trl']}")
    if len(candidates) > 1:
        listed = ", ".join(candidates[:8]) + (", ..." if len(candidates) > 8 else "")
        raise ValueError(
            f"{where}: columns {listed} may each be a reward function's or a log_extra "
            "column, and no trainer_state.json beside the log names the reward functions; "
            "name them with --reward-column NAME (repeat; NAME=WEIGHT for reward_weights)"
        )
    how = (
        "the table's one column besides step, prompt, completion and advantage, weighted 1 "
        "(no frontier_rewards.json or trainer_state.json beside the log names the reward "
        "functions)"
    )
    return RewardColumns([(candidates[0], 1.0)], "the table's one reward column", how)


def _no_column(name: str, names: Sequence[str], columns: RewardColumns, where: str) -> str:
    """The refusal of a reward column the table lacks, with the closest of its columns."""
    close = did_you_mean(name, [n for n in names if n not in _NOT_REWARDS])
    return (
        f"{where} has no reward column {name!r}{close} (named by {columns.source}); name the "
        "log's with --reward-column"
    )


def summed_columns(
    path: str | os.PathLike[str], rewards: Sequence[tuple[str, float]] | None = None
) -> RewardColumns:
    """The reward columns a replay of the TRL log at `path` sums: those `reward_columns`
    finds, else the table's one reward column, read from its first row (a ValueError where
    the log has none, or several that nothing names)."""
    if (named := reward_columns(path, rewards)) is not None:
        return named
    first = step_files(Path(path), "trl")[0]
    for where, record in trl_records(first, None):
        if not isinstance(record, dict):
            break
        return _guess(list(record), where)
    raise ValueError(f"{first}: holds no row of TRL's completions table; {HOW['trl']}")


def trl_records(file: Path, columns: RewardColumns | None) -> Iterator[tuple[str, Any]]:
    """The rows of a TRL table file, by its kind: parquet, CSV (gzipped or not), or JSON."""
    suffix = inner_suffix(file)
    if suffix == ".parquet":
        return _parquet_records(file, columns)
    return _csv_records(file) if suffix == ".csv" else _json_records(file)


def trl_rows(file: Path, columns: RewardColumns | None) -> Iterator[Read]:
    for where, record in trl_records(file, columns):
        if not isinstance(record, dict):
            raise ValueError(f"{where} is not a row of TRL's completions table; {HOW['trl']}")
        for key in ("step", "prompt"):
            if key not in record:
                raise ValueError(
                    f"{where} has no {key!r} column: not TRL's completions table; "
                    f"{HOW['trl']}, or pass --format"
                )
        if columns is None:
            columns = _guess(list(record), where)
        total, scored = 0.0, False
        for name, weight in columns.columns:
            if name not in record:
                raise ValueError(_no_column(name, list(record), columns, where))
            cell = record[name]  # None (NaN in the table, "" in CSV): not scored
            value = math.nan if cell is None or cell == "" else logged_number(cell)
            if value is None:
                raise ValueError(
                    f"{where}: column {name!r} holds {str(record[name])[:30]!r}, not a reward; "
                    "name the reward columns with --reward-column"
                )
            if not math.isnan(value):  # nansum over the functions, as TRL sums them
                total, scored = total + weight * value, True
        if not math.isfinite(total):
            raise ValueError(f"{where}: its reward sums to {total}; replay finite rewards")
        if not scored:  # TRL leaves it out of its group's baseline; so do its live shadows
            total = math.nan
        text = text_digest(record["completion"]) if "completion" in record else b""
        texts = completion_texts(record.get("completion"))
        step = logged_step(record["step"], where, "trl")
        yield step, record["prompt"], total, text, texts


def _parquet_records(file: Path, columns: RewardColumns | None) -> Iterator[tuple[str, Any]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(
            f"{file}: reading parquet needs pyarrow (pip install pyarrow), as TRL's own "
            "writing of it does"
        ) from None
    number = 0
    try:
        handle = pq.ParquetFile(file)
        if handle.metadata.num_rows > MAX_ROWS:
            raise ValueError(
                f"{file}: more than {MAX_ROWS:,} rows; replay a log of fewer completions"
            )
        names = handle.schema_arrow.names
        if columns is None:
            columns = _guess(names, str(file))
        for name in columns.names():
            if name not in names:  # its own line, with the table's columns to choose from
                raise ValueError(_no_column(name, names, columns, str(file)))
        # Only what a replay reads: no log_extra, advantage or image column.
        wanted = [c for c in ("step", "prompt", "completion", *columns.names()) if c in names]
        # A batch at a time: completions' text is held only while its rows are read.
        for batch in handle.iter_batches(batch_size=1024, columns=wanted):
            for row in batch.to_pylist():
                number += 1
                yield f"{file}: row {number}", row
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(
            f"{file}: not a readable parquet file ({str(exc)[:80]}); a file cut off mid-write "
            "is one to delete"
        ) from None


def _csv_records(file: Path) -> Iterator[tuple[str, Any]]:
    fh, _ = open_log(file, newline="")
    with fh:
        reader = csv.DictReader(bounded_lines(fh, file))
        try:
            for i, row in enumerate(reader):
                if None in row or None in row.values():
                    raise ValueError(f"{file}: row {i + 1} has more or fewer cells than columns")
                yield f"{file}: row {i + 1}", row
        except csv.Error as exc:
            raise ValueError(f"{file}: not CSV ({exc})") from None


def _json_records(file: Path) -> Iterator[tuple[str, Any]]:
    """A wandb table export ({"columns": [...], "data": [[...], ...]}), or JSON lines of
    rows (pandas' `to_json(orient="records", lines=True)`)."""
    # A wandb export holds a step's table on one line: a longer one is read from TRL's files.
    fix = "replay the run's completions/ directory (TRL's parquet files), or the table as CSV"
    for where, record in json_lines(file, fix):
        if isinstance(record, dict) and {"columns", "data"} <= record.keys():
            names, data = record["columns"], record["data"]
            if not isinstance(names, list) or not isinstance(data, list):
                raise ValueError(f"{where}: a wandb table's columns and data must be lists")
            for i, cells in enumerate(data):
                if not isinstance(cells, list) or len(cells) != len(names):
                    raise ValueError(
                        f"{where}: row {i + 1} of the table has not one cell per column"
                    )
                yield f"{where}, row {i + 1}", dict(zip(names, cells, strict=True))
        else:
            yield where, record
