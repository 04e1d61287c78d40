"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class SECSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "sec"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("sec is not implemented yet")


