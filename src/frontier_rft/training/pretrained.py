"""The named pretrained models, at the import path docs/training.md and the changelog gave.

They live in `frontier_rft.lm.pretrained`, below both the trainer and ZIP-RC-Lite inference.
"""

from __future__ import annotations

from frontier_rft.lm.pretrained import *  # noqa: F403  (its __all__, re-exported as is)
from frontier_rft.lm.pretrained import __all__ as __all__
