"""One plan for every adapter: what may combine with what on its trainer, and what
`rollouts: auto` becomes there, and why.

Each adapter declares its trainer's facts once (`TrainerFacts`, beside its config: what it
can shrink, filter, screen, which vLLM modes it sends kept prompts to, what sets its run's
length); this module holds the one table of refusal and choice texts (`MESSAGES`, keyed by
trainer and clash, the adapter-neutral ones under "*"), the one answer to what may not
combine with kept there (`clashes`, from which of its declared clashes a run turns on) and
the one decision (`auto`). The adapters, their `frontier check-config` pre-flights and the
trainers all ask it.

`rollouts: auto` is `kept` where the selector passes over prompts within uniform's step, no
measurement says `kept` costs it held-out score at the run's length (`Selector.kept_loses`:
greso's and skip's at every length, since skip with kept lost held-out score over 2 epochs
where the policy learns fast) and nothing on the trainer clashes with it, else `full`, with a
warning where a clash keeps a skipping selector from `kept`. The run's length is its planned
passes over the prompts (`planned_epochs`). The evidence: docs/selectors/fewer_rollouts.md.

The adapters' default is uniform's whole batches with `skip` followed as a live shadow
(`shadow_rules`): every run shows what `skip` with `kept` would have saved and lost on its
own rewards, at no cost, before its user switches. Imports no trainer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from frontier_rft.core.selector import Selector
from frontier_rft.sampling.fewer_rollouts import ROLLOUTS as STEP_ROLLOUTS
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.sampling.step_plan import StepPlan, StepRows
from frontier_rft.selectors.registry import SELECTORS

__all__ = [
    "AUTO_DOC",
    "DEFAULT_SHADOWS",
    "FEWER_STEPS",
    "MESSAGES",
    "ROLLOUTS",
    "SAMPLER_TRAINERS",
    "SHADOWS_FOLLOW_UNIFORM",
    "STEP_ROLLOUTS",
    "WORDED_BY_STEP",
    "RowCount",
    "TrainerFacts",
    "adapter_plan",
    "auto",
    "auto_choice",
    "auto_log",
    "check_sampler",
    "clashes",
    "dataset_rows",
    "default_shadows_line",
    "keeps_full",
    "kept_choice",
    "kept_line",
    "message",
    "planned_epochs",
    "positive_number",
    "resolve_auto",
    "rollouts_refusal",
    "shadow_rules",
]

ROLLOUTS = ("auto", *STEP_ROLLOUTS)
"""An adapter's `rollouts`: kept where the trainer and its settings allow it (auto), the
whole batch (full), or only the prompts the selector keeps among uniform's (kept)."""
FEWER_STEPS = "fewer_steps"
"""The `rollouts` value that takes the skip's saving as fewer whole steps, the run ended by
its passes over the prompts: only where the trainer can end a run early (TrainerFacts.rollouts;
docs/selectors/fewer_steps.md)."""
AUTO_DOC = "docs/selectors/fewer_rollouts.md"
"""Why `auto` chooses as it does (its log lines point there)."""
DEFAULT_SHADOWS = ("skip",)
"""The rules a run follows when its `shadows` setting is left unset, beside uniform's whole
batches: what `skip` with `rollouts: kept` would have saved and lost (docs/shadow.md)."""
RowCount = int | Callable[[], int | None] | None
"""Training prompts (None: not counted), or how to count them: called only under a step limit,
since counting may read the data files (`data_columns.local_rows`)."""


@dataclass(frozen=True)
class TrainerFacts:
    """What an adapter's trainer can do with a step, declared once beside its config."""

    name: str
    """The trainer as messages name it ("TRL", "verl", "SkyRL", "tinker"); MESSAGES' key."""
    rollouts: tuple[str, ...] = ROLLOUTS
    """The `rollouts` values its config takes (STEP_ROLLOUTS where it has no `auto`)."""
    kept: str = ""
    """Where it shrinks a step (`rollouts: kept`): its one trainer or loop that can."""
    filter: str | None = None
    """The setting of its own all-equal-group filter (a step sampler kept does not combine
    with); None: it has none."""
    screen: bool = False
    """Whether it runs `screen: k` (each prompt screened with k completions first)."""
    vllm_modes: tuple[str, ...] = ()
    """Its vLLM modes a kept step sends only the kept prompts (empty: not said)."""
    length: tuple[str, ...] = ()
    """The settings its run's length is read from (`planned_epochs` over them)."""
    saves: str = "rollouts"
    """What `kept` saves, as its log line names it."""
    clashes: tuple[str, ...] = ()
    """What `rollouts: auto` may find in the way of kept there (MESSAGES' auto+/kept+ keys),
    in the order its lines name them."""


