"""A wrapper's state file (a Shadow's, and the step samplers' of sampler_file.py): its own state,
with the inner selector's nested or not, as one atomic .npz in the selector-file layout.

The inner selector is not rebuilt from the file: the caller builds it as before (or restores
it from its own file) and `make` wraps it with the saved config and seed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from frontier_rft.core.checkpoint_file import CheckpointError, read_checkpoint
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.persistence import unflatten_state, write_state_file
from frontier_rft.core.selector import FORMAT_VERSION

__all__ = ["load_wrap", "naming_file", "read_wrap_state", "save_wrap_state"]


class _Restorable(Protocol):
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


W = TypeVar("W", bound=_Restorable)
C = TypeVar("C")


def save_wrap_state(name: str, state: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Atomically write a wrapper's `state_dict()` to `path`, marked as a `name` file."""
    write_state_file(path, name, {"state": state})


@contextmanager
def naming_file(path: str | os.PathLike[str]) -> Iterator[None]:
    """A ValueError raised inside, as a CheckpointError naming `path` (one already is: as is)."""
    try:
        yield
    except CheckpointError:
        raise
    except ValueError as exc:
        raise CheckpointError(f"{path}: {exc}") from exc


def read_wrap_state(
    path: str | os.PathLike[str], kinds: Collection[str], what: str, writer: str
) -> dict[str, Any]:
    """The state a file of one of `kinds` holds (an object of its kind, with a config);
    CheckpointError (a ValueError) naming `path` for a bad file or one of another kind
    (`what`: how the message names the file, `writer`: the function that writes it)."""
    header, arrays = read_checkpoint(Path(path))
    kind = header.get("selector")
    if header.get("format_version") != FORMAT_VERSION or kind not in kinds:
        raise CheckpointError(
            f"{path}: not {what} file of this frontier_rft version (kind {kind!r}); "
            f"{writer} writes those"
        )
    with naming_file(path):
        state = unflatten_state(header["state"], arrays, set())
        if not isinstance(state, dict) or state.get("kind") != kind:
            raise ValueError(f"malformed state (expected an object of kind {kind!r})")
        if not isinstance(state.get("config"), dict):
            raise ValueError("malformed state (expected an object with a config)")
    return state


def load_wrap(
    path: str | os.PathLike[str],
    name: str,
    what: str,
    config_class: type[C],
    make: Callable[[C, int], W],
) -> W:
    """The wrapper `make(config, seed)` builds, continuing exactly where the saved one stopped;
    CheckpointError (a ValueError) naming `path` for a bad file or one of another kind (`what`:
    how the message names this kind)."""
    state = read_wrap_state(path, (name,), what, f"save_{name}")
    with naming_file(path):
        config = config_from_dict(config_class, state["config"], what=name)
        if not isinstance(state.get("seed"), int):
            raise ValueError("missing or malformed seed")
        wrapper = make(config, state["seed"])
        wrapper.load_state_dict(state)
    return wrapper
