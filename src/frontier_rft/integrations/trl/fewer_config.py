"""Fewer rollouts in the TRL adapter (`rollouts: kept`, `screen: k`): the checks of its
FrontierConfig values and of the TRL settings it runs with (how each TRL `loss_type`
normalises a batch with filler rows is dynamic_config's LOSS_NORMALISATION, shared with
dynamic sampling and re-exported here).

Imports neither torch nor TRL: `FrontierConfig` validates with it and `frontier check-config
trl` names the same mistakes before any model loads. The step itself is
`frontier_rft.sampling.FewerRollouts`; `step_driver.py` drives it from inside GRPOTrainer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from frontier_rft.core.config import did_you_mean
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.plan import (
    FEWER_STEPS,
    ROLLOUTS,
    RowCount,
    TrainerFacts,
    auto,
    clashes,
    kept_line,
    message,
    planned_epochs,
    rollouts_refusal,
)
from frontier_rft.integrations.trl.dynamic_config import (
    IMAGE_COLUMNS,
    LOSS_NORMALISATION,
    StepRun,
    mode_of,
    normalisation,
    trl_problems,
)
from frontier_rft.sampling.fewer_rollouts import LOSS_SCALES, FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.selectors.registry import SELECTORS

__all__ = [
    "LOSS_NORMALISATION",
    "ROLLOUTS",
    "TRL",
    "auto_rollouts",
    "auto_rollouts_blockers",
    "fewer_problems",
    "fewer_spelling",
    "fewer_step_problems",
    "fewer_steps_problems",
    "normalisation",
    "one_prompt_steps",
    "settings_problems",
    "spec_problems",
    "trl_flag",
    "trl_kept_line",
    "trl_optimizer_step",
    "trl_planned_epochs",
    "trl_step_prompts",
]

TRL = TrainerFacts(
    name="TRL",
    rollouts=(*ROLLOUTS, FEWER_STEPS),
    kept="TRL's GRPOTrainer (trainer: grpo)",
    filter="dynamic_sampling",
    screen=True,
    vllm_modes=("colocate", "server"),
    length=("num_train_epochs", "max_steps", "per_device_train_batch_size",
            "gradient_accumulation_steps", "num_generations", "num_iterations"),
    saves="completions",
    clashes=("auto+filter", "auto+shadows", "kept+settings", "auto+images"),
)  # fmt: skip
"""What TRL's trainers can do with a step (integrations.plan asks it; its texts are there).
FrontierConfig.rollouts takes the plan's ROLLOUTS."""

_TRL_NUM_GENERATIONS = 8
"""TRL's default, for a file that does not set it."""
_TRL_LENGTH = {
    "num_train_epochs": 3.0,
    "max_steps": -1,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "num_iterations": 1,
}
"""TRL's defaults (GRPOConfig, transformers' TrainingArguments) of what sets a run's length."""


_TRUE = ("yes", "true", "t", "y", "1")
_FALSE = ("no", "false", "f", "n", "0")


