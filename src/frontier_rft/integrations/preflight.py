"""What the TRL and verl pre-flight checks share: a report, the selector part of a config,
and a data file's columns read without loading the file.

Imports neither torch nor a trainer, so `frontier check-config` runs on any machine.
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontier_rft.core.config import config_problems
from frontier_rft.integrations.pool import judge_problem
from frontier_rft.selectors.registry import SELECTORS

__all__ = ["DataColumns", "Report", "apply_overrides", "read_data_columns", "selector_problems"]

MAX_FIRST_ROW_BYTES = 8 << 20
"""Longest first line read from a JSON-lines or CSV file (a row, not the file)."""
MAX_JSON_BYTES = 64 << 20
"""Largest .json file (one array of rows) read whole; larger ones are not checked."""


@dataclass
class Report:
    """A pre-flight verdict: `problems` must be fixed; `notes` say what was not checked."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, where: str, problems: list[str]) -> None:
        """Record `problems`, each prefixed with `where` (a config path) when given, once."""
        for problem in problems:
            line = f"{where}: {problem}" if where else problem
            if line not in self.problems:
                self.problems.append(line)

    def render(self, what: str) -> str:
        """The verdict as text: a headline naming `what` was checked, then one line per
        problem, then the notes."""
        if self.problems:
            count = len(self.problems)
            lines = [f"{what}: {count} problem{'s' * (count > 1)} in the frontier-rft settings:"]
            lines += [f"  - {p}" for p in self.problems]
        else:
            lines = [f"{what}: the frontier-rft settings are valid"]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def selector_problems(name: Any, overrides: Any, judge: Any = None) -> list[str]:
    """Mistakes in a selector's config overrides (every one, with close matches) and in an
    adapter's judge option; [] when make_selector would accept them. An unknown `name` is
    left to the adapter's config class, which names it (its overrides cannot be judged)."""
    if not isinstance(name, str) or name not in SELECTORS:
        return []
    out = []
    if isinstance(overrides, Mapping) and overrides:  # another type: the adapter's config says
        found = config_problems(SELECTORS[name].config_class, overrides)
        out += [f"selector_config for {name!r}: {p}" for p in found]
    if judge is None or isinstance(judge, str):
        problem = judge_problem(name, judge)
        out += [problem] if problem else []
    return out


@dataclass(frozen=True)
class DataColumns:
    """The columns of a data file and its first row (None when the format has no rows to
    peek at cheaply)."""

    names: list[str]
    first_row: dict[str, Any] | None
    rows: int | None = None
    """Row count when the format states it without a scan (parquet)."""


def read_data_columns(path: str | Path) -> DataColumns | str:
    """Columns of a json/jsonl/csv/parquet file from its first row or schema, or a sentence
    saying why they could not be read (no such file, another format, pyarrow missing)."""
    p = Path(path).expanduser()
    if not p.is_file():
        return f"no such file {str(path)!r} (resolved from {Path.cwd()})"
    suffix = p.suffix.lower()
    try:
        if suffix == ".jsonl" or (suffix == ".json" and p.stat().st_size > MAX_JSON_BYTES):
            with open(p, encoding="utf-8") as fh:
                line = fh.readline(MAX_FIRST_ROW_BYTES).strip()
            row = json.loads(line) if line else None
            return _row_columns(row, path)
        if suffix == ".json":
            data = json.loads(p.read_text(encoding="utf-8"))
            return _row_columns(data[0] if isinstance(data, list) and data else data, path)
        if suffix == ".csv":
            with open(p, encoding="utf-8", newline="") as fh:
                header = next(csv.reader([fh.readline(MAX_FIRST_ROW_BYTES)]), [])
            return DataColumns(names=[h.strip() for h in header], first_row=None)
        if suffix == ".parquet":
            return _parquet_columns(p)
    except (OSError, ValueError) as exc:  # JSON, UTF-8 and Arrow errors are ValueErrors
        return f"{path}: cannot read its first row ({' '.join(str(exc).split())})"
    return f"{path}: columns of a {suffix or 'suffix-less'} file are not checked"


def _row_columns(row: Any, path: str | Path) -> DataColumns | str:
    if not isinstance(row, dict):
        return f"{path}: the first row is not a JSON object of column: value"
    return DataColumns(names=[str(k) for k in row], first_row=row)


def _parquet_columns(path: Path) -> DataColumns | str:
    if importlib.util.find_spec("pyarrow") is None:
        return f"{path}: pyarrow is not installed, so its columns are not checked"
    pq: Any = importlib.import_module("pyarrow.parquet")
    handle = pq.ParquetFile(path)
    first = next(handle.iter_batches(batch_size=1), None)
    rows = first.to_pylist() if first is not None else []
    return DataColumns(
        names=list(handle.schema_arrow.names),
        first_row=rows[0] if rows else None,
        rows=int(handle.metadata.num_rows),
    )


def apply_overrides(config: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """`config` (changed in place) with command-line overrides applied: `a.b=v`, and
    Hydra's `+a.b=v` / `++a.b=v`; v is read as YAML. ValueError for an item that is not
    KEY=VALUE."""
    import yaml

    out = config
    for item in overrides:
        key, sep, text = item.lstrip("+").partition("=")
        if not sep or not key.strip():
            raise ValueError(f"an override is KEY=VALUE (a.b.c=1), got {item!r}")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            value = text
        node = out
        *parents, last = key.strip().split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[last] = value
    return out
