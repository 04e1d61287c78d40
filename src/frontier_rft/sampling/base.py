"""What every sampler around a built selector shares (`WrapsSelector`): its kind, config and
inner selector, and the state of a sampler with none of its own (PassThrough, FewerRollouts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, ClassVar

import numpy as np

from frontier_rft.core.config import config_from_dict
from frontier_rft.core.selector import MAX_SEED, Selector
from frontier_rft.core.state_check import check_keys, read_float, read_int, read_keys

__all__ = [
    "WrapsSelector",
    "checked_seed",
    "checked_wrapper_args",
    "config_dict",
    "same_config",
    "saved_config",
]


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


def saved_config(saved: Any, config: Any, what: str) -> Any:
    """A saved config (a dict, as in a state) read as `config`'s class, or as saved for a
    sampler without settings (config None); a ValueError naming `what` for one this version
    cannot read. Fields a newer version added take their defaults."""
    if config is None:
        return saved
    values = check_keys(saved, what, (), optional=tuple(config_dict(config)))
    return config_from_dict(type(config), values, what=what)


def same_config(saved: Any, config: Any, what: str) -> bool:
    """Whether a saved config (a dict, as in a state) is `config` ({} for None); a ValueError
    naming `what` for one this version cannot read."""
    return bool(saved_config(saved, config, what) == ({} if config is None else config))


class WrapsSelector:
    """What every sampler around a selector (`inner`) shares: its kind and config, their check
    when a state is loaded, the counts its metrics report (`TOTALS`, `LAST`), and the Sampler
    protocol's state for a sampler with none of its own (a subclass with state overrides
    `state_dict` and `load_state_dict`) and its `held` (none). A wrapper's own work is its
    `sample`; the selector is reached through `inner`."""

    kind: ClassVar[str]
    """The sampler's name in a checkpoint: a resume checks it (sampling/sampler_file.py)."""
    inner: Selector
    config: Any
    """Its frozen config dataclass (None: it has no settings)."""
    uneven_groups: ClassVar[bool] = False
    """Its groups differ in size within a step: a trainer must train groups of any size."""
    holds_groups: ClassVar[bool] = False
    """It trains, at a later step, groups it rolled out earlier (its store): a trainer must
    hand it payloads a checkpoint can hold (`sampling/store.py`)."""
    rescuable: ClassVar[bool] = False
    """Its trained groups are this step's whole groups of n, one a prompt, which rescue may
    extend with more rollouts (sampling/rescue.py) and shadows and the reward log read (its
    settings may still split them: FewerRollouts' screen)."""
    plain: ClassVar[bool] = False
    """Its step is plain GRPO's: one round of the selector's batch, every group trained whole
    (a run ended by its passes takes only such steps; `frontier simulate` names no other)."""
    rolls_fewer: ClassVar[bool] = False
    """Its generation calls roll out fewer than the batch's prompts, a number that changes from
    step to step (the reference trainer's `pad_rows` pads them to a few shapes)."""
    frees_slots: ClassVar[bool] = False
    """Its steps may train fewer than the batch's groups of their own, leaving slots a wrap
    fills with replayed groups (Backfill): FewerRollouts' kept and screened steps, DAPO's
    steps that end short of B mixed groups."""
    replays: ClassVar[bool] = False
    """It trains groups of earlier steps again against the log-probs their sampling policy gave
    them, which the trainer hands back after each update (`trained`): none of the kinds."""
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = ()
    """Settings of its config (fields to set, the rest default) the contract suite runs it at
    besides its defaults (tests/test_sampler_contract.py finds them here: a new kind names its
    own)."""
    TOTALS: ClassVar[tuple[str, ...]] = ()
    """Names of the counts its metrics sum over the run (`_totals`, saved as `totals`)."""
    LAST: ClassVar[tuple[str, ...]] = ()
    """Names of the newest step's values its metrics report (`_last`, saved as `last`)."""
    _totals: dict[str, int]
    _last: dict[str, float]

    @classmethod
    def splits_groups(cls, config: Any) -> bool:
        """Whether, set by `config`, it rolls a group out in parts over two rounds, which a
        wrap that extends groups and a shadow cannot read as one group of n (no by default)."""
        return False

    @classmethod
    def rolls_kept(cls, config: Any) -> bool:
        """Whether, set by `config`, it rolls out only the prompts its selector keeps in
        uniform's window: a run's `rollouts: kept` (no by default: 'full')."""
        return False

    def trained(self, behaviour: Sequence[Any]) -> dict[str, float]:
        """What the trainer hands back after updating on the step's fresh rows: their tokens'
        log-probs under the policy that sampled them. A kind keeps none (`replays` False), so
        nothing is held: {}."""
        return {}

    @classmethod
    def check_train(
        cls, config: Any, *, batch_size: int, group_size: int, selector: str, walks: bool
    ) -> None:
        """What a reference-trainer run (TrainConfig) needs of this kind set by `config`, of
        its batch, group size and selector (`selector` its name; `walks`: it walks the data,
        or is not known): a ValueError in one line naming the fix. By default the sizes'
        check (`_check_sizes`), its message led by the kind."""
        try:
            cls._check_sizes(config, batch_size, group_size)
        except ValueError as exc:
            raise ValueError(f"{cls.kind}: {exc}") from None

    @classmethod
    def _check_sizes(cls, config: Any, batch_size: int, group_size: int) -> None:
        """A ValueError when `config` cannot run steps of these sizes (none by default)."""

    def held(self) -> list[tuple[int, int, int]]:
        """(step, round, position) of the groups rolled out that a later step may train (their
        completions must be kept, and saved with a checkpoint): none unless overridden."""
        return []

    def _start_counts(self) -> None:
        """The metrics' counts before any step: totals 0, the newest step's values NaN."""
        self._totals = dict.fromkeys(self.TOTALS, 0)
        self._last = dict.fromkeys(self.LAST, float("nan"))

    def _counts_state(self) -> dict[str, Any]:
        """The metrics' counts as saved (`totals`, `last`)."""
        return {"totals": dict(self._totals), "last": dict(self._last)}

    def _read_counts(
        self, state: dict[str, Any], *, totals_hi: int = 2**62
    ) -> tuple[dict[str, int], dict[str, float]]:
        """The metrics' counts of a checked state (totals ints in [0, totals_hi])."""
        who = self.kind
        totals = read_keys(state, "totals", who, self.TOTALS)
        last = read_keys(state, "last", who, self.LAST)
        return (
            {k: read_int(totals, k, who, hi=totals_hi) for k in self.TOTALS},
            {k: read_float(last, k, who) for k in self.LAST},
        )

    def _metrics_with(self, prefix: str, own: Mapping[str, float]) -> dict[str, float]:
        """The inner selector's metrics unchanged, plus `own` under `prefix/`."""
        return {**self.inner.metrics(), **{f"{prefix}/{k}": float(v) for k, v in own.items()}}

    def _state(self, own: Mapping[str, Any], with_inner: bool) -> dict[str, Any]:
        """A state_dict: kind, config, `own`, the metrics' counts (where it keeps any), and
        the inner selector's state unless `with_inner=False`."""
        counts = self._counts_state() if self.TOTALS or self.LAST else {}
        return {
            "kind": self.kind,
            "config": config_dict(self.config),
            **own,
            **counts,
            "inner": self.inner.state_dict() if with_inner else {},
        }

    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        """Kind and config only (nothing of its own to continue); the inner selector's state
        nested unless `with_inner=False` (a checkpoint that saves the selector on its own)."""
        return self._state({}, with_inner)

    def _checked_state(
        self,
        state: dict[str, Any],
        keys: tuple[str, ...] = ("kind", "config", "inner"),
        optional: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """`state` holding `keys` (and perhaps `optional`), of this kind and config; else a
        ValueError naming the problem."""
        who = self.kind
        state = check_keys(state, f"{who} state", keys, optional=optional)
        if state["kind"] != self.kind:
            raise ValueError(f"{who} state: kind {state['kind']!r} is not {self.kind!r}")
        what = f"{who} state: config"
        if not same_config(state["config"], self.config, what):
            saved = saved_config(state["config"], self.config, what)
            raise ValueError(
                f"{who} state was saved with {saved}; build the wrapper with that config first"
            )
        return state

    def _load_inner(self, state: dict[str, Any]) -> None:
        """Restore the inner selector's state nested in a checked `state`, when it holds one
        (atomic: the last step of a load that can fail)."""
        if not isinstance(state["inner"], dict):
            raise ValueError(f"{self.kind} state: inner must be a selector state or empty")
        if state["inner"]:
            self.inner.load_state_dict(state["inner"])

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict of this kind and config (its nested inner state too, when it
        holds one); on any error nothing changes."""
        self._load_inner(self._checked_state(state))
