"""A data file's columns, read from its first row or schema without loading the file: what
the TRL and verl pre-flight checks compare with the columns a run reads.

Every way a file can fail to be read (no such file, a path `~nosuchuser/...`, a directory,
no permission, not UTF-8, a first row nested 100,000 deep, a CSV field over csv's limit, a
broken parquet file) ends in one sentence naming the file, never an exception.
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_rft.core.jsonsafe import loads_bounded

__all__ = [
    "MAX_COUNTED_BYTES",
    "MAX_FIRST_ROW_BYTES",
    "MAX_ID_ROWS",
    "MAX_JSON_BYTES",
    "MAX_ROW_DEPTH",
    "REMOTE_PREFIXES",
    "DataColumns",
    "local_rows",
    "nearby",
    "read_data_columns",
    "read_parquet_ids",
]

MAX_FIRST_ROW_BYTES = 8 << 20
"""Longest first line read from a JSON-lines or CSV file (a row, not the file)."""
MAX_JSON_BYTES = 64 << 20
"""Largest .json file (one array of rows) read whole; of a larger one only the first line."""
MAX_ROW_DEPTH = 64
"""Deepest nesting of a JSON row read (json.loads recurses: 100,000 levels overflow)."""
MAX_COUNTED_BYTES = 256 << 20
"""Largest JSON-lines file whose rows are counted by a scan (a larger one is counted by the
trainer when it loads it)."""
MAX_ID_ROWS = 20_000_000
"""Most rows whose id column is read whole (160 MB of int64) to look for repeated ids."""
REMOTE_PREFIXES = ("hdfs://", "s3://", "gs://", "http://", "https://")
"""Data paths that name no local file: the pre-flight checks read none of them."""


@dataclass(frozen=True)
class DataColumns:
    """The columns of a data file and its first row (None when the format has no rows to
    peek at cheaply)."""

    names: list[str]
    first_row: dict[str, Any] | None
    rows: int | None = None
    """Row count when the format states it without a scan (parquet)."""


def local_rows(paths: Any) -> int | None:
    """Rows in the data files `paths` (one path or a list), where every one is a local file
    that states its row count (parquet) or is JSON lines of at most `MAX_COUNTED_BYTES`,
    counted by a scan of its non-blank lines; else None."""
    listed = [paths] if isinstance(paths, (str, Path)) else paths
    if isinstance(listed, (bytes, dict)) or not hasattr(listed, "__iter__"):
        return None
    total = 0
    for path in listed:
        if not isinstance(path, (str, Path)) or str(path).startswith(REMOTE_PREFIXES):
            return None
        data = read_data_columns(path)
        if not isinstance(data, DataColumns):
            return None
        rows = data.rows if data.rows is not None else _jsonl_rows(Path(path).expanduser())
        if rows is None:
            return None
        total += rows
    return total or None


def _jsonl_rows(path: Path) -> int | None:
    """Non-blank lines of JSON-lines file `path` (its rows), or None: another format, larger
    than `MAX_COUNTED_BYTES`, or unreadable."""
    try:
        if path.suffix.lower() != ".jsonl" or path.stat().st_size > MAX_COUNTED_BYTES:
            return None
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return None


MAX_LISTED = 10_000
"""Entries of a folder read to suggest a close file name (a folder may hold millions)."""


def nearby(path: Path) -> str:
    """' (did you mean 'data/train.jsonl'?)' for the file in `path`'s folder whose name is
    closest to its name; where the folder itself is missing, the closest folder beside it.
    '' when nothing is close or the folder cannot be listed (its first MAX_LISTED entries)."""
    import difflib
    import itertools
    import os

    folder = path.parent
    try:
        if not folder.is_dir():
            upper = folder.parent if folder.parent.is_dir() else None
            if upper is None:
                return ""
            with os.scandir(upper) as entries:
                dirs = [e.name for e in itertools.islice(entries, MAX_LISTED) if e.is_dir()]
            close = difflib.get_close_matches(folder.name, dirs, n=1)
            hint = f"; did you mean {str(upper / close[0])!r}?" if close else ""
            return f" (no folder {str(folder)!r}{hint})"
        with os.scandir(folder) as entries:
            files = [e.name for e in itertools.islice(entries, MAX_LISTED) if e.is_file()]
    except OSError:
        return ""
    # 0.75, not difflib's 0.6: the shared suffix made x.jsonl "close" to train.jsonl
    close = difflib.get_close_matches(path.name, files, n=1, cutoff=0.75)
    return f" (did you mean {str(path.with_name(close[0]))!r}?)" if close else ""


def read_data_columns(path: str | Path) -> DataColumns | str:
    """Columns of a json/jsonl/csv/parquet file from its first row or schema, or a sentence
    saying why they could not be read; a sentence starting 'no such file' means the path
    names nothing (a mistake in the config, where the others may only be notes)."""
    shown = str(path)[:200]
    try:
        p = Path(path).expanduser()  # RuntimeError for ~nosuchuser
        if not p.is_file():
            if p.exists():
                return f"{shown}: not a file"
            return f"no such file {shown!r} (resolved from {Path.cwd()}){nearby(p)}"
    except RuntimeError:  # from expanduser
        return f"no such file {shown!r} ({shown.split('/', 1)[0]}: no such user)"
    except (OSError, ValueError) as exc:
        return f"no such file {shown!r} ({_one_line(exc)})"
    suffix = p.suffix.lower()
    if suffix not in (".json", ".jsonl", ".csv", ".parquet"):
        return f"{shown}: columns of a {suffix or 'suffix-less'} file are not checked"
    try:
        if suffix == ".parquet":
            return _parquet_columns(p, shown)
        if suffix == ".jsonl" or (suffix == ".json" and p.stat().st_size > MAX_JSON_BYTES):
            line = _first_line(p, shown)
            return _row_columns(_json(line, shown) if line.strip() else None, shown)
        if suffix == ".json":
            with open(p, encoding="utf-8") as fh:
                data = _json(fh.read(MAX_JSON_BYTES + 1), shown, whole=True)
            return _row_columns(data[0] if isinstance(data, list) and data else data, shown)
        header = next(csv.reader([_first_line(p, shown)]), [])
        return DataColumns(names=[h.strip() for h in header], first_row=None)
    except _Unreadable as exc:
        return str(exc)
    except UnicodeDecodeError as exc:
        return f"{shown}: not UTF-8 text (byte {exc.start} of the part read); save it as UTF-8"
    except csv.Error as exc:  # e.g. a field over csv's 131,072-character limit
        return f"{shown}: its CSV header cannot be read ({_one_line(exc)})"
    except (OSError, ValueError) as exc:
        return f"{shown}: cannot read its first row ({_one_line(exc)})"


class _Unreadable(Exception):
    """A read failure whose message is already the sentence to show."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _first_line(p: Path, shown: str) -> str:
    """The first line of text file `p`, or _Unreadable when it is longer than the bound
    (a truncated row would be reported as malformed, which it may not be)."""
    with open(p, encoding="utf-8", newline="") as fh:
        line = fh.readline(MAX_FIRST_ROW_BYTES + 1)
    if len(line) > MAX_FIRST_ROW_BYTES:
        raise _Unreadable(
            f"{shown}: the first row is longer than {MAX_FIRST_ROW_BYTES >> 20} MiB, so its "
            "columns are not checked"
        )
    return line


