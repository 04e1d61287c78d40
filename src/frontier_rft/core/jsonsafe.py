"""JSON from untrusted sources, parsed with size and nesting bounds (never a RecursionError);
strict JSON out (`dumps_strict`: no bare NaN or Infinity, which JSON does not allow)."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["dumps_strict", "finite_or_none", "json_depth", "load_json_file", "loads_bounded"]

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def json_depth(text: str) -> int:
    """Deepest nesting of [ ] / { } in a JSON text, in linear time and without recursion.

    Brackets inside string literals do not count; an unterminated string only makes the
    count larger, so a text that passes a depth bound here really is that shallow.
    """
    skeleton = np.frombuffer(_STRING.sub("", text).encode("utf-8", "surrogatepass"), np.uint8)
    if skeleton.size == 0:
        return 0
    opens = (skeleton == ord("[")) | (skeleton == ord("{"))
    closes = (skeleton == ord("]")) | (skeleton == ord("}"))
    return int(np.cumsum(opens.astype(np.int64) - closes).max(initial=0))


def loads_bounded(text: str, *, max_chars: int, max_depth: int) -> Any:
    """json.loads, or a ValueError when `text` is longer or deeper than allowed."""
    if len(text) > max_chars:
        raise ValueError(f"JSON text of {len(text)} characters exceeds {max_chars}")
    depth = json_depth(text)
    if depth > max_depth:
        raise ValueError(f"JSON nesting depth {depth} exceeds {max_depth}")
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
