"""The planned step against the fixed grid of step sizes, in each currency, and the meter's
noise scale beside the steps-to-target fit.

    python benchmarks/planner_vs_grid.py benchmarks/results/real_rl_format_lr4_planner_full.json \
        --name planner_vs_grid_format_lr4

Reads a bench-rl report's `_full.json` that holds a planned entry (`--planned`, bench entry
`uniform-auto`: `batch_plan: auto`) beside uniform at fixed sizes (`uniform-b<B>`,
`uniform-k<K>`), all on one evaluation schedule, and the planned runs' ledger records (the
meter's `noise/...`). Per currency (`--axes`; default projected H200 seconds and projected CPU
seconds): the best fixed entry chosen in hindsight, the planned entry's time to the target over
it (within 1.1x?) and its pass@1 at equal cost against uniform (CI low >= -0.01?)
(frontier_rft.bench.real_rl.planner_grid). Then the meter's run-average B_simple beside the
noise-scale law fitted to steps to the target as rows a step grow (noise_fit), or the reasons
that fit is withdrawn.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.device_report import AXES, TARGETS
from frontier_rft.bench.real_rl.ledger import read_record
from frontier_rft.bench.real_rl.noise_fit import law_exponent, noise_fit, slope_fit, steps_series
from frontier_rft.bench.real_rl.planner_grid import (
    FLOOR,
    WITHIN,
    grid_comparison,
    meter_average,
)
from frontier_rft.bench.scripts import RESULTS_DIR, command_line, write_outputs
from frontier_rft.core.noise_scale import GEOMETRIES

WHAT = {"plain": "B_simple", "adam": "B_simple in Adam's geometry"}
"""What each of the meter's readings (core.noise_scale.GEOMETRIES) is called in a report."""
METER_COLUMNS = tuple(p + c for p in GEOMETRIES.values() for c in ("trace", "grad_sq", "intra"))


def _x(value: float | None) -> str:
    return "never" if value is None else f"{value:,.1f}"


def _ratio(cell: dict[str, Any]) -> str:
    lo, hi = cell["ci"] or (None, None)
    ends = ", ".join("beyond" if v is None else f"{v:.2f}" for v in (lo, hi))
    if cell["ratio"] is None:
        return f"- [{ends}]"
    return f"{cell['ratio']:.2f}x [{ends}]"


