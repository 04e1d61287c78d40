"""What every sampler around a built selector shares (`WrapsSelector`): its kind, config and
inner selector, and the state of a sampler with none of its own (PassThrough, FewerRollouts)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar

import numpy as np

from frontier_rft.core.config import config_from_dict
from frontier_rft.core.selector import MAX_SEED, Selector
from frontier_rft.core.state_check import check_keys

__all__ = ["WrapsSelector", "checked_seed", "checked_wrapper_args", "config_dict", "same_config"]


def checked_wrapper_args(
    wrapper: str, example: str, selector: Any, config: Any, config_type: type
) -> Any:
    """A wrapper's arguments checked: `selector` built, `config` of `config_type` (None: its
    defaults). Returns the config; a ValueError naming the problem otherwise."""
    if not isinstance(selector, Selector):
        raise ValueError(
            f"{wrapper} wraps a built selector, e.g. "
            f"{wrapper}(make_selector('{example}', pool)); got {type(selector).__name__}"
        )
    config = config_type() if config is None else config
    if not isinstance(config, config_type):
        article = "an" if config_type.__name__[0] in "AEIOU" else "a"
        raise ValueError(
            f"config must be {article} {config_type.__name__}, got {type(config).__name__}"
        )
    return config


def checked_seed(selector: Selector, seed: Any) -> int:
    """A wrapper's own seed (Pilot-Commit's random pick) checked: an int in [0, 2**256), or
    None for the selector's; a ValueError naming the problem otherwise."""
    seed = selector.seed if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be an int in [0, 2**256) or None, got {seed!r}")
    return int(seed)


def config_dict(config: Any) -> dict[str, Any]:
    """A sampler's config as saved: its fields, or {} for a sampler without one (None)."""
    return {} if config is None else asdict(config)


def same_config(saved: Any, config: Any, what: str) -> bool:
    """Whether a saved config (a dict, as in a state) is `config`; a ValueError naming `what`
    for one this version cannot read. Fields a newer version added take their defaults."""
    if config is None:
        return bool(saved == {})
    values = check_keys(saved, what, (), optional=tuple(config_dict(config)))
    return bool(config_from_dict(type(config), values, what=what) == config)


class WrapsSelector:
    """What every sampler around a selector (`inner`) shares: its kind, its config, and the
    Sampler protocol's state for a sampler with none of its own (a subclass with state
    overrides `state_dict` and `load_state_dict`) and its `held` (none). A wrapper's own work
    is its `sample`; the selector is reached through `inner`."""

    kind: ClassVar[str]
    """The sampler's name in a checkpoint: a resume checks it (wrappers/sampler_file.py)."""
    inner: Selector
    config: Any
    """Its frozen config dataclass (None: it has no settings)."""

    def held(self) -> list[tuple[int, int, int]]:
        """(step, round, position) of the groups rolled out that a later step may train (their
        completions must be kept, and saved with a checkpoint): none unless overridden."""
        return []

    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        """Kind and config only (nothing of its own to continue); the inner selector's state
        nested unless `with_inner=False` (a checkpoint that saves the selector on its own)."""
        return {
            "kind": self.kind,
            "config": config_dict(self.config),
            "inner": self.inner.state_dict() if with_inner else {},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict of this kind and config (its nested inner state too, when it
        holds one); on any error nothing changes."""
        who = self.kind
        state = check_keys(state, f"{who} state", ("kind", "config", "inner"))
        if state["kind"] != self.kind:
            raise ValueError(f"{who} state: kind {state['kind']!r} is not {self.kind!r}")
        if not same_config(state["config"], self.config, f"{who} state: config"):
            raise ValueError(
                f"{who} state was saved with {state['config']}; build the sampler with that "
                "config first"
            )
        if not isinstance(state["inner"], dict):
            raise ValueError(f"{who} state: inner must be a selector state or empty")
        if state["inner"]:
            self.inner.load_state_dict(state["inner"])  # atomic
