"""Shadows against the runs they predict: is a uniform run's shadow a good forecast?

A shadow (docs/shadow.md) follows a rule beside a uniform run and counts, from the run's own
rewards, the rollouts the rule would have saved and the informative groups it would have
left out. The run ledger holds, on the same seeds and start model, the runs that actually
used each rule on uniform's schedule. This compares the two, per seed and rule:

- rollouts / uniform's: predicted (1 - the shadow's `rollouts_saved_share` at the end)
  against what the rule's run spent;
- informative groups trained: predicted (uniform's minus the shadow's `informative_lost`)
  against the rule's run's sum of `train/informative_groups`;
- and, for context, the rule's run's final held-out pass@1 and pass@8 minus uniform's.

It also checks that the shadowed run trained exactly as uniform did (same rollouts and
held-out scores at every evaluation), the claim that shadows change nothing.

    python benchmarks/shadow_validation.py \
        --ledger benchmarks/ledger/15805e4bbe8b/cpu --seeds 0-4 \
        --out benchmarks/results/shadow_validation

The first-order limit: a shadow sees uniform's trajectory. A run that used the rule trained
on other batches and would have met other outcomes; the error columns measure how much
that matters here.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontier_rft.bench.metrics import mean_ci
from frontier_rft.bench.real_rl.ledger import MAX_RECORD_BYTES
from frontier_rft.bench.simulation.vs_real import parse_seeds
from frontier_rft.core.jsonsafe import loads_bounded

SHADOWED = "uniform-shadows"
"""The bench entry that trains as uniform with the rules below as shadows."""
RULES = {"greso": "greso-kept", "screen4": "screen4", "greso+screen4": "greso-kept-screen4"}
"""Each shadow rule and the bench entry that runs it on uniform's schedule."""
PREFIX = "curriculum/shadow/"


def load_record(folder: Path, entry: str, seed: int) -> dict[str, Any]:
    """The one record of `entry` and `seed` under a ledger's device folder."""
    paths = sorted((folder / entry).glob(f"*/seed{seed}.json.gz"))
    if len(paths) != 1:
        raise SystemExit(
            f"shadow_validation: {folder / entry} holds {len(paths)} records of seed {seed}, "
            "expected 1: run the entry on that seed (frontier bench-rl) or name another ledger"
        )
    with gzip.open(paths[0], "rb") as fh:
        raw = fh.read(MAX_RECORD_BYTES + 1)
    if len(raw) > MAX_RECORD_BYTES:
        raise SystemExit(f"shadow_validation: {paths[0]} is larger than {MAX_RECORD_BYTES} bytes")
    record = loads_bounded(raw.decode("utf-8"), max_chars=MAX_RECORD_BYTES, max_depth=16)
    if not isinstance(record, dict) or not isinstance(record.get("columns"), dict):
        raise SystemExit(f"shadow_validation: {paths[0]} is not a run ledger record")
    return record


def column(record: dict[str, Any], key: str) -> list[float]:
    """A metric's logged values, in step order (rows without it left out)."""
    return [float(v) for v in record["columns"].get(key, []) if v is not None]


def final(record: dict[str, Any], key: str) -> float:
    values = column(record, key)
    if not values:
        raise SystemExit(f"shadow_validation: a {record.get('entry')} record has no {key}")
    return values[-1]


def compare_seed(folder: Path, seed: int) -> dict[str, Any]:
    uniform = load_record(folder, "uniform", seed)
    shadowed = load_record(folder, SHADOWED, seed)
    rollouts = sum(column(uniform, "train/rollouts"))
    informative = sum(column(uniform, "train/informative_groups"))
    scores = ("eval/pass@1", "eval/pass@8")
    same = sum(column(shadowed, "train/rollouts")) == rollouts and all(
        column(shadowed, k) == column(uniform, k) for k in scores
    )
    out: dict[str, Any] = {"seed": seed, "shadowed_run_same_as_uniform": same, "rules": {}}
    for rule, entry in RULES.items():
        actual = load_record(folder, entry, seed)
        saved_share = final(shadowed, f"{PREFIX}{rule}/rollouts_saved_share")
        lost = final(shadowed, f"{PREFIX}{rule}/informative_lost")
        out["rules"][rule] = {
            "entry": entry,
            "rollouts_predicted": 1.0 - saved_share,
            "rollouts_actual": sum(column(actual, "train/rollouts")) / rollouts,
            "informative_predicted": (informative - lost) / informative,
            "informative_actual": sum(column(actual, "train/informative_groups")) / informative,
            "skip_precision": final(shadowed, f"{PREFIX}{rule}/skip_precision"),
            **{
                f"{k.removeprefix('eval/')}_minus_uniform": final(actual, k) - final(uniform, k)
                for k in scores
            },
        }
    return out


