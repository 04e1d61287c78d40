"""`frontier simulate`, `frontier compare` and `frontier demo`: the simulated selector benchmark."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from frontier_rft.cli.common import UsageError, parse_assignments, parse_value
from frontier_rft.core.config import config_from_dict
from frontier_rft.progress import progress_bar
from frontier_rft.selectors import SELECTORS
from frontier_rft.simulation.real_rl import REAL_RL_DOC
from frontier_rft.simulation.runner import (
    GIVEN,
    Entry,
    parse_entries,
    parse_given,
    run_benchmark,
    sweep_entries,
)
from frontier_rft.simulation.scenario import SCENARIOS, ScenarioConfig, get_scenario

__all__ = ["add_commands"]

DEMO_SCENARIO = "small-pool"
"""The default learner: calibrated on real GRPO, small pool trained for many epochs."""
TESTBED_BUDGET = {"steps": 360, "batch": 16, "rollouts": 8}
"""Default budget: the real testbed's, at which the calibrated scenarios were fitted."""
MAX_SEEDS = 10_000
"""Most seeds one command runs (each is a full run per selector)."""


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
        names = [n for n, cls in SELECTORS.items() if cls.in_simulator]
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
    return _checked(_with_dynamic_sampling(parse_entries(names, overrides), args))


def _with_dynamic_sampling(entries: list[Entry], args: argparse.Namespace) -> list[Entry]:
    """--dynamic-sampling MODE: every entry inside DAPO's dynamic sampling, labelled
    NAME+dapo (fixed) or NAME+dapo-adaptive; the baseline stays plain uniform."""
    mode = getattr(args, "dynamic_sampling", None)
    if mode is None:
        return entries
    suffix = "+dapo" if mode == "fixed" else "+dapo-adaptive"
    return [dataclasses.replace(e, label=e.label + suffix, dynamic_sampling=mode) for e in entries]


def _checked(entries: list[Entry]) -> list[Entry]:
    """Entries whose overrides build their selector's config (checked before any run)."""
    for entry in entries:
        cls = SELECTORS[entry.selector]
        try:
            config_from_dict(cls.config_class, entry.overrides, what=f"selector {entry.selector!r}")
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{exc} (see `frontier selectors {entry.selector}`)") from exc
    return entries


def _write_records(results: dict[str, Any], path: Path) -> None:
    """One CSV row per (label, seed, step): the per-step records behind the figures."""
    metric_keys = sorted({k for r in results["runs"] for k in r["selector_metrics"]})
    columns = ["label", "selector", "seed", "step", "score", "etr", "mean_abs_adv"]
    columns += ["distinct_trained", "overhead_ms", *metric_keys]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for r in results["runs"]:
            for t in range(len(r["etr"])):
                row = [r["label"], r["selector"], r["seed"], t + 1, r["score"][t + 1]]
                row += [r[k][t] for k in ("etr", "mean_abs_adv", "distinct_trained", "overhead_ms")]
                row += [r["selector_metrics"].get(k, [None] * (t + 1))[t] for k in metric_keys]
                writer.writerow(row)


def _advance(bar: Any, note: str) -> None:
    bar.set_postfix_str(note, refresh=False)
    bar.update(1)


GIVEN_WORDS = {
    "categories": "categories (level, or level x type)",
    "difficulty": "offline difficulty",
    "references": "reference models' pass rates",
    "features": "near-oracle features (the learner's skills plus noise)",
}


def given_line(results: dict[str, Any]) -> str:
    """What every selector was given, and what each derived from it (seed 0's evidence)."""
    extra = [GIVEN_WORDS[g] for g in results["settings"]["given"] if g in GIVEN_WORDS]
    given = "prompt text" + (" + " + ", ".join(extra) if extra else " only")
    derived = {}
    for run in results["runs"]:
        if run["evidence"] and run["label"] not in derived:
            derived[run["label"]] = ", ".join(f"{k}={v}" for k, v in run["evidence"].items())
    uses = "; ".join(f"{label}: {ev}" for label, ev in derived.items())
    return f"Given: {given}. Evidence in use: {uses or 'none'}."


def _check_counts(args: argparse.Namespace) -> None:
    """Counts and the first seed, checked before any work starts."""
    for flag in ("steps", "seeds", "batch", "rollouts", "jobs"):
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0 (numpy seeds are non-negative), got {args.seed}")
    if args.seeds > MAX_SEEDS:
        raise UsageError(f"--seeds must be at most {MAX_SEEDS}, got {args.seeds}")


