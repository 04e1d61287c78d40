"""One file for a step sampler's state, whatever the sampler, and one "was this checkpoint
saved with the sampler this run resumes with?" check, for the reference trainer and TRL.

The file is one atomic .npz in the selector-file layout (header + arrays), its header named
by the sampler's `kind`, holding the sampler's `state_dict` (its kind, its config, its own
state; the inner selector's nested or not). The inner selector is not rebuilt from it: build
it as before (or restore it from its own file) and pass it in.

Before SAMPLER_FILE a checkpoint held the same content under the sampler's own name
(LEGACY_FILES), and nothing for a sampler without state of its own: both still resume.

A sampler around a sampler (Rescue, Backfill: `WrapsSampler`) names the wrapped sampler's kind
in the header, as the run's config does, and records its own kind as its own key beside the
wrapped sampler's state (`rescue`, `backfill`: `step_plan.WRAPS`, innermost first). A resume
compares those keys too, and a checkpoint without the file is refused for a run whose wrapper
keeps state (its solved record or replay buffer would restart empty), as for any sampler with
state.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from frontier_rft.core.checkpoint_file import CheckpointError
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.persistence import write_state_file
from frontier_rft.core.selector import Selector
from frontier_rft.sampling.base import same_config, saved_config
from frontier_rft.sampling.fewer_rollouts import FewerRollouts
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.spec import KINDS
from frontier_rft.sampling.step import Sampler
from frontier_rft.sampling.step_plan import WRAPS, Wrap
from frontier_rft.sampling.wrap_file import naming_file, read_wrap_state
from frontier_rft.sampling.wraps_sampler import WrapsSampler

__all__ = [
    "LEGACY_FILES",
    "SAMPLER_FILE",
    "load_sampler",
    "save_sampler",
    "saved_sampler_config",
    "saved_sampler_state",
]

SAMPLER_FILE = "step_sampler.npz"
"""The step sampler's state in a reference-trainer checkpoint; TRL's is `frontier_` + this."""
LEGACY_FILES = ("dynamic_sampling.npz", "allocation.npz", "pilot_commit.npz")
"""Where checkpoints written before SAMPLER_FILE held it (TRL's: `frontier_` + these)."""
_STATELESS = (PassThrough.kind, FewerRollouts.kind)
"""Kinds that wrote no file before SAMPLER_FILE (no state of their own)."""


def _wraps(sampler: Sampler) -> tuple[str, ...]:
    """The wraps around `sampler`'s innermost sampler, innermost first."""
    out: list[str] = []
    while isinstance(sampler, WrapsSampler):
        out.append(sampler.name)
        sampler = sampler.wraps
    return tuple(reversed(out))


def _saved_wraps(state: dict[str, Any]) -> tuple[str, ...]:
    """The wraps a saved state records, innermost first."""
    return tuple(key for key in WRAPS if key in state)


def _named(kind: str, wraps: tuple[str, ...]) -> str:
    return kind + "".join(f" with {w}" for w in wraps)


def _rewrapped(sampler: Sampler, state: dict[str, Any]) -> Sampler:
    """`sampler` inside the wraps `state` records, with the settings their own state
    holds (rescue's N; backfill's capacity, max_age and max_uses)."""
    for key in _saved_wraps(state):
        own = state[key]
        if not isinstance(own, dict):
            raise ValueError(f"malformed {key} state (expected an object)")
        try:
            sampler = Wrap.of(key, **{name: own[name] for name in WRAPS[key].settings}).build(
                sampler
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed {key} state (no or a bad {exc})") from None
    return sampler


def save_sampler(
    sampler: Sampler, path: str | os.PathLike[str], *, with_inner: bool = True
) -> None:
    """Atomically write the sampler's state to `path`: the inner selector's nested, unless
    `with_inner=False` (a training checkpoint saves the selector once, in its own file)."""
    write_state_file(path, sampler.kind, {"state": sampler.state_dict(with_inner=with_inner)})


def _read(path: Path) -> dict[str, Any]:
    """The state a sampler file holds (kind and config checked to be readable);
    CheckpointError (a ValueError) naming `path` for a bad file."""
    return read_wrap_state(path, KINDS, "a step sampler", "save_sampler")


def load_sampler(path: str | os.PathLike[str], selector: Selector) -> Sampler:
    """The sampler of the saved kind and config around `selector` (freshly built as the saved
    one was, or already restored when the file was saved without it), continuing exactly where
    the saved one stopped. CheckpointError (a ValueError) for a bad file."""
    state = _read(Path(path))
    row = KINDS[state["kind"]]  # its class and config class, built bare: the state restores
    make, config_class = row.sampler, row.config
    with naming_file(path):
        if config_class is None:
            sampler = make(selector)
        else:
            sampler = make(selector, config_from_dict(config_class, state["config"]))
        sampler = _rewrapped(sampler, state)  # Rescue's or Backfill's own file: rewrapped
        sampler.load_state_dict(state)
    return sampler


def _bare(sampler: Sampler) -> Sampler:
    """A sampler of `sampler`'s kind and config around the same selector, none of its state
    restored (a sampler around a sampler, Rescue, rebuilt around its wrapped one's bare one)."""
    if isinstance(sampler, WrapsSampler):
        return sampler.rewrap(_bare(sampler.wraps))
    row = KINDS[sampler.kind]
    make, config_class = row.sampler, row.config
    return make(sampler.inner) if config_class is None else make(sampler.inner, sampler.config)


def _saved_file(directory: Path, prefix: str) -> tuple[Path | None, list[str]]:
    """The sampler file in checkpoint `directory` (SAMPLER_FILE, else a legacy name), or
    None; and the names looked for."""
    names = [prefix + name for name in (SAMPLER_FILE, *LEGACY_FILES)]
    return next((directory / n for n in names if (directory / n).is_file()), None), names


def saved_sampler_config(
    directory: str | os.PathLike[str], prefix: str = ""
) -> tuple[str, dict[str, Any]] | None:
    """(kind, config) of the step sampler checkpoint `directory` was saved with, or None when
    it holds no sampler file (written before SAMPLER_FILE by a sampler without state of its
    own). CheckpointError (a ValueError) naming the file for a damaged one."""
    path, _ = _saved_file(Path(directory), prefix)
    if path is None:
        return None
    state = _read(path)
    return str(state["kind"]), dict(state["config"])


def saved_sampler_state(
    directory: str | os.PathLike[str], sampler: Sampler, fix: str, prefix: str = ""
) -> dict[str, Any] | None:
    """The state `sampler` resumes from in checkpoint `directory` (file names with `prefix`),
    checked to be of its kind and config; None when there is nothing to restore (a checkpoint
    written before SAMPLER_FILE by a sampler with no state of its own). A ValueError of one
    line ending in `fix` (how to resume) for a checkpoint of another sampler or settings, or
    a damaged file. The state returned loads into `sampler` without error."""
    directory = Path(directory)
    path, names = _saved_file(directory, prefix)
    wraps = _wraps(sampler)
    if path is None:
        if sampler.kind in _STATELESS and not wraps:
            return None
        raise ValueError(
            f"checkpoint {directory} has no {names[0]}: it was saved by a run whose sampler "
            f"keeps no state (plain GRPO or fewer rollouts), not "
            f"{_named(sampler.kind, wraps)}; {fix}"
        )
    try:
        state = _read(path)
    except CheckpointError as exc:  # names the file and what is wrong: add how to resume
        raise CheckpointError(f"{exc}; {fix}") from exc
    saved_wraps = _saved_wraps(state)
    if state["kind"] != sampler.kind or saved_wraps != wraps:
        raise ValueError(
            f"checkpoint {directory} was saved with the "
            f"{_named(state['kind'], saved_wraps)} sampler, but this run uses "
            f"{_named(sampler.kind, wraps)}; {fix}"
        )
    what = f"{path}: config"
    if not same_config(state["config"], sampler.config, what):
        saved = saved_config(state["config"], sampler.config, what)
        raise ValueError(
            f"checkpoint {directory} was saved with {sampler.kind} {saved}, but this run asks "
            f"for {sampler.config}; {fix}"
        )
    # The selector is restored from its own file; the probe proves the state loads (its
    # load_state_dict is all-or-nothing), so the caller's later load cannot fail.
    state = {**state, "inner": {}}
    try:
        _bare(sampler).load_state_dict(state)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}; {fix}") from exc
    return state
