"""SELECTORS (plain name -> class), filled from the list in `frontier_rft.selectors`, and
make_selector.

Every selector the package ships is named by an import in `selectors/__init__.py`, which
registers them in order; `register` adds a user's own the same way. The facts a class
declares (`needs`, `cost`, `color`, ...) are what the CLI, the figures, the benchmarks, the
simulator and the contract tests read, so a registered selector is found everywhere.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from frontier_rft.core.config import SelectorConfig, config_from_dict, did_you_mean
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector

__all__ = ["REQUIRED_FACTS", "SELECTORS", "check_selector_name", "make_selector", "register"]

REQUIRED_FACTS = ("needs", "cost", "color")
"""Class attributes every registered selector declares (the rest have defaults)."""
_HEX = re.compile(r"#[0-9a-fA-F]{6}")

SELECTORS: dict[str, type[Selector]] = {}
"""Registered name -> selector class, in registration order: the package's own (listed in
`frontier_rft.selectors`, the baseline uniform first so that default lists start with it,
the rest by name), then any a user registers."""
RETIRED: dict[str, str] = {}
"""Former selector names -> what to use instead. Filled by the package that took the name
over (frontier_rft/__init__.py adds the wrappers'), so no name is spelled out here."""


def register(cls: type[Selector]) -> type[Selector]:
    """Register a concrete selector class under its `name`; returns it (a class decorator).

    TypeError naming the class when it is abstract, lacks a required fact or takes a name
    already registered or retired: registration is where a selector's facts are checked.
    """
    if not (isinstance(cls, type) and issubclass(cls, Selector)) or inspect.isabstract(cls):
        raise TypeError(f"register expects a concrete Selector subclass, got {cls!r}")
    if "name" not in cls.__dict__:
        raise TypeError(f"selector class {cls.__qualname__} declares no name of its own")
    _check_facts(cls)
    if cls.name in SELECTORS:
        raise TypeError(
            f"selector name {cls.name!r} is registered twice: by "
            f"{SELECTORS[cls.name].__qualname__} and {cls.__qualname__}"
        )
    if cls.name in RETIRED:
        raise TypeError(f"selector name {cls.name!r} is retired: {RETIRED[cls.name]}")
    SELECTORS[cls.name] = cls
    return cls


def _check_facts(cls: type[Selector]) -> None:
    """TypeError naming the class and the fact when a selector lacks one (at registration)."""
    missing = [fact for fact in REQUIRED_FACTS if not hasattr(cls, fact)]
    if missing:
        raise TypeError(
            f"selector class {cls.__module__}.{cls.__qualname__} ({cls.name!r}) declares no "
            f"{', '.join(missing)}: set them as class attributes (see Selector's docstrings)"
        )
    if not isinstance(cls.color, str) or not _HEX.fullmatch(cls.color):
        raise TypeError(
            f"selector class {cls.__qualname__}: color must be '#rrggbb', got {cls.color!r}"
        )


def check_selector_name(name: object) -> None:
    """ValueError naming the closest registered selector when `name` is not one."""
    if isinstance(name, str) and name in RETIRED:
        raise ValueError(RETIRED[name])
    if not isinstance(name, str) or name not in SELECTORS:
        hint = did_you_mean(name, SELECTORS)
        known = ", ".join(sorted(SELECTORS))
        raise ValueError(f"unknown selector {name!r}{hint}; known: {known} (`frontier selectors`)")


def make_selector(
    name: str,
    pool: TaskPool,
    seed: int = 0,
    config: SelectorConfig | None = None,
    **overrides: Any,
) -> Selector:
    """Build a registered selector; keyword overrides set config fields or collaborators.

    Example: `make_selector("bots", pool, seed=0, lam=0.2)`; a METIS judge is passed the
    same way (`judge=my_judge`) and must be passed again to `load_selector`.
    """
    check_selector_name(name)
    cls = SELECTORS[name]
    collab = {k: v for k, v in overrides.items() if k in cls.collaborators}
    fields = {k: v for k, v in overrides.items() if k not in cls.collaborators}
    if config is not None and fields:
        raise ValueError("pass either config=... or keyword overrides, not both")
    if config is None:
        config = config_from_dict(cls.config_class, fields, what=f"selector {name!r}")
    return cls(pool, config, seed=seed, **collab)
