"""Fitting the simulated learner to the committed real-RL results: a grid search of its
mechanism's parameters on the fit seeds, one learning rate per point fitted to uniform's real
gain (`fit`: each pool size alone, with the other candidate mechanisms; `fit_joint`: both pool
sizes at once, whose best point is the calibrated scenarios). Every point is cached, so a
rerun only summarises. The grids come from the results JSON they produced (`read_grids`),
each with why it was run. docs/simulation.md says what is fitted and the guards against
overfitting.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import spearman
from frontier_rft.bench.scripts import write_outputs
from frontier_rft.bench.simulation.vs_real import (
    FIT_SEEDS,
    SE_FLOOR,
    TARGET_SELECTORS,
    TESTBED,
    base_scenario,
    deltas,
    loss,
    point_config,
    point_key,
    provenance,
    real_results,
    run_cached,
    run_entries,
    static_fit,
)
from frontier_rft.bench.simulation.vs_real import point_text as _point_text
from frontier_rft.bench.simulation.vs_real import signed as _f
from frontier_rft.simulation.calibration import fit_learning_rate
from frontier_rft.simulation.scenario import SCENARIOS

__all__ = ["ALTERNATIVES", "fit", "fit_joint", "grid_points", "read_grids"]

ALTERNATIVES: tuple[dict[str, Any], ...] = (
    {"candidate": "transfer by construction"},
    *({"candidate": "fading transfer", "transfer_halflife": h} for h in (2.0, 4.0, 8.0)),
    *(
        {
            "candidate": "interference without normalisation",
            "optimizer": "sgd",
            "specific_share": 4.0,
            "memorise": m,
            "interfere": k,
        }
        for m in (40.0, 120.0, 360.0)
        for k in (8.0, 16.0, 24.0)
    ),
)
"""The other candidate mechanisms, each fitted the same way (docs/simulation.md)."""


def interference_points(
    grids: dict[str, Any], key_order: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Every point of each grid of the interference mechanism, in order (`key_order`: one
    key order for every grid, as the joint fit's cache keys have it)."""
    points = []
    for name, grid in grids.items():
        if name == "grid_notes":
            continue
        keys = list(key_order if key_order is not None else grid)
        points += [
            {"candidate": "interference", **dict(zip(keys, values, strict=True))}
            for values in itertools.product(*(grid[k] for k in keys))
        ]
    return points


def grid_points(grids: dict[str, Any]) -> list[dict[str, Any]]:
    """The single-pool fit's points: `grids`, then the other candidate mechanisms."""
    return interference_points(grids) + [dict(p) for p in ALTERNATIVES]


def read_grids(path: str | Path) -> dict[str, Any]:
    """The grids a fit ran, from its results JSON, each with the note of why it was run
    (`grid_notes` names them in order): the history of a fit lives beside its results."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    notes = doc["grid_notes"]
    return {**{name: doc[name] for name in notes}, "grid_notes": notes}


def mechanism(point: dict[str, Any]) -> str:
    """The candidate mechanism a grid point stands for (its row in the evidence table)."""
    if point["candidate"] != "interference":
        return str(point["candidate"])
    if point.get("gradient_noise", 0.0) > 0:
        return "interference, gradient noise, drift"
    if point["interfere"] == 0:
        return "normalised steps, no interference"
    if point.get("specific_decay", 0.0) > 0:
        return "interference that decays"
    return "interference (normalised steps)"


def evaluate_point(args: tuple[dict[str, Any], int, float, Sequence[int]]) -> dict[str, Any]:
    """Fit the learning rate to uniform's real gain, then run every target selector."""
    point, pool, target_gain, seeds = args
    cfg = point_config(base_scenario(pool), point)
    lr = fit_learning_rate(cfg, target_gain, seeds, **TESTBED)
    if lr is None:
        return {"point": point, "pool": pool, "learning_rate": None, "runs": None}
    runs = run_entries(cfg.replace(learning_rate=lr), TARGET_SELECTORS, seeds)
    return {"point": point, "pool": pool, "learning_rate": lr, "runs": runs}


