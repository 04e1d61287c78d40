"""`rollouts: auto`, as every adapter decides it (TRL, verl, SkyRL): `kept` where the selector
passes over prompts within uniform's step, no measurement says `kept` costs it held-out score
(`Selector.kept_loses`, e.g. greso's) and none of the trainer's settings is in the way, else
`full`, with a warning where settings keep a skipping selector from `kept`.

Each adapter lists its own blockers (the refusals an explicit `rollouts: kept` gets there);
`resolve_auto` decides from them, and `auto_log` / `auto_choice` word the result for the
trainer's log and `frontier check-config`. The evidence: docs/selectors/fewer_rollouts.md.
Imports no trainer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from frontier_rft.core.selector import Selector

__all__ = [
    "AUTO_DOC",
    "SHADOWS_FOLLOW_UNIFORM",
    "auto_choice",
    "auto_log",
    "keeps_full",
    "resolve_auto",
]

AUTO_DOC = "docs/selectors/fewer_rollouts.md"
"""Why `auto` chooses as it does (its log lines point there)."""
SHADOWS_FOLLOW_UNIFORM = "shadows follow uniform's whole batches"
"""Why shadows keep `auto` at full, on every adapter."""


def keeps_full(selector: type[Selector]) -> str | None:
    """Why `rollouts: auto` keeps full batches for `selector` whatever the trainer's settings:
    it never leaves a prompt of uniform's step out, so `kept` would change nothing (see
    `Selector.walks_windows`, `passes_over`), or `kept` was measured to cost it held-out
    score (`Selector.kept_loses`); None: auto may choose kept."""
    if not (selector.walks_windows() and selector.passes_over):
        what = "passes over no prompt" if selector.walks_windows() else "does not walk the data"
        return f"selector {selector.name!r} {what}"
    if selector.kept_loses:
        return (
            f"selector {selector.name!r}: {selector.kept_loses} (set rollouts: kept to use it "
            f"anyway; selector: skip lost least, none over 2 epochs, {AUTO_DOC})"
        )
    return None


def resolve_auto(selector: type[Selector], blockers: Sequence[str]) -> tuple[str, str, bool]:
    """What `rollouts: auto` means: (mode, why, whether to warn). full without a warning where
    the selector never skips within a step or `kept` costs it score (`keeps_full`); full with
    one where `blockers` (the trainer's settings that `rollouts: kept` is refused for) are in
    the way; kept otherwise."""
    why = keeps_full(selector)
    if why is not None:
        return "full", why, False
    if blockers:
        return "full", "; ".join(blockers), True
    return "kept", f"each step generates only the prompts {selector.name!r} keeps", False


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