def _diff(cell: dict[str, Any]) -> str:
    if cell.get("mean") is None:
        return "-"
    lo, hi = cell["ci"] or (float("nan"), float("nan"))
    return f"{cell['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def markdown(name: str, data: dict[str, Any]) -> list[str]:
    comp, planned = data["comparison"], data["comparison"]["planned"]
    lines = [
        f"# The planned step against the fixed grid: {name}",
        "",
        f"    {data['command']}",
        "",
        f"From `{data['source']}` ({data['seeds']} paired seeds; {planned}'s runs by code "
        f"{', '.join(data['code'])}). Target: {TARGETS[comp['target']]}. Times are read at "
        "the report's reading points (one evaluation schedule for every arm), each arm's "
        "Kaplan-Meier median over seeds (a seed that never reached is censored, not dropped); "
        "the planned entry's time over another's is the ratio of medians, paired seeds "
        "resampled together for the CI. The best fixed entry is chosen in hindsight, per "
        "currency: the grid's best case, which a user choosing a size beforehand would not "
        f"know. Checks: {planned}'s time within {WITHIN}x of the best fixed entry's, and its "
        f"pass@1 at equal cost against uniform with a CI low of at least {FLOOR:+.2f}.",
        "",
        f"| currency | best fixed entry | its median | {planned}'s median | {planned} / best "
        f"| within {WITHIN}x | pass@1 − uniform at equal cost | CI low >= {FLOOR:+.2f} |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    for axis, a in comp["axes"].items():
        best = a["best"]
        lines.append(
            f"| {AXES[axis]} | {best} ({a['reached'][best]}/{a['seeds']} reached) "
            f"| {_x(a['medians'][best])} | {_x(a['planned_median'])} "
            f"({a['planned_reached']}/{a['seeds']} reached) | {_ratio(a['over_best'])} "
            f"| {'yes' if a['within'] else 'no'} | {_diff(a['equal_pass1'])} "
            f"| {'yes' if a['holds_score'] else 'no'} |"
        )
    first = next(iter(comp["axes"].values()))
    fixed = list(first["over_each"]) + list(first["over_others"])
    lines += [
        "",
        f"{planned}'s time to the target over each fixed entry's, and over each entry it is "
        "set beside (median ratio [95% CI]):",
        "",
        "| currency | " + " | ".join(fixed) + " |",
        "|---|" + "---:|" * len(fixed),
        *(
            f"| {AXES[axis]} | "
            + " | ".join(_ratio({**a["over_each"], **a["over_others"]}[f]) for f in fixed)
            + " |"
            for axis, a in comp["axes"].items()
        ),
        "",
        "## The meter's noise scale beside the steps-to-target fit",
        "",
    ]
    for m in [data["meter"], *data.get("meters_more", [])]:
        ci = "" if m["ci"] is None else f" [{m['ci'][0]:,.0f}, {m['ci'][1]:,.0f}]"
        lines.append(
            f"The meter ({planned}'s runs, every metered step of {len(m['seeds'])} seeds, "
            f"{min(m['metered_steps'])}-{max(m['metered_steps'])} metered steps a run): "
            f"run-average {m.get('what', 'B_simple')} = mean tr(Sigma) / mean |G|^2 = "
            f"**{m['b_simple']:,.0f}{ci} rows** (bootstrap 95% CI over seeds); per seed "
            + ", ".join("-" if v is None else f"{v:,.0f}" for v in m["per_seed"])
            + f"; the intra-prompt term is {100 * (m['intra_share'] or 0):.0f}% of the trace."
        )
        lines.append("")
    for axis, f in data["fits"].items():
        if not f["rows"]:  # no entry grows the step this way in the report
            continue
        counts = ", ".join(
            f"{n} ({'-' if s is None else f'{s:.1f}'} steps, {r}/{f['seeds']})"
            for n, s, r in zip(f["rows"], f["median_steps"], f["reached"], strict=True)
        )
        head = f"- Fit by {axis} (rows a step: median steps to it, seeds reached): {counts}. "
        if f["withdrawn"]:
            lines.append(head + "**Withdrawn**: " + "; ".join(f["withdrawn"]) + ".")
            continue
        lo, hi = f["n_noise_ci"] or (None, None)
        lines.append(
            head + f"N_noise = {f['n_noise']:,.0f} [{lo:,.0f}, {hi:,.0f}] rows."
            if f["n_noise"] is not None and lo is not None
            else head + "N_noise undefined."
        )
    lines += ["", data["reading"]]
    if any(not f["withdrawn"] and f.get("n_noise_ci") for f in data["fits"].values()):
        lines += [reading(m, data["fits"]) for m in data.get("meters_more", [])]
    return lines + slope_lines(data)


def slopes(
    series: dict[str, Any], fits: dict[str, Any], meters: list[dict[str, Any]]
) -> dict[str, Any]:
    """For each fit that stands: how fast its steps fell with rows (log-log slope, bootstrap
    CI), beside the slopes two laws give through the same rows at each meter reading and at
    the fit's own N_noise: McCandlish's (SGD at the best rate for each size) and the
    square-root law of Adam at one kept rate."""
    out: dict[str, Any] = {}
    for key, fit in fits.items():
        if fit["withdrawn"] or fit.get("n_noise") is None:
            continue
        rows = fit["rows"]
        at = [(m.get("what", "B_simple"), m["b_simple"]) for m in meters]
        at.append(("the fit's N_noise", fit["n_noise"]))
        out[key] = {
            "measured": slope_fit(series[key]),
            "laws": [
                {
                    "at": what,
                    "b_noise": b,
                    "sgd": law_exponent(b, rows, 1.0),
                    "adam_kept": law_exponent(b, rows, 0.5),
                }
                for what, b in at
            ],
        }
    return out


def slope_lines(data: dict[str, Any]) -> list[str]:
    """The slopes' lines of the markdown (none where no fit stands)."""
    lines = []
    for key, got in data.get("slopes", {}).items():
        m = got["measured"]
        if m is None:
            continue
        ci = "" if m["ci"] is None else f" [{m['ci'][0]:.2f}, {m['ci'][1]:.2f}]"
        laws = "; ".join(
            f"at {law['at']} ({law['b_noise']:,.0f} rows) McCandlish's law gives "
            f"{law['sgd']:.2f} and Adam at a kept rate {law['adam_kept']:.2f}"
            for law in got["laws"]
        )
        lines.append(
            f"- How fast the steps fell, by {key}: log-log slope **{m['slope']:.2f}{ci}** "
            f"(-1: twice the rows, half the steps; 0: no saving); {laws}."
        )
    return ["", *lines] if lines else []


def reading(meter: dict[str, Any], fits: dict[str, Any]) -> str:
    """One line: whether the meter's estimate (`what` it reads) lies within the fit's CI, or
    why none is set beside it."""
    standing = {a: f for a, f in fits.items() if not f["withdrawn"] and f.get("n_noise_ci")}
    if not standing:
        return (
            "No fit stands beside the meter here (each is withdrawn above): the steps to the "
            "target do not resolve the law on this schedule, so the meter's estimate is the "
            "only reading of the noise scale, and it is not checked by this report."
        )
    out = []
    for axis, f in standing.items():
        lo, hi = f["n_noise_ci"]
        inside = lo <= meter["b_simple"] <= hi
        what = f"{meter['what']}, " if "what" in meter else ""  # the plain one: unnamed
        out.append(
            f"By {axis}: the meter's {what}{meter['b_simple']:,.0f} rows"
            + (", is " if what else " is ")
            + ("within" if inside else "outside")
            + f" the fit's CI [{lo:,.0f}, {hi:,.0f}]."
        )
    return " ".join(out)


def planned_records(full: dict[str, Any], planned: str) -> tuple[dict[int, Any], list[str]]:
    """Each seed's logged meter columns of the planned entry, from its ledger records, and the
    code commits that ran them."""
    ledger = Path(full["ledger"]) / planned / full["definitions"][planned]["digest"]
    cols: dict[int, Any] = {}
    code: set[str] = set()
    for s in full["summary"]["seeds"]:
        record = read_record(ledger / f"seed{s}.json.gz")
        cols[int(s)] = {k: record["columns"][k] for k in METER_COLUMNS if k in record["columns"]}
        code.add(str((record.get("code") or {}).get("commit", "unknown"))[:8])
    return cols, sorted(code)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("full_json", type=Path, help="a bench-rl report's <name>_full.json")
    p.add_argument("--name", required=True, help="output name under --out")
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    p.add_argument("--planned", default="uniform-auto", help="the planned entry's label")
    p.add_argument(
        "--beside", default="", help="entries to set the planned one beside (comma-separated)"
    )
    p.add_argument("--axes", default="h200,cpu", help="currencies, of: " + ", ".join(AXES))
    p.add_argument("--target", choices=tuple(TARGETS), default="plateau")
    p.add_argument("--fit-targets", default="plateau,half", help="the fits' targets (TARGETS)")
    args = p.parse_args(argv)
    axes = [a.strip() for a in args.axes.split(",") if a.strip()]
    unknown = [a for a in axes if a not in AXES]
    if unknown:
        p.error(f"unknown axes {unknown}: choose from {', '.join(AXES)}")
    full = json.loads(args.full_json.read_text(encoding="utf-8"))
    labels = full["summary"]["labels"]
    train = full["testbed"]["train"]
    batch, group = int(train["batch_size"]), int(train["group_size"])
    cols, code = planned_records(full, args.planned)
    meter = meter_average(cols)
    # Adam's geometry where every run logged it (code since the meter read it)
    more = [
        {**meter_average(cols, prefix=prefix), "what": WHAT[name]}
        for name, prefix in GEOMETRIES.items()
        if name != "plain" and all(prefix + "trace" in c for c in cols.values())
    ]
    fit_targets = [t.strip() for t in args.fit_targets.split(",") if t.strip()]
    if any(t not in TARGETS for t in fit_targets):
        p.error(f"--fit-targets: choose from {', '.join(TARGETS)}")
    series = {
        f"{axis}, to {target}": steps_series(labels, axis, batch, group, target)
        for target in fit_targets
        for axis in ("prompts", "rollouts")
    }
    fits = {key: noise_fit(data) for key, data in series.items()}
    data = {
        "command": command_line(),
        "source": str(args.full_json),
        "seeds": len(full["summary"]["seeds"]),
        "code": code,
        "comparison": grid_comparison(
            labels,
            args.planned,
            axes,
            args.target,
            others=[o.strip() for o in args.beside.split(",") if o.strip()],
        ),
        "meter": meter,
        "meters_more": more,
        "fits": fits,
        "slopes": slopes(series, fits, [meter, *more]),
        "reading": reading(meter, fits),
    }
    write_outputs(args.out, args.name, data, markdown(args.name, data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
