"""Every selector of the five papers, registered by name in SELECTORS."""

from __future__ import annotations

from frontier_rft.core.selector import Selector
from frontier_rft.selectors.registry import SELECTORS, make_selector

__all__ = ["SELECTORS", "Selector", "make_selector"]
