"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class PrioritizedReplaySelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "prioritized"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("prioritized is not implemented yet")