SHADOWS_FOLLOW_UNIFORM = "shadows follow uniform's whole batches"
"""Why shadows keep `auto` at full, on every adapter."""
_VERL_DOC = "docs/integrations/verl.md, 'Fewer rollouts on verl's own schedule'"
_SKYRL_DOC = "docs/integrations/skyrl.md, 'Fewer rollouts on SkyRL's own schedule'"

MESSAGES: dict[tuple[str, str], str] = {
    # ---- adapter-neutral: what auto says, on every trainer
    ("*", "auto+shadows"): SHADOWS_FOLLOW_UNIFORM,
    ("*", "auto:warn"): (
        "frontier-rft: rollouts: auto generates %s's whole batch (full), uniform's bill, "
        "because %s; see %s"
    ),
    ("*", "auto:info"): "frontier-rft: rollouts: auto is %s: %s%s",
    ("*", "auto:among"): " among {trainer}'s batch (the same steps and schedule, fewer {saves})",
    ("*", "kept:set"): (
        "frontier-rft: rollouts: kept (set): each step generates only the prompts {selector!r} "
        "keeps among {trainer}'s batch (the same steps and schedule, fewer {saves}){cost}"
    ),
    ("*", "choice:kept"): (
        "rollouts will be kept{unread}: {why} among {trainer}'s batch (same steps, fewer "
        "rollouts){after}"
    ),
    ("*", "choice:full"): "rollouts will be full (uniform's bill) because {why}{after}",
    ("*", "shadows:default"): (
        "{tense} {rules} (shadows left unset, beside uniform's whole batches): "
        "what it would have saved and lost with rollouts: kept, on this run's own rewards, "
        "in the run's metrics under shadow/{rules}/ (shadows: [] for none; docs/shadow.md)"
    ),
    ("*", "shadows:set"): (
        "the run will follow {rules} (shadows as set): what each would have saved and lost "
        "beside the run, on its own rewards, in the run's metrics under shadow/<rule>/ "
        "(docs/shadow.md)"
    ),
    ("*", "rollouts:fewer_steps"): (
        "rollouts: fewer_steps (full steps of the kept prompts, the run ended by its passes) "
        "runs in the reference trainer and TRL only (frontier train --fewer-steps; TRL's "
        "rollouts: fewer_steps): {trainer} {why}; set rollouts: full or kept "
        "(docs/selectors/fewer_steps.md)"
    ),
    # why each trainer cannot end early, read from its own loop (verl 0.9.1's RayPPOTrainer.fit,
    # SkyRL's RayPPOTrainer.train in skyrl/train/trainer.py, tinker-cookbook's rl.train)
    ("*", "rollouts:fewer_steps_why"): (
        "sets its step count and learning-rate schedule before training and its adapter "
        "cannot end a pass early yet"
    ),
    ("verl", "rollouts:fewer_steps_why"): (
        "fixes total_training_steps, and its learning-rate schedule over them, from the data "
        "loader's length before training, and saves its last checkpoint and runs its final "
        "validation only at that step: a run ended by its passes would skip both and leave "
        "the schedule unfinished"
    ),
    ("SkyRL", "rollouts:fewer_steps_why"): (
        "walks its data loader trainer.epochs times (RayPPOTrainer.train: for each epoch, "
        "for each batch of train_dataloader), with nothing that ends the run once the "
        "selector's passes are walked, so a shortened epoch only starts the next one; and it "
        "builds its learning-rate schedule over total_training_steps = len(train_dataloader) "
        "x trainer.epochs before training and runs its last eval_interval evaluation at that "
        "step: a run ended by its passes would leave the schedule unfinished and skip that "
        "evaluation (its final checkpoint is saved after the loop either way)"
    ),
    ("*", "kept+selector"): (
        "rollouts: kept rolls out the prompts a selector keeps among uniform's next "
        "batch; selector {selector!r} does not walk the data: use greso, skip or uniform, "
        "or rollouts: full"
    ),
    ("*", "sampler"): (
        "{trainer} runs no step sampler {kind!r} (it runs {runs}): run it with the reference "
        "trainer (frontier train --sampler {kind}) or the simulator"
    ),
    # ---- TRL
    ("TRL", "choice:kept"): (
        "rollouts will be kept{unread}: {why} among TRL's batch (fewer completions){tested}{after}"
    ),
    ("TRL", "rollouts"): (
        "rollouts must be auto (kept where the settings allow it), full (TRL's whole "
        "generation batch), kept (only the prompts the selector keeps among it) or fewer_steps "
        "(whole batches of the prompts it keeps, the run ended by its passes), got {rollouts!r}"
    ),
    ("TRL", "kept+filter"): (
        "rollouts: kept and screen are a step's sampler, as dynamic_sampling is; they do "
        "not combine: set dynamic_sampling: off, or rollouts: full and screen: 0"
    ),
    ("TRL", "rollouts:fewer_steps+selector"): (
        "rollouts: fewer_steps ends the run by the selector's passes over the prompts; "
        "selector {selector!r} does not walk the data: use greso, skip or uniform"
    ),
    ("TRL", "auto+filter"): "dynamic_sampling: {mode} is a step sampler of its own",
    ("TRL", "auto+images"): "an image dataset (an image or images column) cannot be regrouped",
    ("TRL", "auto+trainer"): "trainer {trainer!r}: kept runs inside TRL's GRPOTrainer only",
    ("TRL", "auto+seam"): "kept cannot wrap this TRL ({seam})",
    ("TRL", "auto+version"): (
        "kept is tested with TRL {tested}, not {version} (set rollouts: kept to use it)"
    ),
    ("TRL", "kept:vllm"): " (vLLM, vllm_mode: {mode}, is sent only those)",
    # ---- verl: raised when verl builds the adapter (v1.py, sampler.py) and named before
    # launch by `frontier check-config verl` (preflight.py), one text for both
    ("verl", "rollouts"): (
        "rollouts must be auto (kept where the trainer allows it), full (the selector's "
        "batch_size prompts per batch) or kept (only the prompts it keeps among uniform's "
        "next batch_size), got {rollouts!r}"
    ),
    ("verl", "kept+legacy"): (
        "rollouts: kept needs verl's v1 sync trainer (FrontierReplayBuffer): as a per-prompt "
        "sampler (legacy RayPPOTrainer, verl <= 0.7) verl packs the kept prompts into full "
        f"train_batch_size batches; set trainer.use_v1: true, or rollouts: full; see {_VERL_DOC}"
    ),
    ("verl", "kept+async"): (
        "rollouts: kept needs verl's sync v1 trainer: the async trainers stream prompts one by "
        "one and train whichever train_batch_size groups are done, so a step has no window of "
        "uniform's batch to keep; set trainer.v1.trainer_mode: sync (FrontierReplayBuffer), or "
        f"rollouts: full; see {_VERL_DOC}"
    ),
    ("verl", "kept+filter"): (
        "rollouts: kept with algorithm.filter_groups: verl's DAPO filter refills each dropped "
        "group until train_batch_size groups are in, which fills the batch kept shrinks; set "
        "algorithm.filter_groups.enable=false, or rollouts: full"
    ),
    ("verl", "kept+refill"): (
        "rollouts: kept with trainer.v1.sampler.sync_refill_failed_groups: verl refills a failed "
        "group with a dataloader fetch, which under kept is a whole window of the walk; set it "
        "false (verl's default: a failed group is trained as it came)"
    ),
    ("verl", "kept+gen_batch_size"): (
        "rollouts: kept with data.gen_batch_size={gen_batch_size}: each dataloader fetch is "
        "one window of the walk, at least one prompt kept, so a step of smaller windows saves "
        "less (none at 1); unset gen_batch_size"
    ),
    ("verl", "sampler:dynamic_sampling"): (
        "on verl, dynamic sampling is verl's own filter: set algorithm.filter_groups.enable=true "
        "and algorithm.filter_groups.metric=reward, and keep the selector here "
        "(docs/integrations/verl.md, DAPO dynamic sampling)"
    ),
    ("verl", "shadows+filter"): (
        "shadows with algorithm.filter_groups: verl's DAPO filter reports a step's groups in "
        "several rounds, and a shadow reads each prompt's whole group once a step; shadow a run "
        "without the filter (algorithm.filter_groups.enable=false), or drop shadows"
    ),
    # ---- SkyRL
    ("SkyRL", "rollouts"): (
        "rollouts must be auto (kept where the trainer allows it), full (the selector's "
        "trainer.train_batch_size prompts per batch) or kept (only the prompts it keeps among "
        "uniform's next trainer.train_batch_size), got {rollouts!r}"
    ),
    ("SkyRL", "kept+filter"): (
        "rollouts: kept with trainer.algorithm.dynamic_sampling.type set: SkyRL's filter samples "
        "batch after batch until train_batch_size groups are mixed (replace copies groups over "
        "the dropped ones), which fills the batch kept shrinks; set dynamic_sampling.type=null, "
        f"or rollouts: full; see {_SKYRL_DOC}"
    ),
    ("SkyRL", "kept+async"): (
        "rollouts: kept with trainer.fully_async.enabled: SkyRL's fully-async trainer trains "
        "mini-batches of exactly train_batch_size groups and generates a fixed number of "
        "prompts an epoch, which fewer kept prompts would leave waiting; use rollouts: full, "
        "or the synchronous trainer"
    ),
    ("SkyRL", "kept+loss"): (
        "rollouts: kept with loss_scale: batch and trainer.algorithm.policy_loss_type={loss}: "
        "that loss is not linear in the advantages, so no factor on them scales it; set "
        "{setting}.loss_scale=kept, or policy_loss_type regular"
    ),
    ("SkyRL", "sampler:dynamic_sampling"): (
        "is the TRL adapter's option: on SkyRL, dynamic sampling is SkyRL's own "
        "trainer.algorithm.dynamic_sampling.type=filter (the adapter reports the groups it drops)"
    ),
    ("SkyRL", "shadows+filter"): (
        "shadows with trainer.algorithm.dynamic_sampling.type set: SkyRL's filter reports a step's "
        "groups in several sampling rounds, and a shadow reads each prompt's whole group once a "
        "step; shadow a run without it (dynamic_sampling.type=null), or drop frontier.shadows"
    ),
    ("SkyRL", "shadows+async"): (
        "shadows with trainer.fully_async.enabled: a shadow reads each prompt's whole group "
        "once a step, and the fully-async trainer's groups of one draw arrive over several "
        "steps; drop frontier.shadows, or shadow a run of the synchronous trainer"
    ),
    # ---- tinker (no auto: its config takes full or kept)
    ("tinker", "rollouts"): (
        "rollouts must be full (the selector's batch_size tasks per batch) or kept "
        "(only the tasks it keeps among uniform's next batch_size), got {rollouts!r}"
    ),
    ("tinker", "kept+selector"): (
        "rollouts='kept' rolls out the tasks a selector keeps among uniform's next batch; "
        "selector {selector!r} does not walk the data: use greso, skip or uniform, or "
        "rollouts='full'"
    ),
    ("tinker", "kept+async"): (
        "rollouts='kept' needs the cookbook's sync loop (do_sync_training): its async "
        "(async_config) and streaming (stream_minibatch_config) loops train groups_per_batch "
        "groups a step whatever a batch holds, so a step has no window of uniform's batch to "
        "shrink; set both to None, or rollouts='full'"
    ),
}
"""Every refusal and choice text about kept, auto and what they combine with, by
(trainer, key): `kept+X` refuses `rollouts: kept` beside X (and keeps auto at full),
`auto+X` only keeps auto at full (`kept+selector`: a selector that does not walk the data),
`shadows+X` refuses shadows beside X, `sampler:<kind>`
refuses a step sampler the trainer does not run (`sampler` for any such kind), `choice:*` and
`auto:*` word auto's decision; "*" rows hold for every trainer a row of its own does not
override. Fields in braces are filled by `message`."""


