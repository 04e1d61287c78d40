"""JSON from untrusted sources, parsed with size and nesting bounds (never a RecursionError);
strict JSON out (`dumps_strict`: no bare NaN or Infinity, which JSON does not allow)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = [
    "dumps_strict",
    "finite_or_none",
    "json_depth",
    "json_shape",
    "jsonl_records",
    "load_json_file",
    "loads_bounded",
]

_CHUNK = 1 << 18  # characters scanned at a time: ~10 MB of working arrays whatever the text
_QUOTE, _BACKSLASH, _COMMA = ord('"'), ord("\\"), ord(",")
_OPENS, _CLOSES = (ord("["), ord("{")), (ord("]"), ord("}"))


def json_shape(text: str) -> tuple[int, int]:
    """(nesting depth, value count) of a JSON text, in linear time, without recursion or
    regular expressions, with O(1) working memory besides the text (chunks of _CHUNK).

    Brackets and commas inside string literals do not count (a quote is escaped by an odd
    run of backslashes before it). The value count (opening brackets + commas + 1) bounds
    the containers and scalars json.loads builds, each a few hundred bytes at most. Past an
    unterminated string nothing counts, and json.loads parses nothing there either.
    """
    depth = top = values = 0
    in_string, run = 0, 0  # carried across chunks: inside a literal, trailing backslashes
    for start in range(0, len(text), _CHUNK):
        part = np.frombuffer(
            text[start : start + _CHUNK].encode("utf-8", "surrogatepass"), np.uint8
        )
        pos = np.arange(part.size, dtype=np.int64)
        last = np.maximum.accumulate(np.where(part == _BACKSLASH, -1, pos))  # last non-"\\"
        backslashes = np.empty(part.size, dtype=np.int64)  # run of "\\" just before each char
        backslashes[0] = run
        backslashes[1:] = pos[:-1] - last[:-1] + np.where(last[:-1] < 0, run, 0)
        quotes = (part == _QUOTE) & (backslashes % 2 == 0)
        outside = (np.cumsum(quotes, dtype=np.int64) + in_string) % 2 == 0
        opens = ((part == _OPENS[0]) | (part == _OPENS[1])) & outside
        closes = ((part == _CLOSES[0]) | (part == _CLOSES[1])) & outside
        levels = np.cumsum(opens.astype(np.int64) - closes.astype(np.int64)) + depth
        top = max(top, int(levels.max(initial=depth)))
        depth = int(levels[-1])
        values += int(opens.sum()) + int(np.count_nonzero((part == _COMMA) & outside))
        in_string = 0 if outside[-1] else 1
        run = int(part.size - 1 - last[-1]) + (run if last[-1] < 0 else 0)
    return top, values + (0 if text.isspace() or not text else 1)


def json_depth(text: str) -> int:
    """Deepest nesting of [ ] / { } in a JSON text (see json_shape)."""
    return json_shape(text)[0]


def loads_bounded(
    text: str, *, max_chars: int, max_depth: int, max_values: int | None = None
) -> Any:
    """json.loads, or a ValueError when `text` is longer, deeper or holds more values than
    allowed (all checked before parsing)."""
    if len(text) > max_chars:
        raise ValueError(f"JSON text of {len(text)} characters exceeds {max_chars}")
    depth, values = json_shape(text)
    if depth > max_depth:
        raise ValueError(f"JSON nesting depth {depth} exceeds {max_depth}")
    if max_values is not None and values > max_values:
        raise ValueError(f"JSON text holds about {values} values, more than {max_values}")
    try:
        return json.loads(text)
    except RecursionError as exc:  # unreachable after the depth check; kept as a guard
        raise ValueError("JSON nested too deeply") from exc


def load_json_file(
    path: str | os.PathLike[str], what: str, *, max_chars: int = 1 << 26, max_depth: int = 32
) -> Any:
    """A JSON file's content, or one ValueError naming the file and what it should be."""
    file = Path(path)
    if not file.is_file():
        state = "is not a file" if file.exists() else "does not exist"
        raise ValueError(f"{file} {state}; expected {what}")
    try:
        with open(file, encoding="utf-8") as fh:
            text = fh.read(max_chars + 1)  # never more than the bound in memory
        return loads_bounded(text, max_chars=max_chars, max_depth=max_depth)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{file} is not readable as {what}: {exc}") from None


def finite_or_none(obj: Any) -> Any:
    """`obj` with every NaN or infinity replaced by None (JSON null) and numpy values made
    Python ones (arrays become lists), through dicts, lists and tuples."""
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_or_none(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return finite_or_none(obj.tolist())
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def dumps_strict(obj: Any, **kwargs: Any) -> str:
    """json.dumps of finite_or_none(obj): valid JSON for any reader (undefined values are
    null, never a bare NaN); json.dumps's keyword arguments pass through."""
    return json.dumps(finite_or_none(obj), allow_nan=False, **kwargs)


def jsonl_records(
    fh: IO[str], name: object, *, max_chars: int, max_depth: int, fix: str = ""
) -> Iterator[tuple[str, Any]]:
    """Each non-blank line of a JSON-lines stream with where it is ("NAME: line N"), parsed
    with loads_bounded; a line too long, not JSON or cut off mid-write (the last one, with
    no newline) is a ValueError that says so, with `fix` appended."""
    tail = f"; {fix}" if fix else ""
    number = 0
    while line := fh.readline(max_chars + 1):
        number += 1
        where = f"{name}: line {number}"
        if len(line) > max_chars:
            raise ValueError(f"{where} is longer than {max_chars:,} characters{tail}")
        if not line.strip():
            continue
        try:
            record = loads_bounded(line, max_chars=max_chars, max_depth=max_depth)
        except ValueError as exc:
            if not line.endswith("\n"):
                raise ValueError(
                    f"{where} is cut off (the run stopped mid-write); delete that line "
                    "and replay the steps before it"
                ) from None
            raise ValueError(f"{where} is not JSON ({exc}){tail}") from None
        yield where, record
