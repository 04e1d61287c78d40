"""The selector-file format and atomic writes: one .npz file, a JSON header and the arrays.

Layout: `__header__` is a UTF-8 JSON document (format version, selector name, then one
section per state tree, such as `state` and `pool`, with arrays replaced by
`{"__array__": key}` references); every array of every section is stored under its own
key, uncompressed. `write_state_file` writes one; `read_checkpoint` (checkpoint_file)
reads one back as untrusted input, and `unflatten_state` puts its arrays back in place.
What goes into a section is the caller's: `frontier_rft.selectors.persistence`
(save_selector, load_selector) and the DynamicSampling wrapper's file.

Every file is written to a temporary file in the same directory, fsynced, then renamed over
the target, so a crash mid-save leaves either the old file or the new one, never a mix.
A save killed before its rename leaves its temporary file (`.<name>.<random>.frontier-tmp`)
behind; the next save or load in that directory deletes such files once they are
STALE_TEMP_SECONDS old (a live save keeps touching its own).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.checkpoint_file import HEADER, CheckpointError, header_problem
from frontier_rft.core.selector import FORMAT_VERSION

__all__ = [
    "STALE_TEMP_SECONDS",
    "CheckpointError",
    "atomic_write_bytes",
    "clean_stale_temps",
    "new_file_mode",
    "set_new_file_mode",
    "unflatten_state",
    "write_state_file",
]

TEMP_SUFFIX = ".frontier-tmp"
STALE_TEMP_SECONDS = 600.0
"""A temporary file of ours untouched for this long belongs to a save that died."""
_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]+" + re.escape(TEMP_SUFFIX) + "$")


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


def unflatten_state(obj: Any, arrays: dict[str, np.ndarray], used: set[str]) -> Any:
    """A header section (from read_checkpoint) with its array references replaced by copies of
    the arrays; `used` collects the keys handed out, shared by the sections of one file.
    CheckpointError for an array referenced twice."""
    # Recursion is safe: read_checkpoint bounded the nesting depth and checked every key.
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            key = obj["__array__"]
            # write_state_file stores each array once under its own key; a file naming one
            # twice could make a few MB of disk ask for any amount of memory.
            if key in used:
                raise CheckpointError(f"array {key!r} is referenced more than once")
            used.add(key)
            return np.array(arrays[key])
        return {k: unflatten_state(v, arrays, used) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unflatten_state(v, arrays, used) for v in obj]
    return obj


def write_state_file(path: str | os.PathLike[str], name: str, sections: Mapping[str, Any]) -> None:
    """Atomically write a selector file: header `{format_version, selector: name, **sections}`,
    each section's arrays stored under its own key (a None section is stored as null).

    ValueError, before anything is written, for a header that read_checkpoint would refuse.
    """
    arrays: dict[str, np.ndarray] = {}
    header: dict[str, Any] = {"format_version": FORMAT_VERSION, "selector": name}
    for key, tree in sections.items():
        header[key] = None if tree is None else _flatten(tree, key, arrays)
    text = json.dumps(header).encode("utf-8")
    problem = header_problem(text)
    if problem is not None:  # never write a file that would be refused on load
        raise ValueError(f"{name} state header is {problem}; this is a bug in its state_dict")
    arrays[HEADER] = np.frombuffer(text, dtype=np.uint8)
    atomic_write_bytes(path, lambda fh: np.savez(fh, **arrays))  # type: ignore[arg-type]


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
