"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class FrontierReplaySelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "frontier"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("frontier is not implemented yet")


