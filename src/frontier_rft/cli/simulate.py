"""`frontier simulate`, `frontier compare` and `frontier demo`: the simulated selector benchmark."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.verdicts import REAL_RL_DOC
from frontier_rft.bench.simulation import demo
from frontier_rft.bench.simulation.benchmark import parse_entries, sweep_entries
from frontier_rft.cli.common import (
    UsageError,
    add_sampler_config_flag,
    parse_assignments,
    parse_value,
    sampler_settings_arg,
)
from frontier_rft.cli.simulate_run import check_counts, run_and_report
from frontier_rft.core.config import config_from_dict
from frontier_rft.integrations.plan import planned_epochs
from frontier_rft.sampling.dynamic_sampling import MODES
from frontier_rft.sampling.sampler_flags import SAMPLER_NAMES
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.selectors import SELECTORS
from frontier_rft.simulation.runner import GIVEN, Entry, sampler_spec
from frontier_rft.simulation.scenario import SCENARIOS

__all__ = ["add_commands"]

DEMO_SCENARIO = "small-pool"
"""The default learner: calibrated on real GRPO, small pool trained for many epochs."""
TESTBED_BUDGET = {"steps": 360, "batch": 16, "rollouts": 8}
"""Default budget: the real testbed's, at which the calibrated scenarios were fitted."""


def _entries(args: argparse.Namespace) -> list[Entry]:
    overrides = parse_assignments(getattr(args, "set", None) or [], "--set")
    if args.command == "simulate":
        names = [args.selector]
    elif args.selectors:  # "" (the default) means all
        names = [n.strip() for n in args.selectors.split(",") if n.strip()]
        if not names:
            raise UsageError(
                f"--selectors names no selector (got {args.selectors!r}); e.g. --selectors "
                "bots,dots, or leave it out for all of them"
            )
    else:
        # A selector whose class says so is left out of default comparisons; name it
        # explicitly to include it.
        names = list(SELECTORS)
    unknown = [n for n in names if n not in SELECTORS]
    if unknown:
        raise UsageError(f"unknown selectors {unknown}; known: {', '.join(sorted(SELECTORS))}")
    sweep = getattr(args, "sweep", None)
    if sweep:
        key, sep, values = sweep.partition("=")
        if not sep or not key or len(names) != 1:
            raise UsageError(
                "--sweep KEY=V1,V2,... needs exactly one selector: frontier simulate "
                "--selector NAME --sweep KEY=V1,V2"
            )
        entries = sweep_entries(
            names[0], key, [parse_value(v) for v in values.split(",")], overrides
        )
        return _checked(entries)
    if overrides and len(names) > 1:
        raise UsageError("--set applies to one selector; use `frontier simulate --selector NAME`")
    _check_one_sampler(args)
    return _checked(
        _with_sampler(
            _with_fewer_rollouts(
                _with_allocation(
                    _with_dynamic_sampling(parse_entries(names, overrides), args), args
                ),
                args,
            ),
            args,
        )
    )


def _with_sampler(entries: list[Entry], args: argparse.Namespace) -> list[Entry]:
    """--sampler KIND [--sampler-config KEY=VALUE ...]: every entry inside that step sampler,
    named and configured as `frontier train --sampler` takes it (any kind of
    sampling.spec.KINDS), labelled NAME+KIND; the baseline stays plain uniform."""
    settings = sampler_settings_arg(args)
    kind = getattr(args, "sampler", None)
    if kind is None:
        return entries
    try:
        spec = SamplerSpec.read(kind, settings)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--sampler {kind}: {exc}") from None
    suffix = "" if spec.fact("plain") else f"+{spec.kind}"
    return [dataclasses.replace(e, label=e.label + suffix, sampler=spec) for e in entries]


def _check_one_sampler(args: argparse.Namespace) -> None:
    """Refuse two flags that each set the step's sampler (an entry holds one)."""
    flags = ("dynamic_sampling", "allocation", "fewer_rollouts", "sampler")
    given = [f"--{f.replace('_', '-')}" for f in flags if getattr(args, f, None) is not None]
    if len(given) > 1:
        raise UsageError(
            f"{', '.join(given[:-1])} and {given[-1]} each set the step's sampler: give one or "
            "the other"
        )


def _with_fewer_rollouts(entries: list[Entry], args: argparse.Namespace) -> list[Entry]:
    """--fewer-rollouts K=V,... (repeatable): each entry once per value, on uniform's
    schedule with only the kept prompts rolled out and/or screening, spelt as TrainConfig
    spells it (rollouts=kept, screen=4, loss_scale=kept) and labelled as the bench labels
    such entries (NAME-kept, NAME-screen4, NAME-kept-screen4); the baseline stays uniform."""
    texts = getattr(args, "fewer_rollouts", None)
    if not texts:
        return entries
    out = []
    for text in texts:
        fields = parse_assignments([t for t in text.split(",") if t.strip()], "--fewer-rollouts")
        suffix = "".join(
            f"-{v}" if k == "rollouts" and v != "full" else f"-screen{v}" if k == "screen" and v
            else f"-{k}-{v}" if k == "loss_scale" else ""
            for k, v in fields.items()
        )  # fmt: skip
        try:
            spec = sampler_spec(fewer_rollouts=fields)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--fewer-rollouts: {exc}") from None
        out += [dataclasses.replace(e, label=e.label + suffix, sampler=spec) for e in entries]
    return out


