"""The real-RL bench's entries, as data: what one compared configuration is (`BenchEntry`: a
label, a selector, what it is given, the step sampler around it and the training fields it
sets), the flat flags that spell a sampler (`flags`), and the tables `frontier bench-rl`
compares (`MAIN_ENTRIES`, `EFFECT_ENTRIES`, `STEP_SIZE_ENTRIES`). What builds a run from an
entry and a testbed is `testbed.py`'s (`Testbed.run_config`); an entry's ledger definition
is `ledger.py`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from frontier_rft.sampling.fewer_rollouts import RUN_FIELDS
from frontier_rft.sampling.sampler_flags import FLAG_NAMES, SamplerFlags
from frontier_rft.sampling.spec import KINDS, SamplerSpec
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.training.config import TrainConfig

__all__ = [
    "ADAPTIVE",
    "ALLOCATION_FIELDS",
    "EFFECT_ENTRIES",
    "KEPT",
    "MAIN_ENTRIES",
    "OWN_FLAGS",
    "PILOT_COMMIT_FIELDS",
    "STEP_SIZE_ENTRIES",
    "BenchEntry",
    "flags",
]


ALLOCATION_FIELDS = (
    "rollout_budget",
    "min_rollouts",
    "max_rollouts",
    "allocation_value",
    "pilot_rollouts",
    "commit",
)
"""The flags (SamplerFlags fields) of an allocation: a report's entries name its settings by
them."""
PILOT_COMMIT_FIELDS = (
    "pc_pilot",
    "pc_candidates",
    "pc_commit_low",
    "pc_commit_high",
    "pc_evict_at",
    "pc_max_age",
    "pc_buffer_pick",
    "pc_max_rounds",
)
"""The flags (SamplerFlags fields) of Pilot-Commit."""
OWN_FLAGS = (*RUN_FIELDS, *PILOT_COMMIT_FIELDS)
"""The flags an entry's ledger definition holds as its own training fields, where they are set
otherwise than their defaults (`BenchEntry.own_train`): fewer rollouts' and Pilot-Commit's (its
resolved settings are in the definition too, as an allocation's are), as they always were, so
old definitions keep their digests."""


def flags(**fields: Any) -> SamplerSpec:
    """The step sampler `frontier train`'s flat flags spell (`SamplerFlags.spec`, the flat
    door's one conversion): how the entry tables name a kind with flags, e.g.
    `flags(rollouts="kept")` or `flags(dynamic_sampling=True, adaptive_oversample=True)`."""
    return SamplerFlags(**fields).spec()


@dataclass(frozen=True)
class BenchEntry:
    """One configuration compared: a label, a selector, its overrides, what it is given, the
    step sampler around it."""

    label: str
    """Display and directory name."""
    selector: str
    """Registered selector name."""
    overrides: dict[str, Any] = field(default_factory=dict)
    """Selector config overrides (the selector's own defaults when empty: the paper's for a
    selector from a paper, ours for skip, skip_predict and the other selectors of our own)."""
    given: str = "self"
    """What the selector is given (frontier_rft.training.given): self = prompts + the
    policy's self-embeddings, what every user of a trainer has."""
    role: str = "main"
    """'main' (the headline comparison) or 'effect' (a paper's reported effect checked)."""
    note: str = ""
    """What the entry checks, for the tables."""
    sampler: SamplerSpec = field(default_factory=SamplerSpec)
    """The step sampler of its runs (default: plain GRPO), any kind (sampling.spec.KINDS);
    `flags` spells one by `frontier train`'s flat flags. Its ledger definition records a kind
    with flags by them (DAPO's, an allocation's and Pilot-Commit's resolved settings, fewer
    rollouts' and Pilot-Commit's flags as the entry's own fields: old definitions keep their
    digests), any other kind by its spec."""
    train: Mapping[str, Any] = field(default_factory=dict)
    """The TrainConfig fields its runs set otherwise than the testbed's: the one door of a
    training option into an entry, present and future (group_size, steps, batch_size,
    eval_every, backfill, rescue, hard_groups, fewer_steps, pad_rows, shadows, ...). Its
    ledger definition records each of them (`own_train`); an entry that sets none keeps its
    digest whatever options come after it."""
    rows_of: str = ""
    """The uniform entry that spends the same rows a step, beside which this one's selection
    is judged (issue 81: a larger step's gain is uniform's; only what beats uniform at the
    same rows is selection's). Not part of what a run computes: digests stay."""

    def __post_init__(self) -> None:
        if not isinstance(self.sampler, SamplerSpec):
            raise ValueError(
                f"BenchEntry {self.label!r}: sampler must be a SamplerSpec (flags builds one "
                f"from frontier train's flags), got {self.sampler!r}"
            )
        try:
            self.sampler_flags()  # a kind with flags is recorded by them: each setting needs one
        except ValueError as exc:
            raise ValueError(f"BenchEntry {self.label!r}: {exc}") from None
        object.__setattr__(self, "train", _own_fields(self.label, self.train))
        try:
            self.plan()  # what does not combine is named where the entry is written
        except ValueError as exc:
            raise ValueError(f"BenchEntry {self.label!r}: {exc}") from None

    def sampler_flags(self, names: Sequence[str] = FLAG_NAMES) -> dict[str, Any]:
        """The flat flags among `names` that spell its sampler, those set otherwise than their
        defaults (SamplerFlags.changed; {} for a kind without flags): the fields its records
        name the sampler by."""
        if not KINDS[self.sampler.kind].flags:
            return {}
        changed = SamplerFlags.of_spec(self.sampler).changed()
        return {k: v for k, v in changed.items() if k in names}

    def own_train(self) -> dict[str, Any]:
        """The TrainConfig fields this entry sets itself (`train`, and its fewer rollouts' and
        Pilot-Commit's flags), for its runs and its ledger definition."""
        return {**self.train, **self.sampler_flags(OWN_FLAGS)}  # pc_evict_at may be None

    def plan(self) -> StepPlan:
        """Its runs' step (`TrainConfig.step_plan`: the sampler, the wraps, how a run ends),
        the testbed's own settings aside; a ValueError naming what does not combine."""
        sampler, sampler_config = self.sampler.pair()
        config = TrainConfig(
            selector=self.selector, sampler=sampler, sampler_config=sampler_config, **self.train
        )
        return config.step_plan()


_NOT_OWN = ("selector", "selector_overrides", "given", "seed", "train_seed", "sampler",
            "sampler_config")  # fmt: skip
"""TrainConfig fields an entry sets by its own fields or a testbed by its seeds, not `train`."""


def _own_fields(label: str, train: Mapping[str, Any]) -> dict[str, Any]:
    """An entry's `train`, checked to name TrainConfig fields it may set, each a JSON-able
    value as the ledger records it (a list as a tuple, as TrainConfig takes it)."""
    if not isinstance(train, Mapping):
        raise ValueError(f"BenchEntry {label!r}: train must be a dict of TrainConfig fields")
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    for name in train:
        if name not in known or name in _NOT_OWN:
            why = "not a TrainConfig field" if name not in known else "set by the entry itself"
            raise ValueError(f"BenchEntry {label!r}: train field {name!r} is {why}")
    sizes = {"group_size": 2, "steps": 1, "batch_size": 1, "eval_every": 0}
    for name, least in sizes.items():  # a group needs two rollouts
        value = train.get(name, least)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(
                f"BenchEntry {label!r}: {name} must be an int >= {least}, got {value!r}"
            )
    return {k: tuple(v) if isinstance(v, list) else v for k, v in train.items()}


KEPT = flags(rollouts="kept")
"""Fewer rollouts, the skip in uniform's window: only the kept prompts rolled out."""
ADAPTIVE = flags(dynamic_sampling=True, adaptive_oversample=True)
"""Dynamic sampling sized from the measured zero-variance share (GRESO's rule)."""


PLANNED = {
    "batch_plan": "auto",
    "batch_max": 128,
    "plan_curve": "h200",
    "noise_every": 4,
    "steps": 40,
    "eval_every": 4,
}
"""The batch planner's bench settings (uniform-auto), which its variants change one field of."""


STEP_SIZE_ENTRIES = (
    BenchEntry(
        "uniform-b32",
        "uniform",
        role="effect",
        note="uniform at 32 prompts x 8 a step (2x the rows), 48 steps: a step's size by B",
        train={"batch_size": 32, "steps": 48, "eval_every": 4},
    ),
    BenchEntry(
        "uniform-b48",
        "uniform",
        role="effect",
        note="uniform at 48 prompts x 8 a step (3x the rows), 32 steps: dapo-onecall's rows "
        "generated a step, without its filter",
        train={"batch_size": 48, "steps": 32, "eval_every": 4},
    ),
    BenchEntry(
        "uniform-b64",
        "uniform",
        role="effect",
        note="uniform at 64 prompts x 8 a step (4x the rows), 32 steps: a step's size by B",
        train={"batch_size": 64, "steps": 32, "eval_every": 4},
    ),
    BenchEntry(
        "uniform-b128",
        "uniform",
        role="effect",
        note="uniform at 128 prompts x 8 a step (1,024 rows: the largest measured H200 step "
        "at 24 tokens, under its censored knee), 24 steps",
        train={"batch_size": 128, "steps": 24, "eval_every": 4},
    ),
    BenchEntry(
        "uniform-auto",
        "uniform",
        role="effect",
        note="uniform with the batch planner (batch_plan auto): 16 prompts x 8 a step to start, "
        "metered every 4th step, grown to the plan's prompts (<= 128) priced on the H200's "
        "curve, lr by the square-root rule, 40 steps",
        train=PLANNED,
    ),
    BenchEntry(
        "uniform-auto-lr1",
        "uniform",
        role="effect",
        note="uniform-auto with the learning rate kept as set (batch_lr_rule none): what the "
        "square-root rule does to the planned step",
        train={**PLANNED, "batch_lr_rule": "none"},
    ),
    BenchEntry(
        "uniform-auto-start",
        "uniform",
        role="effect",
        note="uniform-auto started where the worst slowdown over every noise scale is least on "
        "the H200's curve (batch_start least_regret: 102 prompts x 8 at 24 tokens) instead of "
        "at 16 prompts, then grown by the plans",
        train={**PLANNED, "batch_start": "least_regret"},
    ),
    BenchEntry(
        "uniform-auto-start-lr1",
        "uniform",
        role="effect",
        note="uniform-auto-start with the learning rate kept as set (batch_lr_rule none), as "
        "the planner's advice names first",
        train={**PLANNED, "batch_start": "least_regret", "batch_lr_rule": "none"},
    ),
    BenchEntry(
        "uniform-auto-cpu",
        "uniform",
        role="effect",
        note="uniform-auto-start-lr1 priced on the CPU's curve (plan_curve cpu), the planner "
        "for a run that pays in CPU seconds: 18 prompts x 8 to start at 24 tokens, then grown "
        "by the plans, the learning rate kept as set",
        train={
            **PLANNED,
            "batch_start": "least_regret",
            "batch_lr_rule": "none",
            "plan_curve": "cpu",
        },
    ),
    BenchEntry(
        "uniform-auto-cpu-adam",
        "uniform",
        role="effect",
        note="uniform-auto-cpu with its plans read from the meter's noise scale in Adam's "
        "geometry (plan_noise adam: inner products weighted by Adam's 1 / (sqrt(v_hat) + eps))",
        train={
            **PLANNED,
            "batch_start": "least_regret",
            "batch_lr_rule": "none",
            "plan_curve": "cpu",
            "plan_noise": "adam",
        },
    ),
    BenchEntry(
        "uniform-k16",
        "uniform",
        role="effect",
        note="uniform at 16 prompts x 16 rollouts a step (2x the rows, uniform-b32's 256), 48 "
        "steps: a step's size by K",
        train={"group_size": 16, "steps": 48, "eval_every": 4},
    ),
    BenchEntry(
        "uniform-k32",
        "uniform",
        role="effect",
        note="uniform at 16 prompts x 32 rollouts a step (4x the rows), 32 steps: a step's "
        "size by K",
        train={"group_size": 32, "steps": 32, "eval_every": 4},
    ),
    BenchEntry(
        "dapo-onecall",
        "uniform",
        role="effect",
        note="DAPO's filter in one generation call a step, sized from the measured "
        "zero-variance share (GRESO's rule, <= 3x B prompts); only its mixed groups trained "
        "(<= B), 32 steps",
        sampler=flags(dynamic_sampling=True, adaptive_oversample=True, dapo_max_rounds=1),
        rows_of="uniform-b48",
        train={"steps": 32, "eval_every": 4},
    ),
    BenchEntry(
        "dapo-onecall-backfill",
        "uniform",
        role="effect",
        note="train only mixed groups, pad with replayed mixed groups: dapo-onecall's one call "
        "a step, the slots its filter frees filled with mixed groups of earlier steps "
        "(backfill's replay, against their behaviour log-probs), 32 steps",
        sampler=flags(dynamic_sampling=True, adaptive_oversample=True, dapo_max_rounds=1),
        rows_of="uniform-b48",
        train={"steps": 32, "eval_every": 4, "backfill": "replay"},
    ),
    BenchEntry(
        "uniform-hard8",
        "uniform",
        role="effect",
        note="uniform with larger groups for prompts predicted hard: a prompt rolled out "
        "before and never solved gets 8 more rollouts in the step's own generation call, "
        "joined to its group (hard_groups 8)",
        train={"hard_groups": 8},
    ),
    BenchEntry(
        "pcl-b64",
        "pcl",
        role="effect",
        note="PCL's value-model pick at 64 prompts a step: the 64 of 8 x 64 candidates "
        "predicted nearest p = 0.5 (rollout-free), 32 steps; against uniform-b64",
        rows_of="uniform-b64",
        train={"batch_size": 64, "steps": 32, "eval_every": 4},
    ),
)
"""Steps of more rows (issue 81): uniform at larger steps by prompts (B) and by rollouts (K),
and the modes that spend a larger step's rows where they teach, each against uniform at the
same rows a step."""


MAIN_ENTRIES = (
    BenchEntry("uniform", "uniform", note="baseline"),
    BenchEntry("prioritized", "prioritized"),
    BenchEntry("dots", "dots", note="the simulator's best from prompts alone"),
    BenchEntry("bots", "bots", note="BOTS at the paper's defaults"),
    BenchEntry("sec", "sec"),
    BenchEntry("frontier", "frontier"),
    BenchEntry("pcl", "pcl"),
    BenchEntry("metis", "metis", note="the policy judges (lam 0.01)"),
    BenchEntry("greso", "greso", note="walk the data, skip by zero-variance streaks"),
    BenchEntry("skip", "skip", note="walk the data, skip by each prompt's posterior"),
    BenchEntry(
        "dapo",
        "uniform",
        note="DAPO's filter, mode fixed: 3x oversampling, top-ups 3x the open slots",
        sampler=flags(dynamic_sampling=True),
    ),
)
"""The headline comparison: each selector at its defaults (the paper's, for a selector from a
paper), given prompts + self-embeddings."""

EFFECT_ENTRIES = (
    BenchEntry(
        "dapo-adaptive",
        "uniform",
        role="effect",
        note="dapo sized from the zero-variance share (GRESO's rule): fewer rollouts?",
        sampler=ADAPTIVE,
    ),
    BenchEntry(
        "greso-dapo",
        "greso",
        role="effect",
        note="greso inside adaptively sized dynamic sampling (not GRESO's own rounds)",
        sampler=ADAPTIVE,
    ),
    BenchEntry(
        "skip-dapo",
        "skip",
        role="effect",
        note="the Bayesian skip inside adaptively sized dynamic sampling",
        sampler=ADAPTIVE,
    ),
    BenchEntry(
        "greso-alloc",
        "greso",
        role="effect",
        note="greso's skip, then uniform's rollouts spread over the kept prompts (allocation)",
        sampler=flags(allocation=True),
    ),
    BenchEntry(
        "greso-alloc-lean",
        "greso",
        role="effect",
        note="greso's skip, then 0.5x uniform's rollouts spread over the kept prompts",
        sampler=flags(allocation=True, rollout_budget=0.5),
    ),
    BenchEntry(
        "uniform-n4",
        "uniform",
        role="effect",
        note="plain GRPO at 4 rollouts a prompt: greso-alloc-lean's per-step budget, equal groups",
        train={"group_size": 4},
    ),
    BenchEntry(
        "greso-alloc-lean-long",
        "greso",
        role="effect",
        note="greso-alloc-lean run for 690 steps: about uniform's total rollouts",
        sampler=flags(allocation=True, rollout_budget=0.5),
        train={"steps": 690},
    ),
    BenchEntry(
        "uniform-n4-long",
        "uniform",
        role="effect",
        note="uniform-n4 run for 720 steps: uniform's total rollouts",
        train={"group_size": 4, "steps": 720},
    ),
    BenchEntry(
        "greso-alloc-pilot",
        "greso",
        role="effect",
        note="greso, then a 4-rollout pilot per tried prompt and the rest committed after it",
        sampler=flags(allocation=True, pilot_rollouts=4),
    ),
    BenchEntry(
        "greso-kept",
        "greso",
        role="effect",
        note="greso's skip in uniform's window: only the kept prompts rolled out, uniform's steps",
        sampler=KEPT,
    ),
    BenchEntry(
        "greso-kept-mean",
        "greso",
        role="effect",
        note="greso-kept with the loss averaged over the kept groups (the design alternative)",
        sampler=flags(rollouts="kept", loss_scale="kept"),
    ),
    BenchEntry(
        "skip-kept",
        "skip",
        role="effect",
        note="the Bayesian skip in uniform's window: only the kept prompts rolled out",
        sampler=KEPT,
    ),
    BenchEntry(
        "skip-kept-unpadded",
        "skip",
        role="effect",
        note="skip-kept without padding a kept step's generation to a few batch shapes "
        "(pad_rows off): on a GPU, what the padding saves in seconds; on a CPU, skip-kept",
        sampler=KEPT,
        train={"pad_rows": "off"},
    ),
    BenchEntry(
        "skip-kept-backfill",
        "skip",
        role="effect",
        note="skip-kept with the slots a kept step frees filled by replaying recent mixed groups "
        "(stored completions, IS-weighted, dual-clipped; no new rollouts)",
        sampler=KEPT,
        train={"backfill": "replay"},
    ),
    BenchEntry(
        "scalerl",
        "scalerl",
        {"order": "shuffle"},
        role="effect",
        note="TRL's ScaleRL No-Positive-Resampling, refilled: from pass 2 a prompt whose "
        "latest pass rate >= 0.9 is never drawn again, flat groups dropped and every step filled "
        "with mixed ones by adaptive dynamic sampling, its surplus discarded (more rollouts a "
        "trained group than TRL's stream, which has no surplus); "
        "uniform's shuffle instead of TRL's fixed row order (docs/selectors/scalerl.md)",
        sampler=ADAPTIVE,
    ),
    BenchEntry(
        "scalerl-kept",
        "scalerl",
        {"order": "shuffle"},
        role="effect",
        note="ScaleRL's retirement in uniform's window, no refill: only the unretired prompts "
        "rolled out, uniform's steps (skip-kept's setting; not how TRL's stream runs)",
        sampler=KEPT,
    ),
    BenchEntry(
        "skip-eager-kept",
        "skip-eager",
        role="effect",
        note="skip-kept passing over untried prompts by their predicted informative chance "
        "itself (no 2-se margin; floor 0.25): savings in the first epoch?",
        sampler=KEPT,
    ),
    BenchEntry(
        "skip-eager-kept-f10",
        "skip-eager",
        {"untried_floor": 0.1},
        role="effect",
        note="skip-eager-kept with an untried floor of 0.1",
        sampler=KEPT,
    ),
    BenchEntry(
        "skip-predict-kept",
        "skip-predict",
        role="effect",
        note="skip-kept with untried prompts judged by a calibrated three-way outcome "
        "predictor: predicted all-correct kept with 0.1, predicted all-wrong with 0.75",
        sampler=KEPT,
    ),
    BenchEntry(
        "skip-predict-kept-w50",
        "skip-predict",
        {"wrong_floor": 0.5},
        role="effect",
        note="skip-predict-kept with a retest floor of 0.5 for prompts predicted all-wrong",
        sampler=KEPT,
    ),
    BenchEntry(
        "skip-predict-kept-w50-backfill",
        "skip-predict",
        {"wrong_floor": 0.5},
        role="effect",
        note="skip-predict-kept-w50 with the slots a kept step frees filled by replaying recent "
        "mixed groups (skip-kept-backfill's replay)",
        sampler=KEPT,
        train={"backfill": "replay"},
    ),
    BenchEntry(
        "predict-only-kept-w50",
        "predict-only",
        {"wrong_floor": 0.5},
        role="effect",
        note="the predictor alone: skip-predict-kept-w50 with every prompt, tried or untried, "
        "judged by the predictor and none by its own posterior",
        sampler=KEPT,
    ),
    BenchEntry(
        "skip-predict-kept-w50-rescue",
        "skip-predict",
        {"wrong_floor": 0.5},
        role="effect",
        note="skip-predict-kept-w50 with 8 rescue rollouts for a never-solved prompt's all-wrong "
        "group, joined to it (16) when one is correct: pass@k's side, at its cost",
        sampler=KEPT,
        train={"rescue": 8},
    ),
    BenchEntry(
        "skip-audit-kept",
        "skip-audit",
        role="effect",
        note="skip-kept that rolls out 1 in 8 of the prompts it would pass over, and passes over "
        "only as much as keeps a 95% bound on the mixed groups lost under 5%",
        sampler=KEPT,
    ),
    BenchEntry(
        "skip-fewer-steps",
        "skip",
        role="effect",
        note="the Bayesian skip taking full batches of the prompts it keeps, the run ended at "
        "uniform's passes: the saving as fewer steps, not fewer rows a step",
        train={"fewer_steps": True},
    ),
    BenchEntry(
        "skip-audit-fewer-steps",
        "skip-audit",
        role="effect",
        note="skip-fewer-steps under skip-audit's audit and bound",
        train={"fewer_steps": True},
    ),
    BenchEntry(
        "skip-predict-audit-kept-w50-backfill",
        "skip-predict-audit",
        {"wrong_floor": 0.5},
        role="effect",
        note="skip-predict-kept-w50-backfill under skip-audit's audit and bound",
        sampler=KEPT,
        train={"backfill": "replay"},
    ),
    BenchEntry(
        "screen4",
        "uniform",
        role="effect",
        note="our own k-of-n screen: 4 rollouts, the other 4 only where mixed (not SPEED-RL's)",
        sampler=flags(screen=4),
    ),
    BenchEntry(
        "greso-kept-screen4",
        "greso",
        role="effect",
        note="greso's skip in uniform's window, the kept prompts screened with 4 rollouts",
        sampler=flags(rollouts="kept", screen=4),
    ),
    BenchEntry(
        "uniform-shadows",
        "uniform",
        role="effect",
        note="uniform with greso, screen4 and greso+screen4 followed as shadows: trains as "
        "uniform; predicts greso-kept, screen4 and greso-kept-screen4 from uniform's own rewards",
        train={"shadows": ("greso", "screen4", "greso+screen4")},
    ),
    BenchEntry(
        "pilot-commit",
        "uniform",
        role="effect",
        note="Pilot-Commit: 3 x B candidates piloted with n/4 = 2 rollouts, the other 6 committed "
        "where 0.125 <= p <= 0.75, solved prompts evicted, pilots buffered up to 4 steps",
        sampler=flags(pilot_commit=True),
    ),
    BenchEntry(
        "cgrpo",
        "uniform",
        role="effect",
        note="C-GRPO's stop rule (trl-cgrpo 0.2 defaults): uniform's prompts, each rolled out "
        "along 2, 4, 8 until its conformal set is a singleton; 200 calibration prompts x 8 "
        "every 50 steps, billed",
        sampler=SamplerSpec("cgrpo"),
    ),
    BenchEntry(
        "bots-epoch",
        "bots",
        {"coverage": "epoch"},
        role="effect",
        note="bots ranks the order within each epoch; every prompt once per epoch",
    ),
    BenchEntry(
        "prioritized-epoch",
        "prioritized",
        {"coverage": "epoch"},
        role="effect",
        note="p(1-p) ranks the order within each epoch; every prompt once per epoch",
    ),
    BenchEntry("bots-rho0", "bots", {"rho": 0.0}, role="effect", note="BOTS rho = 0 slow start"),
    BenchEntry(
        "metis-lam1", "metis", {"judge_loss_weight": 1.0}, role="effect", note="METIS lam = 1"
    ),
    BenchEntry(
        "frontier-r0.05", "frontier", {"replay_ratio": 0.05}, role="effect", note="replay 0.05"
    ),
    BenchEntry(
        "frontier-r0.15", "frontier", {"replay_ratio": 0.15}, role="effect", note="replay 0.15"
    ),
    *STEP_SIZE_ENTRIES,
)
"""Runs that check effects the papers report (README / docs/results/real_rl.md)."""
