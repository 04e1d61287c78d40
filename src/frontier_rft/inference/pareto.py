"""The live decoder's operating points on held-out prompts (`frontier ziprc pareto`).

Runs none (best-of-K), prune (each threshold), early_stop (each tau) and utility (each beta)
on the same held-out prompts for several seeds, and reports accuracy (verifier success of the
returned sample), compute (forward passes) and latency (decode steps), mean +- std over seeds
(sample std, ddof 1) and % vs none, like the paper's table 4. Every policy of one (seed,
prompt) uses the same random stream, so the policies see the same trajectories (paired
comparison). Offline adaptive-K rows re-use the none run's K samples per prompt: fixed K_bar
vs percentile-rank allocation at the same total budget. Writes results.json, results.md and
the compute-accuracy / latency-accuracy Pareto plots. See docs/inference/decoder.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.jsonsafe import dumps_strict
from frontier_rft.inference.decoder_config import TINY_COUNTDOWN, DecoderConfig
from frontier_rft.progress import progress_bar

__all__ = [
    "BASE_FIELDS",
    "PRESETS",
    "format_table",
    "operating_points",
    "pareto_experiment",
    "run_pareto",
    "summarize",
]

PRESETS = {"tiny": TINY_COUNTDOWN, "paper": DecoderConfig()}
"""Base decoder settings: tiny = scaled to the tiny Countdown policy, paper = table 7."""
BASE_FIELDS = (
    "max_new_tokens",
    "temperature",
    "warmup",
    "interval",
    "k_min",
    "smoothing",
    "end_window",
    "utility_norm",
    "stop_ids",
    "check_values",
    "value_tolerance",
)
"""DecoderConfig fields an experiment may change on top of its preset."""
_METRICS = ("accuracy", "oracle", "compute", "latency")
SUCCESS = 1.0
"""A returned sample is correct when its verifier reward reaches this (0.1 format = wrong)."""


def operating_points(
    base: DecoderConfig,
    prune_thresholds: Sequence[float] = (0.5,),
    taus: Sequence[float] = (0.7, 0.8, 0.9, 0.95),
    betas: Sequence[float] = (0.005, 0.01, 0.02, 0.05),
) -> list[DecoderConfig]:
    """none first (the baseline and the adaptive-K pool), then prune, early_stop, utility."""
    points = [base.replace(policy="none")]
    points += [base.replace(policy="prune", prune_threshold=float(t)) for t in prune_thresholds]
    points += [base.replace(policy="early_stop", tau=float(t)) for t in taus]
    points += [base.replace(policy="utility", beta=float(b)) for b in betas]
    labels = [p.label for p in points]
    if len(set(labels)) != len(labels):
        raise ValueError(f"duplicate operating points {labels}: give each value once")
    return points


def _stream(seed: int, prompt: int) -> int:
    """Seed of one (seed, prompt) random stream, shared by every policy (paired runs)."""
    return int(seed) * 1_000_003 + int(prompt)


def _smoothed_at(values: np.ndarray, step: int, window: int) -> float:
    """The value a policy reads at `step` (trailing mean), nan if the sample ended before."""
    if len(values) <= step:
        return float("nan")
    return float(np.mean(values[max(0, step - window + 1) : step + 1]))


@dataclass
class _Pool:
    """The none run's K samples per prompt (adaptive-K pool and signal diagnostics)."""

    correct: np.ndarray
    value_end: np.ndarray
    lengths: np.ndarray
    at_warmup: np.ndarray
    prompt_values: np.ndarray

    @classmethod
    def empty(cls, n: int, k: int) -> _Pool:
        return cls(
            np.zeros((n, k), dtype=bool),
            np.zeros((n, k)),
            np.zeros((n, k), dtype=np.int64),
            np.full((n, k), np.nan),
            np.zeros(n),
        )

    def diagnostics(self) -> dict[str, Any]:
        from frontier_rft.inference.calibration import auc

        ok, end, mid = self.correct, self.value_end, self.at_warmup
        alive = np.isfinite(mid)
        k = ok.shape[1]
        return {
            "sample_success": float(ok.mean()),
            "mean_length": float(self.lengths.mean()),
            "auc_value_end": auc(end.ravel(), ok.ravel()),
            "auc_at_warmup": auc(mid[alive], ok[alive]) if alive.any() else float("nan"),
            "alive_at_warmup": float(alive.mean()),
            "mean_value_end_correct": float(end[ok].mean()) if ok.any() else None,
            "mean_value_end_wrong": float(end[~ok].mean()) if (~ok).any() else None,
            "prompt_value_quantiles": np.quantile(self.prompt_values, _QUANTILES).tolist(),
            "auc_prompt_value": auc(np.repeat(self.prompt_values, k), ok.ravel()),
            # Selection and pruning act inside one prompt: the AUC that matters for them.
            "auc_within_end": _within(end, ok),
            "auc_within_warmup": _within(mid, ok),
            "mixed_prompts": int(np.sum(ok.any(axis=1) & ~ok.all(axis=1))),
        }


