"""What a larger step buys at two learning rates: steps and projected CPU seconds to a target,
a larger fixed step against a smaller one, on the same seeds and start model at each rate.

    python benchmarks/lr_step_price.py \
        benchmarks/results/real_rl_std_planner_adam_preview_full.json \
        benchmarks/results/real_rl_std_lr4_full.json --name lr_step_price_std

Reads two bench-rl reports' `_full.json` (`low`: the lower rate, `high`: the higher), each
holding a smaller (`--small`, default `uniform`) and a larger (`--large`, default
`uniform-b64`) fixed entry on one evaluation schedule, and their runs from the ledger. Per
rate it reads each arm's time to two targets (frontier_rft.bench.real_rl.device_report):
the lower rate's uniform plateau, one target for both rates, and each rate's own uniform
plateau; then the larger step's time over the smaller's (ratio of Kaplan-Meier medians,
paired seeds resampled together). McCandlish et al. (2018, section 2.2): at a fixed rate e the
loss falls e|G|^2 - (e^2/2) G'HG (1 + B_noise/B) a step, so the nearer e is to the largest
stable rate the more a larger batch B buys; a lower ratio at the higher rate is what that
predicts (benchmarks/results/real_rl_std_lr4_prediction.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frontier_rft.bench.metrics import mean_ci, median_ratio, ratio_of_median_ratios, time_summary
from frontier_rft.bench.real_rl.device_report import AXES, Run, first_at, readings, target_of
from frontier_rft.bench.real_rl.ledger import read_record, run_from_record
from frontier_rft.bench.scripts import command_line, script_parser, seed_list, write_outputs

AXES_READ = ("steps", "cpu")
"""The currencies read: optimizer steps and projected CPU seconds (device_report.AXES)."""


def _runs(full: dict[str, Any], entry: str, seeds: list[int]) -> dict[int, Run]:
    if entry not in full["definitions"]:
        raise SystemExit(f"lr_step_price: the report {full['command'][:60]}... has no {entry!r}")
    place = Path(full["ledger"]) / entry / full["definitions"][entry]["digest"]
    missing = [s for s in seeds if not (place / f"seed{s}.json.gz").is_file()]
    if missing:
        raise SystemExit(f"lr_step_price: {place} lacks seeds {missing}; run them or drop them")
    return {s: run_from_record(read_record(place / f"seed{s}.json.gz")) for s in seeds}


def _times(runs: dict[int, Run], axis: str, targets: dict[int, float]) -> dict[str, Any]:
    """Each run's first position on `axis` at the target (None: never), with its budget."""
    values: list[float | None] = []
    budgets: list[float] = []
    for seed, run in runs.items():
        positions, scores, _ = readings(run, axis)
        values.append(first_at(positions, scores, targets[seed]))
        budgets.append(positions[-1])
    return time_summary(values, budgets)


def _bound(large: dict[str, Any], small: dict[str, Any]) -> float | None:
    """Where the smaller step's median lies beyond its runs and the larger's does not: the
    ratio is below the larger's median over the smaller's shortest budget."""
    if small["median"] is not None or large["median"] is None:
        return None
    return float(large["median"]) / float(min(small["budgets"]))


def compare(
    low: dict[str, Any], high: dict[str, Any], small: str, large: str, seeds: list[int]
) -> dict[str, Any]:
    """Per rate and target: each arm's times (censored) and the larger over the smaller."""
    runs = {
        rate: {entry: _runs(full, entry, seeds) for entry in (small, large)}
        for rate, full in (("low", low), ("high", high))
    }
    full_of = {"low": low, "high": high}
    lrs = {rate: runs[rate][small][seeds[0]]["info"]["config"]["lr"] for rate in ("low", "high")}
    out: dict[str, Any] = {"seeds": seeds, "lr": lrs, "small": small, "large": large}
    common = {s: target_of(runs["low"][small][s], "plateau") for s in seeds}
    raw: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    for rate in ("low", "high"):
        own = {s: target_of(runs[rate][small][s], "plateau") for s in seeds}
        starts = [runs[rate][small][s]["pass1"][0] for s in seeds]
        device = full_of[rate]["summary"]["labels"][large]["device"]
        out[rate] = {
            "own_at_start": sum(own[s] <= x + 1e-12 for s, x in zip(seeds, starts, strict=True)),
            "equal_pass1": {axis: device[f"equal_{axis}_pass1"] for axis in ("cpu", "h200")},
            "final_pass1": {
                entry: mean_ci([runs[rate][entry][s]["pass1"][-1] for s in seeds])
                for entry in (small, large)
            },
            "targets": {"common": [common[s] for s in seeds], "own": [own[s] for s in seeds]},
        }
        for name, targets in (("common", common), ("own", own)):
            for axis in AXES_READ:
                a = _times(runs[rate][large], axis, targets)
                b = _times(runs[rate][small], axis, targets)
                raw[(rate, name, axis)] = (a, b)
                out[rate][f"{name}_{axis}"] = {
                    large: a,
                    small: b,
                    "ratio": median_ratio(a["values"], a["budgets"], b["values"], b["budgets"]),
                    "below": _bound(a, b),
                }
    out["high_over_low"] = {
        f"{name}_{axis}": ratio_of_median_ratios(
            raw[("high", name, axis)], raw[("low", name, axis)]
        )
        for name in ("common", "own")
        for axis in AXES_READ
    }
    return out


