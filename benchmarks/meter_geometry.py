"""The noise meter's two readings side by side: run-average B_simple in the parameters'
geometry and in Adam's, from one entry's ledger records, beside a fitted N_noise.

    python benchmarks/meter_geometry.py benchmarks/ledger/timed/fcca87e79ef9/cpu \
        --entry uniform-auto-cpu-adam --seeds 20-22 \
        --fit benchmarks/results/planner_vs_grid_std.json --name meter_geometry_std_tuning

Reads `<ledger>/<entry>/<definition>/seed<s>.json.gz` (the entry's one definition), each run's
logged `noise/...` and `noise/adam/...` columns (training/noise_meter.py), and writes, per seed
and pooled over seeds (frontier_rft.bench.real_rl.planner_grid.meter_average: the ratio of the
mean trace to the mean |G|^2, a bootstrap CI over seeds), both readings, their ratio and the
prompts a step the run ended at; with `--fit`, the steps-to-target fit of a planner_vs_grid
report (its first standing fit) for comparison.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.real_rl.ledger import read_record
from frontier_rft.bench.real_rl.planner_grid import meter_average
from frontier_rft.bench.scripts import RESULTS_DIR, command_line, seed_list, write_outputs
from frontier_rft.core.noise_scale import GEOMETRIES


def definition_dir(ledger: Path, entry: str) -> Path:
    """The entry's one definition folder under `ledger`; a one-line error naming what is there
    otherwise."""
    found = sorted(p for p in (ledger / entry).glob("*") if p.is_dir())
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        raise SystemExit(f"{ledger / entry}: expected one definition folder, found {names}")
    return found[0]


def read_runs(folder: Path, seeds: list[int]) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """Each seed's logged columns, and the code commits that ran them."""
    cols: dict[int, dict[str, Any]] = {}
    code: set[str] = set()
    for s in seeds:
        path = folder / f"seed{s}.json.gz"
        if not path.exists():
            raise SystemExit(f"{path}: no record (run the entry on seed {s} first)")
        record = read_record(path)
        cols[s] = record["columns"]
        code.add(str((record.get("code") or {}).get("commit", "unknown"))[:8])
    return cols, sorted(code)


def same_steps(cols: dict[str, Any]) -> dict[str, Any]:
    """A run's columns with every reading kept only on the metered steps both geometries read
    (Adam's begins a metered step later), so the two are compared step for step."""
    both = [
        all(cols.get(p + "trace", [None] * (i + 1))[i] is not None for p in GEOMETRIES.values())
        for i in range(len(cols["noise/trace"]))
    ]
    return {
        k: [v if keep else None for v, keep in zip(values, both, strict=True)]
        if k.startswith("noise/")
        else values
        for k, values in cols.items()
    }