SAMPLER_TRAINERS: dict[str, tuple[str, ...]] = {
    "passthrough": ("TRL", "verl", "SkyRL", "tinker"),
    "dynamic_sampling": ("TRL",),  # verl's and SkyRL's are their own filters
    "allocation": (),
    "fewer_rollouts": ("TRL", "verl", "SkyRL", "tinker"),  # screen: TrainerFacts.screen
    "pilot_commit": (),
    "cgrpo": (),  # per-prompt budgets along a grid, calibration rounds: no adapter's step
}
"""Each step-sampler kind (a row of `sampling.spec.KINDS`): the adapters' trainers that run
it (TrainerFacts.name); the reference trainer and the simulator run every kind."""


WORDED_BY_STEP = {
    "kept+settings": "TRL's settings kept cannot run with (trl.fewer_config.fewer_problems)",
    "kept+loss": "a policy loss no factor scales (verl.kept_step.kept_loss_problems, "
    "skyrl.config.kept_loss_problem)",
}
"""Clashes whose lines the step's own checks word, from the settings they read (a trainer
with a MESSAGES row of the same key uses that row instead)."""


def message(facts: TrainerFacts | str, key: str, **fields: Any) -> str:
    """MESSAGES' text of `key` on `facts`' trainer (its own row, else the "*" one), with
    `fields` filled in."""
    name = facts if isinstance(facts, str) else facts.name
    text = MESSAGES.get((name, key), MESSAGES.get(("*", key)))
    if text is None:
        raise KeyError(f"no message {key!r} for {name}")
    return text.format(**fields) if fields else text


