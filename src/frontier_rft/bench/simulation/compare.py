"""The calibrated simulator against real RL: the comparison on report seeds (`compare`),
predictions for selectors with no real result yet (`predict`), and those predictions against
a real run once it exists (`check`). The command line is benchmarks/sim_vs_real.py.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from frontier_rft.bench.metrics import spearman
from frontier_rft.bench.scripts import write_outputs
from frontier_rft.bench.simulation.vs_real import (
    EVAL_SAMPLES,
    EVAL_TASKS,
    FIT_SEEDS,
    REPLICATES,
    REPORT_SEEDS,
    TARGET_SELECTORS,
    TESTBED,
    base_scenario,
    entry,
    parse_seeds,
    point_config,
    provenance,
    real_class,
    real_results,
    sim_class,
    simulate,
    summarise_runs,
    training_noise,
)
from frontier_rft.bench.simulation.vs_real import signed as _f
from frontier_rft.simulation.runner import Entry, sampler_spec
from frontier_rft.simulation.scenario import SCENARIOS

_log = logging.getLogger(__name__)

__all__ = ["PREDICTED", "check", "compare", "predict"]


def check_scenario(out: Path) -> None:
    """Say so when the calibrated scenario is not the joint fit's best point."""
    path = out / "sim_calibration_joint.json"
    if not path.exists():
        return
    best = json.loads(path.read_text(encoding="utf-8"))["best"]
    lr = float(f"{best['lr']:.4g}")  # the scenario holds the fitted rate to 4 digits
    fitted = point_config(base_scenario(512), best["point"]).replace(learning_rate=lr)
    if fitted != SCENARIOS["small-pool"]:
        _log.warning(
            "[compare] scenario small-pool is not the joint fit's best point %s", best["point"]
        )


def compare(out: str | Path, seeds_text: str, jobs: int, command: str) -> None:
    """The calibrated scenarios against the real results on report seeds (`seeds_text`,
    parse_seeds), both pool sizes; writes sim_vs_real.{json,md} under `out`
    (sim_vs_real_seeds_<seeds> for other seeds)."""
    check_scenario(Path(out))
    seeds = parse_seeds(seeds_text)
    doc: dict[str, Any] = {
        **provenance(command),
        "seeds": list(seeds),
        "testbed": TESTBED,
        "pools": {},
        "agreement": {},
    }
    noise = training_noise(SCENARIOS["small-pool"])
    doc["training_noise"] = noise
    for pool, name in ((512, "small-pool"), (1280, "large-pool")):
        real = real_results(pool)
        runs = simulate(SCENARIOS[name], [entry(n) for n in TARGET_SELECTORS], seeds, jobs)
        sim = summarise_runs(runs, pool, noise["run_sd"])
        base = [r["score"][-1] for r in runs["uniform"]]
        rows: dict[str, Any] = {}
        for n in TARGET_SELECTORS:
            r = real["labels"][n]
            finals = [rec["score"][-1] for rec in runs[n]]
            rows[n] = {
                "sim": sim[n]["sim"],
                "real": r["delta"],
                "sim_class": sim[n]["sim_class"],
                "sim_class_evaluation_noise_only": (
                    "baseline" if n == "uniform" else sim_class(finals, base, pool, n, 0.0)
                ),
                "real_class": "baseline" if n == "uniform" else real_class(r["delta_ci"]),
                "real_ci": r["delta_ci"],
                "sim_etr": sim[n]["etr"],
                "real_etr": r["etr"],
                "sim_distinct": sim[n]["distinct"],
                "real_distinct": r["distinct"],
                "sim_retrained_next_step": sim[n]["retrained_next_step"],
                "sim_reward": sim[n]["reward"],
                "real_reward": r["reward"],
            }
        doc["pools"][str(pool)] = rows
        others = [n for n in TARGET_SELECTORS if n != "uniform"]
        agree = [rows[n]["sim_class"] == rows[n]["real_class"] for n in others]
        agree_eval = [
            rows[n]["sim_class_evaluation_noise_only"] == rows[n]["real_class"] for n in others
        ]
        rho = spearman(
            [rows[n]["sim"] for n in TARGET_SELECTORS], [rows[n]["real"] for n in TARGET_SELECTORS]
        )
        doc["agreement"][str(pool)] = {
            "spearman": rho,
            "spearman_without_uniform": spearman(
                [rows[n]["sim"] for n in others], [rows[n]["real"] for n in others]
            ),
            "sign_agreement": sum(agree) / len(agree),
            "sign_agreement_evaluation_noise_only": sum(agree_eval) / len(agree_eval),
            "targets_met": bool(rho >= 0.8 and sum(agree) / len(agree) >= 0.8),
            "uniform_gain": {"sim": sim["uniform"]["gain"], "real": real["uniform_gain"]},
        }
        _log.info("[compare] %s: Spearman %+.2f, signs %d/%d", pool, rho, sum(agree), len(agree))
    fit_path = Path(out) / "sim_calibration_joint.json"
    if fit_path.exists():
        doc["fit_loso"] = json.loads(fit_path.read_text(encoding="utf-8"))["loso"]
    name = "sim_vs_real" if seeds == REPORT_SEEDS else f"sim_vs_real_seeds_{seeds_text}"
    write_outputs(out, name, doc, compare_markdown(doc))


