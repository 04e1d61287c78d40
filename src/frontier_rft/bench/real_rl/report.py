"""Results of the real-RL benchmark: paired metrics per selector, effect checks, files.

Every ratio is paired: seed s of a method against seed s of uniform (same start model, pool,
held-out split and seed). Means over seeds come with percentile-bootstrap 95% intervals
(frontier_rft.bench.metrics). `write_results` writes them: <name>_full.json, <name>.json (a
fixed schema), <name>.md (frontier_rft.bench.real_rl.page) and the figures, drawn by
frontier_rft.reporting.real_rl_plots (imported there only: nothing else here imports torch
or matplotlib).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import (
    BSF_BETAS,
    TTB_TAUS,
    bsf,
    first_reach,
    mean_ci,
    paired_summary,
    time_summary,
    ttb,
)
from frontier_rft.bench.real_rl.device_report import device_comparison
from frontier_rft.bench.real_rl.effects import BASELINE, EFFECTS, holds
from frontier_rft.bench.real_rl.entries import ALLOCATION_FIELDS, BenchEntry
from frontier_rft.bench.real_rl.ledger import timed_in_one_run
from frontier_rft.bench.real_rl.page import (
    ResultFiles,
    markdown_report,
    page_header,
    seeds_above,
)
from frontier_rft.bench.real_rl.schedule import check_one_schedule
from frontier_rft.bench.real_rl.skip_cost import passes_over_groups, skip_cost_summary
from frontier_rft.bench.real_rl.testbed import Testbed, figure_context
from frontier_rft.core.jsonsafe import dumps_strict
from frontier_rft.sampling.allocation import Allocation
from frontier_rft.simulation.runner import spelled

__all__ = [
    "LAST_SHARE",
    "ResultFiles",
    "effect_checks",
    "headline_json",
    "headline_lines",
    "last_quarter_mean",
    "markdown_report",
    "summarize_runs",
    "tokens_derived",
    "write_json",
    "write_results",
]

SCORE = "held-out pass@1"
ETR = "train/effective_task_ratio"
MAX_PANELS = 9
"""Entries (uniform included) up to which the per-step figures show every entry that ran;
a longer run (every effect check) shows its main entries there, all in the rollouts figure."""
Runs = Mapping[str, Mapping[int, Mapping[str, Any]]]
"""Entry label -> seed -> one run's logged rows (`train`, `final`, `info`, ...)."""
Labels = Mapping[str, Any]
"""Entry label -> its summary row (summarize_runs' `labels`)."""


def _train_mean(run: Mapping[str, Any], key: str, lo: float = 0.0, hi: float = 1.0) -> float:
    """Mean of a per-step training metric over the share [lo, hi) of the run's steps."""
    rows = run["train"]
    a, b = int(lo * len(rows)), max(int(hi * len(rows)), int(lo * len(rows)) + 1)
    vals = [r[key] for r in rows[a:b] if key in r and r[key] is not None]
    return float(np.nanmean(vals)) if vals else float("nan")


LAST_SHARE = 0.25
"""The share of a run's evaluations, its last, averaged beside the final one: a verdict that
rests on one evaluation moves with it (by up to 0.02 between evaluations on the CPU testbed)."""


def last_quarter_mean(scores: Sequence[float], share: float = LAST_SHARE) -> float:
    """Mean of the last ceil(share x n) of a run's n evaluations (the final one included)."""
    if not scores:
        return float("nan")
    k = max(1, math.ceil(share * len(scores)))
    return float(np.mean(scores[-k:]))


