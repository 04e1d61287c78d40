"""What each entry costs in each currency, paired by seed against a baseline entry, read at
evaluation points only.

For every entry against uniform (and against its own same-rows baseline, `BenchEntry.rows_of`),
along each axis (steps, passes over the prompts, rollouts, seconds projected on each shipped
step-cost curve):

- **Time to a named target**, each seed's target taken from the baseline run of the same seed
  (`TARGETS`): the first reading point at or above it, never interpolated between
  evaluations. A seed that does not reach it within the arm's budget is censored there; each
  arm's time is its survival-style (Kaplan-Meier) median over seeds with a bootstrap CI, and
  the entry's cost is the ratio of its median to the baseline's (`metrics.median_ratio`),
  shown with k/n reached. No mean is ever taken over the seeds that reached.
- **Scores at equal cost**: pass@1 and pass@k at the last point both arms reached (the smaller
  of the pair's totals), and pass@1 averaged over the last quarter of that span; on passes
  also the distinct prompts trained by then.

Reading points: where the runs were evaluated on a grid of that axis (`TrainConfig.eval_grid`,
the same for every arm: `schedule.check_one_schedule`), its points, each scored by the state
that held there; otherwise the runs' evaluation steps, each arm's own positions on the axis
(labelled `evaluations`: on a cost axis an arm that spends more a step is read less often).
Measured CPU time is compared only whole-run and only for pairs timed side by side in one
bench run (`ledger.timed_in_one_run`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import mean_ci, median_ratio, time_summary
from frontier_rft.bench.real_rl.ledger import timed_in_one_run
from frontier_rft.training.eval_grid import cumulative, parse_grid, serving_steps

__all__ = [
    "AXES",
    "TARGETS",
    "cell_text",
    "device_comparison",
    "device_table",
    "readings",
    "target_of",
]

AXES: dict[str, str] = {
    "steps": "steps",
    "passes": "passes over the prompts",
    "rollouts": "rollouts",
    "h200": "H200 s (projected)",
    "cpu": "CPU s (projected)",
}
"""Each axis a cost is read along (a key of training.eval_grid.GRID_AXES, or steps) and its
column name."""
TARGETS: dict[str, str] = {
    "plateau": "uniform's plateau: the mean of its held-out pass@1 over the last quarter of its "
    "evaluations (one evaluation is noisy; the mean of several is where uniform sits)",
    "half": "half of uniform's gain to its plateau (the start's pass@1 plus half the way to "
    "the plateau): reached early, where steps to a target still depend on the step's size",
}
"""The targets a time is read to, named before the runs, each from the baseline's own run of
the seed."""
LAST_SHARE = 0.25
"""The last quarter of a span: its points at or beyond 3/4 of it."""

Run = Mapping[str, Any]


def _spent(run: Run, axis: str) -> list[float]:
    """Cost along `axis` before step 0 and after each logged step of `run` (its steps'
    costs are cached by shape: eval_grid.projected_step_seconds)."""
    rows = run["train"]
    if axis == "steps":
        return [float(i) for i in range(len(rows) + 1)]
    info = run.get("info", {})
    config = info.get("config", {}) if isinstance(info.get("config"), Mapping) else {}
    if axis == "passes" and rows and all("train/prompts" not in r for r in rows):
        # a record from before the trainer logged its prompts: a plain step's groups
        group = max(1, int(config.get("group_size", 8) or 8))
        rows = [{"train/prompts": float(r.get("train/rollouts", 0.0)) / group} for r in rows]
    return cumulative(
        axis,
        rows,
        pool_size=int(info.get("train_tasks") or config.get("train_size") or 1),
        length=int(config.get("max_new_tokens", 24) or 24),
    )


def _grid_spacing(run: Run, axis: str) -> float | None:
    config = run.get("info", {}).get("config", {})
    for line in parse_grid(tuple(config.get("eval_grid", ()))):
        if line.axis == axis:
            return line.spacing
    return None


def readings(run: Run, axis: str, key: str = "pass1") -> tuple[list[float], list[float], str]:
    """(positions, scores, 'grid' or 'evaluations'): where `run` is read along `axis`, and
    the score there (`key`: 'pass1' or a pass@k of run['passk'])."""
    scores = run["pass1"] if key == "pass1" else run["passk"][key]
    by_step = dict(zip(run["eval_steps"], scores, strict=True))
    spent = _spent(run, axis)
    spacing = _grid_spacing(run, axis)
    if spacing is None:
        return [spent[s] for s in run["eval_steps"]], list(scores), "evaluations"
    points = serving_steps(spent, spacing)
    missing = [s for _, s in points if s not in by_step]
    if missing:
        raise ValueError(
            f"a run on the {axis} grid was not evaluated at the states its points need "
            f"(steps {missing[:5]}): its records are incomplete"
        )
    return [g for g, _ in points], [by_step[s] for _, s in points], "grid"


def first_at(positions: Sequence[float], scores: Sequence[float], target: float) -> float | None:
    """The first position whose score reaches `target` (None: never)."""
    for x, y in zip(positions, scores, strict=True):
        if y >= target - 1e-12:
            return float(x)
    return None


def _at(positions: Sequence[float], scores: Sequence[float], x: float) -> float:
    """The score known at `x`: the latest reading at or before it (no interpolation)."""
    i = int(np.searchsorted(np.asarray(positions), x + 1e-9, side="right")) - 1
    return float(scores[max(i, 0)])


def target_of(base: Run, name: str) -> float:
    """Target `name` (TARGETS) from a baseline run."""
    scores = base["pass1"]
    k = max(1, int(np.ceil(LAST_SHARE * len(scores))))
    plateau = float(np.mean(scores[-k:]))
    if name == "plateau":
        return plateau
    return float(scores[0] + 0.5 * (plateau - scores[0]))


def device_comparison(
    mine: Mapping[int, Run], base: Mapping[int, Run], seeds: Sequence[int]
) -> dict[str, Any]:
    """Times to each target along each axis (censored, median ratios), scores at equal cost,
    the informative groups a step and whole-run CPU time, paired by seed."""
    out: dict[str, Any] = {"seeds": list(seeds), "read": {}}
    for axis in AXES:
        mine_read = {s: readings(mine[s], axis) for s in seeds}
        base_read = {s: readings(base[s], axis) for s in seeds}
        out["read"][axis] = sorted({r[2] for r in (*mine_read.values(), *base_read.values())})
        for name in TARGETS:
            targets = {s: target_of(base[s], name) for s in seeds}
            a = [first_at(*mine_read[s][:2], targets[s]) for s in seeds]
            b = [first_at(*base_read[s][:2], targets[s]) for s in seeds]
            a_budget = [mine_read[s][0][-1] for s in seeds]
            b_budget = [base_read[s][0][-1] for s in seeds]
            out[f"to_{name}_{axis}"] = median_ratio(a, a_budget, b, b_budget)
            out[f"time_{name}_{axis}"] = time_summary(a, a_budget)
            out[f"base_time_{name}_{axis}"] = time_summary(b, b_budget)
            if axis == "steps":  # how many evaluations came before: the fit's resolution
                out[f"evals_{name}_steps"] = [
                    _before(mine_read[s][0], t) for s, t in zip(seeds, a, strict=True)
                ]
                out[f"base_evals_{name}_steps"] = [
                    _before(base_read[s][0], t) for s, t in zip(seeds, b, strict=True)
                ]
        if axis == "steps":
            continue
        ends = [min(mine_read[s][0][-1], base_read[s][0][-1]) for s in seeds]
        out[f"equal_{axis}_pass1"] = mean_ci(
            [
                _at(*mine_read[s][:2], t) - _at(*base_read[s][:2], t)
                for s, t in zip(seeds, ends, strict=True)
            ]
        )
        out[f"equal_{axis}_last_quarter"] = mean_ci(
            [
                _last_quarter(mine_read[s], t) - _last_quarter(base_read[s], t)
                for s, t in zip(seeds, ends, strict=True)
            ]
        )
        for k in sorted(
            set(mine[seeds[0]].get("passk", {})) & set(base[seeds[0]].get("passk", {}))
        ):
            out[f"equal_{axis}_{k.removeprefix('eval/')}"] = mean_ci(
                [
                    _at(*readings(mine[s], axis, k)[:2], t)
                    - _at(*readings(base[s], axis, k)[:2], t)
                    for s, t in zip(seeds, ends, strict=True)
                ]
            )
        if axis == "passes":
            out["equal_passes_at"] = mean_ci(ends)
            out["equal_passes_distinct"] = mean_ci(
                [
                    _distinct_by(mine[s], t) - _distinct_by(base[s], t)
                    for s, t in zip(seeds, ends, strict=True)
                ]
            )
    out["informative_per_step"] = mean_ci(
        [_informative(mine[s]) - _informative(base[s]) for s in seeds]
    )
    out["rows_per_step"] = mean_ci([_rows_per_step(mine[s]) for s in seeds])
    together = [s for s in seeds if timed_in_one_run(mine[s], base[s])]
    out["cpu_timed_together"] = together
    out["cpu_whole_run"] = mean_ci([_cpu(mine[s]) / _cpu(base[s]) for s in together])
    return out


def _before(positions: Sequence[float], reached: float | None) -> int:
    """Evaluations after the start and before the one that reached (all, if none did)."""
    return sum(1 for x in positions[1:] if reached is None or x < reached - 1e-9)


def _last_quarter(read: tuple[list[float], list[float], str], end: float) -> float:
    """pass@1 averaged over the reading points in the last quarter of [0, end] (the latest
    reading at or before each)."""
    positions, scores, _ = read
    inside = [x for x in positions if (1 - LAST_SHARE) * end - 1e-9 <= x <= end + 1e-9]
    return float(np.mean([_at(positions, scores, x) for x in inside or [end]]))


def _distinct_by(run: Run, passes: float) -> float:
    """Distinct prompts trained by the state that holds at `passes` over the prompts."""
    spent = _spent(run, "passes")
    step = int(np.searchsorted(np.asarray(spent), passes + 1e-9, side="right")) - 1
    if step <= 0:
        return 0.0
    row = run["train"][step - 1]
    value = row.get("train/distinct_prompts_trained", row.get("curriculum/tasks/distinct_trained"))
    return float("nan") if value is None else float(value)


def _cpu(run: Run) -> float:
    return float(sum(float(r.get("perf/step_cpu_s", 0.0)) for r in run["train"])) or float("nan")


def _informative(run: Run) -> float:
    vals = [r.get("train/informative_groups") for r in run["train"]]
    got = [float(v) for v in vals if v is not None]
    return float(np.mean(got)) if got else float("nan")


def _rows_per_step(run: Run) -> float:
    return float(run["eval_rollouts"][-1]) / max(1, len(run["train"]))


def cell_text(
    cell: Mapping[str, Any] | None,
    digits: int = 2,
    signed: bool = False,
    unit: str = "x",
    with_ci: bool = True,
) -> str:
    """A mean and its CI ('-' where there is none)."""
    if not cell or cell.get("mean") is None:
        return "-"
    fmt = f"{{:+.{digits}f}}" if signed else f"{{:.{digits}f}}"
    text = fmt.format(cell["mean"]) + ("" if signed else unit)
    if cell.get("ci") and with_ci:
        text += " [" + ", ".join(fmt.format(v) for v in cell["ci"]) + "]"
    return text


def _ratio_cell(cell: Mapping[str, Any] | None) -> str:
    """A median ratio with its CI and k/n reached: '0.41 [0.24, 0.60]', with '(k/n)' where
    some seed never reached; '> budget (k/n)' where the median lies beyond the budgets."""
    if not cell:
        return "-"
    n, k = cell["n"], cell["reached"]
    lo, hi = cell["ci"] or (None, None)
    ends = ", ".join("beyond" if v is None else f"{v:.2f}" for v in (lo, hi))
    counted = "" if k == n else f" ({k}/{n} reached)"
    if cell["ratio"] is None:
        return f"not reached by half{counted}"
    return f"{cell['ratio']:.2f}x [{ends}]{counted}"


def device_table(
    comparisons: Mapping[str, Mapping[str, Any]], baseline: str, target: str = "plateau"
) -> list[str]:
    """Markdown: one row per entry: the ratio of its median cost to `target` over the
    baseline's on each axis, and its scores at equal projected H200 seconds and passes."""
    lines = [
        f"| entry (against {baseline}) | rows a step | "
        + " | ".join(AXES[a] for a in AXES)
        + " | pass@1 at equal H200 s | last quarter | pass@k at equal H200 s "
        "| pass@1 at equal passes | distinct prompts trained by then | informative groups a "
        "step | CPU time, whole run |",
        "|---|---:|" + "---:|" * len(AXES) + "---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, c in comparisons.items():
        passk = next(
            (k for k in sorted(c) if k.startswith("equal_h200_pass@") and k != "equal_h200_pass1"),
            None,
        )
        rows = cell_text(c["rows_per_step"], 0, unit="", with_ci=False)
        cpu = (
            cell_text(c["cpu_whole_run"], 2)
            if c["cpu_timed_together"]
            else "not timed side by side"
        )
        lines.append(
            f"| {label} ({len(c['seeds'])} seeds) | {rows} | "
            + " | ".join(_ratio_cell(c.get(f"to_{target}_{a}")) for a in AXES)
            + f" | {cell_text(c.get('equal_h200_pass1'), 3, True)}"
            f" | {cell_text(c.get('equal_h200_last_quarter'), 3, True)}"
            f" | {cell_text(c[passk], 3, True) if passk else '-'}"
            f" | {cell_text(c.get('equal_passes_pass1'), 3, True)}"
            f" | {cell_text(c.get('equal_passes_distinct'), 0, True)}"
            f" | {cell_text(c['informative_per_step'], 1, True)} | {cpu} |"
        )
    return lines
