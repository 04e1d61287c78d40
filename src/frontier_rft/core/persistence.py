"""Atomic save/load of a selector: one .npz file holding a JSON header and the state arrays.

Layout: `__header__` is a UTF-8 JSON document (format version, selector name, config,
seed, the state tree with arrays replaced by `{"__array__": key}` references); every
array of the state tree and of the TaskPool is stored under its own key, uncompressed.
The file is written to a temporary file in the same directory, fsynced, then renamed over
the target, so a crash mid-save leaves either the old file or the new one, never a mix.
A save killed before its rename leaves its temporary file (`.<name>.<random>.frontier-tmp`)
behind; the next save or load in that directory deletes such files once they are
STALE_TEMP_SECONDS old (a live save keeps touching its own). Loading treats the file as
untrusted (checkpoint_file) and raises CheckpointError for anything wrong with it.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import secrets
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.checkpoint_file import CheckpointError, header_problem, read_checkpoint
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.pool_diff import pool_mismatch
from frontier_rft.core.selector import FORMAT_VERSION, Selector

__all__ = [
    "STALE_TEMP_SECONDS",
    "CheckpointError",
    "atomic_write_bytes",
    "clean_stale_temps",
    "load_selector",
    "new_file_mode",
    "save_selector",
    "set_new_file_mode",
]

TEMP_SUFFIX = ".frontier-tmp"
STALE_TEMP_SECONDS = 600.0
"""A temporary file of ours untouched for this long belongs to a save that died."""
_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]+" + re.escape(TEMP_SUFFIX) + "$")
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


def _unflatten(obj: Any, arrays: dict[str, np.ndarray], used: set[str]) -> Any:
    # Recursion is safe: read_checkpoint bounded the nesting depth and checked every key.
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            key = obj["__array__"]
            # save_selector stores each array once under its own key; a file naming one
            # twice could make a few MB of disk ask for any amount of memory.
            if key in used:
                raise CheckpointError(f"array {key!r} is referenced more than once")
            used.add(key)
            return np.array(arrays[key])
        return {k: _unflatten(v, arrays, used) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unflatten(v, arrays, used) for v in obj]
    return obj


def clean_stale_temps(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete temp files of interrupted atomic writes in `directory`; return what was removed.

    Only names of our own pattern (`.<name>.<random>.frontier-tmp`), only regular files, and
    only those last modified STALE_TEMP_SECONDS ago or earlier: a save in progress elsewhere
    keeps writing to its file, so it is never taken for a dead one.
    """
    removed: list[Path] = []
    cutoff = time.time() - STALE_TEMP_SECONDS
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not _TEMP_NAME.match(entry.name):
            continue
        with contextlib.suppress(OSError):  # raced with another cleaner, or not ours to delete
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime <= cutoff:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def atomic_write_bytes(path: str | os.PathLike[str], write: Any) -> None:
    """Call `write(fileobj)` on a temp file beside `path`, fsync it, then rename over `path`."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(target.parent)
    # Created like any new file (0666 less the umask), not mkstemp's 0600: a saved file is
    # as readable as the user's other outputs.
    tmp = str(target.parent / f".{target.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
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


def new_file_mode() -> int:
    """The permission bits open() gives a new file: 0o666 less the process umask."""
    try:  # Linux: read without changing it (os.umask would, briefly, for every thread)
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def set_new_file_mode(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Give each regular file new_file_mode(): for files a library wrote through a 0600 temp
    file (safetensors does, for model.safetensors), so they read like any file we write."""
    mode = new_file_mode()
    for path in paths:
        if Path(path).is_file():
            os.chmod(path, mode)


def save_selector(
    selector: Selector, path: str | os.PathLike[str], *, include_pool: bool = True
) -> None:
    """Atomically write the selector's full state (and by default its TaskPool) to `path`."""
    if not str(path) or Path(path).is_dir():
        what = repr(str(path)) + " is a directory" if str(path) else "the path is empty"
        raise IsADirectoryError(f"save_selector: {what}; pass a file path such as run/sel.npz")
    arrays: dict[str, np.ndarray] = {}
    tree = _flatten(selector.state_dict(), "state", arrays)
    pool_tree = _flatten(selector.pool.to_state(), "pool", arrays) if include_pool else None
    header = {
        "format_version": FORMAT_VERSION,
        "selector": selector.name,
        "state": tree,
        "pool": pool_tree,
    }
    text = json.dumps(header).encode("utf-8")
    problem = header_problem(text)
    if problem is not None:  # never write a file that load_selector would refuse
        raise ValueError(
            f"{selector.name} state header is {problem}; this is a bug in the selector's state_dict"
        )
    arrays[_HEADER] = np.frombuffer(text, dtype=np.uint8)
    atomic_write_bytes(path, lambda fh: np.savez(fh, **arrays))  # type: ignore[arg-type]