def _check_out(out: Path) -> None:
    """Create --out and make sure files can be written there."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create the directory ({exc.strerror})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: the directory is not writable")


def run_and_report(
    args: argparse.Namespace,
    entries: list[Entry],
    out: Path,
    scenario: ScenarioConfig | None = None,
    extra: dict[str, Any] | None = None,
) -> int:
    """Run `entries` on `scenario` (default: --scenario with --scenario-set), print the
    table, write results.json (plus `extra`'s keys), records.csv and the report under `out`."""
    _check_counts(args)
    try:
        if scenario is None:
            scenario = get_scenario(
                args.scenario, **parse_assignments(args.scenario_set or [], "--scenario-set")
            )
        given = parse_given(args.given)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    _check_out(out)  # before the runs: an unwritable --out would lose them all
    seeds = list(range(args.seed, args.seed + args.seeds))
    total = (len(entries) + (0 if any(e.label == "uniform" for e in entries) else 1)) * len(seeds)
    with progress_bar(total, "runs", unit="run") as bar:
        results = run_benchmark(
            scenario,
            entries,
            seeds=seeds,
            steps=args.steps,
            batch=args.batch,
            rollouts=args.rollouts,
            jobs=args.jobs,
            progress=lambda _done, _total, note: _advance(bar, note),
            given=given,
        )
    out.mkdir(parents=True, exist_ok=True)
    command = "frontier " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    results["command"] = command
    results.update(extra or {})
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    _write_records(results, out / "records.csv")
    from frontier_rft.reporting import format_summary_table
    from frontier_rft.reporting.tables import learner_title

    print(f"\n{learner_title(results)}")
    print(
        f"{args.steps} steps, batch {args.batch}, {args.rollouts} rollouts per task, "
        f"seeds {seeds[0]}..{seeds[-1]}; TTB lower is better, BSF higher is better (vs uniform)"
    )
    print(given_line(results) + "\n")
    print(format_summary_table(results))
    try:
        from frontier_rft.reporting import write_report

        paths = write_report(results, out, command=command)
    except ImportError as exc:
        fix = "" if "[plot]" in str(exc) else ": pip install 'frontier-rft[plot]'"
        print(f"\nNo report: {exc}{fix}", file=sys.stderr)
        return 0
    print(f"\nWrote {out / 'results.json'}, {out / 'records.csv'} and {paths['report']}")
    return 0


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
    out = Path(args.out or "runs/demo")
    _check_counts(args)
    scenario = SCENARIOS[args.scenario]
    print(
        f"frontier demo: every selector on the simulated learner {scenario.name!r} "
        f"({scenario.description}), paper-default settings, {args.seeds} seeds; first given the "
        "prompt text only (what most users have), then every kind of metadata (a separate "
        f"table). A simulation, not real RL: real-RL results are in {REAL_RL_DOC}. Reports: "
        f"{out}/report.html and {out}/all-metadata/report.html"
    )
    args.command = "compare"
    args.given = "prompts"
    code = run_and_report(args, _entries(args), out)
    if code:
        return code
    print("\nThe same, given every kind of metadata (rich-metadata table, not the headline):")
    args.given = "all"
    return run_and_report(args, _entries(args), out / "all-metadata")


def _common(p: argparse.ArgumentParser, *, demo: bool = False) -> None:
    """Flags of simulate, compare and demo. demo runs every selector at its paper's defaults,
    given prompts only and then everything, so it offers no --given/--set/--sweep/--config."""
    p.add_argument(
        "--scenario",
        default=DEMO_SCENARIO,
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
        "--steps", type=int, default=budget["steps"], help="training steps per run (real testbed)"
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
    out = "runs/demo" if demo else "runs/<scenario>-..."
    p.add_argument("--out", default=None, help=f"output directory (default: {out})")
    if demo:
        return
    p.add_argument(
        "--dynamic-sampling",
        choices=("fixed", "adaptive"),
        default=None,
        help="run each selector inside DAPO's dynamic sampling: fixed (3x candidates, train on "
        "mixed groups only) or adaptive (sized from the zero-variance share, GRESO's rule) "
        "(default: off)",
    )
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
    demo = sub.add_parser(
        "demo",
        help="every selector at its paper's defaults on the calibrated simulated learner, given "
        "prompts only and then every kind of metadata; two reports",
    )
    _common(demo, demo=True)
    demo.set_defaults(func=cmd_demo, selectors="")
