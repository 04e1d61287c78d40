"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class OfflineSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "offline"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("offline is not implemented yet")


