"""A seeded wrapper's state file (a Shadow's; the step samplers' is sampler_file.py): its own
state, with the inner selector's nested or not, as one atomic .npz in the selector-file layout.

The inner selector is not rebuilt from the file: the caller builds it as before (or restores
it from its own file) and `make` wraps it with the saved config and seed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from frontier_rft.core.checkpoint_file import CheckpointError, read_checkpoint
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.persistence import unflatten_state, write_state_file
from frontier_rft.core.selector import FORMAT_VERSION

__all__ = ["load_wrapper", "save_wrapper"]


class _Restorable(Protocol):
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


W = TypeVar("W", bound=_Restorable)
C = TypeVar("C")


def save_wrapper(name: str, state: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Atomically write a wrapper's `state_dict()` to `path`, marked as a `name` file."""
    write_state_file(path, name, {"state": state})


def load_wrapper(
    path: str | os.PathLike[str],
    name: str,
    what: str,
    config_class: type[C],
    make: Callable[[C, int], W],
) -> W:
    """The wrapper `make(config, seed)` builds, continuing exactly where the saved one stopped;
    CheckpointError (a ValueError) naming `path` for a bad file or one of another kind (`what`:
    how the message names this kind, and the function that writes it)."""
    header, arrays = read_checkpoint(Path(path))
    if header.get("format_version") != FORMAT_VERSION or header.get("selector") != name:
        raise CheckpointError(
            f"{path}: not {what} file of this frontier_rft version "
            f"(selector {header.get('selector')!r}); save_{name} writes those"
        )
    try:
        state = unflatten_state(header["state"], arrays, set())
        if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
            raise ValueError("malformed state (expected an object with a config)")
        config = config_from_dict(config_class, state["config"], what=name)
        if not isinstance(state.get("seed"), int):
            raise ValueError("missing or malformed seed")
        wrapper = make(config, state["seed"])
        wrapper.load_state_dict(state)
    except ValueError as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(f"{path}: {exc}") from exc
    return wrapper
