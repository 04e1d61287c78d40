"""Paired comparison of SmolLM2 GPU runs that a lease stopped before their last step.

The runbook (docs/results/smollm2_gpu.md) returns every run's metrics so far in
`partial.tar.gz`. This script compares the entries at the last held-out evaluation that every
run of them reached: held-out pass@1 and pass@4 minus uniform's (paired by seed, bootstrap 95%
CIs), pass@1 minus uniform's averaged over the last quarter of the evaluations up to that step
(as the bench reports' last-quarter column: one evaluation moves more), rollouts generated up
to that step over uniform's, distinct prompts trained, seconds per step. Nothing here is a
final score: the runs' schedule (spec.json) is longer.

    python benchmarks/smollm2_gpu_partial.py PARTIAL_TAR_GZ --out benchmarks/results \\
        --name smollm2_gpu_partial
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import bootstrap_mean_ci
from frontier_rft.bench.real_rl.report import last_quarter_mean
from frontier_rft.bench.scripts import command_line, script_parser, write_outputs
from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.metrics_log import read_metrics_jsonl

MAX_MEMBER_BYTES = 32 << 20  # a run's metrics.jsonl is ~100 kB; refuse anything absurd


def read_runs(archive: Path) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """entry -> seed -> metric rows, from runs/runs/ENTRY/seedN/metrics.jsonl members, read
    by the library's bounded reader (a line torn by the stop that ended the run is skipped)."""
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}
    with tarfile.open(archive, "r:gz") as tar, tempfile.TemporaryDirectory() as tmp:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if not member.isfile() or parts[-1] != "metrics.jsonl" or len(parts) < 3:
                continue
            if member.size > MAX_MEMBER_BYTES:
                raise SystemExit(f"{member.name}: {member.size} bytes, more than a run writes")
            entry, seed_dir = parts[-3], parts[-2]
            if not seed_dir.startswith("seed") or not seed_dir[4:].isdigit():
                continue
            tar.extract(member, tmp, filter="data")
            rows = read_metrics_jsonl(Path(tmp) / member.name)
            runs.setdefault(entry, {})[int(seed_dir[4:])] = rows
    return runs


def spec_of(archive: Path) -> dict[str, Any]:
    """The first run's spec.json (its code commit and its config), or {}."""
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            if member.name.endswith("spec.json") and member.size < MAX_MEMBER_BYTES:
                handle = tar.extractfile(member)
                if handle is not None:
                    spec = loads_bounded(
                        handle.read().decode(), max_chars=MAX_MEMBER_BYTES, max_depth=16
                    )
                    return dict(spec)
    return {}


def evals(rows: Sequence[dict[str, Any]]) -> dict[int, dict[str, float]]:
    return {int(r["step"]): r for r in rows if "eval/pass@1" in r}


def pass1_up_to(rows: Sequence[dict[str, Any]], step: int) -> list[float]:
    """Held-out pass@1 at each evaluation up to `step` (the start's included), in order."""
    return [r["eval/pass@1"] for t, r in sorted(evals(rows).items()) if t <= step]


def at_step(rows: Sequence[dict[str, Any]], step: int, key: str) -> float:
    """The value of a training metric on the last row at or before `step`."""
    got = [r[key] for r in rows if key in r and int(r["step"]) <= step]
    return float(got[-1]) if got else 0.0


def paired(values: Sequence[float]) -> dict[str, Any]:
    lo, hi = bootstrap_mean_ci(values)
    return {"values": [round(v, 4) for v in values], "mean": float(np.mean(values)), "ci": [lo, hi]}


def compare(
    runs: dict[str, dict[int, list[dict[str, Any]]]], entries: Sequence[str]
) -> dict[str, Any]:
    """The entries against uniform at the last evaluation every one of their runs reached."""
    seeds = sorted(set.intersection(*(set(runs[e]) for e in entries)))
    ev = {e: {s: evals(runs[e][s]) for s in seeds} for e in entries}
    step = max(set.intersection(*(set(ev[e][s]) for e in entries for s in seeds)))
    spent = {
        e: {s: at_step(runs[e][s], step, "train/rollouts_total") for s in seeds} for e in entries
    }
    out: dict[str, Any] = {"entries": list(entries), "seeds": seeds, "step": step, "rows": {}}
    for e in entries:
        rs = runs[e]
        row: dict[str, Any] = {
            "pass@1": float(np.mean([ev[e][s][step]["eval/pass@1"] for s in seeds])),
            "pass@4": float(np.mean([ev[e][s][step]["eval/pass@4"] for s in seeds])),
            "rollouts": float(np.mean(list(spent[e].values()))),
            "distinct_prompts": float(
                np.mean([at_step(rs[s], step, "train/distinct_prompts_trained") for s in seeds])
            ),
            "step_s": float(
                np.median([r["perf/step_s"] for s in seeds for r in rs[s] if "perf/step_s" in r])
            ),
        }
        if e != "uniform":
            row["rollouts_vs_uniform"] = paired([spent[e][s] / spent["uniform"][s] for s in seeds])
            for k in ("pass@1", "pass@4"):
                row[f"{k}_minus_uniform"] = paired(
                    [
                        ev[e][s][step][f"eval/{k}"] - ev["uniform"][s][step][f"eval/{k}"]
                        for s in seeds
                    ]
                )
            row["last_quarter_pass@1_minus_uniform"] = paired(
                [
                    last_quarter_mean(pass1_up_to(rs[s], step))
                    - last_quarter_mean(pass1_up_to(runs["uniform"][s], step))
                    for s in seeds
                ]
            )
        out["rows"][e] = row
    return out