PREDICTED: tuple[Entry, ...] = (
    Entry("uniform", "uniform"),
    Entry("greso", "greso"),
    Entry("skip", "skip"),
    Entry("bots-epoch", "bots", {"coverage": "epoch"}),
    Entry("prioritized-epoch", "prioritized", {"coverage": "epoch"}),
    Entry("pcl-epoch", "pcl", {"coverage": "epoch"}),
    Entry("dapo", "uniform", sampler=sampler_spec(dynamic_sampling="fixed")),
    Entry("dapo-adaptive", "uniform", sampler=sampler_spec(dynamic_sampling="adaptive")),
    Entry("greso-dapo", "greso", sampler=sampler_spec(dynamic_sampling="adaptive")),
    Entry("skip-dapo", "skip", sampler=sampler_spec(dynamic_sampling="adaptive")),
    Entry("greso-dapo-fixed", "greso", sampler=sampler_spec(dynamic_sampling="fixed")),
    Entry("skip-dapo-fixed", "skip", sampler=sampler_spec(dynamic_sampling="fixed")),
)
"""Labels as `frontier bench-rl` names its entries (training/bench.py), so a later real run
pairs with its prediction by label; dapo has a real result and anchors the others."""


def predict(out: str | Path, jobs: int, command: str) -> None:
    """The calibrated simulator's predictions for the PREDICTED entries, before their real
    runs; writes sim_predictions_coverage.{json,md} under `out`."""
    doc: dict[str, Any] = {
        **provenance(command),
        "seeds": list(REPORT_SEEDS),
        "testbed": TESTBED,
        "training_noise": training_noise(SCENARIOS["small-pool"]),
        "pools": {},
    }
    for pool, name in ((512, "small-pool"), (1280, "large-pool")):
        runs = simulate(SCENARIOS[name], PREDICTED, REPORT_SEEDS, jobs)
        doc["pools"][str(pool)] = summarise_runs(runs, pool, doc["training_noise"]["run_sd"])
        _log.info("[predict] %s done", pool)
    write_outputs(out, "sim_predictions_coverage", doc, predict_markdown(doc))


