"""What the selectors that walk the epoch and skip prompts on the way (greso, skip) read
off their walk alike."""

from __future__ import annotations

from frontier_rft.structures.epoch_walk import EpochWalk

__all__ = ["SkipsOnAWalk"]


class SkipsOnAWalk:
    """Mixin (before Selector) of a selector whose `_walk` walks the epoch, skipping."""

    _walk: EpochWalk

    @property
    def epoch(self) -> int:
        """The walk's passes started so far (the first is 1), prompts passed over included:
        what the rule's "first epoch" means. The metric `epoch` is the run's epoch instead
        (prompts handed out / pool size, EpochWalk.run_epoch); `walk_passes` is this."""
        return self._walk.epoch

    def _passes_walked(self) -> float:
        return self._walk.progress
