"""Per-prompt rollout allocation on the calibrated simulator, against uniform and greso:
at uniform's rollouts (B x n = 128 a step) and, for the `lean` entries, at a smaller budget
per step (0.5, 0.6, 0.75 x 128) over the same 360 steps.

Per pool size (the calibrated scenarios small-pool, 512 prompts, and large-pool, 1,280) and
seed, the cumulative rollouts at which each entry first reaches 50% / 75% / 100% of
uniform's gain on the same seed, over uniform's own (TTB by rollouts, every step
evaluated, no interpolation), with the percentile-bootstrap 95% interval over seeds (None
when a seed never got there: the cell says how many did); the held-out score at equal
rollouts (the last step) minus uniform's, with its interval; informative groups per
rollout, rollouts per prompt and the group-size histogram. 360 steps x 16 prompts x 8
rollouts. Tune on seeds >= 20 (`--seeds 20-24`), report on 0-4 (the default).

    python benchmarks/allocation.py --jobs 1                      # report, ~10 min on 1 core
    python benchmarks/allocation.py --seeds 20-24 --stem allocation_sim_tune --jobs 1
    python benchmarks/allocation.py --oracle --stem allocation_sim_oracle   # the bound

`--oracle` asks what allocation could gain at best: greso, greso+alloc, and greso+alloc with
each tried prompt's posterior replaced by its true current pass rate (the simulated
learner's, as a Beta of strength 1e4: `Entry.oracle`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontier_rft.bench.metrics import mean_ci, paired_summary, ttb
from frontier_rft.bench.scripts import command_line, script_parser, seed_list, write_outputs
from frontier_rft.bench.simulation.benchmark import cached_runs
from frontier_rft.sampling.step import SIZE_BINS
from frontier_rft.simulation.runner import Entry, sampler_spec

BASE = "uniform"
ENTRIES = (
    Entry(BASE, "uniform"),
    Entry("greso", "greso"),
    Entry("greso+alloc", "greso", sampler=sampler_spec(allocation={})),
    Entry("greso+alloc-signal", "greso", sampler=sampler_spec(allocation={"value": "signal"})),
    Entry("greso+alloc-knapsack", "greso", sampler=sampler_spec(allocation={"value": "knapsack"})),
    Entry("greso+alloc-pilot", "greso", sampler=sampler_spec(allocation={"pilot": 4})),
    Entry(
        "greso+pilot-commit",
        "greso",
        sampler=sampler_spec(allocation={"pilot": 4, "commit": "mixed"}),
    ),
    Entry("skip+alloc", "skip", sampler=sampler_spec(allocation={})),
    Entry("greso+alloc-lean0.5", "greso", sampler=sampler_spec(allocation={"budget": 0.5})),
    Entry("greso+alloc-lean0.6", "greso", sampler=sampler_spec(allocation={"budget": 0.6})),
    Entry("greso+alloc-lean0.75", "greso", sampler=sampler_spec(allocation={"budget": 0.75})),
)
ORACLE = (
    Entry(BASE, "uniform"),
    Entry("greso", "greso"),
    Entry("greso+alloc", "greso", sampler=sampler_spec(allocation={})),
    # The prior_forgetting the committed results were run with (it once marked this entry).
    Entry(
        "greso+alloc-oracle",
        "greso",
        sampler=sampler_spec(allocation={"prior_forgetting": 0.123456789}),
        oracle=True,
    ),
)
"""--oracle's entries."""
SCENARIOS = {"512": "small-pool", "1280": "large-pool"}
STEPS, BATCH, ROLLOUTS = 360, 16, 8
TAUS = (0.5, 0.75, 1.0)


