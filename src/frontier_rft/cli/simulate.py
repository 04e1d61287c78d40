"""`frontier simulate`, `frontier compare` and `frontier demo`: the simulated selector benchmark."""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from frontier_rft.cli.progress import Progress
from frontier_rft.selectors import SELECTORS
from frontier_rft.simulation.runner import (
    GIVEN,
    Entry,
    parse_entries,
    parse_given,
    run_benchmark,
    sweep_entries,
)
from frontier_rft.simulation.scenario import SCENARIOS, get_scenario

__all__ = ["add_commands"]

# The DAPO filter acts in the trainer (which groups it trains on), not in selection; on its
# own in this loop it proposes exactly what its inner selector does, so it is left out of
# default comparisons (name it explicitly to include it).
DEFAULT_EXCLUDED = ("dapo",)
DEMO_SCENARIO = "hard"


def parse_value(text: str) -> Any:
    """'0.1' -> 0.1, 'true' -> True, 'grpo' -> 'grpo', '[1, 2]' -> [1, 2]."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_assignments(items: list[str], flag: str) -> dict[str, Any]:
    """KEY=VALUE pairs from repeated --set style flags, with a clear error for bad ones."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = parse_value(value.strip())
    return out


def _entries(args: argparse.Namespace) -> list[Entry]:
    overrides = parse_assignments(args.set or [], "--set")
    if args.command == "simulate":
        names = [args.selector]
    elif args.selectors:
        names = [n.strip() for n in args.selectors.split(",") if n.strip()]
    else:
        names = [n for n in SELECTORS if n not in DEFAULT_EXCLUDED]
    if args.sweep:
        key, sep, values = args.sweep.partition("=")
        if not sep or len(names) != 1:
            raise SystemExit("--sweep KEY=V1,V2,... needs exactly one selector (--selector NAME)")
        return sweep_entries(names[0], key, [parse_value(v) for v in values.split(",")], overrides)
    if overrides and len(names) > 1:
        raise SystemExit("--set applies to one selector; use `frontier simulate --selector NAME`")
    return parse_entries(names, overrides)


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


def run_and_report(args: argparse.Namespace, entries: list[Entry], out: Path) -> int:
    scenario = get_scenario(
        args.scenario, **parse_assignments(args.scenario_set or [], "--scenario-set")
    )
    seeds = list(range(args.seed, args.seed + args.seeds))
    total = (len(entries) + (0 if any(e.label == "uniform" for e in entries) else 1)) * len(seeds)
    with Progress(total, "runs") as bar:
        results = run_benchmark(
            scenario,
            entries,
            seeds=seeds,
            steps=args.steps,
            batch=args.batch,
            rollouts=args.rollouts,
            jobs=args.jobs,
            progress=lambda done, _total, note: bar.advance(note=note),
            given=parse_given(args.given),
        )
    out.mkdir(parents=True, exist_ok=True)
    command = "frontier " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    results["command"] = command
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    _write_records(results, out / "records.csv")
    from frontier_rft.reporting import format_summary_table

    print(f"\nScenario {scenario.name!r}: {scenario.description}")
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
        print(
            f"\nNo report: {exc}. Install the plot extra: pip install 'frontier-rft[plot]'",
            file=sys.stderr,
        )
        return 0
    print(f"\nWrote {out / 'results.json'}, {out / 'records.csv'} and {paths['report']}")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    out = Path(args.out or f"runs/{args.scenario}-{args.selector}")
    return run_and_report(args, _entries(args), out)


def cmd_compare(args: argparse.Namespace) -> int:
    out = Path(args.out or f"runs/{args.scenario}-compare")
    return run_and_report(args, _entries(args), out)


def cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.out or "runs/demo")
    print(
        "frontier demo: every selector on the simulated 'hard' pool (most tasks start "
        f"unsolved), paper-default settings, {args.seeds} seeds; first given the prompt text only "
        "(what most users have), then every kind of metadata (a separate table). Reports: "
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


def _common(p: argparse.ArgumentParser, steps: int = 200, seeds: int = 5) -> None:
    p.add_argument(
        "--scenario",
        default=DEMO_SCENARIO,
        choices=sorted(SCENARIOS),
        help="simulated task pool and learner (default: %(default)s)",
    )
    p.add_argument(
        "--scenario-set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario field, e.g. --scenario-set forgetting=0.01",
    )
    p.add_argument("--steps", type=int, default=steps, help="training steps per run")
    p.add_argument("--seeds", type=int, default=seeds, help="seeds per selector")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--batch", type=int, default=32, help="prompts per step")
    p.add_argument(
        "--rollouts", type=int, default=16, help="rollouts per prompt (16, as in the BOTS paper)"
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel processes")
    p.add_argument(
        "--given",
        default="prompts",
        help="what selectors are given besides prompt text: prompts (nothing else), or a "
        f"comma list of {', '.join(k for k in GIVEN if k != 'prompts')}, "
        "or all (default: %(default)s)",
    )
    p.add_argument("--out", default=None, help="output directory")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="selector config override (see `frontier selectors NAME`)",
    )
    p.add_argument(
        "--sweep",
        default=None,
        metavar="KEY=V1,V2",
        help="one run per value of a selector hyperparameter",
    )


def add_commands(sub: Any) -> None:
    """Register simulate, compare and demo on the `frontier` parser."""
    sim = sub.add_parser("simulate", help="one selector vs uniform on a simulated learner")
    sim.add_argument("--selector", required=True, choices=sorted(SELECTORS))
    _common(sim)
    sim.set_defaults(func=cmd_simulate)
    cmp_ = sub.add_parser("compare", help="many selectors, same scenario and seeds, in parallel")
    cmp_.add_argument(
        "--selectors", default="", help="comma-separated names (default: all but dapo)"
    )
    _common(cmp_)
    cmp_.set_defaults(func=cmd_compare)
    demo = sub.add_parser("demo", help="the main job: compare every selector, write a report")
    demo.add_argument("--selectors", default="", help=argparse.SUPPRESS)
    _common(demo)
    demo.set_defaults(func=cmd_demo)
