"""Configuration of the selector service, and a selector as data that can cross processes."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from frontier_rft.core.config import check, check_choice, check_field_types, config_from_dict
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector

__all__ = ["DEFAULT_LEASE_SELECTS", "SelectorSpec", "ServiceConfig", "own_collaborators"]

DEFAULT_LEASE_SELECTS = 16
"""Lease timeout in select calls when the selector has no inflight_timeout of its own."""
# Fields that decide what an operation does: a log must be replayed with the same values.
_SEMANTIC = (
    "staleness",
    "max_lag",
    "downweight_decay",
    "downweight_min_rollouts",
    "lease_timeout_selects",
    "lease_timeout_s",
    "seed",
)


@dataclass(frozen=True)
class ServiceConfig:
    """How the shared selector service treats stale feedback, leases and durability."""

    infinite_ok: ClassVar[frozenset[str]] = frozenset(
        {"checkpoint_every_s", "lock_timeout_s", "lease_timeout_s"}
    )

    checkpoint_dir: str | None = None
    """Directory for checkpoints and the write-ahead log; None keeps everything in memory."""
    durability: str = "fsync"
    """'fsync': acknowledge an update once it is fsynced (survives power loss); 'flush': once
    the OS has it (survives a killed process); 'checkpoint': no log, checkpoints only."""
    checkpoint_every_ops: int = 1000
    """Checkpoint after this many operations since the last one (0 = never by count)."""
    checkpoint_every_s: float = 60.0
    """Checkpoint at the first operation this many seconds after the last one (0 = never)."""
    keep_history: bool = False
    """Keep superseded checkpoints and log segments (an audit trail) instead of deleting them."""
    staleness: str = "accept"
    """Stale updates: 'accept' all, 'drop' those lagging > max_lag, or 'downweight' them."""
    max_lag: int = 4
    """Largest policy-version lag accepted by 'drop' and 'downweight'."""
    downweight_decay: float = 0.5
    """'downweight' keeps this share, to the power of the lag, of each stale group's rollouts."""
    downweight_min_rollouts: int = 2
    """'downweight' keeps at least this many rollouts of a group (fewer hide mixed outcomes)."""
    lease_timeout_selects: int | None = None
    """Select calls after which an unreported task's lease expires; None = the selector's
    inflight_timeout (prioritized replay) or 16."""
    lease_timeout_s: float | None = None
    """Also expire leases older than this many wall seconds (checked at select); None = off."""
    seed: int = 0
    """Seed of the down-weighting subsample."""
    lock_timeout_s: float = 30.0
    """How long a (re)started service waits for a previous owner of checkpoint_dir to exit."""
    max_version_jump: int | None = 1_000_000
    """Refuse a worker's policy_version more than this far ahead of the newest one seen (0
    before any); set_policy_version is exempt. None = no limit."""

    def __post_init__(self) -> None:
        if isinstance(self.checkpoint_dir, os.PathLike):  # a Path is as good as its string
            object.__setattr__(self, "checkpoint_dir", os.fspath(self.checkpoint_dir))
        check_field_types(self)  # e.g. checkpoint_dir=5 or keep_history="no"
        check(
            self.checkpoint_dir is None or self.checkpoint_dir.strip() != "",
            "checkpoint_dir must name a directory (None keeps everything in memory), got ''",
        )
        check_choice("durability", self.durability, ("fsync", "flush", "checkpoint"))
        check_choice("staleness", self.staleness, ("accept", "drop", "downweight"))
        for name in ("checkpoint_every_ops", "max_lag", "seed"):
            value = getattr(self, name)
            check(
                isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                f"{name} must be a non-negative int, got {value!r}",
            )
        for name in ("checkpoint_every_s", "lock_timeout_s"):
            value = getattr(self, name)
            check(
                isinstance(value, (int, float)) and value >= 0,
                f"{name} must be a number of seconds >= 0, got {value!r}",
            )
        check(
            isinstance(self.downweight_decay, (int, float)) and 0 < self.downweight_decay <= 1,
            f"downweight_decay must be in (0, 1] (1 = no down-weighting), "
            f"got {self.downweight_decay!r}",
        )
        check(
            isinstance(self.downweight_min_rollouts, int) and self.downweight_min_rollouts >= 1,
            f"downweight_min_rollouts must be a positive int, got {self.downweight_min_rollouts!r}",
        )
        j = self.max_version_jump
        check(
            j is None or (isinstance(j, int) and not isinstance(j, bool) and j >= 1),
            f"max_version_jump must be None or a positive int, got {j!r}",
        )
        t = self.lease_timeout_selects
        check(
            t is None or (isinstance(t, int) and not isinstance(t, bool) and t >= 1),
            f"lease_timeout_selects must be None or a positive int (select calls), got {t!r}",
        )
        s = self.lease_timeout_s
        check(
            s is None or (isinstance(s, (int, float)) and s > 0),
            f"lease_timeout_s must be None or a positive number of seconds, got {s!r}",
        )

    def semantics(self) -> dict[str, Any]:
        """The fields a logged operation depends on (stored with every checkpoint)."""
        return {k: getattr(self, k) for k in _SEMANTIC}


@dataclass(frozen=True)
class SelectorSpec:
    """A selector as plain data (name, pool, state_dict, collaborators), safe to pickle.

    Selectors are not pickled directly: some keep memoryviews into their own arrays,
    which a pickle round trip would detach. The state_dict is the supported format.
    """

    name: str
    """Registered selector name."""
    pool: TaskPool
    """The TaskPool the selector was built on."""
    state: dict[str, Any]
    """Its state_dict (config, seed, RNG and learned state)."""
    collaborators: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Non-serialisable constructor arguments (a METIS judge, an ADCL estimator)."""

    @classmethod
    def of(cls, selector: Selector, collaborators: Mapping[str, Any] | None = None) -> SelectorSpec:
        """Capture a selector; collaborators default to the selector's own attributes."""
        if collaborators is None:
            collaborators = own_collaborators(selector)
        return cls(selector.name, selector.pool, selector.state_dict(), dict(collaborators))

    def build(self) -> Selector:
        """A selector equal to the captured one (the same state, so the same future)."""
        from frontier_rft.selectors import SELECTORS

        sel_cls = SELECTORS[self.name]
        config = config_from_dict(sel_cls.config_class, self.state["config"], what=self.name)
        selector = sel_cls(self.pool, config, seed=int(self.state["seed"]), **self.collaborators)
        selector.load_state_dict(self.state)
        return selector


def own_collaborators(selector: Selector) -> dict[str, Any]:
    """The selector's collaborators, read back from the attributes it stores them in."""
    names = type(selector).collaborators
    return {n: getattr(selector, n) for n in names if hasattr(selector, n)}
