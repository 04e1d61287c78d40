"""SELECTORS (plain name -> class), discovered from the modules of this package, and
make_selector.

A new selector is its module here and its test: every concrete `Selector` subclass a module
of `frontier_rft.selectors` defines with its own `name` is registered, and the facts it
declares on its class (`needs`, `cost`, `color`, ...) are what the CLI, the figures, the
benchmarks, the simulator and the contract tests read.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from typing import Any

from frontier_rft.core.config import SelectorConfig, config_from_dict, did_you_mean
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector

__all__ = ["REQUIRED_FACTS", "SELECTORS", "check_selector_name", "make_selector"]

REQUIRED_FACTS = ("needs", "cost", "color")
"""Class attributes every registered selector declares (the rest have defaults)."""
_NOT_SEARCHED = ("registry", "persistence")
"""Modules of this package that define no selector and import this one (save/load)."""
_HEX = re.compile(r"#[0-9a-fA-F]{6}")


def _discover() -> dict[str, type[Selector]]:
    """Every registered selector class: uniform (the baseline) first, the rest by name."""
    package = importlib.import_module(__name__.rpartition(".")[0])
    found: dict[str, type[Selector]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in _NOT_SEARCHED:
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for cls in vars(module).values():
            if (
                isinstance(cls, type)
                and issubclass(cls, Selector)
                and cls.__module__ == module.__name__  # defined here, not imported
                and "name" in cls.__dict__
                and not inspect.isabstract(cls)
            ):
                _check_facts(cls)
                if cls.name in found:
                    raise TypeError(
                        f"selector name {cls.name!r} is registered twice: by "
                        f"{found[cls.name].__qualname__} and {cls.__qualname__}"
                    )
                found[cls.name] = cls
    # The baseline first: default lists (`frontier simulate`, the benchmarks) start with it.
    order = sorted(found, key=lambda name: (name != "uniform", name))
    return {name: found[name] for name in order}


def _check_facts(cls: type[Selector]) -> None:
    """TypeError naming the class and the fact when a selector lacks one (at import)."""
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


SELECTORS: dict[str, type[Selector]] = _discover()
RETIRED: dict[str, str] = {}
"""Former selector names -> what to use instead. Filled by the package that took the name
over (frontier_rft/__init__.py adds the wrappers'), so no name is spelled out here."""


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