def _with_allocation(entries: list[Entry], args: argparse.Namespace) -> list[Entry]:
    """--allocation [K=V,...]: every entry inside the rollout allocation (AllocationConfig
    fields), labelled NAME+alloc; the baseline stays plain uniform."""
    text = getattr(args, "allocation", None)
    if text is None:
        return entries
    fields = parse_assignments([t for t in text.split(",") if t.strip()], "--allocation")
    try:
        spec = sampler_spec(allocation=fields)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--allocation: {exc}") from None
    return [dataclasses.replace(e, label=e.label + "+alloc", sampler=spec) for e in entries]


def _with_dynamic_sampling(entries: list[Entry], args: argparse.Namespace) -> list[Entry]:
    """--dynamic-sampling MODE: every entry inside DAPO's dynamic sampling, labelled
    NAME+dapo (fixed) or NAME+dapo-MODE; the baseline stays plain uniform."""
    mode = getattr(args, "dynamic_sampling", None)
    if mode is None:
        return entries
    suffix = "+dapo" if mode == "fixed" else f"+dapo-{mode}"
    spec = sampler_spec(dynamic_sampling=mode)
    return [dataclasses.replace(e, label=e.label + suffix, sampler=spec) for e in entries]


def _checked(entries: list[Entry]) -> list[Entry]:
    """Entries whose overrides build their selector's config (checked before any run)."""
    for entry in entries:
        cls = SELECTORS[entry.selector]
        try:
            config_from_dict(cls.config_class, entry.overrides, what=f"selector {entry.selector!r}")
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{exc} (see `frontier selectors {entry.selector}`)") from exc
    return entries


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.fit is not None:
        from frontier_rft.cli.simulate_fit import cmd_fit

        return cmd_fit(args)
    if args.selector is None:
        raise UsageError("frontier simulate needs --selector NAME (or --fit RUN_DIR)")
    out = Path(args.out or f"runs/{args.scenario}-{args.selector}")
    return run_and_report(args, _entries(args), out)


def cmd_compare(args: argparse.Namespace) -> int:
    out = Path(args.out or f"runs/{args.scenario}-compare")
    return run_and_report(args, _entries(args), out)


def cmd_demo(args: argparse.Namespace) -> int:
    """The adapters' default on a 2-epoch run and what its shadow's rule saves, beside every
    selector: simulated."""
    out = Path(args.out or "runs/demo")
    scenario = SCENARIOS[args.scenario]
    if args.steps is None:  # the run of DEMO_EPOCHS passes over the pool
        args.steps = max(1, round(demo.DEMO_EPOCHS * scenario.num_tasks / max(1, args.batch)))
    check_counts(args)
    # The run's epochs as every adapter's `auto` counts them (check-config's count).
    epochs = planned_epochs(
        math.inf, steps=args.steps, prompts_per_step=args.batch, rows=scenario.num_tasks
    )
    choice = demo.default_choice(epochs if epochs is not None else demo.DEMO_EPOCHS)
    print(
        f"frontier demo ({demo.SIMULATED}): the default (selector {choice.selector}, rollouts "
        f"auto: {choice.mode}) on a run of {choice.epochs:g} epochs, and what {demo.OPT_IN} with "
        f"rollouts kept, the rule it follows as a shadow, saves there, beside every selector "
        f"with full batches, on the simulated learner {scenario.name!r} ({scenario.description}), "
        f"{args.seeds} seeds, given the prompt text only. Real-RL results: {REAL_RL_DOC}. "
        f"Report: {out}/report.html"
    )
    args.command = "compare"
    args.given = "prompts"
    advice = demo.closing(choice)
    code = run_and_report(
        args,
        demo.demo_entries(choice),
        out,
        extra={"advice": advice},
        after=lambda results: demo.savings_table(results, choice),
    )
    if code == 0:
        print(f"\n{advice}")
    return code


