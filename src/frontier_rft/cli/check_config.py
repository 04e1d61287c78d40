"""`frontier check-config trl|verl|skyrl FILE.yaml [OVERRIDES]`: the frontier-rft part of a trainer
config, checked on any machine (no GPU, no model, no Ray) before a run is launched.

It names every mistake at once, one line each: an unknown selector or key (with the closest
name), a refused value, a selector config option the selector lacks, metadata the selector
cannot run without, a local model path that does not exist, a logging backend that is not
installed or misspelt; for TRL, reward functions (found and read from source, never run),
several of them without `reward_range`, an evaluation without a held-out set; and, when the
config names local data files it can read, each column the adapter, TRL or a reward
function needs that a file lacks, and (verl) task ids repeated across the training files.
The trainer's own keys are checked where the trainer is installed (TRL's from its source,
verl's against its config); without it, the output says they were not.
Exit status 0 when there is nothing to fix, 1 when there is.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from frontier_rft.cli.common import UsageError, load_yaml_file

if TYPE_CHECKING:
    from frontier_rft.step_cost.advice import DeviceHint

__all__ = ["add_command", "as_assignments"]


def as_assignments(tokens: list[str]) -> list[str]:
    """Command-line overrides as KEY=VALUE items: `a.b=v` and Hydra's `+a.b=v` as they are;
    the TRL script's `--key value [value ...]` and `--key=value` (dashes in the key read as
    underscores, several values as a YAML list, a bare flag as true)."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            if "=" not in token:
                raise UsageError(f"override {token!r}: write KEY=VALUE, or --KEY VALUE")
            out.append(token)
            continue
        key, sep, value = token[2:].partition("=")
        key = key.replace("-", "_")
        if sep:
            out.append(f"{key}={_as_argparse_reads(value)}")
            continue
        values = []
        while i < len(tokens) and not tokens[i].startswith("--"):
            values.append(_as_argparse_reads(tokens[i]))
            i += 1
        text = "true" if not values else values[0] if len(values) == 1 else f"[{', '.join(values)}]"
        out.append(f"{key}={text}")
    return out


def _as_argparse_reads(value: str) -> str:
    """One value of the TRL script's `--key value` as YAML reading it as the script's parser
    does: `[skip]` or `{a: 1}` is the string argparse hands the field, not a YAML list or
    mapping (so `--shadows '[skip]'` is the rule '[skip]', which the launch refuses)."""
    return json.dumps(value) if value.lstrip()[:1] in ("[", "{") else value


EXAMPLES = {
    "trl": "examples/trl/grpo_frontier.yaml",
    "verl": "examples/verl/skip.yaml",
    "skyrl": "docs/integrations/skyrl.md",
}
"""Where a user starts a config for each trainer (named when the file given is empty)."""


_OURS = ("--processes", "--gpu", "--step-cost")
"""check-config's own flags, also accepted among the overrides after FILE."""


def _processes(args: argparse.Namespace, overrides: list[str]) -> tuple[int | None, list[str]]:
    """--processes N (and --gpu, --step-cost), given before the trainer or among the overrides
    after FILE (where argparse's REMAINDER keeps them, set on `args` here), and the overrides
    without them."""
    count, rest, i = args.processes, [], 0
    while i < len(overrides):
        token = overrides[i]
        key, sep, value = token.partition("=")
        if key in _OURS:
            if not sep:
                i += 1
                value = overrides[i] if i < len(overrides) else ""
            if key == "--processes":
                count = _count(value)
            else:
                setattr(args, key[2:].replace("-", "_"), value)
        else:
            rest.append(token)
        i += 1
    return count, rest


def _device_hint(args: argparse.Namespace) -> DeviceHint:
    """--gpu and --step-cost, checked: a UsageError names the fix."""
    from frontier_rft.step_cost.advice import DeviceHint
    from frontier_rft.step_cost.curve import load_curve
    from frontier_rft.step_cost.roofline import GPUS

    gpu, curve = getattr(args, "gpu", None), getattr(args, "step_cost", None)
    if gpu is not None and gpu not in GPUS:
        raise UsageError(f"--gpu {gpu!r}: one of {', '.join(GPUS)} (a datasheet this package has)")
    if curve is not None:
        try:
            load_curve(curve)
        except ValueError as exc:
            raise UsageError(f"--step-cost: {exc}") from exc
    return DeviceHint(gpu, curve)


def _count(text: str) -> int:
    """A --processes value: an int >= 1; UsageError otherwise."""
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(
            f"--processes {text!r}: give the number of training processes, an int >= 1 (8 for "
            "one node of 8 GPUs)"
        )
    return int(text)


