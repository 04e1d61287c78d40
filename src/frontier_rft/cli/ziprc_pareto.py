"""`frontier ziprc pareto`: the live decoder's operating points on held-out prompts.

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

import argparse
import contextlib
import json
import os
import time
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.config import field_docs
from frontier_rft.inference.decoder import TINY_COUNTDOWN, DecoderConfig
from frontier_rft.training.config import TrainConfig

__all__ = [
    "PRESETS",
    "add_pareto_command",
    "format_table",
    "operating_points",
    "run_pareto",
    "summarize",
]

PRESETS = {"tiny": TINY_COUNTDOWN, "paper": DecoderConfig()}
"""Base decoder settings: tiny = scaled to the tiny Countdown policy, paper = table 7."""
_BASE_FLAGS = (
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
_METRICS = ("accuracy", "oracle", "compute", "latency")
_DEFAULTS = TrainConfig()
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
    from frontier_rft.cli.progress import Progress
    from frontier_rft.inference.adaptive_k import allocate_k, evaluate_allocation, fixed_allocation
    from frontier_rft.training.rollout import encode_prompts

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
    bar = Progress(len(seeds) * n, "pareto") if progress else None
    with bar if bar is not None else contextlib.nullcontext():
        for seed in seeds:
            s = str(seed)
            recs, pool = _decode_seed(
                model, spec, prompt_ids, points, seed, correct,
                bar.advance if bar is not None else (lambda: None),
            )  # fmt: skip
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
            comp = _pm(r["compute"], 1) + ("" if base else f" ({r['compute_pct']:+.0f}%)")
            lat = _pm(r["latency"], 2) + ("" if base else f" ({r['latency_pct']:+.0f}%)")
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

        q = np.mean([diagnostics[s]["prompt_value_quantiles"] for s in keys], axis=0)
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


# ---------------------------------------------------------------------------- command


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _base_config(args: argparse.Namespace) -> DecoderConfig:
    changes = {n: getattr(args, n) for n in _BASE_FLAGS if getattr(args, n, None) is not None}
    try:
        return PRESETS[args.preset].replace(k=args.k, **changes)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from exc


def _cmd_pareto(args: argparse.Namespace) -> int:
    from frontier_rft.cli.train import _quiet_transformers

    _quiet_transformers()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from frontier_rft.inference.head import load_head_model
    from frontier_rft.training.data import heldout_split, load_task

    base = _base_config(args)
    try:
        points = operating_points(base, args.prune_threshold, args.tau, args.beta)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from exc
    bad = [kb for kb in args.k_bar if not args.k_alloc_min <= kb <= base.k]
    if bad:
        raise SystemExit(f"error: --k-bar values {bad} must lie in [--k-alloc-min, --k]")
    model, tokenizer, spec = load_head_model(args.head)
    suite = load_task(args.task)
    items = heldout_split(suite, args.prompts, args.split_seed, args.levels)
    start = time.perf_counter()
    result = run_pareto(
        model, tokenizer, spec, items, suite.verifier, points, args.seeds, args.k_bar,
        args.k_alloc_min,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    rows = summarize(result["per_seed"], result["kinds"], records=result["records"])
    settings = {
        "head": str(args.head),
        "task": args.task,
        "levels": args.levels,
        "split": "heldout",
        "split_seed": args.split_seed,
        "prompts": len(items),
        "seeds": list(args.seeds),
        "preset": args.preset,
        "decoder": {n: getattr(base, n) for n in ("k", *_BASE_FLAGS)},
        "points": [p.label for p in points],
        "k_bars": list(args.k_bar),
        "k_alloc_min": args.k_alloc_min,
        "spec": spec.to_dict(),
        "seconds": seconds,
        "threads": torch.get_num_threads(),
    }
    out = Path(args.out)
    payload = {"settings": settings, "summary": rows, **result}
    _write_text(out / "results.json", json.dumps(payload, indent=2, sort_keys=True) + "\n")
    title = (
        f"ZIP-RC-Lite live decoder, {len(items)} held-out prompts x {len(args.seeds)} seeds, "
        f"K={base.k}, max {base.max_new_tokens} new tokens, warmup {base.warmup}, interval "
        f"{base.interval} ({seconds:.0f} s)\n\n"
    )
    table = format_table(rows, result["diagnostics"])
    _write_text(out / "results.md", f"# {title}{table}")
    print(title + table)
    print(f"wrote {out / 'results.json'} and {out / 'results.md'}")
    if not args.no_plot:
        from frontier_rft.reporting.ziprc_plots import pareto_figure, write_plot

        for axis in ("compute", "latency"):
            path = write_plot(pareto_figure(rows, axis), out / f"pareto_{axis}.png")
            print(f"wrote {path}")
    return 0


def add_pareto_command(sub: Any) -> None:
    """Register `pareto` on the `ziprc` subparsers object."""
    p = sub.add_parser(
        "pareto", help="live decoder operating points (none/prune/early_stop/utility) over seeds"
    )
    p.add_argument("--head", required=True, help="head model directory (ziprc train output)")
    p.add_argument("--out", required=True, help="output directory (results.json/.md, PNGs)")
    p.add_argument("--seeds", type=_ints, default=(0, 1, 2), help="sampling seeds (default 0,1,2)")
    p.add_argument("--prompts", type=int, default=50, help="held-out prompts (default 50)")
    p.add_argument("--k", type=int, default=8, help="parallel samples K (default 8)")
    p.add_argument(
        "--prune-threshold",
        type=_floats,
        default=(0.5,),
        help="prune thresholds, one operating point each (default 0.5, the paper's)",
    )
    p.add_argument(
        "--tau", type=_floats, default=(0.7, 0.8, 0.9, 0.95), help="early_stop taus (paper's)"
    )
    p.add_argument(
        "--beta",
        type=_floats,
        default=(0.005, 0.01, 0.02, 0.05),
        help="utility betas (default: the paper's matched-cost points 0.005,0.01,0.02,0.05)",
    )
    p.add_argument(
        "--k-bar",
        type=_floats,
        default=(2.0, 4.0),
        help="offline adaptive-K average budgets (default 2,4; empty string = none)",
    )
    p.add_argument(
        "--k-alloc-min", type=int, default=1, help="adaptive-K: fewest samples a prompt gets"
    )
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="tiny",
        help="base decoder settings: tiny (scaled to the tiny Countdown policy: max 40 tokens, "
        "warmup 4, interval 2, end window 4) or paper (1024, 128, 32, 16); the flags below "
        "override it",
    )
    docs = field_docs(DecoderConfig)
    hints = typing.get_type_hints(DecoderConfig)
    for name in _BASE_FLAGS:
        kind: Any = _ints if name == "stop_ids" else hints[name]
        p.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=kind,
            default=None,
            help=f"{docs[name]} (tiny: {getattr(TINY_COUNTDOWN, name)!r}, "
            f"paper: {getattr(PRESETS['paper'], name)!r})",
        )
    p.add_argument("--task", default="countdown", help="task family")
    p.add_argument("--levels", default=_DEFAULTS.levels, help=f"levels ({_DEFAULTS.levels})")
    p.add_argument(
        "--split-seed",
        type=int,
        default=_DEFAULTS.eval_seed,
        help=f"held-out split seed (default {_DEFAULTS.eval_seed})",
    )
    p.add_argument("--no-plot", action="store_true", help="skip the PNGs")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    p.set_defaults(func=_cmd_pareto)


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated ints, got {text!r}") from exc