def evaluate_joint(args: tuple[dict[str, Any], float]) -> dict[str, Any]:
    """Fit the learning rate to uniform's real gain on 512 prompts, then run every target
    selector on both pool sizes with it (scenario large-pool shares small-pool's rate)."""
    point, target_gain = args
    lr = fit_learning_rate(point_config(base_scenario(512), point), target_gain, FIT_SEEDS,
                           **TESTBED)  # fmt: skip
    if lr is None:
        return {"point": point, "learning_rate": None, "runs": None}
    runs = {
        str(pool): run_entries(
            point_config(base_scenario(pool), point).replace(learning_rate=lr),
            TARGET_SELECTORS,
            FIT_SEEDS,
        )
        for pool in (512, 1280)
    }
    return {"point": point, "learning_rate": lr, "runs": runs}


def fit(
    out: str | Path, pools: Sequence[int], jobs: int, command: str, grids: dict[str, Any]
) -> None:
    """Grid search of `grids` (read_grids of sim_calibration.json) and the ALTERNATIVES on
    each pool size alone; writes sim_calibration.{json,md} under `out`, its cache beside them."""
    cache_path = Path(out) / "sim_calibration_cache.json"
    cache: dict[str, Any] = (
        json.loads(cache_path.read_text(encoding="utf-8")) if cache_path.exists() else {}
    )
    reals = {pool: real_results(pool) for pool in pools}
    todo = [
        (p, pool, reals[pool]["uniform_gain"], FIT_SEEDS)
        for pool in pools
        for p in grid_points(grids)
        if f"{pool} {point_key(p)}" not in cache
    ]
    run_cached(
        evaluate_point,
        todo,
        lambda res: f"{res['pool']} {point_key(res['point'])}",
        cache,
        cache_path,
        jobs,
    )
    summary = {
        **provenance(command),
        "fit_seeds": list(FIT_SEEDS),
        "static_fit": static_fit(),
        **grids,
        "pools": {},
    }
    for pool in pools:
        summary["pools"][str(pool)] = summarise_fit(cache, pool, reals[pool])
    write_outputs(out, "sim_calibration", summary, fit_markdown(summary))


def summarise_fit(cache: dict[str, Any], pool: int, real: dict[str, Any]) -> dict[str, Any]:
    """Best point per candidate mechanism, and leave-one-selector-out predictions."""
    names = [n for n in TARGET_SELECTORS if n != "uniform"]
    rows = []
    for key, res in cache.items():
        if not key.startswith(f"{pool} ") or res["runs"] is None:
            continue
        sim = {n: float(np.mean(v)) for n, v in deltas(res["runs"]).items()}
        rows.append(
            {
                "point": res["point"],
                "lr": res["learning_rate"],
                "sim": sim,
                "loss": loss(sim, real["labels"], names),
            }
        )
    by_candidate: dict[str, Any] = {}
    for row in sorted(rows, key=lambda r: r["loss"]):
        by_candidate.setdefault(mechanism(row["point"]), row)
    best = min(rows, key=lambda r: r["loss"])
    loso = {}
    for left in names:
        rest = [n for n in names if n != left]
        pick = min(rows, key=lambda r: loss(r["sim"], real["labels"], rest))
        loso[left] = {
            "sim": pick["sim"][left],
            "real": real["labels"][left]["delta"],
            "point": pick["point"],
        }

    def rho(sim: dict[str, float]) -> float:
        return spearman(
            [sim[n] for n in TARGET_SELECTORS],
            [real["labels"][n]["delta"] for n in TARGET_SELECTORS],
        )

    for row in (best, *by_candidate.values()):
        row["spearman"] = rho(row["sim"])
    loso_rho = spearman(
        [0.0, *(loso[n]["sim"] for n in names)], [0.0, *(loso[n]["real"] for n in names)]
    )
    infeasible = sum(1 for k, r in cache.items() if k.startswith(f"{pool} ") and r["runs"] is None)
    return {
        "best": best,
        "by_candidate": by_candidate,
        "loso": loso,
        "loso_spearman": loso_rho,
        "points": len(rows),
        "infeasible": infeasible,
    }


