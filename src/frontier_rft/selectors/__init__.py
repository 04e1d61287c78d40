"""Every selector of the five papers, each named by an import, and SELECTORS (name -> class).

The list below is the registry's: `ALL` is registered in order, the baseline first (default
lists, `frontier simulate` and the benchmarks start with it), the rest by name. A selector
is its module here, its line below, and its test; `register` adds one of your own.
"""

from __future__ import annotations

from frontier_rft.core.selector import Selector
from frontier_rft.selectors.adcl import ADCLSelector
from frontier_rft.selectors.bots import BOTSSelector, DOTSSelector, MoPPSSelector
from frontier_rft.selectors.frontier import FrontierReplaySelector
from frontier_rft.selectors.greso import GRESOSelector
from frontier_rft.selectors.metis import METISSelector
from frontier_rft.selectors.offline import OfflineSelector
from frontier_rft.selectors.pcl import PCLSelector
from frontier_rft.selectors.predict_only import PredictOnlySelector
from frontier_rft.selectors.prioritized import PrioritizedReplaySelector
from frontier_rft.selectors.registry import SELECTORS, make_selector, register
from frontier_rft.selectors.scalerl import ScaleRLSelector
from frontier_rft.selectors.sec import SECSelector
from frontier_rft.selectors.skip import SkipSelector
from frontier_rft.selectors.skip_audit import SkipAuditSelector, SkipPredictAuditSelector
from frontier_rft.selectors.skip_eager import SkipEagerSelector
from frontier_rft.selectors.skip_predict import SkipPredictSelector
from frontier_rft.selectors.uniform import UniformSelector

ALL: tuple[type[Selector], ...] = (
    UniformSelector,
    ADCLSelector,
    BOTSSelector,
    DOTSSelector,
    FrontierReplaySelector,
    GRESOSelector,
    METISSelector,
    MoPPSSelector,
    OfflineSelector,
    PCLSelector,
    PredictOnlySelector,
    PrioritizedReplaySelector,
    ScaleRLSelector,
    SECSelector,
    SkipSelector,
    SkipAuditSelector,
    SkipEagerSelector,
    SkipPredictSelector,
    SkipPredictAuditSelector,
)
"""The selectors this package ships, in the registry's order."""

for _cls in ALL:
    register(_cls)
del _cls

__all__ = [
    "ALL",
    "SELECTORS",
    "ADCLSelector",
    "BOTSSelector",
    "DOTSSelector",
    "FrontierReplaySelector",
    "GRESOSelector",
    "METISSelector",
    "MoPPSSelector",
    "OfflineSelector",
    "PCLSelector",
    "PredictOnlySelector",
    "PrioritizedReplaySelector",
    "SECSelector",
    "ScaleRLSelector",
    "Selector",
    "SkipAuditSelector",
    "SkipEagerSelector",
    "SkipPredictAuditSelector",
    "SkipPredictSelector",
    "SkipSelector",
    "UniformSelector",
    "make_selector",
    "register",
]
