"""Save and load a DynamicSampling wrapper (its own state with the inner selector's nested).

One atomic .npz file in the selector-file layout (header + arrays). The inner selector is
not rebuilt from the file: build it as before (same name, pool, config, collaborators),
pass it in, and the file's nested state is loaded into it.
"""

from __future__ import annotations

import os
from pathlib import Path

from frontier_rft.core.checkpoint_file import CheckpointError, read_checkpoint
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.persistence import unflatten_state, write_state_file
from frontier_rft.core.selector import FORMAT_VERSION, Selector
from frontier_rft.wrappers.dynamic_sampling import DynamicSampling, DynamicSamplingConfig

__all__ = ["load_dynamic_sampling", "save_dynamic_sampling"]

_NAME = "dynamic_sampling"


def save_dynamic_sampling(
    wrapper: DynamicSampling, path: str | os.PathLike[str], *, with_inner: bool = True
) -> None:
    """Atomically write the wrapper's state to `path`: the inner selector's nested, unless
    `with_inner=False` (a training checkpoint saves the selector once, in selector.npz)."""
    write_state_file(path, _NAME, {"state": wrapper.state_dict(with_inner=with_inner)})


def load_dynamic_sampling(path: str | os.PathLike[str], selector: Selector) -> DynamicSampling:
    """A wrapper around `selector` (freshly built as the saved one was, or already restored
    when the file was saved without it) continuing exactly where the saved wrapper stopped.
    CheckpointError (a ValueError) for a bad file."""
    header, arrays = read_checkpoint(Path(path))
    if header.get("format_version") != FORMAT_VERSION or header.get("selector") != _NAME:
        raise CheckpointError(
            f"{path}: not a dynamic sampling file of this frontier_rft version "
            f"(selector {header.get('selector')!r}); save_dynamic_sampling writes those"
        )
    try:
        state = unflatten_state(header["state"], arrays, set())
        if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
            raise ValueError("malformed state (expected an object with a config)")
        config = config_from_dict(DynamicSamplingConfig, state["config"], what=_NAME)
        if not isinstance(state.get("seed"), int):
            raise ValueError("missing or malformed seed")
        wrapper = DynamicSampling(selector, config, seed=state["seed"])
        wrapper.load_state_dict(state)
    except ValueError as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(f"{path}: {exc}") from exc
    return wrapper
