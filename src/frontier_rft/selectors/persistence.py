"""save_selector and load_selector: a registered selector to one file and back, exactly.

A selector file (the format: `core.persistence`) holds the selector's name, its state_dict
(config, seed, RNG, learned state) and, by default, its TaskPool. Loading treats the file
as untrusted (`core.checkpoint_file`), looks the name up in SELECTORS, checks that the state
fits the pool before building anything of the pool's size, and raises CheckpointError for
anything wrong with the file.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.checkpoint_file import CheckpointError, read_checkpoint
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.persistence import clean_stale_temps, unflatten_state, write_state_file
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.pool_diff import pool_mismatch
from frontier_rft.core.selector import FORMAT_VERSION, Selector
from frontier_rft.selectors.registry import RETIRED, SELECTORS

__all__ = ["CheckpointError", "load_selector", "restore_selector", "save_selector"]


def save_selector(
    selector: Selector, path: str | os.PathLike[str], *, include_pool: bool = True
) -> None:
    """Atomically write the selector's full state (and by default its TaskPool) to `path`."""
    if not str(path) or Path(path).is_dir():
        what = repr(str(path)) + " is a directory" if str(path) else "the path is empty"
        raise IsADirectoryError(f"save_selector: {what}; pass a file path such as run/sel.npz")
    pool_state = selector.pool.to_state() if include_pool else None
    write_state_file(path, selector.name, {"state": selector.state_dict(), "pool": pool_state})


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
    file = Path(path)
    clean_stale_temps(file.parent)
    header, arrays = read_checkpoint(file)
    if header.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: format version {header.get('format_version')!r} is not supported "
            f"(this frontier_rft reads version {FORMAT_VERSION})"
        )
    name = header["selector"]
    if isinstance(name, str) and name in RETIRED:
        raise CheckpointError(f"{path}: saved by an older frontier_rft; {RETIRED[name]}")
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
        state = unflatten_state(header["state"], arrays, used)
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
        raise CheckpointError(f"{path}: malformed state (expected an object with a config)")
    try:
        pool_state = None
        if pool is None:
            if header.get("pool") is None:
                raise ValueError("saved without its TaskPool; pass pool=...")
            pool_state = unflatten_state(header["pool"], arrays, used)
            if not isinstance(pool_state, dict):
                raise ValueError("malformed TaskPool")
            pool = TaskPool.from_state(pool_state)
        elif (
            "pool_summary" not in state
            and header.get("pool") is not None
            and state.get("pool_fingerprint") != pool.fingerprint
        ):  # a file from before states carried a summary: its own pool says what differs
            pool_state = unflatten_state(header["pool"], arrays, used)
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


def restore_selector(selector: Selector, path: str | os.PathLike[str]) -> None:
    """Replace `selector`'s state, in place, with the one saved in `path` by save_selector.

    The object is kept (a trainer and its user hold it); its collaborators (a METIS judge,
    an ADCL estimator) and pool are the ones the file is read with. Errors as load_selector;
    on any of them `selector` is unchanged.
    """
    collaborators = {}
    for name in type(selector).collaborators:
        if not hasattr(selector, name):
            raise ValueError(f"cannot reload {selector.name}: it has no attribute {name!r}")
        collaborators[name] = getattr(selector, name)
    saved = load_selector(path, pool=selector.pool, **collaborators)
    selector.load_state_dict(saved.state_dict())
