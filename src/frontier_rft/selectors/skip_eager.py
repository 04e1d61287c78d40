"""`skip-eager`: the Bayesian skip with an untried prompt judged by its predicted chance of an
informative first group itself, not by that chance's upper bound (issue 62: savings from the
first epoch).

`skip` keeps an untried prompt with probability clip(u / q1, untried_floor, 1), u = q^ + 2 se
(selectors/skip.py). On the policy's self-embeddings (128 numbers a prompt) that regression is
fitted, with forgetting, on a few hundred first groups, so 2 se alone is about half the
probability scale: u / q1 comes out near 1 for almost every prompt, and `skip` passed over
few untried prompts (0.96x of uniform's first-epoch rollouts at 512 prompts, 0.94x at 1,280).
The first-epoch ceiling (benchmarks/results/first_epoch_ceiling.md) says what there is to
gain: about half of uniform's first-epoch groups are flat, nearly all of them all-wrong (95%
of the 3-number level's).

This variant adds `untried_z` standard errors (default 0: the prediction itself), so an
untried prompt predicted well below the average informative share is kept with probability
about q^ / q1, never below `untried_floor`: every prompt is still tried with at least that
probability at each pass, so none is starved. Everything else is `skip`'s, and `skip` itself
is unchanged (its runs keep their ledger definitions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from frontier_rft.core.config import check
from frontier_rft.selectors.skip import SkipConfig, SkipSelector


@dataclass(frozen=True)
class SkipEagerConfig(SkipConfig):
    """`skip` with the untried-prompt rule's margin as a setting (our variant)."""

    untried_z: float = 0.0
    """Standard errors added to an untried prompt's predicted chance of an informative first
    group before it is compared with the average (skip: 2; 0: the prediction itself)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check(
            0.0 <= self.untried_z <= 10.0,
            f"untried_z must lie in [0, 10] standard errors, got {self.untried_z!r}",
        )


class SkipEagerSelector(SkipSelector):
    """`skip` that passes over untried prompts by their predicted informative chance itself
    (no upper-bound margin by default), never below untried_floor."""

    name = "skip-eager"
    # kept_loses and kept_level_epochs are skip's (rollouts: auto keeps full batches):
    # the variant changes only which untried prompts are passed over.
    config_class = SkipEagerConfig
    config: SkipEagerConfig
    color: ClassVar[str] = "#76d7c4"  # a light teal: skip's family, apart from every colour

    @property
    def untried_z(self) -> float:
        """The configured margin (standard errors) of the untried-prompt rule."""
        return self.config.untried_z
