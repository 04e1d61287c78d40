"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class ADCLSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "adcl"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("adcl is not implemented yet")