def _within(scores: np.ndarray, correct: np.ndarray) -> float:
    """Mean over prompts with both outcomes of AUC(score -> correct) among that prompt's
    samples (samples with a nan score, e.g. finished before the warmup step, left out)."""
    from frontier_rft.inference.calibration import auc

    aucs = []
    for row, ok in zip(scores, correct, strict=True):
        seen = np.isfinite(row)
        value = auc(row[seen], ok[seen]) if seen.any() else float("nan")
        if np.isfinite(value):
            aucs.append(value)
    return float(np.mean(aucs)) if aucs else float("nan")


_QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)


def _decode_seed(
    model: Any,
    spec: Any,
    prompt_ids: Sequence[Sequence[int]],
    points: Sequence[DecoderConfig],
    seed: int,
    correct: Callable[[int, list[int]], bool],
    advance: Callable[[], None],
) -> tuple[dict[str, dict[str, list[float]]], _Pool]:
    """Per-prompt metrics of every point for one seed, and the none run's pool."""
    import torch

    from frontier_rft.inference.decoder import decode

    k = points[0].k
    warmup, window = points[0].warmup, points[0].smoothing
    pool = _Pool.empty(len(prompt_ids), k)
    records: dict[str, dict[str, list[float]]] = {
        p.label: {m: [] for m in (*_METRICS, "value_check", "reserved")} for p in points
    }
    for i, prompt in enumerate(prompt_ids):
        for point in points:
            res = decode(
                model, spec, prompt, point, torch.Generator().manual_seed(_stream(seed, i))
            )
            ok = {j: correct(i, res.sequences[j]) for j in res.candidates}
            rec: dict[str, list[float]] = records[point.label]
            rec["accuracy"].append(float(ok[res.selected]))
            rec["oracle"].append(float(any(ok.values())))
            rec["compute"].append(float(res.cost))
            rec["latency"].append(float(res.latency))
            rec["value_check"].append(res.value_check)
            reserved = sum(spec.start_id <= t < spec.end_id for q in res.sequences for t in q)
            rec["reserved"].append(float(reserved))
            if point.policy == "none":
                pool.prompt_values[i] = res.prompt_value
                for j in range(k):
                    pool.correct[i, j] = ok[j]
                    pool.value_end[i, j] = res.value_end[j]
                    pool.lengths[i, j] = len(res.sequences[j])
                    pool.at_warmup[i, j] = _smoothed_at(res.values[j], warmup, window)
        advance()
    return records, pool