def fit_joint(out: str | Path, jobs: int, command: str, grids: dict[str, Any]) -> None:
    """Grid search of `grids` (read_grids of sim_calibration_joint.json) on both pool sizes at
    once, one learning rate per point (loss: the sum of both); writes
    sim_calibration_joint.{json,md} under `out`, its cache beside them."""
    cache_path = Path(out) / "sim_calibration_joint_cache.json"
    cache: dict[str, Any] = (
        json.loads(cache_path.read_text(encoding="utf-8")) if cache_path.exists() else {}
    )
    reals = {pool: real_results(pool) for pool in (512, 1280)}
    points = interference_points(grids, key_order=next(iter(grids.values())))
    todo = [(p, reals[512]["uniform_gain"]) for p in points if point_key(p) not in cache]
    run_cached(evaluate_joint, todo, lambda res: point_key(res["point"]), cache, cache_path, jobs)
    names = [n for n in TARGET_SELECTORS if n != "uniform"]
    rows = []
    for res in cache.values():
        if res["runs"] is None:
            continue
        sim = {pool: {n: float(np.mean(v)) for n, v in deltas(runs).items()}
               for pool, runs in res["runs"].items()}  # fmt: skip
        losses = {pool: loss(sim[pool], reals[int(pool)]["labels"], names) for pool in sim}
        rows.append({"point": res["point"], "lr": res["learning_rate"], "sim": sim,
                     "loss": losses, "total": sum(losses.values())})  # fmt: skip
    rows.sort(key=lambda r: r["total"])
    for row in rows:
        row["spearman"] = {
            pool: spearman([row["sim"][pool][n] for n in TARGET_SELECTORS],
                           [reals[int(pool)]["labels"][n]["delta"] for n in TARGET_SELECTORS])
            for pool in row["sim"]
        }  # fmt: skip
    without = [r for r in rows if r["point"]["repeat_cost"] == 0]
    loso = {}
    for left in names:
        rest = [n for n in names if n != left]

        def rest_loss(row: dict[str, Any], rest: list[str] = rest) -> float:
            return sum(loss(row["sim"][p], reals[int(p)]["labels"], rest) for p in row["sim"])

        pick = min(rows, key=rest_loss)
        loso[left] = {pool: {"sim": pick["sim"][pool][left],
                             "real": reals[int(pool)]["labels"][left]["delta"]}
                      for pool in pick["sim"]}  # fmt: skip
    summary = {
        **provenance(command),
        "fit_seeds": list(FIT_SEEDS),
        **grids,
        "points": len(rows),
        "infeasible": sum(1 for r in cache.values() if r["runs"] is None),
        "best": rows[0],
        "best_without_repeat_cost": without[0] if without else None,
        "top": rows[:10],
        "loso": loso,
    }
    write_outputs(out, "sim_calibration_joint", summary, joint_markdown(summary))