def curves(runs: dict[str, dict[int, list[dict[str, Any]]]]) -> dict[str, dict[int, float]]:
    """Mean held-out pass@1 per evaluation step that all of an entry's seeds reached."""
    out: dict[str, dict[int, float]] = {}
    for e, rs in runs.items():
        steps = set.intersection(*(set(evals(r)) for r in rs.values()))
        out[e] = {
            t: float(np.mean([evals(r)[t]["eval/pass@1"] for r in rs.values()]))
            for t in sorted(steps)
        }
    return out


def fmt(d: dict[str, Any], digits: int = 3, sign: str = "+") -> str:
    lo, hi = d["ci"]
    return f"{d['mean']:{sign}.{digits}f} [{lo:{sign}.{digits}f}, {hi:{sign}.{digits}f}]"


def markdown(result: dict[str, Any]) -> list[str]:
    lines = [
        f"# SmolLM2-135M-Instruct: {', '.join(result['curves'])}, runs stopped before step "
        f"{result.get('schedule_steps', 120)}",
        "",
        f"Code `{result['commit'][:7]}`; every score is at a step the lease reached, not final.",
        f"Command: `{result['command']}`",
        "",
    ]
    for cmp in result["comparisons"]:
        lines += [
            f"## {', '.join(cmp['entries'])} at step {cmp['step']} (seeds "
            f"{','.join(map(str, cmp['seeds']))}, the last evaluation all their runs reached)",
            "",
            "| entry | rollouts / uniform's | held-out pass@1 | − uniform | − uniform, last "
            "quarter of evaluations | pass@4 | − uniform | distinct prompts trained "
            "| s/step (median) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for e, r in cmp["rows"].items():
            ratio = fmt(r["rollouts_vs_uniform"], 2, "") if e != "uniform" else "1.00"
            d1 = fmt(r["pass@1_minus_uniform"]) if e != "uniform" else "—"
            d4 = fmt(r["pass@4_minus_uniform"]) if e != "uniform" else "—"
            lq = fmt(r["last_quarter_pass@1_minus_uniform"]) if e != "uniform" else "—"
            lines.append(
                f"| {e} | {ratio} | {r['pass@1']:.3f} | {d1} | {lq} | {r['pass@4']:.3f} | {d4} "
                f"| {r['distinct_prompts']:.0f} | {r['step_s']:.2f} |"
            )
        lines.append("")
    lines += ["## Mean held-out pass@1 by step (steps every seed of the entry reached)", ""]
    steps = sorted({t for c in result["curves"].values() for t in c})
    lines.append("| entry | " + " | ".join(map(str, steps)) + " |")
    lines.append("|---|" + "---:|" * len(steps))
    for e, c in result["curves"].items():
        lines.append(
            f"| {e} | " + " | ".join(f"{c[t]:.3f}" if t in c else "" for t in steps) + " |"
        )
    return lines


def main() -> int:
    parser = script_parser(__doc__ or "")
    parser.add_argument("archive", type=Path, help="the runbook's partial.tar.gz")
    parser.add_argument("--name", default="smollm2_gpu_partial", help="file stem of the results")
    args = parser.parse_args()
    runs = read_runs(args.archive)
    if "uniform" not in runs:
        raise SystemExit(f"{args.archive}: no uniform runs to compare with")
    others = [e for e in sorted(runs) if e != "uniform"]
    comparisons = [compare(runs, ["uniform", *others])]
    comparisons += [compare(runs, ["uniform", e]) for e in others] if len(others) > 1 else []
    spec = spec_of(args.archive)
    result = {
        "commit": str(spec.get("code", {}).get("commit", "unknown")),
        "schedule_steps": int(spec.get("config", {}).get("steps", 120)),
        "command": command_line(),
        "comparisons": comparisons,
        "curves": curves(runs),
    }
    write_outputs(args.out, args.name, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