def check(out: str | Path, real: str, command: str) -> list[str]:
    """Committed predictions (under `out`) against a real `frontier bench-rl` report
    (`real`, a *_full.json): the table's lines. ValueError saying what is missing."""
    doc = json.loads((Path(out) / "sim_predictions_coverage.json").read_text("utf-8"))
    real_doc = json.loads(Path(real).read_text(encoding="utf-8"))
    pool = str(real_doc["testbed"]["train"]["train_size"])
    predicted = doc["pools"].get(pool)
    if predicted is None:
        raise ValueError(f"no predictions for a pool of {pool} prompts")
    labels = real_doc["summary"]["labels"]
    rows = []
    for label, row in labels.items():
        if label == "uniform" or label not in predicted:
            continue
        diff = row["final_minus_uniform"]["eval/pass@1"]
        rows.append((label, predicted[label]["sim"], diff["mean"],
                     predicted[label]["sim_class"], real_class(diff["ci"])))  # fmt: skip
    if len(rows) < 2:
        raise ValueError(f"{real}: fewer than two predicted labels to compare")
    lines = [
        f"# Predictions ({doc['date']}, commit {doc['commit']}) against {real}",
        "",
        f"Command: `{command}`",
        "",
        "| label | predicted Δ | real Δ | predicted class | real class |",
        "|---|---:|---:|---|---|",
        *(f"| {lab} | {_f(a)} | {_f(b)} | {c} | {d} |" for lab, a, b, c, d in rows),
        "",
        f"Spearman {spearman([0.0, *(r[1] for r in rows)], [0.0, *(r[2] for r in rows)]):+.2f} "
        f"(uniform included); classes agree for {sum(r[3] == r[4] for r in rows)} of "
        f"{len(rows)}.",
    ]
    return lines


def compare_markdown(doc: dict[str, Any]) -> list[str]:
    lines = [
        "# The calibrated simulator against real RL",
        "",
        f"Command: `{doc['command']}` ({doc['date']}, commit {doc['commit']}); simulated seeds "
        f"{doc['seeds']} (the fit used seeds {list(FIT_SEEDS)}), {doc['testbed']['steps']} "
        f"steps x {doc['testbed']['batch']} prompts x {doc['testbed']['rollouts']} rollouts as "
        "on the real testbed. Δ = final held-out pass@1 minus uniform's (real: "
        "benchmarks/results/real_rl_gpu*_full.json; simulated: the expected held-out pass rate, "
        "mean over paired seeds). Classes: helps / hurts when the 95% bootstrap CI over seeds "
        "excludes 0, else noise; a simulated class is the one a real run would most often "
        "report if the simulator were right: each simulated final score plus a real run's own "
        f"noise (training noise, SD {doc['training_noise']['run_sd']:.3f}, measured on uniform's "
        "real runs at 512 prompts: their seed-to-seed SD "
        f"{doc['training_noise']['real_uniform_sd']:.3f} less the evaluation's binomial SD "
        f"{doc['training_noise']['binomial_sd']:.3f} and the simulated pool draw's "
        f"{doc['training_noise']['sim_uniform_sd']:.3f}, in variance; and the real evaluation's "
        f"binomial noise, {EVAL_TASKS} tasks x {EVAL_SAMPLES} samples), {REPLICATES} draws. "
        "The class agreement with the evaluation's noise alone is given beside it. Retrained "
        "next step: the share of a step's trained (mixed) groups whose prompt was trained the "
        "step before too (simulated only: the real runs do not record which prompts they "
        "trained). The calibration (`fit-joint`, sim_calibration_joint.md) used both pools' "
        f"real results on fit seeds {list(FIT_SEEDS)}, so every row below is in sample (a fit "
        "on 512 prompts alone, `fit`, left 1,280 out: sim_calibration.md); out of sample are "
        "fresh seeds (`--seeds 5-9`) and the predictions for selectors without real results.",
    ]
    for pool, rows in doc["pools"].items():
        agr = doc["agreement"][pool]
        where = "fitted on this pool and the other"
        lines += [
            "",
            f"## {pool} prompts ({where})",
            "",
            f"Spearman(simulated Δ, real Δ) over {len(rows)} selectors: **{agr['spearman']:+.2f}** "
            f"(without uniform: {agr['spearman_without_uniform']:+.2f}); class agreement "
            f"**{agr['sign_agreement']:.0%}** of the {len(rows) - 1} non-uniform selectors "
            f"({agr['sign_agreement_evaluation_noise_only']:.0%} with the evaluation's noise "
            "alone); "
            f"targets (>= 0.8 and >= 80%) {'met' if agr['targets_met'] else '**not met**'}. "
            f"Uniform's held-out gain: simulated {agr['uniform_gain']['sim']:+.3f}, real "
            f"{agr['uniform_gain']['real']:+.3f}.",
            "",
            "| selector | sim Δ | real Δ [95% CI] | sim class | real class | ETR sim / real "
            "| distinct prompts sim / real | training reward sim / real | retrained next step "
            "(sim) |",
            "|---|---:|---:|---|---|---:|---:|---:|---:|",
        ]
        for n, r in rows.items():
            ci = r["real_ci"]
            mark = "" if r["sim_class"] == r["real_class"] or n == "uniform" else " ✗"
            lines.append(
                f"| {n} | {_f(r['sim'])} | {_f(r['real'])} [{_f(ci[0])}, {_f(ci[1])}] | "
                f"{r['sim_class']}{mark} | {r['real_class']} | {r['sim_etr']:.2f} / "
                f"{r['real_etr']:.2f} | {r['sim_distinct']:.0f} / {r['real_distinct']:.0f} | "
                f"{r['sim_reward']:.2f} / {r['real_reward']:.2f} | "
                f"{r['sim_retrained_next_step']:.2f} |"
            )
    loso = doc.get("fit_loso")
    if loso:
        cells = ", ".join(
            f"{n} {_f(r['512']['sim'])} / {_f(r['1280']['sim'])} (real {_f(r['512']['real'])} / "
            f"{_f(r['1280']['real'])})"
            for n, r in loso.items()
        )
        rhos = [
            spearman([0.0, *(r[pool]["sim"] for r in loso.values())],
                     [0.0, *(r[pool]["real"] for r in loso.values())])
            for pool in ("512", "1280")
        ]  # fmt: skip
        lines += [
            "",
            "## Leave one selector out (both pools, fit seeds)",
            "",
            "Each selector's Δ on 512 / 1,280 prompts predicted by the grid point that fits the "
            f"other six best: {cells}; Spearman with the real Δ (uniform included) "
            f"{rhos[0]:+.2f} / {rhos[1]:+.2f}. Candidate mechanisms and the grids: "
            "sim_calibration.md, sim_calibration_joint.md.",
        ]
    return lines