def trl_flag(value: Any) -> bool | None:
    """A bool setting as TRL's parser reads it (transformers' `string_to_bool`: a quoted
    "yes" is true, "no" false); None where it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    return None


def trl_step_prompts(values: Mapping[str, Any], processes: int) -> int | None:
    """Prompts a generation step of these TRL settings draws (B): generation_batch_size, else
    per_device_train_batch_size x `processes` x steps_per_generation (default
    gradient_accumulation_steps) completions, over num_generations; None where a setting is
    not a whole number (TRL and check-config name those)."""
    n: Any = values.get("num_generations") or _TRL_NUM_GENERATIONS
    gen: Any = values.get("generation_batch_size")
    if gen is None:
        per = values.get("per_device_train_batch_size", _TRL_LENGTH["per_device_train_batch_size"])
        spg = values.get("steps_per_generation") or values.get(
            "gradient_accumulation_steps", _TRL_LENGTH["gradient_accumulation_steps"]
        )
        gen = per * processes * spg if _whole(per) and _whole(spg) else None
    if not (_whole(gen) and _whole(n)) or gen % n:
        return None
    prompts: int = gen // n
    return prompts


def trl_optimizer_step(values: Mapping[str, Any], processes: int) -> tuple[int, int, int] | str:
    """(prompts, num_generations, per_device_train_batch_size) of an optimizer step of these
    TRL settings (per_device_train_batch_size x `processes` x gradient_accumulation_steps rows,
    TRL's defaults where unset), or why its rows are not whole groups. The micro-batch is what
    a plan's settings keep (batch_settings)."""
    k: Any = values.get("num_generations", _TRL_NUM_GENERATIONS)
    per: Any = values.get("per_device_train_batch_size", _TRL_LENGTH["per_device_train_batch_size"])
    accumulate: Any = values.get(
        "gradient_accumulation_steps", _TRL_LENGTH["gradient_accumulation_steps"]
    )
    if not (_whole(k) and _whole(per) and _whole(accumulate)):
        return "its settings are not whole numbers"
    rows = per * processes * accumulate
    if rows % k:
        return f"a step's {rows} rows are not whole groups of {k}"
    return rows // k, k, per


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def one_prompt_steps(values: Mapping[str, Any], processes: int, selector: type[Selector]) -> str:
    """Why a kept step of `selector` saves nothing on these settings, in one line ('' where
    it may save): each generation step draws one prompt (`trl_step_prompts`), and a window
    that keeps none walks on to the next prompt, so each step still generates one."""
    if trl_step_prompts(values, processes) != 1 or not selector.walks_windows():
        return ""
    if not selector.passes_over:
        return ""
    many = f"{processes} process{'es' * (processes != 1)}"
    return (
        f"at 1 prompt a generation step (on {many}), kept saves nothing: a window whose one prompt "
        f"{selector.name!r} passes over walks on to the next, so every step still generates one "
        "prompt: raise per_device_train_batch_size or gradient_accumulation_steps for steps "
        "of several prompts to save"
    )


def trl_kept_line(values: Mapping[str, Any], processes: int, selector: type[Selector]) -> str:
    """The start-up line of a run whose `rollouts: kept` its user set (`plan.kept_line`: what
    a step does, what kept measured), or at one prompt a step why it saves nothing there
    (`one_prompt_steps`: no measured saving quoted); check-config prints it too."""
    one = one_prompt_steps(values, processes, selector)
    return f"frontier-rft: rollouts: kept (set): {one}" if one else kept_line(TRL, selector)


def trl_planned_epochs(
    values: Mapping[str, Any], *, rows: RowCount, processes: int
) -> float | None:
    """Passes over the `rows` training prompts a TRL run of these settings plans
    (`plan.planned_epochs`): num_train_epochs, or with max_steps > 0 max_steps
    optimizer steps of per_device_train_batch_size x processes x gradient_accumulation_steps
    completions, num_generations a prompt, each generation reused num_iterations times
    (TRL's RepeatSampler). None where max_steps is set and the rows are unknown, or a value
    is not a number (FrontierConfig and TRL name those)."""
    names = (*_TRL_LENGTH, "num_generations")
    got = {k: values.get(k, _TRL_LENGTH.get(k, _TRL_NUM_GENERATIONS)) for k in names}
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in got.values()):
        return None
    if got["max_steps"] <= 0:
        return planned_epochs(got["num_train_epochs"], rows=rows)
    completions = (
        got["per_device_train_batch_size"] * processes * got["gradient_accumulation_steps"]
    )
    per_step = completions / max(got["num_generations"] * got["num_iterations"], 1)
    return planned_epochs(math.inf, steps=got["max_steps"], prompts_per_step=per_step, rows=rows)