def rollouts_refusal(facts: TrainerFacts, rollouts: Any) -> str:
    """Why `rollouts` is not a value `facts`' trainer takes, in one line (fewer_steps: which
    trainer runs it, and why this one does not)."""
    if rollouts == FEWER_STEPS:
        why = message(facts, "rollouts:fewer_steps_why")
        return message(facts, "rollouts:fewer_steps", trainer=facts.name, why=why)
    return message(facts, "rollouts", rollouts=rollouts)


def check_sampler(facts: TrainerFacts, kind: str) -> None:
    """Refuse step sampler `kind` where `facts`' trainer does not run it (SAMPLER_TRAINERS),
    in one line: its MESSAGES row `sampler:<kind>`, else the "*" `sampler` one. KeyError for a
    kind without a row (a new kind is a row there first)."""
    if facts.name in SAMPLER_TRAINERS[kind]:
        return
    key = f"sampler:{kind}" if (facts.name, f"sampler:{kind}") in MESSAGES else "sampler"
    runs = ", ".join(k for k, on in SAMPLER_TRAINERS.items() if facts.name in on)
    raise ValueError(message(facts, key, trainer=facts.name, kind=kind, runs=runs))


def clashes(facts: TrainerFacts, on: Mapping[str, Any]) -> list[str]:
    """What may not combine with kept on `facts`' trainer, as this run has it: one line per
    clash `on` turns on, in `facts.clashes`' order. A value True words the clash by its
    MESSAGES row, a mapping fills that row's fields, a list gives the lines the step's own
    checks word (WORDED_BY_STEP), a false or empty value is off. KeyError for a clash the
    trainer does not declare (a new one is a fact and a row first)."""
    undeclared = sorted(set(on) - set(facts.clashes))
    if undeclared:
        raise KeyError(f"{facts.name} declares no clash {', '.join(undeclared)}")
    out: list[str] = []
    for clash in facts.clashes:
        got = on.get(clash)
        if not got:
            continue
        if isinstance(got, list):
            out += got
        elif isinstance(got, Mapping):
            out.append(message(facts, clash, **got))
        else:
            out.append(message(facts, clash))
    return out