GRESO_PROTOTYPE = {"512": (0.020, -0.009, 0.042), "1280": (0.035, 0.014, 0.051)}
"""Real held-out Δ of a 90-line prototype of GRESO's rule on the same testbed and seeds
(docs/results/coverage.md): not the shipped `greso`, so a reference, not the check."""


def predict_markdown(doc: dict[str, Any]) -> list[str]:
    lines = [
        "# Predictions of the calibrated simulator, before the real runs",
        "",
        f"Command: `{doc['command']}` ({doc['date']}, predictor at commit {doc['commit']}); "
        f"seeds {doc['seeds']}, the real testbed's budget. Nothing here has a real-RL result "
        "yet except `dapo` (the anchor). When the real runs exist (`scripts/gpu_coverage.sh "
        "PART OUT`, docs/results/coverage.md), `python benchmarks/sim_vs_real.py check --real "
        "benchmarks/results/<name>_full.json` sets each label's real Δ and class beside the row "
        "below; labels are `frontier bench-rl`'s. Δ = final held-out score minus "
        "uniform's; class from the 95% CI with a real run's training and evaluation noise added "
        "(sim_vs_real.md); TTB on the "
        "real benchmark's 30-step evaluation grid (steps to 50/75% of uniform's gain, "
        "relative to uniform's).",
    ]
    for pool, rows in doc["pools"].items():
        proto = GRESO_PROTOTYPE[pool]
        lines += [
            "",
            f"## {pool} prompts",
            "",
            "| label | Δ | class | TTB50 | TTB75 | ETR | distinct prompts | rollouts / step |",
            "|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        for label, r in rows.items():
            lines.append(
                f"| {label} | {_f(r['sim'])} | {r['sim_class']} | {_f(r['ttb50'], 2, False)} | "
                f"{_f(r['ttb75'], 2, False)} | {r['etr']:.2f} | {r['distinct']:.0f} | "
                f"{r['rollouts_per_step']:.0f} |"
            )
        lines += [
            "",
            f"For reference, the real prototype of GRESO's rule on this pool: Δ "
            f"{_f(proto[0])} [{_f(proto[1])}, {_f(proto[2])}] (not the shipped `greso`).",
        ]
    return lines
