"""Save and load an Allocation wrapper (its own state, the inner selector's nested or not).

One atomic .npz file in the selector-file layout (header + arrays), as dynamic_sampling_io
writes: build the inner selector as before (or restore it from its own file), pass it in.
"""

from __future__ import annotations

import os
from pathlib import Path

from frontier_rft.core.checkpoint_file import CheckpointError, read_checkpoint
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.persistence import unflatten_state, write_state_file
from frontier_rft.core.selector import FORMAT_VERSION, Selector
from frontier_rft.wrappers.allocation import Allocation, AllocationConfig

__all__ = ["load_allocation", "save_allocation"]

_NAME = "allocation"


def save_allocation(
    wrapper: Allocation, path: str | os.PathLike[str], *, with_inner: bool = True
) -> None:
    """Atomically write the wrapper's state to `path`: the inner selector's nested, unless
    `with_inner=False` (a training checkpoint saves the selector once, in selector.npz)."""
    write_state_file(path, _NAME, {"state": wrapper.state_dict(with_inner=with_inner)})


def load_allocation(path: str | os.PathLike[str], selector: Selector) -> Allocation:
    """A wrapper around `selector` (freshly built as the saved one was, or already restored
    when the file was saved without it) continuing exactly where the saved wrapper stopped.
    CheckpointError (a ValueError) for a bad file."""
    header, arrays = read_checkpoint(Path(path))
    if header.get("format_version") != FORMAT_VERSION or header.get("selector") != _NAME:
        raise CheckpointError(
            f"{path}: not an allocation file of this frontier_rft version "
            f"(selector {header.get('selector')!r}); save_allocation writes those"
        )
    try:
        state = unflatten_state(header["state"], arrays, set())
        if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
            raise ValueError("malformed state (expected an object with a config)")
        config = config_from_dict(AllocationConfig, state["config"], what=_NAME)
        if not isinstance(state.get("seed"), int):
            raise ValueError("missing or malformed seed")
        wrapper = Allocation(selector, config, seed=state["seed"])
        wrapper.load_state_dict(state)
    except ValueError as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(f"{path}: {exc}") from exc
    return wrapper
