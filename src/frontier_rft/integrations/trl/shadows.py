"""Shadows beside a TRL run (FrontierConfig.shadows; docs/shadow.md): each rule follows the
trainer's per-prompt rewards every generation, on its own selector and RNG, without changing
what trains; its metrics go under `shadow/<rule>/...` and its state into each checkpoint
(`frontier_shadow<i>.npz`), beside the selector's."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.selector import Selector
from frontier_rft.selectors.registry import make_selector
from frontier_rft.wrappers.shadow import Shadow, ShadowConfig, load_shadow_file, save_shadow

__all__ = ["TrlShadows"]

SHADOW_FILE = "frontier_shadow{}.npz"
"""A shadow's file in a checkpoint directory, by its index in FrontierConfig.shadows."""


class TrlShadows:
    """The shadows of one TRL run, built on the run's selector's pool with the run's seed."""

    def __init__(self, configs: Sequence[ShadowConfig], selector: Selector, seed: int):
        self._pool = selector.pool
        self._seed = int(seed)
        self.shadows = [self._build(c, self._seed) for c in configs]

    def _build(self, config: ShadowConfig, seed: int) -> Shadow:
        inner = make_selector(config.selector, self._pool, seed=seed) if config.selector else None
        return Shadow(config, inner, self._pool.num_tasks, seed=seed)

    def observe(
        self, step: int, ids: NDArray[np.int64], rewards: NDArray[np.float64], n: int
    ) -> None:
        """One generation's rewards (`ids[i]` the prompt of `rewards[i]`, as the selector
        receives them): the prompts with a whole group of `n`, in the order drawn, to every
        shadow. A prompt with unscorable completions dropped has no whole group: left out."""
        if not self.shadows:
            return
        uniq, first, counts = np.unique(ids, return_index=True, return_counts=True)
        whole = counts == n
        drawn = uniq[whole][np.argsort(first[whole], kind="stable")]
        if drawn.size == 0:
            return
        grouped = np.concatenate([rewards[ids == t] for t in drawn])
        for shadow in self.shadows:
            shadow.observe(step, drawn, grouped, n)

    def metrics(self) -> dict[str, float]:
        """Every shadow's metrics as shadow/<rule>/<metric>, unprefixed."""
        return {f"shadow/{s.name}/{k}": v for s in self.shadows for k, v in s.metrics().items()}

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
            loaded.append(load_shadow_file(path, shadow.config, self._build))
        return loaded
