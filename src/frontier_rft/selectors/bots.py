"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class BOTSSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "bots"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("bots is not implemented yet")


class MoPPSSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "mopps"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("mopps is not implemented yet")


class DOTSSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "dots"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("dots is not implemented yet")


