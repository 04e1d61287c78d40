"""The papers' reported effects, as data: one row per effect (the claim, the paper, the
entries it needs, the measurement it is read from, the conditions that make it reproduced)
and the generic test of a row's conditions. The measurements themselves, named here, are in
frontier_rft.bench.real_rl.report (`MEASUREMENTS`), which runs the table on a benchmark's runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES
from frontier_rft.sampling.allocation import Allocation
from frontier_rft.sampling.pilot_commit import PilotCommit

__all__ = [
    "BASELINE",
    "COMPARISONS",
    "EFFECTS",
    "LEAN_CONTROLS",
    "PER_PROMPT_ROLLOUT_ENTRIES",
    "PILOT_COMMIT_RATIO",
    "Condition",
    "Effect",
    "holds",
]

BASELINE = "uniform"
"""The entry every other is paired against, seed by seed."""


@dataclass(frozen=True)
class Condition:
    """One test a measurement must pass for its effect to count as reproduced."""

    name: str
    """What it establishes (the key in a check's `detail`)."""
    at: str
    """Dotted path into the measurement (`*` means every child; integers index lists)."""
    op: str
    """The comparison: one of `COMPARISONS`."""
    than: float | str = 0.0
    """The threshold: a number, or the dotted path of another measured value."""
    if_missing: bool = False
    """The verdict where the value is undefined (None or nan)."""


COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "not <": lambda a, b: not a < b,
    "defined": lambda a, b: True,
}
"""The comparisons a condition may ask for (`defined`: only that a value exists)."""


@dataclass(frozen=True)
class Effect:
    """A paper's reported effect, as one row of `EFFECTS`: what is claimed, on which entries,
    how it is measured and what measurement counts as reproducing it."""

    claim: str
    """The effect, as the report names it (`{name}` fields filled from `each`)."""
    paper: str
    """Where it is reported, and what it says."""
    needs: tuple[str, ...]
    """The entries it compares (`{name}` fields filled from `each`); seeds are those all ran."""
    measure: str
    """The measurement, by its name in `MEASUREMENTS`."""
    conditions: tuple[Condition, ...]
    """All must hold for a verdict of reproduced."""
    each: tuple[Mapping[str, str], ...] = ({},)
    """One check per binding of the `{name}` fields."""
    at_least: int | None = None
    """Checked when this many of `needs` ran (default: all of them), on those that did."""
    detail: bool = False
    """Whether the check reports each condition's outcome."""


PER_PROMPT_ROLLOUT_ENTRIES = tuple(
    e.label
    for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES)
    if e.sampler.kind in (Allocation.kind, PilotCommit.kind) or "group_size" in e.train
)
"""Entries that change how many rollouts a prompt gets: an allocation, their own group size
(the lean allocation's control), or Pilot-Commit itself (its own claim, tested on it)."""
PILOT_COMMIT_RATIO = 1 / 1.5
"""Pilot-Commit's smallest reported saving: 1.5x fewer cumulative rollouts than GRPO."""
LEAN_CONTROLS = (("greso-alloc-lean", "uniform-n4"), ("greso-alloc-lean-long", "uniform-n4-long"))
"""A lean allocation and its control: the same per-step budget and steps in equal groups."""