def _json(text: str, shown: str, *, whole: bool = False) -> Any:
    limit = MAX_JSON_BYTES if whole else MAX_FIRST_ROW_BYTES
    if len(text) > limit:
        raise _Unreadable(f"{shown}: larger than {limit >> 20} MiB, so its columns are not checked")
    try:
        return loads_bounded(text, max_chars=limit, max_depth=MAX_ROW_DEPTH)
    except ValueError as exc:  # JSON syntax, or the depth bound
        what = "its content" if whole else "its first row"
        raise _Unreadable(f"{shown}: {what} is not readable JSON ({_one_line(exc)})") from None


def _row_columns(row: Any, shown: str) -> DataColumns | str:
    if not isinstance(row, dict):
        return f"{shown}: the first row is not a JSON object of column: value"
    return DataColumns(names=[str(k) for k in row], first_row=row)


def _parquet_columns(path: Path, shown: str) -> DataColumns | str:
    if importlib.util.find_spec("pyarrow") is None:
        return f"{shown}: pyarrow is not installed, so its columns are not checked"
    pq: Any = importlib.import_module("pyarrow.parquet")
    arrow_error: Any = importlib.import_module("pyarrow").ArrowException
    try:
        handle = pq.ParquetFile(path)
        first = next(handle.iter_batches(batch_size=1), None)
        rows = first.to_pylist() if first is not None else []
        return DataColumns(
            names=[str(n) for n in handle.schema_arrow.names],
            first_row=rows[0] if rows else None,
            rows=int(handle.metadata.num_rows),
        )
    except (arrow_error, OSError, ValueError, TypeError, NotImplementedError) as exc:
        return f"{shown}: not a readable parquet file ({_one_line(exc)})"


def read_parquet_ids(path: str | Path, key: str) -> Any:
    """The integer column `key` (`column.field` reads inside a struct column, e.g.
    `extra_info.index`) of parquet file `path`, read alone, as a numpy int64 array; or a
    sentence saying why not (no pyarrow, too many rows, a value that is not an integer)."""
    import numpy as np

    shown = str(path)[:200]
    if importlib.util.find_spec("pyarrow") is None:
        return f"{shown}: pyarrow is not installed, so its {key} values are not checked"
    pq: Any = importlib.import_module("pyarrow.parquet")
    pa: Any = importlib.import_module("pyarrow")
    try:
        handle = pq.ParquetFile(Path(path).expanduser())
        if handle.metadata.num_rows > MAX_ID_ROWS:
            return f"{shown}: over {MAX_ID_ROWS:,} rows, so its {key} values are not checked"
        column = handle.read(columns=[key]).column(0).combine_chunks()
        for part in key.split(".")[1:]:  # a nested read keeps the struct around the field
            if pa.types.is_struct(column.type):
                column = column.field(part)
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError) as exc:
        return f"{shown}: its {key} values cannot be read ({_one_line(exc)})"
    if column.null_count:
        return f"{shown}: {column.null_count} row(s) have no {key}"
    if not pa.types.is_integer(column.type):
        return f"{shown}: {key} holds {column.type}, not integers"
    out: Any = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
    return out