def _check_fits(state: dict[str, Any], pool: TaskPool, saved_pool: Any = None) -> None:
    """Refuse a state that does not fit `pool` before building anything of the pool's size:
    every selector's state holds a per-task array, so a header that claims a huge pool
    without the arrays to match costs no memory. `saved_pool` (the file's own pool state,
    or None) says what differs for a file saved before states carried a pool summary."""
    summary = state.get("pool_summary")
    mismatch = pool_mismatch(state.get("pool_fingerprint"), summary, pool)
    if mismatch is not None:
        if summary is None and isinstance(saved_pool, dict):
            with contextlib.suppress(ValueError, TypeError):  # malformed: fingerprints say it
                summary = TaskPool.from_state(saved_pool).summary()
                mismatch = pool_mismatch(state.get("pool_fingerprint"), summary, pool)
        raise ValueError(mismatch)
    base = state.get("base")
    if not isinstance(base, dict):
        raise ValueError("selector state: missing or malformed section 'base'")
    counts = base.get("times_selected")
    if not isinstance(counts, np.ndarray) or counts.shape != (pool.num_tasks,):
        shape = getattr(counts, "shape", None)
        raise ValueError(
            f"state does not fit a TaskPool of {pool.num_tasks} tasks (per-task counts of "
            f"shape {shape})"
        )


def load_selector(
    path: str | os.PathLike[str], pool: TaskPool | None = None, **collaborators: Any
) -> Selector:
    """Rebuild a selector saved by save_selector, then continue exactly where it stopped.

    Pass the same non-serialisable collaborators (judge=..., estimator=...) that were
    given to make_selector. `pool` is required when the file was saved without one.
    Raises OSError when the file cannot be read, CheckpointError (a ValueError) for
    anything wrong with its content, including a state that does not fit `pool`, and
    TypeError for a `pool` or collaborator of the wrong kind.
    """
    from frontier_rft.selectors import SELECTORS

    file = Path(path)
    clean_stale_temps(file.parent)
    header, arrays = read_checkpoint(file)
    if header.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: format version {header.get('format_version')!r} is not supported "
            f"(this frontier_rft reads version {FORMAT_VERSION})"
        )
    name = header["selector"]
    if name == "dapo":
        from frontier_rft.selectors.dynamic_sampling import DAPO_MOVED

        raise CheckpointError(f"{path}: saved by an older frontier_rft; {DAPO_MOVED}")
    if not isinstance(name, str) or name not in SELECTORS:
        raise CheckpointError(f"{path}: unknown selector {name!r}; known: {sorted(SELECTORS)}")
    unknown = sorted(set(header) - {"format_version", "selector", "state", "pool"})
    if unknown:
        raise CheckpointError(
            f"{path}: unknown header field(s) {', '.join(map(repr, unknown))}; the file was "
            "written by another frontier_rft version, so load it with that version"
        )
    if pool is not None and not isinstance(pool, TaskPool):
        raise TypeError(f"pool must be a TaskPool or None, got {type(pool).__name__}")
    used: set[str] = set()
    try:
        state = _unflatten(header["state"], arrays, used)
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
        raise CheckpointError(f"{path}: malformed state (expected an object with a config)")
    try:
        pool_state = None
        if pool is None:
            if header.get("pool") is None:
                raise ValueError("saved without its TaskPool; pass pool=...")
            pool_state = _unflatten(header["pool"], arrays, used)
            if not isinstance(pool_state, dict):
                raise ValueError("malformed TaskPool")
            pool = TaskPool.from_state(pool_state)
        elif (
            "pool_summary" not in state
            and header.get("pool") is not None
            and state.get("pool_fingerprint") != pool.fingerprint
        ):  # a file from before states carried a summary: its own pool says what differs
            pool_state = _unflatten(header["pool"], arrays, used)
        _check_fits(state, pool, pool_state)
        cls = SELECTORS[name]
        config = config_from_dict(cls.config_class, state["config"], what=name)
        if "seed" not in state:
            raise ValueError("selector state: missing field 'seed'")
        takes = inspect.signature(cls).parameters
        unknown = sorted(set(collaborators) - set(takes) - {"pool", "config", "seed"})
        if unknown and not any(p.kind is p.VAR_KEYWORD for p in takes.values()):
            raise TypeError(
                f"{name} takes no {', '.join(unknown)}: pass load_selector only the "
                "collaborators that were given to make_selector"
            )
        selector = cls(pool, config, seed=state["seed"], **collaborators)
        selector.load_state_dict(state)
    except ValueError as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(f"{path}: {exc}") from exc
    return selector