def positive_number(value: Any) -> bool:
    """Whether a trainer setting is a plain positive number (not a bool, not a Hydra
    interpolation left as text)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def dataset_rows(dataset: Any) -> int | None:
    """Prompts in a trainer's training dataset (None: none, or an iterable dataset, which
    has no length)."""
    try:
        return len(dataset) if dataset is not None else None
    except TypeError:
        return None


def planned_epochs(
    epochs: Any, *, steps: Any = None, prompts_per_step: Any = 0, rows: RowCount
) -> float | None:
    """Passes over the training prompts a run plans: `epochs`, or fewer where a step limit
    (`steps` optimizer steps of `prompts_per_step` new prompts each, over `rows` prompts,
    counted only here) ends it first; None where a setting is not a positive number (an
    interpolation), or a step limit is set and the prompts are not counted yet."""
    if not positive_number(epochs) or not (steps is None or positive_number(steps)):
        return None
    if steps is None:
        return float(epochs)
    counted = rows() if callable(rows) else rows
    if counted is None or counted <= 0 or not positive_number(prompts_per_step):
        return None
    return min(float(epochs), float(steps * prompts_per_step / counted))


def _epochs(value: float) -> str:
    """A run's length as a log line shows it (1 epoch, 1.5 epochs, 4.69 epochs, 1,000 epochs)."""
    shown = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
    return f"{shown} epoch{'' if shown == '1' else 's'}"


