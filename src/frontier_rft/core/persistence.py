"""Atomic save/load of a selector: one .npz file holding a JSON header and the state arrays.

Layout: `__header__` is a UTF-8 JSON document (format version, selector name, config,
seed, the state tree with arrays replaced by `{"__array__": key}` references); every
array of the state tree and of the TaskPool is stored under its own key. The file is
written to a temporary file in the same directory, fsynced, then renamed over the
target, so a crash mid-save leaves either the old file or the new one, never a mix.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.config import config_from_dict
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import FORMAT_VERSION, Selector

__all__ = ["atomic_write_bytes", "load_selector", "save_selector"]

_HEADER = "__header__"


def _flatten(obj: Any, prefix: str, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        key = f"s/{prefix}"
        arrays[key] = obj
        return {"__array__": key}
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, str):
                raise TypeError(f"state keys must be strings, got {k!r} at {prefix!r}")
        return {k: _flatten(v, f"{prefix}/{k}", arrays) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_flatten(v, f"{prefix}/{i}", arrays) for i, v in enumerate(obj)]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _unflatten(obj: Any, arrays: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return np.array(arrays[obj["__array__"]])
        return {k: _unflatten(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unflatten(v, arrays) for v in obj]
    return obj


def atomic_write_bytes(path: str | os.PathLike[str], write: Any) -> None:
    """Call `write(fileobj)` on a temp file beside `path`, fsync it, then rename over `path`."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(target.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def save_selector(
    selector: Selector, path: str | os.PathLike[str], *, include_pool: bool = True
) -> None:
    """Atomically write the selector's full state (and by default its TaskPool) to `path`."""
    arrays: dict[str, np.ndarray] = {}
    tree = _flatten(selector.state_dict(), "state", arrays)
    pool_tree = _flatten(selector.pool.to_state(), "pool", arrays) if include_pool else None
    header = {
        "format_version": FORMAT_VERSION,
        "selector": selector.name,
        "state": tree,
        "pool": pool_tree,
    }
    arrays[_HEADER] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    atomic_write_bytes(path, lambda fh: np.savez(fh, **arrays))  # type: ignore[arg-type]


def load_selector(
    path: str | os.PathLike[str], pool: TaskPool | None = None, **collaborators: Any
) -> Selector:
    """Rebuild a selector saved by save_selector, then continue exactly where it stopped.

    Pass the same non-serialisable collaborators (judge=..., estimator=...) that were
    given to make_selector. `pool` is required when the file was saved without one.
    """
    from frontier_rft.selectors import SELECTORS

    try:
        with np.load(Path(path), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise ValueError(f"{path}: not a readable frontier_rft selector file ({exc})") from exc
    if _HEADER not in arrays:
        raise ValueError(f"{path}: not a frontier_rft selector file (no header)")
    try:
        header = json.loads(arrays[_HEADER].tobytes().decode("utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: malformed header ({exc})") from exc
    if not isinstance(header, dict) or not {"format_version", "selector", "state"} <= set(header):
        raise ValueError(
            f"{path}: malformed header (expected an object with format_version, selector, state)"
        )
    if header.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: format version {header.get('format_version')} is not supported "
            f"(this frontier_rft reads version {FORMAT_VERSION})"
        )
    name = header["selector"]
    if name not in SELECTORS:
        raise ValueError(f"{path}: unknown selector {name!r}; known: {sorted(SELECTORS)}")
    state = _unflatten(header["state"], arrays)
    if pool is None:
        if header.get("pool") is None:
            raise ValueError(f"{path} was saved without its TaskPool; pass pool=...")
        pool = TaskPool.from_state(_unflatten(header["pool"], arrays))
    cls = SELECTORS[name]
    config = config_from_dict(cls.config_class, state["config"], what=name)
    selector = cls(pool, config, seed=int(state["seed"]), **collaborators)
    selector.load_state_dict(state)
    return selector