def curve(run: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(cumulative rollouts, held-out score) of a run (every step rolls out something)."""
    x = np.concatenate([[0], np.cumsum(run["rollouts"])])
    return x, np.asarray(run["score"], dtype=np.float64)


def score_at(run: dict[str, Any], rollouts: float) -> float:
    """The run's held-out score at its last step whose cumulative rollouts are <= `rollouts`."""
    x, y = curve(run)
    return float(y[np.searchsorted(x, rollouts + 1e-9, side="right") - 1])


def _r(x: Any) -> Any:
    if isinstance(x, list):
        return [_r(v) for v in x]
    if isinstance(x, int):
        return x
    return None if x is None or not np.isfinite(x) else round(float(x), 4)


def summarise(
    runs: list[dict[str, Any]], seeds: list[int], entries: tuple[Entry, ...] = ENTRIES
) -> dict[str, Any]:
    """Per entry: TTB by rollouts against BASE (per seed, mean, bootstrap CI), the score
    delta at equal rollouts, and what the rollouts bought."""
    by = {(r["label"], r["seed"]): r for r in runs}
    out: dict[str, Any] = {}
    for entry in entries:
        row: dict[str, Any] = {}
        mine = [by[(entry.label, s)] for s in seeds]
        base = [by[(BASE, s)] for s in seeds]
        for tau in TAUS:
            values = [
                ttb(*curve(r), *curve(b), tau, interpolate=False)
                for r, b in zip(mine, base, strict=True)
            ]
            summary = paired_summary(values)
            row[f"ttb{round(tau * 100)}"] = {k: _r(v) for k, v in summary.items()}
        # A lean budget spends fewer rollouts in the same steps: compare with the baseline's
        # score at the entry's own total (the baseline's last step not beyond it).
        pairs = list(zip(mine, base, strict=True))
        delta = mean_ci([r["score"][-1] - score_at(b, sum(r["rollouts"])) for r, b in pairs])
        row["rollouts_share"] = _r(
            float(np.mean([sum(r["rollouts"]) / sum(b["rollouts"]) for r, b in pairs]))
        )
        row["final_delta"] = {k: _r(v) for k, v in delta.items()}
        row["best_score"] = _r(float(np.mean([max(r["score"]) for r in mine])))
        row["informative_per_rollout"] = _r(
            float(
                np.mean([np.nanmean(np.array(r["informative_per_rollout"], float)) for r in mine])
            )
        )
        row["rollouts_per_prompt"] = _r(
            float(np.mean([np.nanmean(np.array(r["rollouts_per_prompt"], float)) for r in mine]))
        )
        series = [r["selector_metrics"] for r in mine]
        if all("alloc/predicted_informative_tried" in m for m in series):
            # the rule's calibration: informative groups it predicted among a step's tried
            # prompts, and how many were (steps with tried prompts)
            for key, name in (
                ("predicted_informative_tried", "predicted"),
                ("informative_tried", "realised"),
            ):
                arrays = [np.array(m[f"alloc/{key}"], float) for m in series]
                row[f"{name}_informative_tried"] = _r(
                    float(np.mean([np.nanmean(v) for v in arrays]))
                )
        hist = np.mean([np.mean(np.array(r["size_hist"], float), axis=0) for r in mine], axis=0)
        row["size_hist"] = _r(hist.tolist())
        out[entry.label] = row
    return out


def _ttb_cell(cell: dict[str, Any], of: int) -> str:
    if cell["mean"] is not None:
        lo, hi = cell["ci"]
        return f"{cell['mean']:.2f} [{lo:.2f}, {hi:.2f}]"
    if cell["reached"]:
        return f"{cell['mean_reached']:.2f} ({cell['reached']}/{of})"
    return f"never (0/{of})"


def _figure(runs_by_pool: dict[str, list[dict[str, Any]]], labels: list[str], path: str) -> None:
    """Held-out score against cumulative rollouts, mean over seeds, one panel per pool."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs_by_pool), figsize=(11, 4), sharey=False)
    for ax, (pool, runs) in zip(np.atleast_1d(axes), runs_by_pool.items(), strict=True):
        for label in labels:
            mine = [r for r in runs if r["label"] == label]
            x = curve(mine[0])[0]
            y = np.mean([curve(r)[1] for r in mine], axis=0)
            ax.plot(x, y, label=label, lw=1.2)
        ax.set_title(f"{pool} prompts (simulated)")
        ax.set_xlabel("cumulative rollouts")
        ax.set_ylabel("held-out pass rate")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = script_parser(__doc__ or "")
    parser.add_argument("--jobs", type=int, default=1, help="parallel processes")
    parser.add_argument("--seeds", type=seed_list, default="0-4", help="seeds: 'a-b' or a list")
    parser.add_argument("--stem", default="allocation_sim", help="output file name stem")
    parser.add_argument("--oracle", action="store_true", help="the bound (see above)")
    parser.add_argument(
        "--only", default="", help="comma list of entry labels to run (uniform always runs)"
    )
    args = parser.parse_args()
    command, seeds = command_line(), args.seeds
    entries: tuple[Entry, ...] = ENTRIES
    if args.only:
        wanted = {BASE, *args.only.split(",")}
        unknown = wanted - {e.label for e in ENTRIES}
        if unknown:
            parser.error(f"--only: unknown entries {', '.join(sorted(unknown))}")
        entries = tuple(e for e in ENTRIES if e.label in wanted)
    if args.oracle:
        entries = ORACLE
    payload: dict[str, Any] = {"command": command, "steps": STEPS, "batch": BATCH, "seeds": seeds}
    lines = [
        "# Per-prompt rollout allocation (simulator)",
        "",
        f"`{command}`; calibrated scenarios, {STEPS} steps x {BATCH} prompts x {ROLLOUTS} "
        f"rollouts (every entry spends {BATCH * ROLLOUTS} rollouts a step but the lean ones, "
        "whose budget is the named multiple of it), seeds "
        f"{', '.join(map(str, seeds))}. TTB by rollouts: cumulative rollouts to reach "
        f"50% / 75% / 100% of {BASE}'s gain on the same seed over {BASE}'s own, mean and "
        "bootstrap 95% interval over seeds (lower is better; (k/n): only k seeds got there, "
        "their mean). Delta: held-out score at the entry's last step minus uniform's at the "
        "same cumulative rollouts. Share: the entry's total rollouts over uniform's.",
    ]
    runs_by_pool = {}
    for pool, scenario in SCENARIOS.items():
        runs = cached_runs(
            "allocation", scenario, entries, seeds, STEPS, BATCH, ROLLOUTS, args.jobs, BASE
        )
        runs_by_pool[pool] = runs
        table = summarise(runs, seeds, entries)
        payload[pool] = {"scenario": scenario, "entries": table}
        k = len(seeds)
        lines += [
            "",
            f"## {pool} prompts ({scenario})",
            "",
            "| entry | TTB50 | TTB75 | TTB100 | delta at equal rollouts | best | share | "
            "informative / rollout | rollouts / prompt |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for label, row in table.items():
            d = row["final_delta"]
            delta = f"{d['mean']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]"
            lines.append(
                f"| {label} | {_ttb_cell(row['ttb50'], k)} | {_ttb_cell(row['ttb75'], k)} | "
                f"{_ttb_cell(row['ttb100'], k)} | {delta} | {row['best_score']:.3f} | "
                f"{row['rollouts_share']:.2f} | "
                f"{row['informative_per_rollout']:.3f} | {row['rollouts_per_prompt']:.2f} |"
            )
        calibrated = [(k, r) for k, r in table.items() if "predicted_informative_tried" in r]
        if calibrated:
            lines += [
                "",
                "The rule's calibration (informative groups a step among tried prompts):",
                "",
            ]
            lines += ["| entry | predicted | realised |", "|---|---:|---:|"]
            for label, row in calibrated:
                lines.append(
                    f"| {label} | {row['predicted_informative_tried']:.2f} | "
                    f"{row['realised_informative_tried']:.2f} |"
                )
        edges = [f"<= {e}" for e in SIZE_BINS] + [f"> {SIZE_BINS[-1]}"]
        lines += ["", "Group sizes (prompts per step, mean):", ""]
        lines += ["| entry | " + " | ".join(edges) + " |", "|---|" + "---:|" * len(edges)]
        for label, row in table.items():
            lines.append(f"| {label} | " + " | ".join(f"{v:.2f}" for v in row["size_hist"]) + " |")
    write_outputs(args.out, args.stem, payload, lines)
    plotted = (BASE, "greso", "greso+alloc", "greso+alloc-pilot", "greso+alloc-lean0.5")
    shown = [e.label for e in entries if e.label in plotted]
    _figure(runs_by_pool, shown, f"{args.out}/{args.stem}.png")


if __name__ == "__main__":
    main()