def _paired_ttb(
    mine: Mapping[int, Mapping[str, Any]],
    base: Mapping[int, Mapping[str, Any]],
    seeds: Sequence[int],
    x: str,
    tau: float,
) -> dict[str, Any]:
    """TTB(tau) of `mine` against `base` along the logged axis `x` (eval_steps,
    eval_rollouts or eval_seconds), paired by seed, read at evaluation points (no
    interpolation); a seed whose entry never reached the target is censored at its budget
    (its cost so far over the baseline's time to the target), shown by `time_summary`."""
    values: list[float | None] = []
    budgets: list[float] = []
    for s in seeds:
        bx, by = base[s][x], base[s]["pass1"]
        p_init, p_best = float(by[0]), float(max(by))
        target = p_init + tau * (p_best - p_init)
        base_at = first_reach(bx, by, target, interpolate=False) if p_best > p_init else None
        if base_at is None or base_at <= bx[0]:  # no progress to measure against: left out
            values.append(None)
            budgets.append(0.0)
            continue
        values.append(ttb(mine[s][x], mine[s]["pass1"], bx, by, tau, interpolate=False))
        budgets.append((mine[s][x][-1] - mine[s][x][0]) / (base_at - bx[0]))
    return time_summary(values, budgets)


def summarize_runs(
    runs: Mapping[str, Mapping[int, Mapping[str, Any]]],
    start_states: Mapping[str, Any],
    notes: Mapping[str, str] | None = None,
    same_rows: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Per-label paired metrics from loaded runs: {label: {seed: real_rl.load_run(...)}};
    `same_rows` names, for an entry, the uniform entry of the same rows a step it is also
    compared with (BenchEntry.rows_of)."""
    if BASELINE not in runs:
        raise ValueError("the benchmark needs uniform runs: every metric is paired against them")
    base = runs[BASELINE]
    schedule = check_one_schedule(runs)  # every arm read at the same points, or refused
    out: dict[str, Any] = {
        "labels": {},
        "seeds": sorted(base),
        "baseline": BASELINE,
        "schedule": schedule.words(),
    }
    gains = [r["pass1"][-1] - r["pass1"][0] for r in base.values()]
    best_gains = [max(r["pass1"]) - r["pass1"][0] for r in base.values()]
    out["uniform_gain"] = mean_ci(gains)
    out["uniform_best_gain"] = mean_ci(best_gains)
    zero = [float(v["zero_variance"]) for v in start_states.values()]
    out["start_zero_variance_share"] = mean_ci(zero)
    for label, by_seed in runs.items():
        seeds = sorted(s for s in by_seed if s in base)
        row: dict[str, Any] = {"seeds": seeds, "note": (notes or {}).get(label, "")}
        for tau in TTB_TAUS:
            row[f"ttb{round(100 * tau)}"] = _paired_ttb(by_seed, base, seeds, "eval_steps", tau)
        for tau in TTB_TAUS:  # by rollouts: what entries that spend more a step are read by
            key = f"ttb{round(100 * tau)}_rollouts"
            row[key] = _paired_ttb(by_seed, base, seeds, "eval_rollouts", tau)
        # Wall-clock shares pair only seeds whose two runs were timed in one run (one
        # machine, one code): arms timed in different runs met different loads.
        together = [s for s in seeds if timed_in_one_run(by_seed[s], base[s])]
        row["timed_together"] = together
        row["ttb100_seconds"] = _paired_ttb(by_seed, base, together, "eval_seconds", 1.0)
        for beta in BSF_BETAS:  # t = beta x uniform's last step, or its total rollouts
            for suffix, x in (("", "eval_steps"), ("_rollouts", "eval_rollouts")):
                row[f"bsf{round(100 * beta)}{suffix}"] = paired_summary(
                    [
                        bsf(
                            by_seed[s][x],
                            by_seed[s]["pass1"],
                            base[s][x],
                            base[s]["pass1"],
                            beta,  # the best evaluation within the budget, none between
                        )
                        for s in seeds
                    ]
                )
        # Absolute cost to reach uniform's best score (the TTB(100%) target) per seed.
        for axis, x in (
            ("steps", "eval_steps"),
            ("rollouts", "eval_rollouts"),
            ("seconds", "eval_seconds"),
        ):
            row[f"{axis}_to_uniform_best"] = time_summary(
                [
                    first_reach(
                        by_seed[s][x], by_seed[s]["pass1"], max(base[s]["pass1"]), interpolate=False
                    )
                    for s in seeds
                ],
                [by_seed[s][x][-1] for s in seeds],
            )
        finals = {
            k: [by_seed[s]["final"].get(k) for s in seeds]
            for k in by_seed[seeds[0]]["final"]
            if k.startswith("eval/pass@")
        }
        row["final"] = {k: mean_ci(v) for k, v in finals.items()}
        row["final_minus_uniform"] = {
            k: mean_ci([by_seed[s]["final"][k] - base[s]["final"][k] for s in seeds])
            for k in finals
        }
        row["last_quarter_pass1_minus_uniform"] = mean_ci(
            [
                last_quarter_mean(by_seed[s]["pass1"]) - last_quarter_mean(base[s]["pass1"])
                for s in seeds
            ]
        )
        # Where the two spend different rollouts a step: at the smaller total of the pair.
        equal = [min(by_seed[s]["eval_rollouts"][-1], base[s]["eval_rollouts"][-1]) for s in seeds]
        row["pass1_minus_uniform_equal_rollouts"] = _diff_ci(
            [_score_at(by_seed[s], r) for s, r in zip(seeds, equal, strict=True)],
            [_score_at(base[s], r) for s, r in zip(seeds, equal, strict=True)],
        )
        row["start_pass1"] = mean_ci([by_seed[s]["pass1"][0] for s in seeds])
        row["best_pass1"] = mean_ci([max(by_seed[s]["pass1"]) for s in seeds])
        for name, key in (
            ("etr", "train/effective_task_ratio"),
            ("mean_abs_advantage", "train/mean_abs_advantage"),
            ("selected_success_rate", "train/success_rate"),
            ("step_s", "perf/step_s"),
            ("step_cpu_s", "perf/step_cpu_s"),
            ("select_ms", "perf/select_ms"),
            ("rollouts_per_step", "train/rollouts"),
        ):
            row[name] = mean_ci([_train_mean(by_seed[s], key) for s in seeds])
        row["etr_first_quarter"] = mean_ci(
            [_train_mean(by_seed[s], "train/effective_task_ratio", 0.0, 0.25) for s in seeds]
        )
        # How concentrated the training was: prompts with a mixed group at least once, and
        # the level mix of what was selected (a small pool revisited is where selection bites).
        row["distinct_mixed"] = mean_ci(
            [_train_last(by_seed[s], "curriculum/tasks/distinct_trained") for s in seeds]
        )
        trained = [distinct_trained(by_seed[s]) for s in seeds]
        row["distinct_trained"] = mean_ci([v for v, _ in trained])
        row["distinct_trained_source"] = sorted({how for _, how in trained})
        row["mixed_dropped_share"] = mean_ci([_mixed_dropped_share(by_seed[s]) for s in seeds])
        levels = sorted(
            k.removeprefix("train/selected_level").removesuffix("_share")
            for k in by_seed[seeds[0]]["train"][-1]
            if k.startswith("train/selected_level") and k.endswith("_share")
        )
        row["selected_level_share"] = {
            lv: mean_ci([_train_mean(by_seed[s], f"train/selected_level{lv}_share") for s in seeds])
            for lv in levels
        }
        row["final_level_success"] = {
            k.removeprefix("eval/success_rate_"): mean_ci(
                [by_seed[s]["final"].get(k) for s in seeds]
            )
            for k in sorted(by_seed[seeds[0]]["final"])
            if k.startswith("eval/success_rate_level")
        }
        row["evidence"] = by_seed[seeds[0]]["info"].get("evidence", {})
        row["given"] = by_seed[seeds[0]]["info"].get("given", [])
        row["total_seconds"] = mean_ci([by_seed[s]["eval_seconds"][-1] for s in seeds])
        # At the end of each run's own schedule: what it spent, as a share of uniform's.
        row["steps_run"] = mean_ci([len(by_seed[s]["train"]) for s in seeds])
        row["rollouts_vs_uniform"] = mean_ci(
            [by_seed[s]["eval_rollouts"][-1] / base[s]["eval_rollouts"][-1] for s in seeds]
        )
        row["cpu_vs_uniform"] = mean_ci(  # a ratio of seconds only where timed side by side
            [
                _train_sum(by_seed[s], "perf/step_cpu_s") / _train_sum(base[s], "perf/step_cpu_s")
                for s in together
            ]
        )
        # What the user pays besides rollouts, as the same shares of uniform's: tokens
        # generated and trained, and seconds (generation, update, whole steps: wall-clock
        # only compares when both arms ran side by side on one machine, as bench-rl's jobs
        # do, so those pair the `together` seeds only).
        for name, spent, paired in (
            ("generated_tokens_vs_uniform", generated_tokens, seeds),
            (
                "trained_tokens_vs_uniform",
                lambda run: _train_sum(run, "train/trained_tokens"),
                seeds,
            ),
            ("generate_s_vs_uniform", lambda run: _train_sum(run, "perf/generate_s"), together),
            ("update_s_vs_uniform", lambda run: _train_sum(run, "perf/update_s"), together),
            ("wall_vs_uniform", lambda run: _train_sum(run, "perf/step_s"), together),
        ):
            row[name] = mean_ci([_ratio(spent(by_seed[s]), spent(base[s])) for s in paired])
        row["generated_tokens_derived"] = [
            s for s in seeds if tokens_derived(by_seed[s]) or tokens_derived(base[s])
        ]
        # Each device's currency: cost to uniform's final score, scores at equal seconds
        row["device"] = device_comparison(by_seed, base, seeds)
        other = (same_rows or {}).get(label, "")
        if other in runs:
            paired = sorted(s for s in by_seed if s in runs[other])
            if paired:
                row["device_same_rows"] = {
                    "baseline": other,
                    **device_comparison(by_seed, runs[other], paired),
                }
        cost = _skip_cost(by_seed, base, seeds) if label != BASELINE else None
        if cost is not None:  # only then: the summaries of other entries keep their keys
            row["skip_cost"] = cost
        out["labels"][label] = row
    return out


def _skip_cost(
    by_seed: Mapping[int, Mapping[str, Any]],
    base: Mapping[int, Mapping[str, Any]],
    seeds: list[int],
) -> dict[str, Any] | None:
    """What an entry that passed over groups (fewer trained than uniform's B at some step,
    never more rolled out) cost per epoch against uniform (`skip_cost`); None for any other,
    or where the runs do not say uniform's B and pool size."""
    info = base[seeds[0]]["info"] if seeds else {}
    batch, pool = info.get("config", {}).get("batch_size"), info.get("train_tasks")
    if not isinstance(batch, int) or not isinstance(pool, int) or pool < batch:
        return None
    if not any(passes_over_groups(by_seed[s], batch) for s in seeds):
        return None
    return skip_cost_summary(
        {s: by_seed[s] for s in seeds}, {s: base[s] for s in seeds}, batch, pool // batch
    )


def _ratio(a: float, b: float) -> float:
    """a / b, nan where either is unknown (never logged) or b is not positive."""
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else float("nan")


def tokens_derived(run: Mapping[str, Any]) -> bool:
    """Whether `generated_tokens` derives a run's tokens (its record predates the count)."""
    return not math.isfinite(_train_sum(run, "train/generated_tokens"))


def generated_tokens(run: Mapping[str, Any]) -> float:
    """Completion tokens a run generated: its logged `train/generated_tokens`, or, for a
    record that predates that count, each step's mean completion length times its rollouts
    (exact up to the ledger's rounding where every rolled-out completion is a rollout)."""
    logged = _train_sum(run, "train/generated_tokens")
    if math.isfinite(logged):
        return logged
    rows = [r for r in run["train"] if r.get("train/completion_tokens") is not None]
    if not rows:
        return float("nan")
    return float(sum(r["train/completion_tokens"] * r.get("train/rollouts", 0.0) for r in rows))


DISTINCT_TRAINED = "train/distinct_prompts_trained"
"""The reference trainer's count of prompts whose mixed group reached the loss."""
DROPPED_MIXED = (
    "curriculum/dapo/overflow_dropped",
    "curriculum/dapo/superseded_dropped",
    "curriculum/dapo/stale_dropped",
)
"""Dynamic sampling's cumulative counts of mixed groups dropped without training."""


def distinct_trained(run: Mapping[str, Any]) -> tuple[float | None, str]:
    """Distinct prompts whose mixed group reached the loss, and how it is known: 'logged'
    (the trainer counted them), 'nothing dropped' (every mixed group rolled out was trained,
    so the selector's count is it) or 'not recorded' (groups were dropped and the record
    predates the trainer's count: only the rolled-out count is known)."""
    logged = _train_last(run, DISTINCT_TRAINED)
    if math.isfinite(logged):
        return logged, "logged"
    if not any(_train_last(run, key) > 0 for key in DROPPED_MIXED):  # nan: never logged
        return _train_last(run, "curriculum/tasks/distinct_trained"), "nothing dropped"
    return None, "not recorded"


def _mixed_dropped_share(run: Mapping[str, Any]) -> float:
    """Dynamic sampling's mixed groups dropped untrained, as a share of the mixed groups it
    rolled out (it trains mixed groups only); nan without dynamic sampling."""
    dropped = [v for v in (_train_last(run, k) for k in DROPPED_MIXED) if math.isfinite(v)]
    mixed = sum(dropped) + _train_sum(run, "train/groups_trained")
    if not dropped or not mixed > 0:  # no dynamic sampling, or no mixed group at all
        return float("nan")
    return sum(dropped) / mixed


def _train_sum(run: Mapping[str, Any], key: str) -> float:
    """A training metric summed over the run's steps (nan when never logged)."""
    vals = [r[key] for r in run["train"] if r.get(key) is not None]
    return float(np.sum(vals)) if vals else float("nan")


def _train_last(run: Mapping[str, Any], key: str) -> float:
    """A training metric's last logged value (nan when never logged)."""
    vals = [r[key] for r in run["train"] if r.get(key) is not None]
    return float(vals[-1]) if vals else float("nan")


def _diff_ci(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    return mean_ci([x - y for x, y in zip(a, b, strict=True)])


def _seeds_of(runs: Runs, *names: str) -> list[int]:
    """The seeds every one of `names` ran."""
    return sorted(set.intersection(*(set(runs[n]) for n in names)))


def _score_at(run: Mapping[str, Any], rollouts: float) -> float:
    """Held-out pass@1 of a run known after `rollouts` cumulative rollouts: its latest
    evaluation at or before them (never interpolated between evaluations)."""
    at = np.searchsorted(np.asarray(run["eval_rollouts"]), rollouts + 1e-9, side="right") - 1
    return float(run["pass1"][max(int(at), 0)])


def _by_rollouts(
    mine: Mapping[int, Mapping[str, Any]],
    base: Mapping[int, Mapping[str, Any]],
    seeds: Sequence[int],
    base_name: str,
) -> dict[str, Any]:
    """One entry against another, paired by seed, by cumulative rollouts: TTB at each tau of
    the base's gain, the held-out score where both have a curve (the two arms may end at
    different totals: at the smaller one), and the ratio of their totals."""
    measured: dict[str, Any] = {}
    for tau in TTB_TAUS:
        key = f"ttb{round(100 * tau)}_rollouts"
        measured[key] = _paired_ttb(mine, base, seeds, "eval_rollouts", tau)
    equal = [min(mine[k]["eval_rollouts"][-1], base[k]["eval_rollouts"][-1]) for k in seeds]
    diff = _diff_ci(
        [_score_at(mine[k], r) for k, r in zip(seeds, equal, strict=True)],
        [_score_at(base[k], r) for k, r in zip(seeds, equal, strict=True)],
    )
    measured[f"pass1_at_equal_rollouts_minus_{base_name}"] = {**diff, "above": seeds_above(diff)}
    measured["total_rollouts_ratio"] = paired_summary(
        [mine[k]["eval_rollouts"][-1] / base[k]["eval_rollouts"][-1] for k in seeds]
    )
    return measured


Measured = tuple[dict[str, Any], dict[str, Any]]
"""A measurement as the report shows it, and any values the verdict reads that it does not."""


def _early_etr(runs: Runs, labels: Labels, s: list[int], names: Sequence[str]) -> Measured:
    """Effective task ratio over the first quarter of training, and the paired differences."""
    bots, rho0, base = names
    early = {n: [_train_mean(runs[n][k], ETR, 0, 0.25) for k in s] for n in names}
    measured = {
        "etr_first_quarter": {n: mean_ci(v) for n, v in early.items()},
        "bots_minus_rho0": _diff_ci(early[bots], early[rho0]),
        "rho0_minus_uniform": _diff_ci(early[rho0], early[base]),
        "ttb100": {n: labels[n]["ttb100"] for n in (bots, rho0)},
    }
    return measured, {}


def _prioritized_pools(runs: Runs, labels: Labels, s: list[int], names: Sequence[str]) -> Measured:
    """Prompts never selected (against uniform's) and the pools' sizes at the end."""
    prio, base = names
    last = {n: [runs[n][k]["train"][-1] for k in s] for n in names}
    never = [r.get("prioritized/never_selected", np.nan) for r in last[prio]]
    unsolved = [r.get("prioritized/unsolved_pool", np.nan) for r in last[prio]]
    solved = [r.get("prioritized/solved_pool", np.nan) for r in last[prio]]
    n_tasks = runs[prio][s[0]]["info"]["train_tasks"]
    uni_never = [n_tasks - r.get("tasks/distinct_selected", np.nan) for r in last[base]]
    measured = {
        "never_selected": mean_ci(never),
        "uniform_never_selected": mean_ci(uni_never),
        "unsolved_pool_end": mean_ci(unsolved),
        "solved_pool_end": mean_ci(solved),
        "pool_size": n_tasks,
    }
    # nan-propagating means: a seed without the record fails the check
    means = {"never": np.mean(never), "uniform_never": np.mean(uni_never)}
    return measured, {**means, "unsolved": np.mean(unsolved), "quarter_pool": 0.25 * n_tasks}


def _level_shift(runs: Runs, labels: Labels, s: list[int], names: Sequence[str]) -> Measured:
    """The selected level's mean, last quarter minus first, and the paired difference."""
    sec, base = names
    key = "train/selected_level_mean"
    shift = {
        n: [_train_mean(runs[n][k], key, 0.75, 1.0) - _train_mean(runs[n][k], key, 0.0, 0.25)
            for k in s]
        for n in names
    }  # fmt: skip
    measured = {
        "level_shift_last_minus_first_quarter": {n: mean_ci(v) for n, v in shift.items()},
        "sec_minus_uniform": _diff_ci(shift[sec], shift[base]),
        "arms": labels[sec]["evidence"].get("categories", "given"),
    }
    return measured, {}


def _distance_to_half(runs: Runs, labels: Labels, s: list[int], names: Sequence[str]) -> Measured:
    """The selected prompts' success rate, its paired distance to 0.5, and METIS's judge."""
    metis, base = names
    sel = {n: [_train_mean(runs[n][k], "train/success_rate") for k in s] for n in names}
    dist = {n: [abs(v - 0.5) for v in vals] for n, vals in sel.items()}
    late = {
        f"{name}_last_quarter": mean_ci(
            [_train_mean(runs[metis][k], f"metis/{name}", 0.75, 1) for k in s]
        )
        for name in ("judge_failure_rate", "calibration_corr")
    }
    measured = {
        "selected_success_rate": {n: mean_ci(v) for n, v in sel.items()},
        "distance_to_half_metis_minus_uniform": _diff_ci(dist[metis], dist[base]),
        **late,
    }
    return measured, {}


def _judge_predictions(runs: Runs, labels: Labels, s: list[int], names: Sequence[str]) -> Measured:
    """The judge's predictions' mean and spread over the last quarter; seeds collapsed to
    0.25 (mean within 0.03, spread below 0.02)."""
    pm, ps = (
        {n: [_train_mean(runs[n][k], f"metis/prediction_{x}", 0.75, 1) for k in s] for n in names}
        for x in ("mean", "std")
    )
    lam1 = names[-1]
    collapsed = [
        abs(m - 0.25) < 0.03 and sd < 0.02 for m, sd in zip(pm[lam1], ps[lam1], strict=True)
    ]
    measured = {
        "prediction_mean_last_quarter": {n: mean_ci(v) for n, v in pm.items()},
        "prediction_std_last_quarter": {n: mean_ci(v) for n, v in ps.items()},
        "collapsed_seeds": int(sum(collapsed)),
    }
    return measured, {"seeds": len(collapsed)}


def _replay_ratios(runs: Runs, labels: Labels, s: list[int], names: Sequence[str]) -> Measured:
    """Each ratio's TTB(100%) and final score against uniform, and its replay slots."""
    slots = {n: _replay_slots(runs[n]) for n in names}
    measured = {
        "ttb100": {n: labels[n]["ttb100"] for n in names},
        "final_minus_uniform": {
            n: labels[n]["final_minus_uniform"].get("eval/pass@1") for n in names
        },
        # Equal slot counts make equal runs: those ratios are not compared at all.
        "replay_slots_per_batch": slots,
        "ratios_with_equal_slots": len(set(slots.values())) < len(slots),
    }
    return measured, {}


def _rollouts_vs(base_name: str) -> Callable[[Runs, Labels, list[int], Sequence[str]], Measured]:
    """The first entry against the second by cumulative rollouts (`_by_rollouts`)."""

    def measure(runs: Runs, labels: Labels, s: list[int], names: Sequence[str]) -> Measured:
        mine, base = names
        return _by_rollouts(runs[mine], runs[base], s, base_name), {}

    return measure


def _rollouts_and_prompts(
    runs: Runs, labels: Labels, s: list[int], names: Sequence[str]
) -> Measured:
    """`_by_rollouts` against dapo, and the distinct prompts each arm rolled out with a mixed
    group and trained on (both drop surplus mixed groups; None where the records do not
    count them)."""
    measured, _ = _rollouts_vs("dapo")(runs, labels, s, names)
    measured["distinct_mixed_rolled_out"] = {
        n: mean_ci([_train_last(runs[n][k], "curriculum/tasks/distinct_trained") for k in s])
        for n in names
    }
    measured["distinct_trained"] = {
        n: mean_ci([distinct_trained(runs[n][k])[0] for k in s]) for n in names
    }
    return measured, {}


MEASUREMENTS: dict[str, Callable[[Runs, Labels, list[int], Sequence[str]], Measured]] = {
    "early_etr": _early_etr,
    "prioritized_pools": _prioritized_pools,
    "level_shift": _level_shift,
    "distance_to_half": _distance_to_half,
    "judge_predictions": _judge_predictions,
    "replay_ratios": _replay_ratios,
    "rollouts_vs_dapo_and_prompts": _rollouts_and_prompts,
    "rollouts_vs_uniform": _rollouts_vs(BASELINE),
    "rollouts_vs_control": _rollouts_vs("control"),
}
"""The measurements the effects name: entries, paired seeds -> measured values."""


def effect_checks(runs: Runs, summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The papers' reported effects, checked on these runs: measurement, verdict, seeds."""
    checks = []
    for effect in EFFECTS:
        for binding in effect.each:
            names = [n.format(**binding) for n in effect.needs]
            ran = [n for n in names if n in runs]
            if len(ran) < (effect.at_least or len(names)):
                continue
            seeds = _seeds_of(runs, *ran)
            measured, hidden = MEASUREMENTS[effect.measure](runs, summary["labels"], seeds, ran)
            passed = {c.name: holds(c, {**measured, **hidden}) for c in effect.conditions}
            check = {
                "effect": effect.claim.format(**binding),
                "paper": effect.paper,
                "measured": measured,
                "reproduced": all(passed.values()),
            }
            checks.append(check | ({"detail": passed} if effect.detail else {}) | {"seeds": seeds})
    return checks


def _replay_slots(by_seed: Mapping[int, Mapping[str, Any]]) -> int:
    """Replay slots per batch of a frontier run, from its saved configuration."""
    from frontier_rft.selectors.frontier import FrontierReplayConfig, replay_slots

    config = next(iter(by_seed.values()))["info"]["config"]
    ratio = config["selector_overrides"].get("replay_ratio", FrontierReplayConfig.replay_ratio)
    return replay_slots(float(ratio), int(config["batch_size"]))


def headline_json(summary: Mapping[str, Any], labels: Sequence[str]) -> dict[str, Any]:
    """benchmarks/results/real_rl.json, in its fixed, documented schema."""
    out: dict[str, Any] = {
        "uniform_gain": summary["uniform_gain"]["mean"],
        "start_zero_variance_share": summary["start_zero_variance_share"]["mean"],
        "selectors": {},
    }
    for label in labels:
        row = summary["labels"][label]["ttb100"]
        out["selectors"][label] = {
            "seeds": summary["labels"][label]["seeds"],
            "ttb100": row["values"],
            "ttb100_mean": row["mean"],
            "ttb100_ci": row["ci"],
        }
    return out


def write_json(path: Path, data: Any, *, compact: bool = False) -> None:
    """Strict JSON (no NaN): undefined values are written as null; `compact`: one line, no
    spaces (a report's `_full.json` is read by programs, and the repository travels to a GPU
    lease under a 64 MiB limit)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = dumps_strict(data, separators=(",", ":")) if compact else dumps_strict(data, indent=1)
    path.write_text(text + "\n")


def write_results(
    runs: Mapping[str, Mapping[int, Mapping[str, Any]]],
    start: Mapping[str, Any],
    entries: Sequence[BenchEntry],
    tb: Testbed,
    files: ResultFiles,
    seconds: float,
) -> dict[str, Any]:
    """JSON + markdown + figures as `files` says; returns the summary."""
    from frontier_rft.reporting.real_rl_plots import (
        plot_effects,
        plot_learning_curves,
        plot_rollout_curves,
        plot_training,
        plot_ttb,
    )

    labels = [e.label for e in entries]
    main = [e.label for e in entries if e.role == "main"]
    same_rows = {e.label: e.rows_of for e in entries if e.rows_of}
    summary = summarize_runs(runs, start, {e.label: e.note for e in entries}, same_rows)
    checks = effect_checks(runs, summary)
    out, name, command, machine = files.out, files.name, files.command, files.machine
    full = {
        "command": command,
        "ledger": files.ledger or None,
        "definitions": dict(files.definitions) or None,
        "machine": machine,
        "seconds": seconds,
        "testbed": tb.to_json(),
        "entries": [
            {
                "label": e.label,
                "selector": e.selector,
                "overrides": e.overrides,
                "given": e.given,
                "role": e.role,
                "note": e.note,
                **_sampler_fields(e),
                "group_size": e.train.get("group_size"),
            }
            for e in entries
        ],
        "start_state": start,
        "summary": summary,
        "effects": checks,
    }
    write_json(out / f"{name}_full.json", full, compact=True)
    write_json(out / f"{name}.json", headline_json(summary, main))
    header = page_header(summary, files, tb, len(summary["seeds"]))
    (out / f"{name}.md").write_text(markdown_report(summary, checks, labels, header))
    panels = labels if len(labels) <= MAX_PANELS else main
    context = figure_context(tb, Path(files.ledger).name if files.ledger else "")
    plot_learning_curves(runs, panels, out / f"{name}_curves.png", context)
    plot_rollout_curves(runs, labels, out / f"{name}_rollouts.png", context)
    plot_ttb(summary, labels, out / f"{name}_ttb.png", context)
    plot_training(runs, panels, out / f"{name}_training.png", context)
    plot_effects(runs, out / f"{name}_effects.png")
    return summary


def _sampler_fields(entry: BenchEntry) -> dict[str, Any]:
    """An entry's step sampler as a report's entries name it: its dynamic sampling mode and
    the allocation flags it sets (None where off)."""
    allocation = entry.sampler.kind == Allocation.kind
    return {
        "dynamic_sampling": spelled(entry.sampler)["dynamic_sampling"],
        "allocation": entry.sampler_flags(ALLOCATION_FIELDS) if allocation else None,
    }


def headline_lines(summary: Mapping[str, Any], labels: Sequence[str]) -> list[str]:
    """TTB(100%) per label, one console line each."""
    out = []
    for label in labels:
        cell = summary["labels"][label]["ttb100"]
        if cell["mean"] is not None:
            out.append(
                f"{label:16s} TTB100 {cell['mean']:.2f} [{cell['ci'][0]:.2f}, {cell['ci'][1]:.2f}]"
            )
        else:
            out.append(f"{label:16s} TTB100 reached on {cell['reached']}/{len(cell['values'])}")
    return out
