"""SELECTORS (plain name -> class) and make_selector."""

from __future__ import annotations

import difflib
from typing import Any

from frontier_rft.core.config import SelectorConfig, config_from_dict
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.selectors.adcl import ADCLSelector
from frontier_rft.selectors.bots import BOTSSelector, DOTSSelector, MoPPSSelector
from frontier_rft.selectors.dynamic_sampling import DAPO_MOVED
from frontier_rft.selectors.frontier import FrontierReplaySelector
from frontier_rft.selectors.metis import METISSelector
from frontier_rft.selectors.offline import OfflineSelector
from frontier_rft.selectors.pcl import PCLSelector
from frontier_rft.selectors.prioritized import PrioritizedReplaySelector
from frontier_rft.selectors.sec import SECSelector
from frontier_rft.selectors.uniform import UniformSelector

__all__ = ["SELECTORS", "check_selector_name", "make_selector"]

SELECTORS: dict[str, type[Selector]] = {
    cls.name: cls
    for cls in (
        UniformSelector,
        OfflineSelector,
        PrioritizedReplaySelector,
        BOTSSelector,
        MoPPSSelector,
        DOTSSelector,
        SECSelector,
        FrontierReplaySelector,
        METISSelector,
        PCLSelector,
        ADCLSelector,
    )
}


def check_selector_name(name: object) -> None:
    """ValueError naming the closest registered selector when `name` is not one."""
    if name == "dapo":
        raise ValueError(DAPO_MOVED)
    if not isinstance(name, str) or name not in SELECTORS:
        close = difflib.get_close_matches(str(name), SELECTORS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
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