NOT_A_STEP_SCHEDULE = ("reduce_lr_on_plateau", "greedy")
"""TRL learning-rate schedules that are not a function of the step, which `rollouts:
fewer_steps` refuses before the model loads (integrations/trl/fewer_steps.py's NOT_LAMBDA,
kept equal by tests/test_check_config_round7.py; this module imports no transformers)."""


def _fewer_steps_schedule_problems(values: dict[str, Any]) -> list[str]:
    """The TRL adapter's refusal of `rollouts: fewer_steps` with a schedule that cannot follow
    the passes (`check_pass_schedule`), said by check-config as the launch would say it."""
    kind = values.get("lr_scheduler_type", "linear")
    if values.get("rollouts") != "fewer_steps" or str(kind) not in NOT_A_STEP_SCHEDULE:
        return []
    return [
        f"rollouts: fewer_steps moves the learning-rate schedule by the passes walked; "
        f"lr_scheduler_type {kind} is not a schedule of the step: use linear, cosine or "
        "constant_with_warmup, or rollouts: full"
    ]


def _cmd_check_config(args: argparse.Namespace) -> int:
    from frontier_rft.integrations.preflight import apply_overrides

    processes, overrides = _processes(args, list(args.overrides))
    hint = _device_hint(args)
    values: dict[str, Any] = load_yaml_file(args.file, label="check-config")
    if not values:
        raise UsageError(
            f"check-config {args.file}: the file sets nothing; give the YAML file you launch "
            f"{args.trainer} with (a start: {EXAMPLES[args.trainer]})"
        )
    try:
        apply_overrides(values, as_assignments(overrides))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.trainer == "trl":
        from frontier_rft.integrations.trl.config_check import check_trl_config

        report = check_trl_config(values, processes, hint)
        report.add("", _fewer_steps_schedule_problems(values))
    elif args.trainer == "skyrl":
        from frontier_rft.integrations.skyrl.preflight import check_skyrl_config

        report = check_skyrl_config(values, hint)
    else:
        from frontier_rft.integrations.verl.preflight import check_verl_config

        report = check_verl_config(values, hint)
    if args.trainer != "trl" and processes is not None:
        batch = "data.train_batch_size" if args.trainer == "verl" else "trainer.train_batch_size"
        report.notes.append(
            f"--processes {processes} not used: {args.trainer}'s {batch} counts prompts over "
            "all GPUs, so a run's length does not depend on how many there are"
        )
    print(report.render(args.file))
    return 1 if report.problems else 0


def add_command(sub: Any) -> None:
    """Register check-config."""
    p = sub.add_parser(
        "check-config",
        help="check the frontier-rft part of a TRL, verl or SkyRL YAML config (no GPU, no model)",
        description="Name every mistake in the frontier-rft part of a trainer config before "
        "a run: selector, its config and the metadata it needs, the adapter's fields, model "
        "path, logging backends, reward functions and reward_range, the held-out set, the "
        "data files' columns and task ids. Exit status 1 when there is something to fix.",
    )
    p.add_argument(
        "--processes",
        type=_count,
        default=None,
        metavar="N",
        help="TRL: the processes the run is launched on (accelerate launch --num_processes), "
        "for the batch rule and a max_steps run's epochs (default: num_processes in "
        "accelerate's default config file, else 1; also accepted after FILE)",
    )
    p.add_argument(
        "--gpu",
        default=None,
        metavar="NAME",
        help="the GPU the run's currency line projects its knee for: h100, h200, a100, l40s or "
        "b200 (default: the GPU torch sees here, else an H100, said to be assumed; also "
        "accepted after FILE)",
    )
    p.add_argument(
        "--step-cost",
        default=None,
        metavar="FILE",
        help="a step-cost curve measured on your device (benchmarks/step_cost.py): the "
        "currency line reads its knee from it (default: none, the knee projected from --gpu's "
        "datasheet; also accepted after FILE)",
    )
    p.add_argument("trainer", choices=("trl", "verl", "skyrl"), help="whose config FILE is")
    p.add_argument("file", metavar="FILE.yaml", help="the YAML file you launch with")
    p.add_argument(
        "overrides",
        nargs=argparse.REMAINDER,
        metavar="OVERRIDE",
        help="what you add on the trainer's command line: KEY=VALUE (verl: "
        "trainer.v1.sampler.sampler_kwargs.selector=bots, data.train_files=FILE; SkyRL: "
        "frontier.selector=greso) or the TRL script's --KEY VALUE (default: none)",
    )
    p.set_defaults(func=_cmd_check_config)