def settings_problems(
    rollouts: Any, screen: Any, loss_scale: Any, selector: Any, dynamic_sampling: Any
) -> list[str]:
    """FrontierConfig's fewer-rollouts values, one line each: the choices, screen a count,
    a selector that walks the data for rollouts: kept, not with dynamic_sampling."""
    out = []
    if rollouts not in TRL.rollouts:
        out.append(
            rollouts_refusal(TRL, rollouts) + did_you_mean(str(rollouts).lower(), TRL.rollouts)
        )
    if isinstance(screen, bool) or not isinstance(screen, int) or screen < 0 or screen == 1:
        out.append(
            f"screen must be 0 (off) or a number of screening completions per prompt >= 2 "
            f"(below num_generations; one reward is never mixed), got {screen!r}"
        )
    if loss_scale not in LOSS_SCALES:
        out.append(f"loss_scale must be one of {', '.join(LOSS_SCALES)}, got {loss_scale!r}")
    if not out and rollouts == FEWER_STEPS:
        return fewer_steps_problems(screen, selector, dynamic_sampling)
    if out or (rollouts != "kept" and not screen):
        return out  # auto resolves to full where kept cannot run: it refuses nothing
    try:
        dynamic = mode_of(dynamic_sampling)
    except ValueError:
        dynamic = "off"  # FrontierConfig names the bad mode
    if dynamic != "off":
        out.append(message(TRL, "kept+filter"))
    cls = SELECTORS.get(selector) if isinstance(selector, str) else None
    if rollouts == "kept" and cls is not None and not cls.walks_windows():
        out.append(message(TRL, "kept+selector", selector=selector))
    return out


def spec_problems(spec: SamplerSpec, selector: Any) -> list[str]:
    """What a step sampler named whole (`sampler:`) asks of the named `selector`, one line:
    a kept step (rollouts kept) runs a selector that walks the data."""
    cls = SELECTORS.get(selector) if isinstance(selector, str) else None
    if StepPlan(spec).rollouts == "kept" and cls is not None and not cls.walks_windows():
        return [message(TRL, "kept+selector", selector=selector)]
    return []


def fewer_spelling(config: FewerRolloutsConfig) -> dict[str, Any]:
    """What TRL's shorthand keys say of `config` (`driver_kinds.DriverKind.spell`)."""
    rollouts = "kept" if config.skip else "full"
    return {"rollouts": rollouts, "screen": config.screen, "loss_scale": config.loss_scale}


def fewer_step_problems(
    config: FewerRolloutsConfig, run: StepRun, selector: type[Selector], check_seam: bool
) -> tuple[list[str], list[str]]:
    """What refuses fewer rollouts (`config`) on `run` with `selector`: (its settings'
    problems, its data's), the seam this TRL lacks (`check_seam`) the one problem said where
    it lacks it."""
    rollouts = "kept" if config.skip else "full"
    problems = fewer_problems(run.settings, run.trainer, rollouts, config.screen)
    data: list[str] = []
    if run.trainer == "grpo" and not problems:
        seam = run.seam if check_seam else None
        found = seam(FewerRollouts.kind, config.screen) if seam is not None else None
        if found is not None:
            return [found], []
        if set(IMAGE_COLUMNS) & set(run.columns):
            data.append(
                "rollouts: kept and screen do not support image datasets (an image or "
                "images column); set rollouts: full and screen: 0"
            )
    if config.skip and not selector.walks_windows():
        problems.append(message(TRL, "kept+selector", selector=selector.name))
    return problems, data


def fewer_steps_problems(screen: int, selector: Any, dynamic_sampling: Any) -> list[str]:
    """What `rollouts: fewer_steps` does not combine with, one line each: its steps are TRL's
    whole generation batches of the prompts a walking selector keeps."""
    out = []
    if screen:
        out.append(
            "rollouts: fewer_steps trains whole generation batches, screen shrinks them: set "
            "screen: 0, or rollouts: kept"
        )
    try:
        dynamic = mode_of(dynamic_sampling)
    except ValueError:
        dynamic = "off"  # FrontierConfig names the bad mode
    if dynamic != "off":
        out.append(
            "rollouts: fewer_steps ends the run by its passes over the prompts; dynamic_sampling "
            "draws its own rounds: set dynamic_sampling: off, or rollouts: full"
        )
    cls = SELECTORS.get(selector) if isinstance(selector, str) else None
    if cls is not None and not cls.walks_windows():
        out.append(message(TRL, "rollouts:fewer_steps+selector", selector=selector))
    return out


