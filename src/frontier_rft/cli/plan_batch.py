"""`frontier plan-batch LOG`: the batch planner's plan for a run, read from its log, said as the
settings to change in the run's own trainer (integrations/batch_settings.py). Without LOG,
before any run: the least-regret start from the curve alone (step_cost/start_plan.py), said
the same way, from --prompts (the configured step) to --max-prompts.

LOG is a run directory or its JSONL file, read as `frontier ab compare` reads it
(`LOG_FILES`, `read_metrics_jsonl`): the TRL adapter's frontier_metrics.jsonl or `frontier
train`'s metrics.jsonl, whose last `noise/..._ema` row is the meter's evidence. What the log
does not say (the step's shape, the completion length, the pool, the learning rate) is read
from the run.json beside a `frontier train` log, else from the flags.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from frontier_rft.cli.common import UsageError, positive_int
from frontier_rft.integrations.batch_settings import (
    DEFAULT_LENGTH,
    DEFAULT_MAX_PROMPTS,
    DEFAULT_PER_DEVICE,
    TRAINERS,
    plan_lines,
    plan_run,
    start_run,
)

__all__ = ["NO_NOISE", "add_command"]
NO_NOISE = (
    "{log}: no noise/..._ema rows: the noise meter was off or metered no step yet; turn it on "
    "and train on (frontier train --noise-every 10; TRL: FrontierConfig(noise_every=1) with "
    "gradient_accumulation_steps >= 2), then plan from that run's log"
)


def _log_file(path: Path) -> Path:
    from frontier_rft.bench.real_rl.ab import LOG_FILES, run_log_file

    found = run_log_file(path)
    if found is None:
        raise UsageError(f"{path}: no {' or '.join(LOG_FILES)} (not a training run's folder)")
    return found


def _run_config(log: Path) -> dict[str, Any]:
    """The config of the run.json beside a `frontier train` log; {} where there is none."""
    from frontier_rft.training.run_info import read_run_info

    run_json = log.parent / "run.json"
    return dict(read_run_info(run_json)["config"]) if run_json.is_file() else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _length(rows: list[dict[str, Any]], config: dict[str, Any]) -> int:
    """The mean completion tokens the log's steps generated, else the run's cap, else 512."""
    logged = [
        float(v)
        for r in rows
        if isinstance(v := r.get("train/completion_tokens"), int | float)
        and not isinstance(v, bool)
        and math.isfinite(v)
        and v > 0
    ]
    if logged:
        return max(round(sum(logged) / len(logged)), 1)
    return _int(config.get("max_new_tokens")) or DEFAULT_LENGTH


def _start(args: argparse.Namespace) -> list[str]:
    """Without a log: the least-regret start, from the flags alone."""
    missing = [
        f for f, v in (("--prompts", args.prompts), ("--group-size", args.group_size)) if v is None
    ]
    if missing:
        raise UsageError(
            f"without a run's log, plan-batch plans the start from the curve: give "
            f"{' and '.join(missing)} (the step you would configure), or give the run's LOG"
        )
    if args.group_size < 2:
        raise UsageError(f"--group-size {args.group_size}: GRPO needs two rollouts a prompt")
    top = args.max_prompts or DEFAULT_MAX_PROMPTS
    if top < args.prompts:
        raise UsageError(f"--max-prompts {top} is below --prompts {args.prompts}")
    plan = start_run(
        args.curve,
        length=args.length or DEFAULT_LENGTH,
        prompts=args.prompts,
        rollouts=args.group_size,
        max_prompts=top,
    )
    return plan_lines(
        plan, args.trainer, lr=args.lr, processes=args.processes, per_device=args.per_device
    )


def _cmd_plan_batch(args: argparse.Namespace) -> int:
    from frontier_rft.metrics_log import read_metrics_jsonl
    from frontier_rft.step_cost.planner import NoiseTerms

    if args.log is None:
        print("\n".join(_start(args)))
        return 0
    log = _log_file(Path(args.log))
    rows = read_metrics_jsonl(log)
    config = _run_config(log)
    prompts = args.prompts or _int(config.get("batch_size"))
    rollouts = args.group_size or _int(config.get("group_size"))
    missing = [f for f, v in (("--prompts", prompts), ("--group-size", rollouts)) if v is None]
    if prompts is None or rollouts is None:
        raise UsageError(
            f"{log} does not say the run's step: give {' and '.join(missing)} (the prompts and "
            "the rollouts a prompt of the run's optimizer step)"
        )
    if rollouts < 2:
        raise UsageError(f"--group-size {rollouts}: GRPO needs two rollouts a prompt")
    if not any(isinstance(r.get("noise/grad_sq_ema"), int | float) for r in rows):
        raise UsageError(NO_NOISE.format(log=log))
    terms = NoiseTerms.from_metrics(rows)  # refused by name where they define no noise scale
    lr = args.lr if args.lr is not None else config.get("lr")
    plan = plan_run(
        terms,
        args.curve,
        length=args.length or _length(rows, config),
        prompts=prompts,
        rollouts=rollouts,
        max_prompts=args.max_prompts or _int(config.get("train_size")) or DEFAULT_MAX_PROMPTS,
    )
    rate = float(lr) if isinstance(lr, int | float) and not isinstance(lr, bool) else None
    lines = plan_lines(
        plan, args.trainer, lr=rate, processes=args.processes, per_device=args.per_device
    )
    print("\n".join(lines))
    return 0


def add_command(sub: Any) -> None:
    """Register `plan-batch`."""
    p = sub.add_parser(
        "plan-batch",
        help="the rows a step should train, from a run's noise meter, as your trainer's settings",
        description="Plan the rows an optimizer step should train (prompts x rollouts) from "
        "the gradient noise a run's meter logged (its last noise/..._ema row) and a step-cost "
        "curve, against the run's step now: the device seconds and steps to the same progress, "
        "the learning rate by the square-root rule (a rule of thumb), and the settings to "
        "change in your trainer (docs/training.md, the batch planner).",
    )
    p.add_argument(
        "log",
        metavar="LOG",
        nargs="?",
        default=None,
        help="the run's directory or log: frontier_metrics.jsonl (TRL adapter) or "
        "metrics.jsonl (frontier train); without it, the least-regret start from the curve "
        "alone (give --prompts and --group-size)",
    )
    p.add_argument(
        "--curve",
        default="cpu",
        help="the step-cost curve: a shipped one (cpu, h200) or a file measured by "
        "benchmarks/step_cost.py",
    )
    p.add_argument(
        "--length",
        type=positive_int,
        default=None,
        help="completion tokens a rollout (default: the log's mean train/completion_tokens, "
        f"else run.json's max_new_tokens, else {DEFAULT_LENGTH})",
    )
    p.add_argument(
        "--prompts",
        type=positive_int,
        default=None,
        help="prompts an optimizer step of the run now (default: run.json's batch_size; "
        "required for a TRL log)",
    )
    p.add_argument(
        "--group-size",
        type=positive_int,
        default=None,
        help="rollouts a prompt of the run now (default: run.json's group_size; required for "
        "a TRL log)",
    )
    p.add_argument(
        "--max-prompts",
        type=positive_int,
        default=None,
        help="the most prompts a planned step takes (default: run.json's train_size, the "
        f"pool, else {DEFAULT_MAX_PROMPTS})",
    )
    p.add_argument(
        "--trainer",
        choices=TRAINERS,
        default="frontier",
        help="whose settings to print",
    )
    p.add_argument(
        "--lr",
        type=float,
        default=None,
        help="the run's learning rate, to scale (default: run.json's lr, else the factor alone)",
    )
    p.add_argument(
        "--processes",
        type=positive_int,
        default=1,
        help="TRL: the training processes (accelerate's num_processes)",
    )
    p.add_argument(
        "--per-device",
        type=positive_int,
        default=DEFAULT_PER_DEVICE,
        help="TRL: the run's per_device_train_batch_size, what a micro-batch fits in memory: "
        "the settings keep the micro-batch at most this and raise gradient_accumulation_steps",
    )
    p.set_defaults(func=_cmd_plan_batch)