def _common(p: argparse.ArgumentParser, *, is_demo: bool = False) -> None:
    """Flags of simulate, compare and demo. demo runs the adapters' default and every selector
    at its paper's defaults, given prompts only, so it offers no --given/--set/--sweep/--config."""
    p.add_argument(
        "--scenario",
        default=demo.DEMO_SCENARIO if is_demo else DEMO_SCENARIO,
        choices=list(SCENARIOS),
        help="simulated task pool and learner: small-pool / large-pool are calibrated on real "
        "GRPO (many / few epochs over the pool); hard, easy, multidomain, continuous transfer "
        "skill by construction (not calibrated)",
    )
    p.add_argument(
        "--scenario-set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario field, e.g. --scenario-set forgetting=0.01 (default: none)",
    )
    budget = TESTBED_BUDGET
    p.add_argument(
        "--steps",
        type=int,
        default=None if is_demo else budget["steps"],
        help="training steps per run (default: "
        + (f"{demo.DEMO_EPOCHS} passes over the pool)" if is_demo else "the real testbed's)"),
    )
    p.add_argument("--seeds", type=int, default=5, help="seeds per selector")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument(
        "--batch", type=int, default=budget["batch"], help="prompts per step (real testbed)"
    )
    p.add_argument(
        "--rollouts",
        type=int,
        default=budget["rollouts"],
        help="rollouts per prompt (real testbed)",
    )
    p.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="parallel processes (this machine)"
    )
    out = "runs/demo" if is_demo else "runs/<scenario>-..."
    p.add_argument("--out", default=None, help=f"output directory (default: {out})")
    if is_demo:
        return
    p.add_argument(
        "--dynamic-sampling",
        choices=(*MODES, "fixed-keep"),
        default=None,
        help="run each selector inside DAPO's dynamic sampling, training on mixed groups only: "
        "fixed (rounds of 3x the open slots), adaptive (sized from the zero-variance share, "
        "GRESO's rule), greso (GRESO's own rounds: 1.5x, capped, a short last batch allowed), "
        "dapo (DAPO's released code: every round 3x the batch, the kept groups truncated to "
        "it) or fixed-keep (fixed, surplus kept one step) (default: off)",
    )
    p.add_argument(
        "--allocation",
        nargs="?",
        const="",
        default=None,
        metavar="K=V,...",
        help="run each selector inside the per-prompt rollout allocation (uniform's budget "
        "spread over its prompts), optionally with AllocationConfig fields such as "
        "pilot=4,value=signal (docs/selectors/allocation.md) (default: off)",
    )
    p.add_argument(
        "--fewer-rollouts",
        action="append",
        metavar="K=V,...",
        help="run each selector on uniform's schedule spending fewer rollouts, with "
        "TrainConfig's fields: rollouts=kept (only the prompts the selector keeps among "
        "uniform's next batch; greso, skip, uniform), screen=K (K rollouts first, the rest "
        "only where mixed), loss_scale=batch|kept; repeat for several variants "
        "(docs/selectors/fewer_rollouts.md) (default: off)",
    )
    p.add_argument(
        "--sampler",
        choices=SAMPLER_NAMES,
        default=None,
        help="run each selector inside this step sampler, by its kind, as `frontier train "
        "--sampler` names it: " + ", ".join(SAMPLER_NAMES) + " (default: the flags above, else "
        "passthrough; its settings: --sampler-config)",
    )
    add_sampler_config_flag(p)
    p.add_argument(
        "--given",
        default="prompts",
        help="what selectors get besides prompt text: prompts (nothing else), or a comma "
        f"list of {', '.join(k for k in GIVEN if k != 'prompts')}, or all",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="selector config override, see `frontier selectors NAME` (default: paper's values)",
    )
    p.add_argument(
        "--sweep",
        default=None,
        metavar="KEY=V1,V2",
        help="one run per value of a selector hyperparameter (default: no sweep)",
    )
    p.add_argument(
        "--config",
        metavar="FILE.yaml",
        help="flag values from a YAML file (keys = flag names; flags given here win) "
        "(default: none)",
    )


def add_commands(sub: Any) -> None:
    """Register simulate, compare and demo on the `frontier` parser."""
    sim = sub.add_parser(
        "simulate",
        help="one selector vs uniform on a simulated learner; or, with --fit, the simulator "
        "fitted to your own run and its ranking of the selectors",
    )
    sim.add_argument(
        "--selector",
        choices=sorted(SELECTORS),
        default=None,
        help="the selector to compare; required without --fit (default: with --fit, every "
        "selector and DAPO)",
    )
    sim.add_argument(
        "--fit",
        metavar="RUN_DIR",
        default=None,
        help="fit the learner's speed and pool difficulty to the first steps of a run: a "
        "`frontier train` --out directory, or a JSONL with train/reward_mean and an ETR per "
        "step (docs/simulation.md) (default: no fit)",
    )
    sim.add_argument(
        "--fit-steps",
        type=int,
        default=50,
        help="with --fit: the run's first K steps to fit to",
    )
    sim.add_argument(
        "--fit-pool",
        type=int,
        default=None,
        help="with --fit on a bare JSONL: the run's pool size (--batch, --rollouts and --steps "
        "must describe the run too) (default: from run.json)",
    )
    _common(sim)
    sim.set_defaults(func=cmd_simulate)
    cmp_ = sub.add_parser("compare", help="many selectors, same scenario and seeds, in parallel")
    cmp_.add_argument("--selectors", default="", help="comma-separated names (default: all)")
    _common(cmp_)
    cmp_.set_defaults(func=cmd_compare)
    demo_ = sub.add_parser(
        "demo",
        help="simulated: what the default (skip, rollouts auto) saves on a 2-epoch run, beside "
        "every selector at its paper's defaults, on the calibrated simulated learner",
    )
    _common(demo_, is_demo=True)
    demo_.set_defaults(func=cmd_demo, selectors="")