def fewer_problems(
    values: Mapping[str, Any], trainer: str, rollouts: str, screen: int
) -> list[str]:
    """What in TRL's settings (`values`: GRPOConfig fields, TRL's defaults when absent) fewer
    rollouts cannot run with, one line each (nothing when it is off; rollouts: auto is
    refused nothing, it resolves to full instead: `auto_rollouts_blockers`)."""
    if rollouts != "kept" and not screen:
        return []
    feature = "rollouts: kept" if rollouts == "kept" else f"screen: {screen}"
    out = trl_problems(values, trainer, feature, "rollouts: full and screen: 0")
    if trainer != "grpo":
        return out
    n = values.get("num_generations", _TRL_NUM_GENERATIONS)
    if screen and isinstance(n, int) and not screen < n:
        out.append(
            f"screen {screen} must be below num_generations {n}: a prompt is screened with "
            "k completions and continued with the other num_generations - k (e.g. 4 of 8)"
        )
    return out


def auto_rollouts_blockers(
    values: Mapping[str, Any],
    trainer: str,
    *,
    dynamic_sampling: Any,
    shadows: Any,
    columns: list[str],
) -> list[str]:
    """Why `rollouts: auto` means full for these settings with a selector that skips within
    uniform's step, one line each; none: it means kept. Everything `rollouts: kept` would be
    refused for (`settings_problems`, `fewer_problems`), plus the shadows, which follow
    uniform's whole batches."""
    try:
        dynamic = mode_of(dynamic_sampling)
    except ValueError:
        dynamic = "off"  # FrontierConfig names the bad mode
    on = {
        "auto+filter": {"mode": dynamic} if dynamic != "off" else None,
        "auto+shadows": bool(shadows),
        "kept+settings": fewer_problems(values, trainer, "kept", 0),
        "auto+images": bool(set(IMAGE_COLUMNS) & set(columns)),
    }
    return clashes(TRL, on)


def auto_rollouts(
    values: Mapping[str, Any],
    trainer: str,
    *,
    selector: type[Selector],
    dynamic_sampling: Any,
    shadows: Any,
    columns: list[str],
    rows: RowCount = None,
    processes: int = 1,
) -> tuple[str, str, bool]:
    """What `rollouts: auto` means for these settings: (mode, why, whether to warn). kept
    where `selector` passes over prompts within uniform's step, no measurement says kept
    loses at the run's length (`trl_planned_epochs` over `rows` prompts on `processes`) and
    no setting is in the way (`auto_rollouts_blockers`; vLLM generation, either vllm_mode, is
    not: the kept prompts are what TRL sends it); full otherwise, a warning when
    settings keep a skipping selector from kept (`plan.auto`, as on verl and SkyRL). The
    run's resolution asks this (resolve.py), for the trainer and `frontier check-config
    trl` alike."""
    if trainer != "grpo":
        outside = message(TRL, "auto+trainer", trainer=trainer)
        return auto(TRL, selector, [], outside=outside)
    lines = auto_rollouts_blockers(
        values, trainer, dynamic_sampling=dynamic_sampling, shadows=shadows, columns=columns
    )
    on = trl_flag(values.get("use_vllm")) is True  # a quoted "yes" is on, as TRL reads it
    mode = values.get("vllm_mode", "colocate")  # one TRL has not is named by check-config
    vllm = str(mode) if on and mode in TRL.vllm_modes else None
    epochs = trl_planned_epochs(values, rows=rows, processes=processes)
    device = "cpu" if trl_flag(values.get("use_cpu")) is True else "gpu"
    one = one_prompt_steps(values, processes, selector)  # kept generates what full does
    mode, why, warn = auto(
        TRL, selector, lines, epochs, vllm_mode=vllm, device=None if one else device
    )  # no device's saving quoted where kept saves nothing
    if one and not warn:  # full by measurement: what kept measured does not apply here
        why = f"{why}; {one}" if mode == "kept" else one
    return mode, why, warn
