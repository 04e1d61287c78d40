"""A run directory's run.json: written atomically, read back bounded and checked.

run.json says how a `frontier train` run was configured (and where its start model is);
`--resume` and the benchmark reports read it back. It is a file on disk, so it is treated
as untrusted: a size and nesting bound, and a clear error naming the file when it is not
what `Trainer` wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.core.persistence import atomic_write_bytes

__all__ = ["RESUME_MAY_CHANGE", "read_run_info", "write_run_info"]

RESUME_MAY_CHANGE = ("steps", "device", "threads")
"""TrainConfig fields a resumed run may change (more steps, other hardware)."""
_MAX_CHARS = 1 << 20  # a run.json is a few kB
_MAX_DEPTH = 8


def write_run_info(path: Path, info: dict[str, Any]) -> None:
    """Replace `path` with `info` as JSON, atomically (a crash leaves the old file)."""
    body = (json.dumps(info, indent=2, sort_keys=True) + "\n").encode("utf-8")
    atomic_write_bytes(path, lambda fh: fh.write(body))


def read_run_info(path: Path) -> dict[str, Any]:
    """run.json as written by `Trainer`; ValueError naming the file when it is not."""
    try:
        info = load_json_file(path, "a run.json", max_chars=_MAX_CHARS, max_depth=_MAX_DEPTH)
    except ValueError as exc:
        raise ValueError(f"{exc}; {_FIX}") from None
    if not isinstance(info, dict):
        raise ValueError(f"{path}: not a run.json (a JSON object expected); {_FIX}")
    if not isinstance(info.get("config"), dict):
        raise ValueError(f"{path}: has no 'config' object; {_FIX}")
    if not isinstance(info.get("model_dir"), str):
        raise ValueError(f"{path}: has no 'model_dir' string; {_FIX}")
    return info


_FIX = "it was damaged or not written by frontier train: start a new --out"