def _longer(selector: type[Selector], epochs: float | None) -> bool:
    """Whether `kept_loses` holds for a run of `epochs` (None: unknown, taken as within
    `kept_level_epochs`, the length most LLM runs have)."""
    level = selector.kept_level_epochs
    return level is None or (epochs is not None and epochs > level + 1e-9)


def keeps_full(selector: type[Selector], epochs: float | None = None) -> str | None:
    """Why `rollouts: auto` keeps full batches for `selector` on a run of `epochs` passes
    over the prompts (None: unknown), whatever the trainer's settings: it never leaves a
    prompt of uniform's step out, so `kept` would change nothing (see
    `Selector.walks_windows`, `passes_over`), or `kept` was measured to cost it held-out
    score at that length (`Selector.kept_loses`, `kept_level_epochs`); None: auto may
    choose kept."""
    if not (selector.walks_windows() and selector.passes_over):
        what = "passes over no prompt" if selector.walks_windows() else "does not walk the data"
        return f"selector {selector.name!r} {what}"
    if not selector.kept_loses or not _longer(selector, epochs):
        return None
    level = selector.kept_level_epochs
    loses = _kept_loses(selector)
    if level is None:
        return (
            f"selector {selector.name!r}: {loses} (set rollouts: kept to save anyway; {AUTO_DOC})"
        )
    assert epochs is not None
    return (
        f"the run is {_epochs(epochs)}, longer than the {_epochs(level)} over which selector "
        f"{selector.name!r} with kept was measured within noise ({loses}; "
        f"set rollouts: kept to save anyway, {AUTO_DOC})"
    )


def _kept_loses(selector: type[Selector], *, own_runs: bool = True) -> str:
    """Why `selector`'s `kept_loses` holds, quoting only its own figures: where it follows a
    parent's measurement (`Selector.measured`), whose they are, and (`own_runs`) its own kept
    runs' figures (its `kept_saves`) or that it has none."""
    loses, whose = selector.measured("kept_loses")
    if whose == selector.name:
        return str(loses)
    saves = _own(selector, "kept_saves")
    own = f"its own kept runs: {saves}" if saves else f"no kept run of {selector.name!r} measured"
    return f"it follows {whose!r}, which {loses}" + f" ({own})" * own_runs


def _own(selector: type[Selector], field: str) -> str | None:
    """`selector`'s own measured figures of `field`, not a parent's (None: none measured)."""
    value, whose = selector.measured(field)
    return value if whose == selector.name else None


def shadow_rules(
    shadows: Sequence[str] | None, selector: str, partial: Sequence[str]
) -> tuple[str, ...]:
    """The rules an adapter's run follows: `shadows` as set, or, left unset (None),
    DEFAULT_SHADOWS beside a run of `selector` uniform, whose groups are uniform's whole
    batches; none beside another selector (the user chose what trains) or where `partial`
    names a setting under which the run rolls out partial or extra groups (a shadow reads
    each prompt's whole group once)."""
    if shadows is not None:
        return tuple(shadows)
    return DEFAULT_SHADOWS if selector == "uniform" and not partial else ()


def default_shadows_line(rules: Sequence[str], *, planned: bool = False) -> str:
    """The one line that says a run follows the default shadows `rules` (`planned`: as
    `frontier check-config` words it, before the run)."""
    tense = "the run will follow" if planned else "frontier-rft: shadows: following"
    return message("*", "shadows:default", tense=tense, rules=", ".join(rules))


def set_shadows_line(rules: Sequence[str]) -> str:
    """`frontier check-config`'s line naming the shadows a run whose `shadows` are set will
    follow (`rules`: their names as parsed, one at least)."""
    return message("*", "shadows:set", rules=", ".join(rules))


