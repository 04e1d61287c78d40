"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class PCLSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "pcl"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("pcl is not implemented yet")


