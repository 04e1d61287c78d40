"""Rollouts each dynamic-sampling variant needs to reach 75% / 100% of DAPO(uniform, fixed 3x)'s
gain, relative to DAPO(uniform)'s own (TTB by rollouts: frontier_rft.bench.metrics.ttb on the
cumulative rollouts, at the first step at the target), from `frontier compare` results.

    python benchmarks/dapo_rollouts.py RESULTS.json [RESULTS.json ...] --out OUT.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import ttb
from frontier_rft.core.jsonsafe import finite_or_none

BASE = "uniform+dapo"


def spent(run: dict[str, Any]) -> np.ndarray:
    """Cumulative rollouts before each score of a run (score[i] is after i steps)."""
    return np.concatenate([[0], np.cumsum(run["rollouts"])])


def _rounded(x: float) -> float | None:
    """Three decimals; NaN (never reached) as null: the file is strict JSON."""
    out: float | None = finite_or_none(round(float(x), 3))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    runs: dict[str, dict[int, dict[str, Any]]] = {}
    for path in args.results:
        for r in json.loads(path.read_text())["runs"]:
            runs.setdefault(r["label"], {})[r["seed"]] = r
    out = {}
    for label in (lab for lab in runs if "+dapo" in lab):
        row: dict[str, object] = {}
        for tau in (0.75, 1.0):
            ratios = []
            for seed, r in runs[label].items():
                b = runs[BASE][seed]
                x = ttb(spent(r), r["score"], spent(b), b["score"], tau, interpolate=False)
                ratios.append(float("nan") if x is None else x)
            reached = [x for x in ratios if not np.isnan(x)]
            mean = float(np.mean(reached)) if reached else float("nan")
            row[f"ttb{int(tau * 100)}_by_rollouts"] = _rounded(mean)
            row[f"ttb{int(tau * 100)}_reached"] = int(np.sum(~np.isnan(ratios)))
            row[f"ttb{int(tau * 100)}_per_seed"] = [_rounded(x) for x in ratios]
        total = [
            sum(r["rollouts"]) / sum(runs[BASE][seed]["rollouts"])
            for seed, r in runs[label].items()
        ]
        row["total_rollouts_vs_base"] = float(np.mean(total))
        out[label] = row
        print(
            f"{label:24s} TTB75 by rollouts {row['ttb75_by_rollouts']} "
            f"({row['ttb75_reached']}/{len(total)}), TTB100 {row['ttb100_by_rollouts']} "
            f"({row['ttb100_reached']}/{len(total)}), rollouts x{row['total_rollouts_vs_base']:.2f}"
        )
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