def resolve_auto(
    selector: type[Selector], blockers: Sequence[str], epochs: float | None = None
) -> tuple[str, str, bool]:
    """What `rollouts: auto` means on a run of `epochs` passes over the prompts (None:
    unknown): (mode, why, whether to warn). full without a warning where the selector never
    skips within a step or `kept` costs it score at any length (`keeps_full`); full with one
    where `blockers` (the trainer's settings that `rollouts: kept` is refused for) are in the
    way, as on every run length (the trainer may learn the length later than its settings);
    full without a warning where `kept` costs it score at this length; kept otherwise."""
    why = keeps_full(selector)
    if why is not None:
        return "full", why, False
    if blockers:
        return "full", "; ".join(blockers), True
    why = keeps_full(selector, epochs)
    if why is not None:
        return "full", why, False
    kept = f"each step generates only the prompts {selector.name!r} keeps"
    level = selector.kept_level_epochs
    if level is None:
        return "kept", kept, False
    if epochs is None:
        length = (
            f"the run's length in epochs is not known yet (kept was measured within noise up to "
            f"{_epochs(level)}: set rollouts: full for a longer run)"
        )
    else:
        length = (
            f"the run is {_epochs(epochs)}, within the {_epochs(level)} over which kept was "
            "measured within noise"
        )
    return "kept", f"{length}; {kept}", False


DEVICES = ("cpu", "gpu")
"""The device classes `rollouts: auto` words its saving for: a step's time follows its rows
on a CPU; on a GPU at small batch it hardly does (SmolLM2-135M on an H200: 2.45 s a step for
72 rows and for 128)."""


def device_saving(facts: TrainerFacts, selector: type[Selector], device: str) -> str:
    """Which mode's saving shows in `device`'s seconds (one of DEVICES) for `selector` on
    `facts`' trainer, and on what evidence: a clause the auto line ends with ('' for a
    selector that passes over no prompt, or an unknown device)."""
    if device not in DEVICES or not (selector.walks_windows() and selector.passes_over):
        return ""
    if device == "cpu":
        return (
            "; on a CPU a step's time follows its rows, so kept's saving in rollouts shows in "
            "its seconds (0.80x of uniform's CPU time at 0.83x its rollouts, CPU testbed)"
        )
    where = (
        "rollouts: fewer_steps"
        if FEWER_STEPS in facts.rollouts
        else f"rollouts: fewer_steps, in TRL and the reference trainer, not on {facts.name} yet"
    )
    evidence = _own(selector, "fewer_steps_saves") or f"not yet measured with {selector.name!r}"
    return (
        "; where a GPU step is latency-bound its seconds barely follow its rows (measured "
        "once: SmolLM2-135M on an H200, kept took 1.04x uniform's wall-clock at 0.78x its "
        "rollouts), so kept saved rollouts and tokens there, not seconds (a large model or long "
        "completions pay in rows instead: the currency line says which); fewer steps, whose "
        f"saving shows in seconds, was measured there ({where}: {evidence}); such a step pays "
        "in steps: the evidence favours more prompts a step, not fewer "
        "(docs/results/device_cost.md)"
    )


def auto(
    facts: TrainerFacts,
    selector: type[Selector],
    clashes: Sequence[str],
    epochs: float | None = None,
    *,
    outside: str | None = None,
    vllm_mode: str | None = None,
    device: str | None = None,
) -> tuple[str, str, bool]:
    """What `rollouts: auto` becomes on `facts`' trainer: (mode, why, whether to warn), by
    `resolve_auto` from `clashes` (the lines of what is in the way of kept there, worded by
    `message`, in `facts.clashes`' order) and the run's length `epochs` (None: unknown).
    `outside`: why this run is not on `facts.kept`, the one trainer that shrinks a step
    (full, no warning: nothing the user set is in the way); `vllm_mode`: the vLLM mode that
    generates, as its config spells it (None: not vLLM), named when kept on a trainer with
    `facts.vllm_modes`; `device`: the run's device class (DEVICES; None: not known), whose
    seconds each mode saves or not is said after why (`device_saving`). ValueError where
    the trainer's config has no `auto`."""
    if "auto" not in facts.rollouts:
        raise ValueError(f"{facts.name} has no rollouts: auto (set full or kept)")
    if outside is not None and keeps_full(selector) is None:
        return "full", outside, False
    mode, why, warn = resolve_auto(selector, clashes, epochs)
    if mode == "kept" and vllm_mode is not None and facts.vllm_modes:
        why += message(facts, "kept:vllm", mode=vllm_mode)  # say who generates them
    if mode == "full" and not warn:  # full by measurement, not by a setting in kept's way
        why += device_saving(facts, selector, device or "")
    return mode, why, warn


