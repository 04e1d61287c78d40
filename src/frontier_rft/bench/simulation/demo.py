"""`frontier demo`: the adapters' default on a 2-epoch run, and what its shadow's rule saves.

The default is the trainer adapters' (`FrontierConfig`: `selector: uniform`, `rollouts:
auto`, `shadows` unset): uniform's whole batches, with `skip` followed as a live shadow
(`plan.shadow_rules`). `auto` is decided here as every adapter decides it (`resolve_auto`
on the run's planned epochs). Beside it the demo runs the opt-in the shadow reports on
(`OPT_IN` with `rollouts: kept`) and, for context, every selector with full batches.
Everything it measures is SIMULATED (the learner calibrated on real GRPO,
docs/simulation.md); the closing paragraph quotes real RL (`verdicts.RECOMMENDED`, the
selector's `kept_loses`) and is worded from auto's decision, never from these tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from frontier_rft.bench.real_rl.verdicts import RECOMMENDED
from frontier_rft.integrations.plan import AUTO_DOC, DEFAULT_SHADOWS, resolve_auto
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.selectors import SELECTORS
from frontier_rft.simulation.runner import Entry, sampler_spec

__all__ = [
    "DEMO_EPOCHS",
    "DEMO_SCENARIO",
    "OPT_IN",
    "SIMULATED",
    "AutoChoice",
    "closing",
    "default_choice",
    "demo_entries",
    "savings_table",
]

DEMO_SCENARIO = "large-pool"
"""The learner calibrated on the real pool of the README's 2-epoch evidence (1,280 prompts)."""
DEMO_EPOCHS = 2
"""Passes over the pool the demo's run makes: a run `auto` keeps `kept` on."""
SIMULATED = "SIMULATED, not real RL"
"""What every table of the demo is; said before each."""
OPT_IN = DEFAULT_SHADOWS[0]
"""The rule the default follows as a shadow, run here with `rollouts: kept`: what a user who
switches to it would save."""


@dataclass(frozen=True)
class AutoChoice:
    """The default selector and what `rollouts: auto` makes of it on a run of `epochs`."""

    selector: str
    """`FrontierConfig().selector`: the TRL, verl and SkyRL adapters' default."""
    epochs: float
    """The run's planned passes over its prompts."""
    mode: str
    """'kept' or 'full', as `resolve_auto` decides on this run."""
    why: str
    """Its reason, as the trainer's log words it."""

    @property
    def label(self) -> str:
        """The demo's entry for it (the bench's label: `skip-kept`, or `skip` with full)."""
        return f"{self.selector}-kept" if self.mode == "kept" else self.selector


def default_choice(epochs: float = DEMO_EPOCHS) -> AutoChoice:
    """The adapters' default selector and `auto`'s decision on a run of `epochs`, with no
    trainer setting in its way."""
    config = FrontierConfig()
    mode, why, _ = resolve_auto(SELECTORS[config.selector], [], float(epochs))
    if config.rollouts != "auto":  # a default that names its mode needs no decision
        mode, why = config.rollouts, f"the default is rollouts: {config.rollouts}"
    return AutoChoice(config.selector, float(epochs), mode, why)


def demo_entries(choice: AutoChoice) -> list[Entry]:
    """Every selector with full batches, the default as `auto` runs it on this run, and the
    opt-in its shadow reports on (`OPT_IN` with `rollouts: kept`)."""
    entries = [Entry(label=name, selector=name) for name in SELECTORS]
    kept = {f"{OPT_IN}-kept": OPT_IN}
    if choice.mode == "kept":
        kept[choice.label] = choice.selector
    for label, selector in kept.items():
        entries.append(
            Entry(
                label=label,
                selector=selector,
                sampler=sampler_spec(fewer_rollouts={"rollouts": "kept"}),
            )
        )
    return entries


def _paired(results: dict[str, Any], label: str, key: str) -> np.ndarray:
    """Per seed, `label`'s final `key` ('score' or 'rollouts' total) and uniform's."""
    base = results["settings"]["baseline"]
    runs = {(r["label"], r["seed"]): r for r in results["runs"]}
    rows = []
    for seed in results["settings"]["seeds"]:
        pair = [runs[(label, seed)], runs[(base, seed)]]
        rows.append([r["score"][-1] if key == "score" else sum(r["rollouts"]) for r in pair])
    return np.asarray(rows, dtype=np.float64)


