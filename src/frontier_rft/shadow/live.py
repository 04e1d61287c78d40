"""Shadows beside a trainer adapter's run (docs/shadow.md): each rule follows the run's
per-prompt rewards every step (and each completion's generated tokens, where the adapter has
them), on its own selector and RNG, without changing what trains.
Shared by the TRL, verl, SkyRL and tinker adapters; each saves the state where its
checkpoints go (in the sampler's state_dict, or a file per shadow: `save` and `load`)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.feedback import refused_rewards
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.selectors.registry import SELECTORS, make_selector
from frontier_rft.shadow.rule import (
    SUMMARY_KEY,
    Shadow,
    ShadowConfig,
    load_shadow_file,
    parse_rule,
    passes_table,
    save_shadow,
)

__all__ = [
    "SHADOW_FILE",
    "SWITCH_YARDSTICK",
    "RunShadows",
    "build_shadow",
    "load_shadow",
    "shadow_config",
    "switch_note",
]

SHADOW_FILE = "frontier_shadow{}.npz"
"""A shadow's file in a checkpoint directory, by its index among the run's rules."""
SWITCH_YARDSTICK = (
    'When to switch to skip with rollouts: kept (docs/shadow.md, "When to switch"): over 2 '
    "epochs, where it lost held-out score its shadow showed abs(A) lost 18% (`smollm2`: "
    "SmolLM2-135M on an H200) and 14% (`fast-format-lr4`, a CPU regime); where it lost none "
    "measurable, 10% (`fast-format`), 10% (`fast-nucleus`), 9% (`fast`) and 6% (`standard`, "
    "the CPU testbed); precision did not tell them apart. At 10% or less, switch and confirm "
    "with an A/B; at 14% or more, it lost there (benchmarks/results/shadow_yardstick.md)."
)
"""The yardstick a skip shadow's figures are read against: its abs(A) lost over the run on
uniform's reward logs, per regime, where skip with rollouts: kept lost held-out score and
where it did not (benchmarks/shadow_yardstick.py; each regime's mean over its seeds)."""
SWITCH_RULE = "skip"
"""The rule the yardstick was measured for (the adapters' default shadow)."""


def switch_note(rules: Sequence[str]) -> str:
    """The yardstick for switching (SWITCH_YARDSTICK) where `rules` show skip; '' else."""
    return SWITCH_YARDSTICK if SWITCH_RULE in rules else ""


def shadow_config(text: object) -> ShadowConfig:
    """The rule `text` names, its selector a registered one that walks the data; a
    ValueError that says how to write one."""
    return parse_rule(text, SELECTORS)


def build_shadow(
    config: ShadowConfig, pool: TaskPool, seed: int, pass_size: int | None = None
) -> Shadow:
    """The shadow of `config` on `pool`, its selector (if any) built with `seed`; a pass is
    `pass_size` prompts (default: the pool)."""
    selector = make_selector(config.selector, pool, seed=seed) if config.selector else None
    return Shadow(config, selector, pool.num_tasks, seed=seed, pass_size=pass_size)


def load_shadow(path: str | os.PathLike[str], config: ShadowConfig, pool: TaskPool) -> Shadow:
    """The shadow saved in `path`, rebuilt on `pool`; a ValueError naming the file when it
    is not one of `config`'s."""
    return load_shadow_file(path, config, lambda saved, seed: build_shadow(saved, pool, seed))


class RunShadows:
    """The shadows of one run, built on the run's selector's pool with the run's seed."""

    def __init__(self, configs: Sequence[ShadowConfig], selector: Selector, seed: int):
        self._pool = selector.pool
        self._seed = int(seed)
        self.shadows = [self.build(c, self._seed) for c in configs]

    def build(self, config: ShadowConfig, seed: int) -> Shadow:
        """A fresh shadow following `config` on this run's pool."""
        return build_shadow(config, self._pool, seed)

    def check_group_size(self, n: int) -> None:
        """ValueError (changing nothing) when a shadow screens with n or more rollouts (n < 2:
        nothing to check, such a step is not observed)."""
        if n < 2:
            return
        for shadow in self.shadows:
            k = shadow.config.screen
            if k and not k < n:
                raise ValueError(
                    f"shadow {shadow.name!r} screens with {k} rollouts, so it needs groups of "
                    f"more than {k}; this run's have {n}: shadow a smaller screen"
                )

    def refused(
        self,
        rewards: NDArray[np.float64],
        reward_range: Sequence[float] | None,
        bounds: tuple[float, float] | None,
    ) -> tuple[NDArray[np.bool_], str, str]:
        """The rewards a reader of the run's rewards would refuse (`refused_rewards`): the
        run's selector, whose reward `bounds` these are, then each shadow's selector. The
        first reader that refuses any, as (its refused rewards, "this selector" or "shadow
        'greso'", what it needs); (none, "", "") when every reader takes them. Every adapter
        asks before any reader moves, so a refused report changes nothing, shadows included."""
        readers = [("this selector", bounds)] + [
            (f"shadow {s.name!r}", s.selector.reward_bounds)
            for s in self.shadows
            if s.selector is not None
        ]
        for who, reads in readers:
            bad, need = refused_rewards(rewards, reward_range, reads)
            if bad.any():
                return bad, who, need
        return np.zeros(np.shape(rewards), dtype=np.bool_), "", ""

    def observe(
        self,
        step: int,
        ids: NDArray[np.int64],
        rewards: NDArray[np.float64],
        n: int | None = None,
        lengths: NDArray[np.int64] | None = None,
    ) -> None:
        """One step's rewards (`ids[i]` the prompt of `rewards[i]`, as the selector receives
        them): the prompts with a whole group of `n` (None: the step's largest group), in the
        order they first appear, to every shadow. A prompt with fewer (unscorable or failed
        completions dropped) has no whole group: left out. `lengths` (optional), each
        completion's generated tokens as `rewards` holds its reward, go with them (regrouped
        alike), so the shadows count tokens as well as rollouts (`Shadow.observe`)."""
        lengths = None if lengths is None else np.asarray(lengths)
        if lengths is not None and lengths.shape != np.shape(rewards):
            raise ValueError(
                f"a step's lengths must be one per reward ({np.size(rewards)}), got shape "
                f"{lengths.shape}"
            )
        if not self.shadows or ids.size == 0:
            return
        uniq, first, counts = np.unique(ids, return_index=True, return_counts=True)
        size = int(counts.max()) if n is None else int(n)
        if size < 2:  # one reward is never mixed: nothing a shadow can judge
            return
        self.check_group_size(size)
        whole = counts == size
        drawn = uniq[whole][np.argsort(first[whole], kind="stable")]
        if drawn.size == 0:
            return
        grouped = np.concatenate([rewards[ids == t] for t in drawn])
        sizes = None if lengths is None else np.concatenate([lengths[ids == t] for t in drawn])
        # A bound one shadow refuses is refused before any shadow moves (the adapters ask
        # `refused` first and name the task; this holds for a caller that did not).
        for shadow in self.shadows:
            bounds = None if shadow.selector is None else shadow.selector.reward_bounds
            if bounds is not None and (grouped.min() < bounds[0] or grouped.max() > bounds[1]):
                raise ValueError(
                    f"shadow {shadow.name!r}: rewards must lie in [{bounds[0]:g}, "
                    f"{bounds[1]:g}]; set reward_range to map them onto [0, 1]"
                )
        for shadow in self.shadows:
            shadow.observe(step, drawn, grouped, size, sizes)

    def metrics(self) -> dict[str, float]:
        """Every shadow's metrics as shadow/<rule>/<metric>, unprefixed."""
        return {f"shadow/{s.name}/{k}": v for s in self.shadows for k, v in s.metrics().items()}

    def summary(self) -> str:
        """The replay's table of these shadows (per rule and pass, and in total) and its
        caveat: what a run prints at its end ('' without shadows)."""
        if not self.shadows:
            return ""
        table = passes_table([(s.name, s.passes()) for s in self.shadows])
        switch = switch_note([s.name for s in self.shadows])
        return (
            f"Live shadows of this run (docs/shadow.md):\n{table}\nFirst order: what each "
            "rule would have left out on this run's trajectory (`frontier shadow replay "
            "frontier_metrics.jsonl` shows it again)." + (f"\n{switch}" if switch else "")
        )

    def summary_record(self) -> dict[str, Any]:
        """The end-of-run record of these shadows for a metrics log (`SUMMARY_KEY`: per rule,
        its passes(), NaN as null), which `frontier shadow replay` reads back."""
        return {
            SUMMARY_KEY: {
                s.name: [
                    {k: None if math.isnan(v) else v for k, v in row.items()} for row in s.passes()
                ]
                for s in self.shadows
            }
        }

    def state_dict(self) -> list[dict[str, Any]]:
        """Each shadow's state, in the order of the run's rules."""
        return [shadow.state_dict() for shadow in self.shadows]

    def load_state_dict(self, states: object) -> None:
        """Restore state_dict into fresh shadows, then put them in place: on any error
        (another number of shadows, another rule) nothing changes."""
        if not isinstance(states, list | tuple) or len(states) != len(self.shadows):
            names = [s.name for s in self.shadows] or "none"
            raise ValueError(
                f"the saved state holds {len(states) if isinstance(states, list | tuple) else 0} "
                f"shadow(s), this run follows {names}: resume with the shadows of the run that "
                "saved it"
            )
        fresh = [self.build(s.config, s.seed) for s in self.shadows]
        for shadow, state in zip(fresh, states, strict=True):
            shadow.load_state_dict(state)
        self.shadows = fresh

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write each shadow into the checkpoint `directory`."""
        for i, shadow in enumerate(self.shadows):
            save_shadow(shadow, Path(directory) / SHADOW_FILE.format(i))

    def load(self, directory: str | os.PathLike[str], name: str = SHADOW_FILE) -> list[Shadow]:
        """The shadows saved in `directory` (files `name`, formatted with each one's index),
        read and checked without changing these: the caller puts them in place
        (`self.shadows = ...`) once the rest of the checkpoint has loaded. A ValueError naming
        the file and the fix."""
        loaded = []
        for i, shadow in enumerate(self.shadows):
            path = Path(directory) / name.format(i)
            if not path.is_file():
                raise ValueError(
                    f"checkpoint {directory} has no state of shadow {shadow.name!r} ({path.name} "
                    "missing): it was saved without that shadow; resume with the same shadows "
                    "as the run that saved it, or none"
                )
            loaded.append(load_shadow_file(path, shadow.config, self.build))
        return loaded