def auto_log(
    log: logging.Logger, facts: TrainerFacts | str, mode: str, why: str, warn: bool
) -> None:
    """Say what `rollouts: auto` resolved to on `facts`' trainer, in one line: a warning
    when settings keep a skipping selector from kept, else at INFO."""
    name = facts if isinstance(facts, str) else facts.name
    saves = "rollouts" if isinstance(facts, str) else facts.saves
    if warn:
        log.warning(message(name, "auto:warn"), name, why, AUTO_DOC)
    else:
        among = message(name, "auto:among", trainer=name, saves=saves)
        log.info(message(name, "auto:info"), mode, why, among * (mode == "kept"))


def kept_line(facts: TrainerFacts, selector: type[Selector]) -> str:
    """The start-up line of a run whose `rollouts: kept` its user set: what a step does, and
    the held-out cost measured for `selector` with kept (`Selector.kept_loses`), if any."""
    saves = _own(selector, "kept_saves")
    cost = f"; measured saving: {saves}" if saves else ""
    if not saves and selector.kept_saves:  # a parent's figures: not this selector's
        cost = f"; no kept run of {selector.name!r} measured"
    if selector.kept_loses:
        own = _own(selector, "kept_loses") is not None
        cost += "; measured: " * own + "; " * (not own) + _kept_loses(selector, own_runs=False)
    return message(
        facts, "kept:set", selector=selector.name, trainer=facts.name, saves=facts.saves, cost=cost
    )


def kept_choice(facts: TrainerFacts, values: Mapping[str, Any], default_selector: str) -> list[str]:
    """`frontier check-config`'s line for a hand-set `rollouts: kept`: what a step does on
    `facts`' trainer and the saving and cost measured for the selector (`kept_line`); none
    for another setting or an unknown selector (named as a problem elsewhere)."""
    name = values.get("selector", default_selector)
    if values.get("rollouts") != "kept" or not isinstance(name, str) or name not in SELECTORS:
        return []
    return [kept_line(facts, SELECTORS[name]).removeprefix("frontier-rft: rollouts: ")]


def auto_choice(
    facts: TrainerFacts | str,
    mode: str,
    why: str,
    *,
    unread: str = "",
    after: str = "",
    tested: str = "",
) -> str:
    """`frontier check-config`'s line for what `rollouts: auto` will be on `facts`' trainer
    (`unread`: after "kept" where the data was not read; `after`: how the length was
    counted; `tested`: whether the installed trainer's version is one kept is tested on)."""
    name = facts if isinstance(facts, str) else facts.name
    if mode == "kept":
        return message(
            name, "choice:kept", unread=unread, why=why, trainer=name, after=after, tested=tested
        )
    return message(name, "choice:full", why=why, after=after)


def adapter_plan(
    rollouts: str, loss_scale: str = "batch", reason: str = "", rows: StepRows | None = None
) -> StepPlan:
    """An adapter's step as every door's `StepPlan`: `rollouts` kept is the skip in uniform's
    window (`FewerRollouts`, whose windows verl, SkyRL and tinker-cookbook walk inside their own
    batches: they build no step sampler), full plain GRPO; `reason`: why `auto` chose it (''
    where the user set it); `rows`: the trainer's step as its config sizes it, which the
    adapter reads its batch from. ValueError for another `rollouts` (auto is resolved first:
    `auto`)."""
    if rollouts not in STEP_ROLLOUTS:
        raise ValueError(
            f"a plan's rollouts are full or kept, got {rollouts!r} (resolve auto first)"
        )
    if rollouts == "full":
        return StepPlan(reason=reason, rows=rows)
    spec = SamplerSpec(FewerRollouts.kind, FewerRolloutsConfig(loss_scale=loss_scale))  # type: ignore[arg-type]
    return StepPlan(spec, reason=reason, rows=rows)