def summary(cols: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Both readings pooled and per seed over the same metered steps, their per-seed ratio and
    each run's last prompts."""
    paired = {s: same_steps(c) for s, c in cols.items()}
    out: dict[str, Any] = {
        name: meter_average(paired, prefix=prefix) for name, prefix in GEOMETRIES.items()
    }
    out["ratio_per_seed"] = [
        None if p is None or a is None or p <= 0 else a / p
        for p, a in zip(out["plain"]["per_seed"], out["adam"]["per_seed"], strict=True)
    ]
    for name, prefix in GEOMETRIES.items():
        out[name]["signal"] = signal_bound(paired, prefix)
    out["last_prompts"] = [
        max(v for v in c.get("train/prompts", []) if v is not None) for c in cols.values()
    ]
    return out


def signal_bound(
    cols: dict[int, dict[str, Any]], prefix: str, resamples: int = 2_000, seed: int = 0
) -> dict[str, Any]:
    """The mean |G|^2 over every metered step of every run, with a percentile bootstrap CI
    over those steps (each step's estimate is unbiased and drawn from its own batch), the
    mean trace, and the least noise scale the data allow: the mean trace over |G|^2's upper
    bound (None where that bound is <= 0: no signal read above the noise)."""
    steps = [
        (float(t), float(g))
        for c in cols.values()
        for t, g in zip(c[prefix + "trace"], c[prefix + "grad_sq"], strict=True)
        if t is not None and g is not None
    ]
    arr = np.asarray(steps, dtype=np.float64).reshape(-1, 2)
    rng = np.random.default_rng(seed)
    draws = [float(arr[rng.integers(0, len(arr), len(arr)), 1].mean()) for _ in range(resamples)]
    hi = float(np.percentile(draws, 97.5))
    trace = float(arr[:, 0].mean())
    return {
        "grad_sq": float(arr[:, 1].mean()),
        "grad_sq_ci": [float(np.percentile(draws, 2.5)), hi],
        "trace": trace,
        "b_at_least": trace / hi if hi > 0 else None,
    }


def _pooled(m: dict[str, Any]) -> str:
    """A pooled reading: its rows and CI, or why there is none, with |G|^2's interval."""
    sig = m["signal"]
    lo, hi = sig["grad_sq_ci"]
    bound = sig["b_at_least"]
    at_least = "" if bound is None else f"; at least {bound:,.0f} rows by its upper bound"
    grad = f"mean |G|^2 {sig['grad_sq']:.3g} [{lo:.3g}, {hi:.3g}]{at_least}"
    if not math.isfinite(m["b_simple"]):
        return f"undefined: {grad} (no signal read above the noise)"
    ci = "" if m["ci"] is None else f" [{m['ci'][0]:,.0f}, {m['ci'][1]:,.0f}]"
    return f"{m['b_simple']:,.0f}{ci} rows; {grad}"


def standing_fit(report: dict[str, Any]) -> dict[str, Any] | None:
    """The first fit of a planner_vs_grid report that stands (not withdrawn), with its name."""
    for name, fit in report.get("fits", {}).items():
        if not fit["withdrawn"] and fit.get("n_noise_ci"):
            return {"name": name, "n_noise": fit["n_noise"], "ci": fit["n_noise_ci"]}
    return None


def _rows(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def markdown(name: str, data: dict[str, Any]) -> list[str]:
    s = data["summary"]
    lines = [
        f"# The meter in two geometries: {name}",
        "",
        f"    {data['command']}",
        "",
        f"Entry `{data['entry']}`, seeds {', '.join(map(str, data['seeds']))} (code "
        f"{', '.join(data['code'])}), every metered step of each run that both geometries read "
        "(Adam's begins at the second). Run-average B_simple = "
        "mean tr(Sigma) / mean |G|^2 in rows, bootstrap 95% CI over seeds (|G|^2's: over "
        "metered steps); Adam's geometry weights every inner product by "
        "1 / (sqrt(v_hat) + eps).",
        "",
        "| seed | B_simple (plain) | B_simple (Adam's geometry) | Adam / plain | prompts a step at "
        "the end |",
        "|---:|---:|---:|---:|---:|",
    ]
    for i, seed in enumerate(data["seeds"]):
        ratio = s["ratio_per_seed"][i]
        lines.append(
            f"| {seed} | {_rows(s['plain']['per_seed'][i])} | {_rows(s['adam']['per_seed'][i])} "
            f"| {'-' if ratio is None else f'{ratio:.1f}x'} | {s['last_prompts'][i]:.0f} |"
        )
    lines.append("")
    for key in ("plain", "adam"):
        m = s[key]
        lines.append(
            f"- Pooled, {key}: {_pooled(m)}; the intra-prompt term "
            f"{100 * (m['intra_share'] or 0):.0f}% of the trace."
        )
    fit = data.get("fit")
    if fit:
        lines += [
            "",
            f"Beside them, the steps-to-target fit of `{data['fit_source']}` ({fit['name']}): "
            f"N_noise {fit['n_noise']:,.0f} [{fit['ci'][0]:,.0f}, {fit['ci'][1]:,.0f}] rows.",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ledger", type=Path, help="a ledger folder of one testbed and device class")
    p.add_argument("--entry", required=True, help="the bench entry whose runs are read")
    p.add_argument("--seeds", type=seed_list, required=True, help="e.g. 20-22")
    p.add_argument("--fit", type=Path, help="a planner_vs_grid report's .json (its fits)")
    p.add_argument("--name", required=True, help="output name under --out")
    p.add_argument("--out", type=Path, default=Path(RESULTS_DIR))
    args = p.parse_args(argv)
    cols, code = read_runs(definition_dir(args.ledger, args.entry), args.seeds)
    data: dict[str, Any] = {
        "command": command_line(),
        "entry": args.entry,
        "seeds": args.seeds,
        "code": code,
        "summary": summary(cols),
    }
    if args.fit:
        data["fit"] = standing_fit(json.loads(args.fit.read_text(encoding="utf-8")))
        data["fit_source"] = str(args.fit)
    write_outputs(args.out, args.name, data, markdown(args.name, data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
