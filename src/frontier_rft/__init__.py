"""frontier-rft: choose which prompts get rollouts so RL fine-tuning stays at the frontier."""

from frontier_rft.core import Feedback, GroupBatch, Selector, SelectorConfig, TaskPool
from frontier_rft.core.persistence import CheckpointError, load_selector, save_selector
from frontier_rft.selectors import SELECTORS, make_selector

__version__ = "0.1.0"

__all__ = [
    "SELECTORS",
    "CheckpointError",
    "Feedback",
    "GroupBatch",
    "Selector",
    "SelectorConfig",
    "TaskPool",
    "__version__",
    "load_selector",
    "make_selector",
    "save_selector",
]