def _mean_sd(values: np.ndarray, fmt: str) -> str:
    return f"{values.mean():{fmt}} ± {values.std():{fmt.lstrip('+')}}"


def savings_table(results: dict[str, Any], choice: AutoChoice) -> str:
    """What the opt-in (`OPT_IN` with kept) saved against uniform on the demo's simulated
    run, labelled so, after what the default runs there."""
    s = results["settings"]
    label = f"{OPT_IN}-kept"
    rollouts = _paired(results, label, "rollouts")
    score = _paired(results, label, "score")
    ratio, diff = rollouts[:, 0] / rollouts[:, 1], score[:, 0] - score[:, 1]
    seeds = len(s["seeds"])
    learner = results.get("scenario") or {}
    pool = (learner.get("config") or {}).get("num_tasks", 0)
    head = (
        f"{SIMULATED}: what {OPT_IN} with rollouts: kept saves on a run of {choice.epochs:g} "
        f"epochs (the simulated learner {learner.get('name', '?')!r}, {pool:,} "
        f"prompts, {s['steps']} steps of {s['batch']} prompts x {s['rollouts']} rollouts, the "
        f"same steps for both; mean ± std over {seeds} paired seeds).\n"
        f"The default: selector {choice.selector}, rollouts auto, which on this run is "
        f"{choice.mode}: {choice.why}; {OPT_IN} follows it as a shadow.\n"
    )
    rows = [
        f"| simulated | uniform | {label} (the opt-in) | {label} / uniform |",
        "|---|--:|--:|--:|",
        f"| rollouts generated | {rollouts[:, 1].mean():,.0f} | {rollouts[:, 0].mean():,.0f} | "
        f"{_mean_sd(ratio, '.3f')} |",
        "| generated tokens (the simulator gives every completion one length: they follow "
        f"the rollouts) | | | {_mean_sd(ratio, '.3f')} |",
        f"| final held-out score (paired difference) | {score[:, 1].mean():.3f} | "
        f"{score[:, 0].mean():.3f} | {_mean_sd(diff, '+.3f')} |",
    ]
    return head + "\n".join(rows)


def _ci(values: tuple[float, float, float], fmt: str) -> str:
    mean, lo, hi = (f"{v:{fmt}}".replace("-", "\u2212") for v in values)
    return f"{mean} [{lo}, {hi}]"


def closing(choice: AutoChoice) -> str:
    """What to use and why: worded from auto's decision on the demo's run, the numbers
    from real RL (`RECOMMENDED`, the opt-in's `kept_loses`), never from the simulated
    tables."""
    e = RECOMMENDED
    _, lo, hi = e.final_minus_uniform
    verdict = "within noise of" if lo <= 0 <= hi else "above" if lo > 0 else "below"
    if choice.mode == "kept":
        what = (
            f"On this run of {choice.epochs:g} epochs `auto` is kept: the same steps and "
            f"schedule as uniform, each step generating only the prompts {choice.selector} keeps "
            "among uniform's batch."
        )
    else:
        what = (
            f"On this run of {choice.epochs:g} epochs `auto` is full (uniform's bill: it saves "
            f"no rollouts) because {choice.why}."
        )
    shadow = (
        f" Beside it the run follows {OPT_IN} as a shadow, at no cost: its metrics say what "
        f"{OPT_IN} with `rollouts: kept` would have saved and how many mixed groups it would "
        "have lost, on your own rewards."
        if choice.selector == "uniform"
        else ""
    )
    loses = SELECTORS[OPT_IN].kept_loses
    cost = f" It is not the default because, {loses}." if loses else ""
    return (
        f"What to use: selector {choice.selector} with rollouts auto, the default of the TRL, "
        f"verl and SkyRL adapters. {what}{shadow} To save, set selector {OPT_IN} and rollouts "
        f"kept ({AUTO_DOC}). Real RL, not this simulator, is the evidence: on the real testbed "
        f"(tiny Llama, GRPO on Countdown, {e.regime}, {e.seeds} paired seeds; {e.source}) "
        f"{e.entry} generated {_ci(e.rollouts_vs_uniform, '.2f')} of uniform's rollouts and "
        f"{_ci(e.generated_tokens_vs_uniform, '.2f')} of its generated tokens, and ended "
        f"{verdict} uniform (held-out pass@1 {_ci(e.final_minus_uniform, '+.3f')}).{cost} "
        "Confirm on your own run (docs/ab_test.md)."
    )
