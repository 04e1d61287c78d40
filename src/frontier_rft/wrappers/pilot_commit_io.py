"""Save and load a PilotCommit wrapper (its own state, the inner selector's nested or not).

One atomic .npz file in the selector-file layout (header + arrays; wrapper_file.py): build
the inner selector as before (or restore it from its own file), pass it in. The pilots'
completions are not in it: a trainer keeps those (the reference trainer in trainer.json).
"""

from __future__ import annotations

import os

from frontier_rft.core.selector import Selector
from frontier_rft.wrappers.pilot_commit import PilotCommit, PilotCommitConfig
from frontier_rft.wrappers.wrapper_file import load_wrapper, save_wrapper

__all__ = ["load_pilot_commit", "save_pilot_commit"]

_NAME = "pilot_commit"


def save_pilot_commit(
    wrapper: PilotCommit, path: str | os.PathLike[str], *, with_inner: bool = True
) -> None:
    """Atomically write the wrapper's state to `path`: the inner selector's nested, unless
    `with_inner=False` (a training checkpoint saves the selector once, in selector.npz)."""
    save_wrapper(_NAME, wrapper.state_dict(with_inner=with_inner), path)


def load_pilot_commit(path: str | os.PathLike[str], selector: Selector) -> PilotCommit:
    """A wrapper around `selector` (freshly built as the saved one was, or already restored
    when the file was saved without it) continuing exactly where the saved wrapper stopped.
    CheckpointError (a ValueError) for a bad file."""
    return load_wrapper(
        path,
        _NAME,
        "a Pilot-Commit",
        PilotCommitConfig,
        lambda config, seed: PilotCommit(selector, config, seed=seed),
    )
