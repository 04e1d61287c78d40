"""Save and load a DynamicSampling wrapper (its own state with the inner selector's nested).

One atomic .npz file in the selector-file layout (header + arrays; wrapper_file.py). The
inner selector is not rebuilt from the file: build it as before (same name, pool, config,
collaborators), pass it in, and the file's nested state is loaded into it.
"""

from __future__ import annotations

import os

from frontier_rft.core.selector import Selector
from frontier_rft.wrappers.dynamic_sampling import DynamicSampling, DynamicSamplingConfig
from frontier_rft.wrappers.wrapper_file import load_wrapper, save_wrapper

__all__ = ["load_dynamic_sampling", "save_dynamic_sampling"]

_NAME = "dynamic_sampling"


def save_dynamic_sampling(
    wrapper: DynamicSampling, path: str | os.PathLike[str], *, with_inner: bool = True
) -> None:
    """Atomically write the wrapper's state to `path`: the inner selector's nested, unless
    `with_inner=False` (a training checkpoint saves the selector once, in selector.npz)."""
    save_wrapper(_NAME, wrapper.state_dict(with_inner=with_inner), path)


def load_dynamic_sampling(path: str | os.PathLike[str], selector: Selector) -> DynamicSampling:
    """A wrapper around `selector` (freshly built as the saved one was, or already restored
    when the file was saved without it) continuing exactly where the saved wrapper stopped.
    CheckpointError (a ValueError) for a bad file."""
    return load_wrapper(
        path,
        _NAME,
        "a dynamic sampling",
        DynamicSamplingConfig,
        lambda config, seed: DynamicSampling(selector, config, seed=seed),
    )
