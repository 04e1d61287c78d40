"""frontier-rft: choose which prompts get rollouts so RL fine-tuning stays at the frontier.

The subpackages form layers (core at the bottom, the command line at the top); the picture,
what lives where and the import rule a test enforces are in the repository's
docs/architecture.md.
"""

import logging

from frontier_rft.core import Feedback, GroupBatch, Selector, SelectorConfig, TaskPool
from frontier_rft.core.checkpoint_file import CheckpointError
from frontier_rft.sampling import (
    RETIRED_NAMES,
    Allocation,
    AllocationConfig,
    DynamicSampling,
    DynamicSamplingConfig,
    PassThrough,
    StepSamples,
)
from frontier_rft.selectors import SELECTORS, make_selector
from frontier_rft.selectors.persistence import load_selector, save_selector
from frontier_rft.selectors.registry import RETIRED

__version__ = "0.2.0"
"""The release; pyproject.toml reads it from here (the only place it is written)."""

# Library messages go to the `frontier_rft` logger; the application decides where they go
# (the stdlib's advice for libraries). `frontier` sends INFO and above to stderr.
logging.getLogger(__name__).addHandler(logging.NullHandler())
# Names that were selectors once and now belong to a wrapper: make_selector, load_selector
# and the trainer's config answer them with what to use instead.
RETIRED.update(RETIRED_NAMES)

__all__ = [
    "SELECTORS",
    "Allocation",
    "AllocationConfig",
    "CheckpointError",
    "DynamicSampling",
    "DynamicSamplingConfig",
    "Feedback",
    "GroupBatch",
    "PassThrough",
    "Selector",
    "SelectorConfig",
    "StepSamples",
    "TaskPool",
    "__version__",
    "load_selector",
    "make_selector",
    "save_selector",
]
