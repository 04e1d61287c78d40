"""Shadows beside a TRL run (FrontierConfig.shadows; docs/shadow.md): the run's shadows
(frontier_rft.integrations.shadows) with their state in each checkpoint
(`frontier_shadow<i>.npz`), beside the selector's; metrics under `shadow/<rule>/...`."""

from __future__ import annotations

import os
from pathlib import Path

from frontier_rft.integrations.shadows import RunShadows
from frontier_rft.wrappers.shadow import Shadow, load_shadow_file, save_shadow

__all__ = ["TrlShadows"]

SHADOW_FILE = "frontier_shadow{}.npz"
"""A shadow's file in a checkpoint directory, by its index in FrontierConfig.shadows."""


class TrlShadows(RunShadows):
    """The shadows of one TRL run, each saved to its own file in a checkpoint."""

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write each shadow into the checkpoint `directory`."""
        for i, shadow in enumerate(self.shadows):
            save_shadow(shadow, Path(directory) / SHADOW_FILE.format(i))

    def load(self, directory: str | os.PathLike[str]) -> list[Shadow]:
        """The shadows saved in `directory`, read and checked without changing these: the
        caller puts them in place (`self.shadows = ...`) once the rest of the checkpoint
        has loaded. A ValueError naming the file and the fix."""
        loaded = []
        for i, shadow in enumerate(self.shadows):
            path = Path(directory) / SHADOW_FILE.format(i)
            if not path.is_file():
                raise ValueError(
                    f"checkpoint {directory} has no state of shadow {shadow.name!r} ({path.name} "
                    "missing): it was saved without that shadow; resume with the same shadows "
                    "as the run that saved it, or none"
                )
            loaded.append(load_shadow_file(path, shadow.config, self.build))
        return loaded
