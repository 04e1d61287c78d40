"""Facts a selector class declares about itself: what it reads (`Needs`), what it cannot run
without (`Requires`), what a step costs (`Cost`). They live on the class (`Selector.needs`,
`Selector.requires`, `Selector.cost`) so that the CLI, the figures, the benchmarks and the
tests discover them instead of keeping tables by name.

Plain data only: this module imports nothing from the rest of the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

__all__ = ["COST_KINDS", "Cost", "CostKind", "Needs", "Requires"]


@dataclass(frozen=True)
class Needs:
    """What a selector reads, and where that comes from."""

    uses: str
    """What the method reads besides rewards."""
    from_prompts: str
    """What it derives when the TaskPool holds prompt text only."""
    richer: str
    """TaskPool metadata it takes instead, when the user has it."""
    evidence: tuple[str, ...] = ()
    """`evidence/<what>/<source>` keys it reports when built from prompts alone."""

    @classmethod
    def rewards_only(cls, uses: str, evidence: tuple[str, ...] = ()) -> Needs:
        """A method that reads its own rollouts' rewards alone: no pool metadata to derive
        or to take, whatever the user has."""
        return cls(uses, "nothing to derive", "nothing (rewards only)", evidence)


@dataclass(frozen=True)
class Requires:
    """TaskPool metadata a selector's configuration cannot run without: any one of `fields`.

    The rule every selector follows (docs/contract.md, "Evidence"): a pool that has none of
    these fields is refused when the selector is built, by `Selector.__init__`, with the
    `refusal` message; metadata a selector can derive from one of them is derived and
    announced. A selector never falls back to a weaker method than its configuration asks
    for because the pool lacks metadata; where a weaker method exists, `instead` names the
    setting that asks for it.
    """

    fields: tuple[str, ...]
    """TaskPool fields, any one of which is enough ('prompts': derived from the text)."""
    why: str
    """What the method does with them, as a clause ('an online regressor reads them')."""
    instead: tuple[tuple[str, Any, str], ...] = ()
    """Config settings that run without them: (field, value, what it does then)."""

    def refusal(self, selector: str) -> str:
        """The ValueError message for a pool holding none of `fields`."""
        named = " or ".join(f"TaskPool.{f}" for f in self.fields)
        others = " or ".join(f"{f}=..." for f in self.fields if f != "prompts")
        if "prompts" not in self.fields:
            how = f"pass TaskPool(num_tasks=..., {others})"
        elif others:  # the prompt text first: every user has it
            how = f"pass TaskPool(num_tasks=..., prompts=[...]) to derive it, or {others}"
        else:
            how = "pass TaskPool(num_tasks=..., prompts=[...])"
        text = f"selector {selector!r} needs {named} ({self.why}): {how}"
        if not self.instead:
            return text
        settings = " or ".join(f"{k}={v!r} ({what})" for k, v, what in self.instead)
        return f"{text}; or set {settings}"


# "thompson": one Beta draw per task is unavoidable (Thompson sampling over all tasks).
# "greedy":   one distance pass + np.argpartition over N (greedy top-B over fresh scores).
# "linear":   one read pass over an N-float array; also the yardstick reported for
#             sublinear methods.
# The three above are O(N) methods, held to <= 2x their floor. "absolute": a fixed budget
# of 2 ms per step at every N (heap methods). "sublinear": per-step work independent of N,
# held to flat scaling (step time at any N <= 2x its step time at the smallest N).
CostKind = Literal["thompson", "greedy", "linear", "absolute", "sublinear"]
"""Which floor the overhead benchmark holds a selector to."""
COST_KINDS: tuple[str, ...] = get_args(CostKind)
"""Every CostKind, for checks at run time."""


@dataclass(frozen=True)
class Cost:
    """A selector's per-step cost class, as benchmarks/overhead.py measures and judges it."""

    kind: CostKind
    """Floor it is held to: an O(N) floor (thompson, greedy, linear), absolute or sublinear."""
    big_o: str
    """Per-step cost in big-O, e.g. 'O(B log N)' (N tasks, B batch)."""
    note: str = ""
    """Why it costs that (what a step does), for the benchmark's readers."""