def fit_markdown(doc: dict[str, Any]) -> list[str]:
    st = doc["static_fit"]
    lines = [
        "# Calibrating the simulated learner on the real-RL results",
        "",
        f"Command: `{doc['command']}` ({doc['date']}, commit {doc['commit']}); fit seeds "
        f"{doc['fit_seeds']} (the reported comparison, sim_vs_real.md, uses seeds 0-4).",
        "",
        "Start of the pool (fitted to the real 8-sample start histograms of the 512-task runs): "
        f"2-number tasks' logit offset {st['domain_offset']:.3f}, spread {st['task_noise']:.3f}; "
        f"3-number tasks {st['level_step']:.3f} logits harder (scenario small-pool holds "
        f"{SCENARIOS['small-pool'].domain_offsets[0]}, {SCENARIOS['small-pool'].task_noise} and "
        f"{SCENARIOS['small-pool'].level_step}, the same fit on a coarser grid, which the grid "
        "below ran with). For every grid point the learning "
        "rate is fitted so uniform's simulated held-out gain equals the real one (+0.263); "
        "'infeasible' points cannot reach it. Loss: sum over the 7 non-uniform selectors of "
        "((simulated − real held-out Δ) / real standard error)^2, standard error from the real "
        f"95% CI (at least {SE_FLOOR}). Selectors run at their defaults; nothing else is fitted.",
    ]
    for pool, res in doc["pools"].items():
        names = [n for n in TARGET_SELECTORS if n != "uniform"]
        lines += [
            "",
            f"## Fitted on {pool} prompts ({res['points']} feasible grid points, "
            f"{res['infeasible']} infeasible)",
            "",
            "Best point of each candidate mechanism (simulated Δ on the fit seeds):",
            "",
            "| mechanism | loss | Spearman | " + " | ".join(names) + " | point |",
            "|---|---:|---:|" + "---:|" * len(names) + "---|",
        ]
        for cand, row in sorted(res["by_candidate"].items(), key=lambda kv: kv[1]["loss"]):
            cells = " | ".join(_f(row["sim"][n]) for n in names)
            lines.append(
                f"| {cand} | {row['loss']:.1f} | {row['spearman']:+.2f} | {cells} | "
                f"{_point_text(row['point'], row['lr'])} |"
            )
        real = real_results(int(pool))["labels"]
        lines.append(
            "| real (512, seeds 0-4) | | | "
            + " | ".join(_f(real[n]["delta"]) for n in names)
            + " | |"
        )
        lines += [
            "",
            f"Leave one selector out: each selector's Δ predicted by the grid point that fits "
            f"the other six best (Spearman with the real Δ, uniform included: "
            f"{res['loso_spearman']:+.2f}):",
            "",
            "| left out | real Δ | predicted Δ | point chosen without it |",
            "|---|---:|---:|---|",
        ]
        for n, row in res["loso"].items():
            point = _point_text(row["point"], None)
            lines.append(f"| {n} | {_f(row['real'])} | {_f(row['sim'])} | {point} |")
    return lines


def joint_markdown(doc: dict[str, Any]) -> list[str]:
    names = [n for n in TARGET_SELECTORS if n != "uniform"]
    lines = [
        "# Calibrating the simulated learner on both pool sizes at once",
        "",
        f"Command: `{doc['command']}` ({doc['date']}, commit {doc['commit']}); fit seeds "
        f"{doc['fit_seeds']} (the reported comparison, sim_vs_real.md, uses seeds 0-4). "
        "One learning rate per grid point, fitted so uniform's simulated held-out gain on "
        "512 prompts equals the real one; every target selector then runs on 512 and 1,280 "
        "prompts. Loss: the sum over both pools of the single-pool loss (sim_calibration.md). "
        f"{doc['points']} feasible grid points, {doc['infeasible']} infeasible. Selectors run "
        "at their defaults; nothing about a selector is fitted.",
        "",
        "| point | loss 512 | loss 1280 | Spearman 512 / 1280 | " + " | ".join(names) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(names),
    ]
    shown = [*doc["top"][:5]]
    if doc["best_without_repeat_cost"] is not None:
        shown.append(doc["best_without_repeat_cost"])
    for row in shown:
        cells = " | ".join(f"{_f(row['sim']['512'][n])} / {_f(row['sim']['1280'][n])}"
                           for n in names)  # fmt: skip
        lines.append(
            f"| {_point_text(row['point'], row['lr'])} | {row['loss']['512']:.1f} | "
            f"{row['loss']['1280']:.1f} | {row['spearman']['512']:+.2f} / "
            f"{row['spearman']['1280']:+.2f} | {cells} |"
        )
    reals = {pool: real_results(pool)["labels"] for pool in (512, 1280)}
    lines.append(
        "| real (seeds 0-4) | | | | "
        + " | ".join(f"{_f(reals[512][n]['delta'])} / {_f(reals[1280][n]['delta'])}" for n in names)
        + " |"
    )
    lines += [
        "",
        "Cells: simulated Δ on 512 / 1,280 prompts (fit seeds). The last simulated row is the "
        "best point without the cost of quick repeats.",
        "",
        "Leave one selector out (the point that fits the other six best on both pools): "
        + ", ".join(
            f"{n} {_f(r['512']['sim'])} / {_f(r['1280']['sim'])} (real {_f(r['512']['real'])} / "
            f"{_f(r['1280']['real'])})"
            for n, r in doc["loso"].items()
        )
        + ".",
    ]
    return lines
