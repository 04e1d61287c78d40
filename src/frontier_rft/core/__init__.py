"""Core contract: TaskPool, Feedback, the Selector base class and the selector-file format
(numpy only)."""

from frontier_rft.core.advantages import ESTIMATORS, group_advantages
from frontier_rft.core.config import SelectorConfig
from frontier_rft.core.feedback import Feedback, GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import FORMAT_VERSION, Selector

__all__ = [
    "ESTIMATORS",
    "FORMAT_VERSION",
    "Feedback",
    "GroupBatch",
    "Selector",
    "SelectorConfig",
    "TaskPool",
    "group_advantages",
]
