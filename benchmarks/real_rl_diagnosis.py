"""Why selectors that aim at 50% prompts end below uniform on the real-RL benchmark.

    python benchmarks/real_rl_diagnosis.py benchmarks/results/real_rl_gpu_full.json

Reads a `frontier bench-rl` full report (no run directories needed) and prints, per
selector, how concentrated its training was (distinct prompts with a mixed group, level mix
of the selected prompts) next to its final held-out success per level; then, over every
paired (selector, seed) run, the rank correlation of the held-out difference to uniform with
the difference in distinct prompts trained and in ETR. DAPO is left out of the correlations:
it spends 3x the rollouts per step, so its concentration is not comparable. A selector with a
seed whose value is missing is left out of the correlations.
Writes `<stem>_diagnosis.md` beside the input.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from scipy.stats import spearmanr  # type: ignore[import-untyped]

BASELINE = "uniform"
SKIP_IN_CORRELATION = ("dapo", "dapo-adaptive")  # entries inside dynamic sampling


def _mean(cell: dict[str, Any], digits: int = 2) -> str:
    return "-" if cell.get("mean") is None else f"{cell['mean']:.{digits}f}"


def table(labels: dict[str, Any]) -> list[str]:
    """Concentration and per-level outcome of each selector (means over seeds)."""
    levels = sorted(labels[BASELINE]["final_level_success"])
    head = " | ".join(f"selected {lv}" for lv in levels)
    fin = " | ".join(f"final {lv}" for lv in levels)
    lines = [
        f"| selector | distinct prompts trained | ETR | {head} | {fin} | final pass@1 − uniform |",
        "|---|" + "---:|" * (3 + 2 * len(levels)),
    ]
    for label, row in labels.items():
        shares = " | ".join(
            _mean(row["selected_level_share"][lv.removeprefix("level")]) for lv in levels
        )
        finals = " | ".join(_mean(row["final_level_success"][lv]) for lv in levels)
        lines.append(
            f"| {label} | {_mean(row['distinct_trained'], 0)} | {_mean(row['etr'])} | {shares} | "
            f"{finals} | {_mean(row['final_minus_uniform']['eval/pass@1'], 3)} |"
        )
    return lines


def correlations(labels: dict[str, Any]) -> list[str]:
    """Spearman correlation over paired runs of the held-out difference to uniform."""
    base = labels[BASELINE]
    seeds = base["seeds"]
    held, distinct, etr = [], [], []
    for label, row in labels.items():
        if label == BASELINE or label in SKIP_IN_CORRELATION:
            continue
        cells = (row["final_minus_uniform"]["eval/pass@1"], row["distinct_trained"], row["etr"])
        if any(len(c["values"]) != len(row["seeds"]) for c in cells):
            continue  # a seed without a finite value: its values no longer line up by seed
        for i, seed in enumerate(row["seeds"]):
            j = seeds.index(seed)
            values = (
                row["final_minus_uniform"]["eval/pass@1"]["values"][i],
                row["distinct_trained"]["values"][i] - base["distinct_trained"]["values"][j],
                row["etr"]["values"][i] - base["etr"]["values"][j],
            )
            if all(math.isfinite(v) for v in values):
                held.append(values[0])
                distinct.append(values[1])
                etr.append(values[2])
    out = []
    for name, xs in (("distinct prompts trained", distinct), ("ETR", etr)):
        r = spearmanr(held, xs)
        out.append(
            f"- held-out pass@1 − uniform against {name} − uniform: Spearman "
            f"{r.statistic:+.2f} (p = {r.pvalue:.2g}, {len(held)} paired runs)"
        )
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("full_json", help="a bench-rl <name>_full.json")
    args = p.parse_args()
    path = Path(args.full_json)
    full = json.loads(path.read_text())
    labels = full["summary"]["labels"]
    if "distinct_trained" not in labels[BASELINE]:
        raise SystemExit(f"{path} predates the concentration metrics; rerun bench-rl --report-only")
    stem = path.name.removesuffix("_full.json")
    lines = [
        f"# Concentration and held-out outcome ({stem})",
        "",
        f"Command: `python benchmarks/real_rl_diagnosis.py {path.as_posix()}`  ",
        f"Runs: `{full['command']}` ({len(full['summary']['seeds'])} paired seeds; means over "
        "seeds). Levels are the testbed's, in order.",
        "",
        *table(labels),
        "",
        "Over paired runs (every selector but uniform and DAPO, each seed against its uniform "
        "run):",
        "",
        *correlations(labels),
    ]
    text = "\n".join(lines) + "\n"
    (path.parent / f"{stem}_diagnosis.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
