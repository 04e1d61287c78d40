"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class DynamicSamplingSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "dapo"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("dapo is not implemented yet")


