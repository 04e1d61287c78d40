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
    ttb,
)
from frontier_rft.bench.real_rl.page import (
    ResultFiles,
    markdown_report,
    page_header,
    seeds_above,
)
from frontier_rft.bench.real_rl.testbed import (
    EFFECT_ENTRIES,
    MAIN_ENTRIES,
    BenchEntry,
    Testbed,
)
from frontier_rft.core.jsonsafe import dumps_strict

__all__ = [
    "ResultFiles",
    "effect_checks",
    "headline_json",
    "headline_lines",
    "markdown_report",
    "summarize_runs",
    "write_json",
    "write_results",
]

BASELINE = "uniform"
SCORE = "held-out pass@1"
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


def summarize_runs(
    runs: Mapping[str, Mapping[int, Mapping[str, Any]]],
    start_states: Mapping[str, Any],
    notes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Per-label paired metrics from loaded runs: {label: {seed: real_rl.load_run(...)}}."""
    if BASELINE not in runs:
        raise ValueError("the benchmark needs uniform runs: every metric is paired against them")
    base = runs[BASELINE]
    out: dict[str, Any] = {"labels": {}, "seeds": sorted(base), "baseline": BASELINE}
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
            key = f"ttb{round(100 * tau)}"
            row[key] = paired_summary(
                [
                    ttb(
                        by_seed[s]["eval_steps"],
                        by_seed[s]["pass1"],
                        base[s]["eval_steps"],
                        base[s]["pass1"],
                        tau,
                    )
                    for s in seeds
                ]
            )
        for tau in TTB_TAUS:  # by rollouts: what entries that spend more a step are read by
            row[f"ttb{round(100 * tau)}_rollouts"] = paired_summary(
                [
                    ttb(
                        by_seed[s]["eval_rollouts"],
                        by_seed[s]["pass1"],
                        base[s]["eval_rollouts"],
                        base[s]["pass1"],
                        tau,
                    )
                    for s in seeds
                ]
            )
        row["ttb100_seconds"] = paired_summary(
            [
                ttb(
                    by_seed[s]["eval_seconds"],
                    by_seed[s]["pass1"],
                    base[s]["eval_seconds"],
                    base[s]["pass1"],
                    1.0,
                )
                for s in seeds
            ]
        )
        for beta in BSF_BETAS:  # t = beta x uniform's last step, or its total rollouts
            for suffix, x in (("", "eval_steps"), ("_rollouts", "eval_rollouts")):
                row[f"bsf{round(100 * beta)}{suffix}"] = paired_summary(
                    [
                        bsf(
                            by_seed[s][x],
                            by_seed[s]["pass1"],
                            base[s][x],
                            base[s]["pass1"],
                            beta,
                            interpolate=x == "eval_rollouts",  # each entry its own grid
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
            row[f"{axis}_to_uniform_best"] = paired_summary(
                [
                    first_reach(by_seed[s][x], by_seed[s]["pass1"], max(base[s]["pass1"]))
                    for s in seeds
                ]
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
        trained = [_distinct_trained(by_seed[s]) for s in seeds]
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
        row["cpu_vs_uniform"] = mean_ci(
            [
                _train_sum(by_seed[s], "perf/step_cpu_s") / _train_sum(base[s], "perf/step_cpu_s")
                for s in seeds
            ]
        )
        out["labels"][label] = row
    return out


DISTINCT_TRAINED = "train/distinct_prompts_trained"
"""The reference trainer's count of prompts whose mixed group reached the loss."""
DROPPED_MIXED = (
    "curriculum/dapo/overflow_dropped",
    "curriculum/dapo/superseded_dropped",
    "curriculum/dapo/stale_dropped",
)
"""Dynamic sampling's cumulative counts of mixed groups dropped without training."""


def _distinct_trained(run: Mapping[str, Any]) -> tuple[float | None, str]:
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


def _excludes_zero(ci: Sequence[float] | None, sign: int) -> bool:
    return ci is not None and (ci[0] > 0 if sign > 0 else ci[1] < 0)


def _seeds_of(runs: Runs, *names: str) -> list[int]:
    """The seeds every one of `names` ran."""
    return sorted(set.intersection(*(set(runs[n]) for n in names)))


def _bots_rho0_starts_slowly(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """BOTS rho = 0: a slow start (early ETR like uniform's), implicit evidence speeds it up."""
    if not {"bots", "bots-rho0", BASELINE} <= set(runs):
        return []
    s = _seeds_of(runs, "bots", "bots-rho0", BASELINE)
    early = {
        n: [_train_mean(runs[n][k], "train/effective_task_ratio", 0, 0.25) for k in s]
        for n in ("bots", "bots-rho0", BASELINE)
    }
    d_rho = _diff_ci(early["bots"], early["bots-rho0"])
    d_uni = _diff_ci(early["bots-rho0"], early[BASELINE])
    ok = _excludes_zero(d_rho["ci"], +1)
    return [
        {
            "effect": "BOTS rho = 0 starts slowly (early ETR near uniform's; rho > 0 higher)",
            "paper": "BOTS sec. 4.2: rho = 0 behaves almost like random sampling early",
            "measured": {
                "etr_first_quarter": {n: mean_ci(v) for n, v in early.items()},
                "bots_minus_rho0": d_rho,
                "rho0_minus_uniform": d_uni,
                "ttb100": {n: labels[n]["ttb100"] for n in ("bots", "bots-rho0")},
            },
            "reproduced": bool(ok),
            "seeds": s,
        }
    ]


def _prioritized_starves_and_drains(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """Prioritized replay: unseen problems starve, problems drain into the unsolved pool."""
    if not {"prioritized", BASELINE} <= set(runs):
        return []
    s = _seeds_of(runs, "prioritized", BASELINE)
    last = {n: [runs[n][k]["train"][-1] for k in s] for n in ("prioritized", BASELINE)}
    never = [r.get("prioritized/never_selected", np.nan) for r in last["prioritized"]]
    unsolved = [r.get("prioritized/unsolved_pool", np.nan) for r in last["prioritized"]]
    solved = [r.get("prioritized/solved_pool", np.nan) for r in last["prioritized"]]
    n_tasks = runs["prioritized"][s[0]]["info"]["train_tasks"]
    uni_never = [n_tasks - r.get("tasks/distinct_selected", np.nan) for r in last[BASELINE]]
    starve = float(np.mean(never)) > float(np.mean(uni_never))
    drain = float(np.mean(unsolved)) >= 0.25 * n_tasks
    return [
        {
            "effect": "prioritized replay: unseen problems starve; the unsolved pool drains "
            "the heap",
            "paper": "prioritized replay: init priority below live ones starves unseen "
            "problems; many problems end in the unsolved pool",
            "measured": {
                "never_selected": mean_ci(never),
                "uniform_never_selected": mean_ci(uni_never),
                "unsolved_pool_end": mean_ci(unsolved),
                "solved_pool_end": mean_ci(solved),
                "pool_size": n_tasks,
            },
            "reproduced": bool(starve and drain),
            "detail": {"starvation": bool(starve), "drain_over_25pct": bool(drain)},
            "seeds": s,
        }
    ]


def _sec_shifts_to_hard_levels(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """SEC: the selected level shifts from easy to hard over training."""
    if not {"sec", BASELINE} <= set(runs):
        return []
    s = _seeds_of(runs, "sec", BASELINE)
    shift = {}
    for n in ("sec", BASELINE):
        shift[n] = [
            _train_mean(runs[n][k], "train/selected_level_mean", 0.75, 1.0)
            - _train_mean(runs[n][k], "train/selected_level_mean", 0.0, 0.25)
            for k in s
        ]
    d = _diff_ci(shift["sec"], shift[BASELINE])
    return [
        {
            "effect": "SEC shifts its category shares from easy to hard levels",
            "paper": "SEC fig. 3: the share of harder levels grows over training",
            "measured": {
                "level_shift_last_minus_first_quarter": {n: mean_ci(v) for n, v in shift.items()},
                "sec_minus_uniform": d,
                "arms": labels["sec"]["evidence"].get("categories", "given"),
            },
            "reproduced": bool(_excludes_zero(d["ci"], +1)),
            "seeds": s,
        }
    ]


def _metis_stays_near_half(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """METIS: the selected prompts' rollout mean stays near 0.5."""
    if not {"metis", BASELINE} <= set(runs):
        return []
    s = _seeds_of(runs, "metis", BASELINE)
    sel = {
        n: [_train_mean(runs[n][k], "train/success_rate") for k in s] for n in ("metis", BASELINE)
    }
    dist = {n: [abs(v - 0.5) for v in vals] for n, vals in sel.items()}
    d = _diff_ci(dist["metis"], dist[BASELINE])
    return [
        {
            "effect": "METIS keeps the selected prompts' rollout mean near 0.5",
            "paper": "METIS: selected prompts' mean reward stays near 0.5 (high variance)",
            "measured": {
                "selected_success_rate": {n: mean_ci(v) for n, v in sel.items()},
                "distance_to_half_metis_minus_uniform": d,
                "judge_failure_rate_last_quarter": mean_ci(
                    [_train_mean(runs["metis"][k], "metis/judge_failure_rate", 0.75, 1) for k in s]
                ),
                "calibration_corr_last_quarter": mean_ci(
                    [_train_mean(runs["metis"][k], "metis/calibration_corr", 0.75, 1) for k in s]
                ),
            },
            "reproduced": bool(_excludes_zero(d["ci"], -1)),
            "seeds": s,
        }
    ]


def _metis_lam1_collapses(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """METIS lam = 1: the judge's predictions collapse to 0.25."""
    if not {"metis", "metis-lam1", BASELINE} <= set(runs):
        return []
    s1 = _seeds_of(runs, "metis", "metis-lam1")
    pm = {
        n: [_train_mean(runs[n][k], "metis/prediction_mean", 0.75, 1) for k in s1]
        for n in ("metis", "metis-lam1")
    }
    ps = {
        n: [_train_mean(runs[n][k], "metis/prediction_std", 0.75, 1) for k in s1]
        for n in ("metis", "metis-lam1")
    }
    collapsed = [
        abs(m - 0.25) < 0.03 and sd < 0.02
        for m, sd in zip(pm["metis-lam1"], ps["metis-lam1"], strict=True)
    ]
    return [
        {
            "effect": "METIS lam = 1 collapses the judge's predictions to 0.25",
            "paper": "METIS sec. 5.3: lam = 1 makes every prediction 0.25",
            "measured": {
                "prediction_mean_last_quarter": {n: mean_ci(v) for n, v in pm.items()},
                "prediction_std_last_quarter": {n: mean_ci(v) for n, v in ps.items()},
                "collapsed_seeds": int(sum(collapsed)),
            },
            "reproduced": bool(collapsed) and all(collapsed),
            "seeds": s1,
        }
    ]


def _frontier_ratios_all_help(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """Frontier replay ratios 0.05 / 0.10 / 0.15: all help mildly."""
    ratios = [n for n in ("frontier-r0.05", "frontier", "frontier-r0.15") if n in runs]
    if len(ratios) <= 1:
        return []
    measured = {n: labels[n]["ttb100"] for n in ratios}
    slots = {n: _replay_slots(runs[n]) for n in ratios}
    helps = [
        labels[n]["ttb100"]["ci"] is not None and labels[n]["ttb100"]["ci"][1] < 1.0 for n in ratios
    ]
    return [
        {
            "effect": "frontier replay ratios 0.05 / 0.10 / 0.15 each speed training mildly",
            "paper": "frontier replay for RLOO: 0.05-0.15 all help a little on Countdown",
            "measured": {
                "ttb100": measured,
                "final_minus_uniform": {
                    n: labels[n]["final_minus_uniform"].get("eval/pass@1") for n in ratios
                },
                # Equal slot counts make equal runs: those ratios are not compared at all.
                "replay_slots_per_batch": slots,
                "ratios_with_equal_slots": len(set(slots.values())) < len(slots),
            },
            "reproduced": all(helps),
            "seeds": _seeds_of(runs, *ratios),
        }
    ]


def _score_at(run: Mapping[str, Any], rollouts: float) -> float:
    """Held-out pass@1 of a run after `rollouts` cumulative rollouts (linear between
    evaluations)."""
    return float(np.interp(rollouts, run["eval_rollouts"], run["pass1"]))


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
        measured[f"ttb{round(100 * tau)}_rollouts"] = paired_summary(
            [
                ttb(
                    mine[k]["eval_rollouts"],
                    mine[k]["pass1"],
                    base[k]["eval_rollouts"],
                    base[k]["pass1"],
                    tau,
                )
                for k in seeds
            ]
        )
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


def _greso_beats_dapo_per_rollout(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """GRESO: its skip inside dynamic sampling reaches DAPO's score with fewer rollouts
    (`greso-dapo` against `dapo`, paired by seed, by rollouts)."""
    if not {"greso-dapo", "dapo"} <= set(runs):
        return []
    greso, dapo = runs["greso-dapo"], runs["dapo"]
    s = _seeds_of(runs, "greso-dapo", "dapo")
    # Both arms run the same steps, so they end at different rollout counts.
    measured = _by_rollouts(greso, dapo, s, "dapo")
    # Both drop surplus mixed groups: the prompts rolled out with a mixed group, and those
    # that reached the loss where the records count them (None where they do not).
    measured["distinct_mixed_rolled_out"] = {
        n: mean_ci([_train_last(r[k], "curriculum/tasks/distinct_trained") for k in s])
        for n, r in (("greso-dapo", greso), ("dapo", dapo))
    }
    measured["distinct_trained"] = {
        n: mean_ci([_distinct_trained(r[k])[0] for k in s])
        for n, r in (("greso-dapo", greso), ("dapo", dapo))
    }
    ttb100 = measured["ttb100_rollouts"]
    faster = ttb100["ci"] is not None and ttb100["ci"][1] < 1.0
    no_loss = not _excludes_zero(measured["pass1_at_equal_rollouts_minus_dapo"]["ci"], -1)
    return [
        {
            "effect": "GRESO's skip inside dynamic sampling reaches DAPO's best held-out "
            "pass@1 with fewer rollouts, at no loss of held-out score",
            "paper": "GRESO (arXiv 2506.02177): up to 2.4x faster rollout than DAPO's dynamic "
            "sampling, without loss of accuracy",
            "measured": measured,
            "reproduced": bool(faster and no_loss),
            "detail": {"fewer_rollouts_to_dapo_best": bool(faster), "no_score_loss": bool(no_loss)},
            "seeds": s,
        }
    ]


PER_PROMPT_ROLLOUT_ENTRIES = tuple(
    e.label
    for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES)
    if e.allocation is not None or e.group_size is not None or e.pilot_commit is not None
)
"""Entries that change how many rollouts a prompt gets: an allocation, their own group size
(the lean allocation's control), or Pilot-Commit itself (its own claim, tested on it)."""
PILOT_COMMIT_RATIO = 1 / 1.5
"""Pilot-Commit's smallest reported saving: 1.5x fewer cumulative rollouts than GRPO."""


def _allocation_saves_rollouts(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """Pilot-Commit / Knapsack RL: per-prompt allocation reaches GRPO's (uniform's) best
    held-out score with at most 1/1.5 of its cumulative rollouts, at no loss of score (also
    asked of the control that only shrinks the groups)."""
    out = []
    for name in PER_PROMPT_ROLLOUT_ENTRIES:
        if not {name, BASELINE} <= set(runs):
            continue
        s = _seeds_of(runs, name, BASELINE)
        # A lean budget ends at fewer rollouts than uniform in the same steps.
        measured = _by_rollouts(runs[name], runs[BASELINE], s, BASELINE)
        ttb100 = measured["ttb100_rollouts"]
        every_seed = ttb100["mean"] is not None
        saves = every_seed and ttb100["mean"] <= PILOT_COMMIT_RATIO
        ci = measured["pass1_at_equal_rollouts_minus_uniform"]["ci"]
        no_loss = ci is not None and ci[0] >= -0.005
        out.append(
            {
                "effect": f"{name} reaches uniform's best held-out pass@1 on every seed with "
                f"<= {PILOT_COMMIT_RATIO:.2f}x its cumulative rollouts, at no loss of held-out "
                "score at equal rollouts (CI lower >= -0.005)",
                "paper": "Pilot-Commit: 1.5-1.9x fewer cumulative rollouts than GRPO to a "
                "target accuracy; Knapsack RL: uniform allocation needs ~2x the compute",
                "measured": measured,
                "reproduced": bool(saves and no_loss),
                "detail": {
                    "reached_on_every_seed": bool(every_seed),
                    "ttb100_within_pilot_commit": bool(saves),
                    "no_score_loss": bool(no_loss),
                },
                "seeds": s,
            }
        )
    return out


LEAN_CONTROLS = (("greso-alloc-lean", "uniform-n4"), ("greso-alloc-lean-long", "uniform-n4-long"))
"""A lean allocation and its control: the same per-step budget and steps in equal groups."""


def _lean_allocation_beats_equal_groups(runs: Runs, labels: Labels) -> list[dict[str, Any]]:
    """A lean budget spread by the posterior against the same budget in equal groups:
    `greso-alloc-lean` (0.5x uniform's rollouts a step) against `uniform-n4` (4 rollouts a
    prompt), by rollouts, and their runs to uniform's total. What the allocation adds
    beyond smaller groups."""
    out = []
    for lean, control in LEAN_CONTROLS:
        if not {lean, control} <= set(runs):
            continue
        s = _seeds_of(runs, lean, control)
        measured = _by_rollouts(runs[lean], runs[control], s, "control")
        ci = measured["pass1_at_equal_rollouts_minus_control"]["ci"]
        out.append(
            {
                "effect": f"{lean} scores above {control} (the same per-step budget in equal "
                "groups of 4) at equal rollouts",
                "paper": "Knapsack RL / Pilot-Commit: where the rollouts go matters, not only "
                "how many a step spends",
                "measured": measured,
                "reproduced": _excludes_zero(ci, +1),
                "seeds": s,
            }
        )
    return out


EFFECTS: tuple[Callable[[Runs, Labels], list[dict[str, Any]]], ...] = (
    _bots_rho0_starts_slowly,
    _prioritized_starves_and_drains,
    _sec_shifts_to_hard_levels,
    _metis_stays_near_half,
    _metis_lam1_collapses,
    _frontier_ratios_all_help,
    _greso_beats_dapo_per_rollout,
    _allocation_saves_rollouts,
    _lean_allocation_beats_equal_groups,
)
"""The papers' reported effects, one check each (none when the runs lack its entries,
testbed.EFFECT_ENTRIES): measurement, verdict, seeds."""


def effect_checks(runs: Runs, summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The papers' reported effects, checked on these runs: measurement, verdict, reason."""
    return [check for effect in EFFECTS for check in effect(runs, summary["labels"])]


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


def write_json(path: Path, data: Any) -> None:
    """Strict JSON (no NaN): undefined values are written as null."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_strict(data, indent=1) + "\n")


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
    summary = summarize_runs(runs, start, {e.label: e.note for e in entries})
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
                "dynamic_sampling": e.dynamic_sampling,
                "allocation": e.allocation,
                "group_size": e.group_size,
            }
            for e in entries
        ],
        "start_state": start,
        "summary": summary,
        "effects": checks,
    }
    write_json(out / f"{name}_full.json", full)
    write_json(out / f"{name}.json", headline_json(summary, main))
    header = page_header(summary, files, tb, len(summary["seeds"]))
    (out / f"{name}.md").write_text(markdown_report(summary, checks, labels, header))
    plot_learning_curves(runs, main, out / f"{name}_curves.png")
    plot_rollout_curves(runs, labels, out / f"{name}_rollouts.png")
    plot_ttb(summary, labels, out / f"{name}_ttb.png")
    plot_training(runs, main, out / f"{name}_training.png")
    plot_effects(runs, out / f"{name}_effects.png")
    return summary


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