def run_pareto(
    model: Any,
    tokenizer: Any,
    spec: Any,
    items: Sequence[Any],
    verifier: Any,
    points: Sequence[DecoderConfig],
    seeds: Sequence[int],
    k_bars: Sequence[float] = (),
    k_alloc_min: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """Decode every item under every point for every seed; per-seed metrics and diagnostics.

    Returns {"per_seed": {label: {seed: metrics}}, "kinds": {label: live|offline},
    "diagnostics": {seed: ...}, "records": {label: {seed: per-prompt lists}}}.
    """
    from frontier_rft.inference.adaptive_k import allocate_k, evaluate_allocation, fixed_allocation
    from frontier_rft.lm.rollout import encode_prompts

    if not points or points[0].policy != "none":
        raise ValueError("the first operating point must be policy none (baseline and pool)")
    if len({p.k for p in points}) != 1:
        raise ValueError("every operating point must use the same k")
    k = points[0].k
    prompt_ids = encode_prompts(tokenizer, [it.prompt for it in items])
    n = len(items)
    judged: dict[tuple[int, tuple[int, ...]], bool] = {}

    def correct(i: int, seq: list[int]) -> bool:
        key = (i, tuple(seq))
        if key not in judged:  # policies share trajectories: judge each completion once
            text = tokenizer.decode(seq, skip_special_tokens=True)
            judged[key] = verifier.score(items[i], text) >= SUCCESS
        return judged[key]

    per_seed: dict[str, dict[str, dict[str, float]]] = {}
    records: dict[str, dict[str, dict[str, list[float]]]] = {p.label: {} for p in points}
    kinds = {p.label: "live" for p in points}
    diagnostics: dict[str, Any] = {}
    with progress_bar(len(seeds) * n, "pareto", unit="prompt", enabled=progress) as bar:
        for seed in seeds:
            s = str(seed)
            recs, pool = _decode_seed(
                model, spec, prompt_ids, points, seed, correct, lambda: bar.update(1)
            )
            for label, rec in recs.items():
                records[label][s] = rec
                metrics = {m: float(np.mean(rec[m])) for m in _METRICS}
                metrics["value_check"] = float(np.nanmax([np.nan, *rec["value_check"]]))
                metrics["reserved"] = float(np.sum(rec["reserved"]))
                per_seed.setdefault(label, {})[s] = metrics
            for k_bar in k_bars:
                for name, alloc in (
                    (f"fixed K={k_bar:g}", fixed_allocation(n, k_bar)),
                    (
                        f"adaptive K={k_bar:g}",
                        allocate_k(pool.prompt_values, k_bar, k_alloc_min, k),
                    ),
                ):
                    ev = evaluate_allocation(alloc, pool.correct, pool.value_end, pool.lengths)
                    kinds[name] = "offline"
                    per_seed.setdefault(name, {})[s] = {
                        "accuracy": ev["value_accuracy"],
                        "oracle": ev["oracle_accuracy"],
                        "compute": ev["compute"],
                        "latency": ev["latency"],
                        "mean_k": ev["mean_k"],
                    }
            diagnostics[s] = pool.diagnostics()
    return {"per_seed": per_seed, "kinds": kinds, "diagnostics": diagnostics, "records": records}


def _stat(values: Sequence[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0}


def summarize(
    per_seed: dict[str, dict[str, dict[str, float]]],
    kinds: dict[str, str],
    baseline: str = "none",
    records: dict[str, dict[str, dict[str, list[float]]]] | None = None,
    resamples: int = 2000,
) -> list[dict[str, Any]]:
    """One row per operating point: mean/std over seeds, paired accuracy delta and % vs none.

    Seeds share the prompts, so their std misses prompt sampling noise; with per-prompt
    `records`, live rows also get a 95% paired bootstrap interval over prompts of the
    accuracy change (per-prompt change averaged over seeds, prompts resampled).
    """
    if baseline not in per_seed:
        raise ValueError(f"baseline {baseline!r} missing from the results")
    base = per_seed[baseline]
    seeds = sorted(base)
    rows = []
    for label, by_seed in per_seed.items():
        if sorted(by_seed) != seeds:
            raise ValueError(f"{label} has seeds {sorted(by_seed)}, the baseline {seeds}")
        row: dict[str, Any] = {
            "label": label,
            "family": label.split()[0],
            "kind": kinds.get(label, "live"),
            "seeds": len(seeds),
        }
        for m in _METRICS:
            row[m] = _stat([by_seed[s][m] for s in seeds])
        row["delta_accuracy"] = _stat([by_seed[s]["accuracy"] - base[s]["accuracy"] for s in seeds])
        for m in ("compute", "latency"):
            ref = float(np.mean([base[s][m] for s in seeds]))
            row[f"{m}_pct"] = 100.0 * (row[m]["mean"] / ref - 1.0) if ref > 0 else float("nan")
        if records is not None and label in records and label != baseline:
            diff = np.mean(
                [
                    np.subtract(records[label][s]["accuracy"], records[baseline][s]["accuracy"])
                    for s in seeds
                ],
                axis=0,
            )
            rng = np.random.default_rng(0)
            means = diff[rng.integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)
            row["delta_accuracy_ci95"] = [float(q) for q in np.quantile(means, [0.025, 0.975])]
        rows.append(row)
    return rows


def _pm(stat: dict[str, float], digits: int) -> str:
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"


def _pct(value: float | None) -> str:
    """' (+12%)'; ' (+nan%)' where undefined (NaN, or null in a results.json)."""
    return f" ({float('nan') if value is None else value:+.0f}%)"


def format_table(rows: Sequence[dict[str, Any]], diagnostics: dict[str, Any] | None = None) -> str:
    """Markdown: live operating points, then offline adaptive-K rows, then diagnostics."""
    head = (
        "| Policy | Accuracy | Δ acc vs none | Δ acc 95% CI (prompts) | Oracle | "
        "Compute (fwd passes) | Latency (decode steps) |\n|---|---|---|---|---|---|---|"
    )
    out = []
    for kind, title in (("live", "Live decoder"), ("offline", "Offline adaptive-K (none's pool)")):
        chosen = [r for r in rows if r["kind"] == kind]
        if not chosen:
            continue
        out += [f"**{title}**", "", head]
        for r in chosen:
            base = r["family"] == "none"
            delta = (
                "—"
                if base
                else f"{r['delta_accuracy']['mean']:+.3f} ± {r['delta_accuracy']['std']:.3f}"
            )
            comp = _pm(r["compute"], 1) + ("" if base else _pct(r["compute_pct"]))
            lat = _pm(r["latency"], 2) + ("" if base else _pct(r["latency_pct"]))
            ci = r.get("delta_accuracy_ci95")
            ci_text = "—" if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
            out.append(
                f"| {r['label']} | {_pm(r['accuracy'], 3)} | {delta} | {ci_text} | "
                f"{_pm(r['oracle'], 3)} | {comp} | {lat} |"
            )
        out.append("")
    if diagnostics:
        keys = sorted(diagnostics)

        def mean(name: str) -> float:
            vals = [diagnostics[s][name] for s in keys if diagnostics[s][name] is not None]
            vals = [v for v in vals if np.isfinite(v)]  # nan: AUC undefined (one class)
            return float(np.mean(vals)) if vals else float("nan")

        quantiles = [diagnostics[s]["prompt_value_quantiles"] for s in keys]
        q = np.mean(np.asarray(quantiles, dtype=np.float64), axis=0)  # null -> NaN
        out += [
            "**Signal diagnostics (none's samples, mean over seeds)**",
            "",
            f"- sample success rate (random@K): {mean('sample_success'):.3f}; mean length "
            f"{mean('mean_length'):.1f} tokens",
            f"- pooled over prompts: AUC(value_end -> correct) {mean('auc_value_end'):.3f}; "
            f"AUC(smoothed value at the warmup step -> correct) {mean('auc_at_warmup'):.3f} "
            f"({100 * mean('alive_at_warmup'):.0f}% of samples still running there)",
            f"- within a prompt ({mean('mixed_prompts'):.0f} prompts with both outcomes): "
            f"AUC(value_end -> correct) {mean('auc_within_end'):.3f}, at the warmup step "
            f"{mean('auc_within_warmup'):.3f}",
            f"- mean value_end: correct {mean('mean_value_end_correct'):.3f}, wrong "
            f"{mean('mean_value_end_wrong'):.3f}",
            "- prompt value V(x) min/q25/median/q75/max: "
            + " / ".join(f"{v:.3f}" for v in q)
            + f"; AUC(V(x) -> correct) {mean('auc_prompt_value'):.3f}",
            "",
        ]
    return "\n".join(out)


# ---------------------------------------------------------------------------- experiment


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def pareto_experiment(
    head: str | os.PathLike[str],
    out: str | os.PathLike[str],
    points: Sequence[DecoderConfig],
    *,
    task: str = "countdown",
    levels: str = "3:20,4:20",
    prompts: int = 50,
    split_seed: int = 2,
    seeds: Sequence[int] = (0, 1, 2),
    k_bars: Sequence[float] = (2.0, 4.0),
    k_alloc_min: int = 1,
    settings: dict[str, Any] | None = None,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], str]:
    """Run `points` (operating_points(...)) with the head in `head` on held-out prompts;
    write out/results.json and out/results.md. Returns (summary rows, markdown)."""
    import torch

    from frontier_rft.inference.head import load_head_model
    from frontier_rft.tasks.suite import heldout_split, load_task

    if not points:
        raise ValueError("pareto_experiment needs at least one operating point")
    bad = [kb for kb in k_bars if not k_alloc_min <= kb <= points[0].k]
    if bad:
        raise ValueError(
            f"k_bar values {bad} must lie in [k_alloc_min, k] = [{k_alloc_min}, {points[0].k}]"
        )
    model, tokenizer, spec = load_head_model(head)
    suite = load_task(task)
    items = heldout_split(suite, prompts, split_seed, levels)
    start = time.perf_counter()
    result = run_pareto(
        model, tokenizer, spec, items, suite.verifier, points, seeds, k_bars, k_alloc_min,
        progress=progress,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    rows = summarize(result["per_seed"], result["kinds"], records=result["records"])
    base = points[0]
    record = {
        "head": str(head),
        "task": task,
        "levels": levels,
        "split": "heldout",
        "split_seed": split_seed,
        "prompts": len(items),
        "seeds": list(seeds),
        "decoder": {n: getattr(base, n) for n in ("k", *BASE_FIELDS)},
        "points": [p.label for p in points],
        "k_bars": list(k_bars),
        "k_alloc_min": k_alloc_min,
        "spec": spec.to_dict(),
        "seconds": seconds,
        "threads": torch.get_num_threads(),
        **(settings or {}),
    }
    directory = Path(out)
    payload = {"settings": record, "summary": rows, **result}
    _write_text(directory / "results.json", dumps_strict(payload, indent=2, sort_keys=True) + "\n")
    title = (
        f"ZIP-RC-Lite live decoder, {len(items)} held-out prompts x {len(seeds)} seeds, "
        f"K={base.k}, max {base.max_new_tokens} new tokens, warmup {base.warmup}, interval "
        f"{base.interval} ({seconds:.0f} s)\n\n"
    )
    text = title + format_table(rows, result["diagnostics"])
    _write_text(directory / "results.md", f"# {text}")
    return rows, text
