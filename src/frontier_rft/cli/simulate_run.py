"""Run entries on a simulated learner and report them: the table on the console,
results.json, records.csv and the HTML report (shared by `frontier simulate`, `compare`,
`demo` and `simulate --fit`)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from frontier_rft.bench.simulation.benchmark import run_benchmark, write_results
from frontier_rft.cli.common import UsageError, parse_assignments
from frontier_rft.progress import progress_bar
from frontier_rft.simulation.runner import Entry, parse_given
from frontier_rft.simulation.scenario import ScenarioConfig, get_scenario

__all__ = [
    "MAX_SEEDS",
    "MAX_STEPS",
    "check_counts",
    "given_line",
    "rollouts_table",
    "run_and_report",
]

MAX_SEEDS = 10_000
"""Most seeds one command runs (each is a full run per selector)."""
MAX_STEPS = 10_000_000
"""Most steps one simulated run takes (days of CPU already; a larger count is a typo)."""


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


def check_counts(args: argparse.Namespace) -> None:
    """Counts and the first seed, checked before any work starts."""
    for flag in ("steps", "seeds", "batch", "rollouts", "jobs"):
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0 (numpy seeds are non-negative), got {args.seed}")
    if args.seeds > MAX_SEEDS:
        raise UsageError(f"--seeds must be at most {MAX_SEEDS}, got {args.seeds}")
    if args.steps > MAX_STEPS:
        raise UsageError(
            f"--steps must be at most {MAX_STEPS:,}, got a {len(str(args.steps))}-digit number"
        )


def _check_out(out: Path) -> None:
    """Create --out and make sure files can be written there."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create the directory ({exc.strerror})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: the directory is not writable")


def rollouts_table(results: dict[str, Any]) -> str:
    """Every entry's rollouts on the common schedule (all steps, screened rollouts included)
    as a share of the baseline's, and its final held-out score beside the baseline's."""
    summary, base = results["summary"], results["settings"]["baseline"]
    rows = [
        "| method | rollouts / uniform's | final score | minus uniform's |",
        "|---|--:|--:|--:|",
    ]
    for label in results["labels"]:
        s = summary[label]
        ratio, final = s["rollouts_vs_baseline"]["mean"], s["final_score"]["mean"]
        diff = final - summary[base]["final_score"]["mean"]
        rows.append(f"| {label} | {ratio:.3f} | {final:.3f} | {diff:+.3f} |")
    steps = results["settings"]["steps"]
    return f"Rollouts generated in the same {steps} steps (mean over seeds):\n" + "\n".join(rows)


def run_and_report(
    args: argparse.Namespace,
    entries: list[Entry],
    out: Path,
    scenario: ScenarioConfig | None = None,
    extra: dict[str, Any] | None = None,
    after: Callable[[dict[str, Any]], str] | None = None,
) -> int:
    """Run `entries` on `scenario` (default: --scenario with --scenario-set), print the
    table (and `after(results)` below it), write results.json (plus `extra`'s keys),
    records.csv and the report under `out`."""
    check_counts(args)
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
    command = "frontier " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    results["command"] = command
    results.update(extra or {})
    write_results(results, out)
    from frontier_rft.reporting import format_summary_table
    from frontier_rft.reporting.tables import learner_title

    print(f"\n{learner_title(results)}")
    print(
        f"{args.steps} steps, batch {args.batch}, {args.rollouts} rollouts per task, "
        f"seeds {seeds[0]}..{seeds[-1]}; TTB lower is better, BSF higher is better (vs uniform)"
    )
    print(given_line(results) + "\n")
    print(format_summary_table(results))
    fewer = [r.get("fewer_rollouts") or (r.get("sampler") or [""])[0] == "fewer_rollouts"
             for r in results["runs"]]  # fmt: skip
    if any(fewer):
        print("\n" + rollouts_table(results))
    if after is not None:
        print("\n" + after(results))
    try:
        from frontier_rft.reporting import write_report

        paths = write_report(results, out, command=command)
    except ImportError as exc:
        fix = "" if "[plot]" in str(exc) else ": pip install 'frontier-rft[plot]'"
        print(f"\nNo report: {exc}{fix}", file=sys.stderr)
        return 0
    print(f"\nWrote {out / 'results.json'}, {out / 'records.csv'} and {paths['report']}")
    return 0
