"""PLACEHOLDER: replaced by the implementation."""

from __future__ import annotations

from frontier_rft.selectors.uniform import UniformSelector

class METISSelector(UniformSelector):  # PLACEHOLDER
    """Not implemented yet."""

    name = "metis"

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("metis is not implemented yet")


class HeuristicJudge:  # PLACEHOLDER
    def __call__(self, prompts):  # type: ignore[no-untyped-def]
        raise NotImplementedError