EQUAL_ROLLOUTS = "pass1_at_equal_rollouts_minus_"
"""`_by_rollouts`' held-out score at equal rollouts, minus the named base's."""
EFFECTS: tuple[Effect, ...] = (
    Effect(
        claim="BOTS rho = 0 starts slowly (early ETR near uniform's; rho > 0 higher)",
        paper="BOTS sec. 4.2: rho = 0 behaves almost like random sampling early",
        needs=("bots", "bots-rho0", BASELINE),
        measure="early_etr",
        conditions=(Condition("rho_speeds_the_start", "bots_minus_rho0.ci.0", ">", 0),),
    ),
    Effect(
        claim="prioritized replay: unseen problems starve; the unsolved pool drains the heap",
        paper="prioritized replay: init priority below live ones starves unseen problems; "
        "many problems end in the unsolved pool",
        needs=("prioritized", BASELINE),
        measure="prioritized_pools",
        conditions=(
            Condition("starvation", "never", ">", "uniform_never"),
            Condition("drain_over_25pct", "unsolved", ">=", "quarter_pool"),
        ),
        detail=True,
    ),
    Effect(
        claim="SEC shifts its category shares from easy to hard levels",
        paper="SEC fig. 3: the share of harder levels grows over training",
        needs=("sec", BASELINE),
        measure="level_shift",
        conditions=(Condition("harder_over_time", "sec_minus_uniform.ci.0", ">", 0),),
    ),
    Effect(
        claim="METIS keeps the selected prompts' rollout mean near 0.5",
        paper="METIS: selected prompts' mean reward stays near 0.5 (high variance)",
        needs=("metis", BASELINE),
        measure="distance_to_half",
        conditions=(Condition("nearer_half", "distance_to_half_metis_minus_uniform.ci.1", "<", 0),),
    ),
    Effect(
        claim="METIS lam = 1 collapses the judge's predictions to 0.25",
        paper="METIS sec. 5.3: lam = 1 makes every prediction 0.25",
        needs=("metis", "metis-lam1"),
        measure="judge_predictions",
        conditions=(
            Condition("some_seed", "seeds", ">", 0),
            Condition("every_seed_collapsed", "collapsed_seeds", ">=", "seeds"),
        ),
    ),
    Effect(
        claim="frontier replay ratios 0.05 / 0.10 / 0.15 each speed training mildly",
        paper="frontier replay for RLOO: 0.05-0.15 all help a little on Countdown",
        needs=("frontier-r0.05", "frontier", "frontier-r0.15"),
        at_least=2,
        measure="replay_ratios",
        conditions=(Condition("each_faster", "ttb100.*.ci.1", "<", 1.0),),
    ),
    Effect(
        claim="GRESO's skip inside dynamic sampling reaches the dapo entry's best held-out "
        "pass@1 (DAPO's filter, mode fixed: 3x oversampling) with fewer rollouts, at no loss "
        "of held-out score",
        paper="GRESO (arXiv 2506.02177): up to 2.4x faster rollout than DAPO's dynamic "
        "sampling, without loss of accuracy",
        needs=("greso-dapo", "dapo"),
        measure="rollouts_vs_dapo_and_prompts",
        conditions=(
            Condition("fewer_rollouts_to_dapo_best", "ttb100_rollouts.ci.1", "<", 1.0),
            Condition("no_score_loss", EQUAL_ROLLOUTS + "dapo.ci.1", "not <", 0, if_missing=True),
        ),
        detail=True,
    ),
    Effect(
        claim=f"{{name}} reaches uniform's best held-out pass@1 on every seed with "
        f"<= {PILOT_COMMIT_RATIO:.2f}x its cumulative rollouts, at no loss of held-out "
        "score at equal rollouts (CI lower >= -0.005)",
        paper="Pilot-Commit: 1.5-1.9x fewer cumulative rollouts than GRPO to a target "
        "accuracy; Knapsack RL: uniform allocation needs ~2x the compute",
        needs=("{name}", BASELINE),
        each=tuple({"name": n} for n in PER_PROMPT_ROLLOUT_ENTRIES),
        measure="rollouts_vs_uniform",
        conditions=(
            Condition("reached_on_every_seed", "ttb100_rollouts.mean", "defined"),
            Condition(
                "ttb100_within_pilot_commit", "ttb100_rollouts.mean", "<=", PILOT_COMMIT_RATIO
            ),
            Condition("no_score_loss", EQUAL_ROLLOUTS + "uniform.ci.0", ">=", -0.005),
        ),
        detail=True,
    ),
    Effect(
        claim="{name} scores above {control} (the same per-step budget in equal groups of 4) "
        "at equal rollouts",
        paper="Knapsack RL / Pilot-Commit: where the rollouts go matters, not only how many "
        "a step spends",
        needs=("{name}", "{control}"),
        each=tuple({"name": n, "control": c} for n, c in LEAN_CONTROLS),
        measure="rollouts_vs_control",
        conditions=(Condition("above_control", EQUAL_ROLLOUTS + "control.ci.0", ">", 0),),
    ),
)
"""The papers' reported effects, one row each (no check when the runs lack its entries,
entries.EFFECT_ENTRIES): `effect_checks` measures and judges them."""


def _lookup(values: Mapping[str, Any], path: str) -> list[Any]:
    """The values at a dotted path (`*`: every child), None where a step is missing."""
    found: list[Any] = [values]
    for step in path.split("."):
        nxt: list[Any] = []
        for v in found:
            if step == "*" and isinstance(v, Mapping):
                nxt += list(v.values())
            elif isinstance(v, Mapping):
                nxt.append(v.get(step))
            elif isinstance(v, list) and step.isdigit() and int(step) < len(v):
                nxt.append(v[int(step)])
            else:
                nxt.append(None)
        found = nxt
    return found


def _undefined(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def holds(c: Condition, values: Mapping[str, Any]) -> bool:
    """Whether every value at the condition's path passes its comparison (`if_missing` where
    it or the threshold is undefined)."""
    than = c.than if not isinstance(c.than, str) else _lookup(values, c.than)[0]
    return all(
        c.if_missing if _undefined(v) or _undefined(than) else bool(COMPARISONS[c.op](v, than))
        for v in _lookup(values, c.at)
    )
