"""`rollouts: auto`, as every adapter decides it (TRL, verl, SkyRL): `kept` where the selector
passes over prompts within uniform's step, no measurement says `kept` costs it held-out score
at the run's length (`Selector.kept_loses`: greso's at every length, skip's beyond
`kept_level_epochs`, 2 epochs) and none of the trainer's settings is in the way, else `full`,
with a warning where settings keep a skipping selector from `kept`. The run's length is its
planned passes over the prompts (`planned_epochs`, from the trainer's epoch and step limits).

Each adapter lists its own blockers (the refusals an explicit `rollouts: kept` gets there);
`resolve_auto` decides from them, and `auto_log` / `auto_choice` word the result for the
trainer's log and `frontier check-config`. The evidence: docs/selectors/fewer_rollouts.md.
Imports no trainer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from frontier_rft.core.selector import Selector

__all__ = [
    "AUTO_DOC",
    "SHADOWS_FOLLOW_UNIFORM",
    "RowCount",
    "auto_choice",
    "auto_log",
    "dataset_rows",
    "keeps_full",
    "planned_epochs",
    "positive_number",
    "resolve_auto",
]

AUTO_DOC = "docs/selectors/fewer_rollouts.md"
"""Why `auto` chooses as it does (its log lines point there)."""
SHADOWS_FOLLOW_UNIFORM = "shadows follow uniform's whole batches"
"""Why shadows keep `auto` at full, on every adapter."""
RowCount = int | Callable[[], int | None] | None
"""Training prompts (None: not counted), or how to count them: called only under a step limit,
since counting may read the data files (`data_columns.local_rows`)."""


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
    if level is None:
        return (
            f"selector {selector.name!r}: {selector.kept_loses} (set rollouts: kept to use it "
            f"anyway; selector: skip lost least, none over 2 epochs, {AUTO_DOC})"
        )
    assert epochs is not None
    return (
        f"the run is {_epochs(epochs)}, longer than the {_epochs(level)} over which selector "
        f"{selector.name!r} with kept was measured within noise ({selector.kept_loses}; "
        f"set rollouts: kept to save anyway, {AUTO_DOC})"
    )


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


def auto_log(log: logging.Logger, trainer: str, mode: str, why: str, warn: bool) -> None:
    """Say what `rollouts: auto` resolved to in `trainer` ("verl"), in one line: a warning
    when settings keep a skipping selector from kept, else at INFO."""
    if warn:
        log.warning(
            "frontier-rft: rollouts: auto generates %s's whole batch (full), uniform's bill, "
            "because %s; see %s",
            trainer,
            why,
            AUTO_DOC,
        )
    else:
        among = f" among {trainer}'s batch (the same steps and schedule, fewer rollouts)"
        log.info("frontier-rft: rollouts: auto is %s: %s%s", mode, why, among * (mode == "kept"))


def auto_choice(trainer: str, mode: str, why: str) -> str:
    """`frontier check-config`'s line for what `rollouts: auto` will be in `trainer`."""
    if mode == "kept":
        return f"rollouts will be kept: {why} among {trainer}'s batch (same steps, fewer rollouts)"
    return f"rollouts will be full (uniform's bill) because {why}"