def _median(cell: dict[str, Any]) -> str:
    med, n, k = cell["median"], len(cell["values"]), cell["reached"]
    text = "never" if med is None else f"{med:,.1f}"
    return text if k == n else f"{text} ({k}/{n} reached)"


def _ratio(cell: dict[str, Any]) -> str:
    lo, hi = cell["ci"] or (None, None)
    ends = ", ".join("beyond" if v is None else f"{v:.2f}" for v in (lo, hi))
    head = "-" if cell["ratio"] is None else f"{cell['ratio']:.2f}x"
    return f"{head} [{ends}]"


def markdown(name: str, command: str, data: dict[str, Any]) -> list[str]:
    small, large = data["small"], data["large"]
    lines = [
        f"# What a larger step buys at two learning rates: {name}",
        "",
        f"    {command}",
        "",
        f"Seeds {', '.join(map(str, data['seeds']))}, paired; `{large}` against `{small}` at lr "
        f"{data['lr']['low']:g} and {data['lr']['high']:g}, one evaluation schedule. Targets: "
        f"`common`, the lr {data['lr']['low']:g} run of `{small}`'s plateau (the mean of its "
        "last quarter of evaluations), one target for both rates; `own`, each rate's own "
        f"`{small}` plateau. Medians are Kaplan-Meier over seeds (never-reached seeds "
        "censored); the ratio is the larger step's median over the smaller's, paired seeds "
        "resampled together for its 95% CI.",
        "",
        f"| lr | target | currency | {small} median | {large} median | {large} / {small} |",
        "|---|---|---|---:|---:|---:|",
    ]
    for rate in ("low", "high"):
        for target in ("common", "own"):
            for axis in AXES_READ:
                cell = data[rate][f"{target}_{axis}"]
                ratio = _ratio(cell["ratio"])
                if cell["below"] is not None:
                    ratio = f"below {cell['below']:.2f}x ({small}'s median lies beyond its runs)"
                if target == "own" and data[rate]["own_at_start"]:
                    ratio = (
                        f"- ({small}'s plateau at or below its start on "
                        f"{data[rate]['own_at_start']}/{len(data['seeds'])} seeds)"
                    )
                lines.append(
                    f"| {data['lr'][rate]:g} | {target} | {AXES[axis]} | {_median(cell[small])} "
                    f"| {_median(cell[large])} | {ratio} |"
                )
    lines += [
        "",
        f"The larger step's ratio at lr {data['lr']['high']:g} over its ratio at lr "
        f"{data['lr']['low']:g} (below 1: a larger step buys more at the higher rate):",
        "",
    ]
    for key, cell in data["high_over_low"].items():
        target, axis = key.split("_", 1)
        text = _ratio(cell)
        if cell["ratio"] is None:
            text = "undefined (a median lies beyond the runs, or the target at the start)"
        lines.append(f"- {target} target, {AXES[axis]}: {text}")
    lines += [
        "",
        f"`{large}`'s pass@1 − `{small}`'s at equal projected seconds (mean [95% CI]):",
        "",
    ]
    for rate in ("low", "high"):
        for axis, cell in data[rate]["equal_pass1"].items():
            lines.append(
                f"- lr {data['lr'][rate]:g}, {AXES[axis]}: {cell['mean']:+.3f} "
                f"[{cell['ci'][0]:+.3f}, {cell['ci'][1]:+.3f}]"
            )
    lines += ["", "Final held-out pass@1 (mean [95% CI]):", ""]
    for rate in ("low", "high"):
        for entry in (small, large):
            c = data[rate]["final_pass1"][entry]
            lines.append(
                f"- lr {data['lr'][rate]:g}, `{entry}`: {c['mean']:.3f} "
                f"[{c['ci'][0]:.3f}, {c['ci'][1]:.3f}]"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__ or "")
    parser.add_argument("low", help="the lower rate's bench-rl _full.json")
    parser.add_argument("high", help="the higher rate's bench-rl _full.json")
    parser.add_argument("--small", default="uniform", help="the smaller fixed entry")
    parser.add_argument("--large", default="uniform-b64", help="the larger fixed entry")
    parser.add_argument("--seeds", type=seed_list, default="0-4", help="paired seeds")
    parser.add_argument("--name", default="lr_step_price", help="file stem of the results")
    args = parser.parse_args(argv)
    fulls = []
    for path in (args.low, args.high):
        try:
            fulls.append(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            parser.error(f"cannot read {path}: {exc}")
    data = compare(fulls[0], fulls[1], args.small, args.large, args.seeds)
    command = command_line()
    write_outputs(
        args.out, args.name, {"command": command, **data}, markdown(args.name, command, data)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
