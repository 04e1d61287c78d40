"""Save and load an Allocation wrapper (its own state, the inner selector's nested or not).

One atomic .npz file in the selector-file layout (header + arrays; wrapper_file.py): build
the inner selector as before (or restore it from its own file), pass it in.
"""

from __future__ import annotations

import os

from frontier_rft.core.selector import Selector
from frontier_rft.wrappers.allocation import Allocation, AllocationConfig
from frontier_rft.wrappers.wrapper_file import load_wrapper, save_wrapper

__all__ = ["load_allocation", "save_allocation"]

_NAME = "allocation"


def save_allocation(
    wrapper: Allocation, path: str | os.PathLike[str], *, with_inner: bool = True
) -> None:
    """Atomically write the wrapper's state to `path`: the inner selector's nested, unless
    `with_inner=False` (a training checkpoint saves the selector once, in selector.npz)."""
    save_wrapper(_NAME, wrapper.state_dict(with_inner=with_inner), path)


def load_allocation(path: str | os.PathLike[str], selector: Selector) -> Allocation:
    """A wrapper around `selector` (freshly built as the saved one was, or already restored
    when the file was saved without it) continuing exactly where the saved wrapper stopped.
    CheckpointError (a ValueError) for a bad file."""
    return load_wrapper(
        path,
        _NAME,
        "an allocation",
        AllocationConfig,
        lambda config, seed: Allocation(selector, config, seed=seed),
    )