def summarize(per_seed: Sequence[dict[str, Any]]) -> dict[str, Any]:
    rules: dict[str, Any] = {}
    for rule in RULES:
        rows = [s["rules"][rule] for s in per_seed]
        summary = {key: mean_ci([r[key] for r in rows]) for key in rows[0] if key != "entry"}
        for what in ("rollouts", "informative"):
            summary[f"{what}_error"] = mean_ci(
                [r[f"{what}_predicted"] - r[f"{what}_actual"] for r in rows]
            )
        rules[rule] = {"entry": rows[0]["entry"], **summary}
    return rules


def _cell(stat: dict[str, Any], digits: int = 2) -> str:
    lo, hi = stat["ci"]
    return f"{stat['mean']:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]".replace("+0.", "0.")


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Shadows against the runs they predict (real RL, CPU, 5 paired seeds)",
        "",
        f"Command: `{result['command']}`  ",
        f"Runs: `{result['ledger']}` (the 2-epoch regime: 1,280 prompts, 160 steps; each "
        f"entry's code commits are in its records and in real_rl_fewer_2epoch.md)  ",
        f"Seeds: {', '.join(str(s) for s in result['seeds'])}. The shadowed run trained exactly "
        f"as uniform on {result['same_as_uniform']} of {len(result['seeds'])} seeds (same "
        "rollouts and held-out pass@1 and pass@8 at every evaluation).",
        "",
        "Predicted: from the uniform run's shadows (first order: uniform's trajectory). Actual: "
        "the entry that ran the rule on uniform's schedule, same seed and start model. Error = "
        "predicted − actual (mean over seeds, bootstrap 95% CI).",
        "",
        "| rule (entry) | rollouts / uniform's, predicted | actual | error | informative groups "
        "trained / uniform's, predicted | actual | error | skip precision | pass@1 − uniform "
        "(actual) | pass@8 − uniform (actual) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rule, s in result["rules"].items():
        lines.append(
            f"| {rule} ({s['entry']}) | {_cell(s['rollouts_predicted'])} | "
            f"{_cell(s['rollouts_actual'])} | {_cell(s['rollouts_error'], 3)} | "
            f"{_cell(s['informative_predicted'])} | {_cell(s['informative_actual'])} | "
            f"{_cell(s['informative_error'], 3)} | {_cell(s['skip_precision'])} | "
            f"{_cell(s['pass@1_minus_uniform'], 3)} | {_cell(s['pass@8_minus_uniform'], 3)} |"
        )
    lines += ["", result["reading"], ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ledger", type=Path, required=True, help="a ledger device folder")
    parser.add_argument("--seeds", default="0-4", help="e.g. 0-4")
    parser.add_argument("--out", type=Path, required=True, help="file stem of the results")
    parser.add_argument("--reading", default="", help="the page's reading of the table")
    args = parser.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    per_seed = [compare_seed(args.ledger, s) for s in seeds]
    result = {
        "command": f"python benchmarks/shadow_validation.py --ledger {args.ledger} "
        f"--seeds {args.seeds} --out {args.out}" + (" --reading TEXT" if args.reading else ""),
        "ledger": str(args.ledger),
        "seeds": list(seeds),
        "same_as_uniform": sum(bool(s["shadowed_run_same_as_uniform"]) for s in per_seed),
        "per_seed": per_seed,
        "rules": summarize(per_seed),
        "reading": args.reading,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
