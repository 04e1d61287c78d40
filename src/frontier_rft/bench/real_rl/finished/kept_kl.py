"""A kept step's KL and entropy terms against uniform's, measured on real uniform batches of
the standard testbed (issue 60, item 4; `benchmarks/kept_kl.py` runs it, its page is
benchmarks/results/kept_kl.md).

A kept step (`rollouts: kept`, `loss_scale: batch`) trains only the kept groups (G of
uniform's B) and scales each row's weight by G/B. Its KL term (k3 to the frozen start model)
and entropy term are compared with uniform's under two normalisations: (a) `kept mean`, the
regulariser's row weights not scaled by G/B; (b) `scaled`, scaled by G/B as the policy
gradient is. `measure` takes one batch's gradients (uniform's full batch, the kept groups
alone), `summarise` the numbers over batches and seeds, `markdown` the page; `run` trains the
testbed's uniform run per seed and measures the batches of the steps asked for (torch only
inside the functions).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

_log = logging.getLogger(__name__)

__all__ = ["AGGREGATIONS", "METRICS", "REGULARISERS", "markdown", "measure", "run", "summarise"]

AGGREGATIONS = ("token_mean", "sequence_mean", "constant")


def _flat_grad(loss: Any, params: list[Any]) -> Any:
    import torch

    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return torch.cat(
        [
            (torch.zeros_like(p) if g is None else g).reshape(-1)
            for p, g in zip(params, grads, strict=True)
        ]
    ).double()


def _terms(trainer: Any, prompts: list[Any], completions: list[Any], adv: Any) -> dict[str, Any]:
    """Per-token surrogate, k3 KL and entropy of these rows under the trainer's policy (the
    policy that sampled them: ratio 1, as at ppo_epochs 1), with the graph kept."""
    import torch

    from frontier_rft.lm.rollout import score_completions

    temp = trainer.config.temperature
    scores = score_completions(
        trainer.model, prompts, completions, with_entropy=True, temperature=temp
    )
    with torch.no_grad():
        ref = score_completions(trainer.ref_model, prompts, completions, temperature=temp)
    logp = scores.logprobs
    ratio = torch.exp(logp - logp.detach())
    surrogate = -ratio * adv.unsqueeze(1)
    delta = ref.logprobs - logp
    return {
        "mask": scores.mask,
        "pg": surrogate,
        "kl": torch.exp(delta) - delta - 1.0,
        "entropy": scores.entropy,
    }


def _compare(x: Any, ref: Any) -> dict[str, float]:
    """x against the reference gradient: norm ratio, pull (the component of x along ref, in
    units of ref), relative error and cosine."""
    import torch

    nref = float(torch.linalg.vector_norm(ref))
    nx = float(torch.linalg.vector_norm(x))
    dot = float(torch.dot(x, ref))
    return {
        "norm_ratio": nx / nref,
        "pull": dot / nref**2,
        "rel_error": float(torch.linalg.vector_norm(x - ref)) / nref,
        "cosine": dot / max(nx * nref, 1e-300),
    }


METRICS = ("norm_ratio", "pull", "rel_error", "cosine")
REGULARISERS = ("kl", "entropy")


def measure(
    trainer: Any, prompts: list[Any], completions: list[Any], adv_np: np.ndarray
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One batch: uniform's gradients against the kept groups' under (a) and (b). Returns the
    batch's numbers and its gradients (to accumulate over batches)."""
    import torch

    from frontier_rft.training.policy_loss import aggregate

    cfg, n = trainer.config, trainer.config.group_size
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    rows = len(completions)
    groups = rows // n
    mixed = [g for g in range(groups) if np.any(adv_np[g * n : (g + 1) * n] != 0.0)]
    kept_rows = [i for g in mixed for i in range(g * n, (g + 1) * n)]
    skipped_rows = [i for i in range(rows) if i // n not in set(mixed)]
    out: dict[str, Any] = {"groups": groups, "kept_groups": len(mixed)}
    lengths = np.array([len(c) for c in completions], dtype=np.float64)
    adv = torch.tensor(adv_np, dtype=torch.float32)
    full = _terms(trainer, prompts, completions, adv)
    with torch.no_grad():  # describe the two kinds of groups: length and KL per token
        mask = full["mask"]
        kl_row = (full["kl"] * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        for name, sel in (("kept", kept_rows), ("skipped", skipped_rows)):
            if sel:
                out[f"{name}_mean_length"] = float(lengths[sel].mean())
                out[f"{name}_kl_per_token"] = float(kl_row[sel].mean())
        out["kl_per_token"] = float((full["kl"] * mask).sum() / mask.sum())
    if not mixed or not skipped_rows:
        return out, {}
    kept = _terms(
        trainer,
        [prompts[i] for i in kept_rows],
        [completions[i] for i in kept_rows],
        adv[kept_rows],
    )
    scale = len(mixed) / groups
    w_scaled = torch.full((len(kept_rows),), scale)
    t_max = cfg.max_new_tokens
    grads: dict[str, Any] = {}
    for how in AGGREGATIONS:
        g: dict[str, Any] = {}
        for term in ("pg", *REGULARISERS):
            g[f"{term}_uniform"] = _flat_grad(
                aggregate(full[term], full["mask"], how, t_max), params
            )
            g[f"{term}_b"] = _flat_grad(
                aggregate(kept[term], kept["mask"], how, t_max, w_scaled), params
            )
            if term != "pg":
                g[f"{term}_a"] = _flat_grad(aggregate(kept[term], kept["mask"], how, t_max), params)
                g[f"{term}_skipped"] = _flat_grad(  # the skipped groups' own mean
                    aggregate(full[term][skipped_rows], full["mask"][skipped_rows], how, t_max),
                    params,
                )
        g["step_uniform"] = g["pg_uniform"] + cfg.kl_coef * g["kl_uniform"]
        for opt in ("a", "b"):
            g[f"step_{opt}"] = g["pg_b"] + cfg.kl_coef * g[f"kl_{opt}"]
        out[how] = _report(g)
        out[how]["kl_to_pg_norm_uniform"] = float(
            cfg.kl_coef
            * torch.linalg.vector_norm(g["kl_uniform"])
            / torch.linalg.vector_norm(g["pg_uniform"])
        )
        grads[how] = g
    return out, grads


def _report(g: dict[str, Any]) -> dict[str, Any]:
    """Numbers of one set of gradients (one batch's, or the sums over a seed's batches)."""
    res: dict[str, Any] = {}
    for term in (*REGULARISERS, "step"):
        res[term] = {opt: _compare(g[f"{term}_{opt}"], g[f"{term}_uniform"]) for opt in "ab"}
    for term in REGULARISERS:  # do the kept groups pull as the skipped ones do?
        res[term]["kept_vs_skipped"] = _compare(g[f"{term}_a"], g[f"{term}_skipped"])
    res["pg"] = _compare(g["pg_b"], g["pg_uniform"])  # the policy gradient (both options)
    return res


def _stats(vals: list[float]) -> dict[str, float]:
    return {"mean": float(np.mean(vals)), "min": float(np.min(vals)), "max": float(np.max(vals))}


def _summary_of(reports: list[dict[str, Any]]) -> dict[str, Any]:
    s: dict[str, Any] = {}
    for term in (*REGULARISERS, "step"):
        opts = ("a", "b", "kept_vs_skipped") if term != "step" else ("a", "b")
        s[term] = {
            opt: {m: _stats([r[term][opt][m] for r in reports]) for m in METRICS} for opt in opts
        }
    s["pg"] = {m: _stats([r["pg"][m] for r in reports]) for m in METRICS}
    return s


def summarise(points: list[dict[str, Any]], accumulated: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean, min and max of every number over the measured batches (those with kept and
    skipped groups), and over the seeds' sums of gradients."""
    used = [p for p in points if "token_mean" in p]
    summary: dict[str, Any] = {
        "batches": len(used),
        "kept_share_mean": float(np.mean([p["kept_groups"] / p["groups"] for p in used])),
    }
    for key in (
        "kept_kl_per_token",
        "skipped_kl_per_token",
        "kept_mean_length",
        "skipped_mean_length",
        "kl_per_token",
    ):
        vals = [p[key] for p in used if key in p]
        if vals:
            summary[key] = float(np.mean(vals))
    for how in AGGREGATIONS:
        summary[how] = {
            "per_batch": _summary_of([p[how] for p in used]),
            "accumulated": _summary_of([a[how] for a in accumulated]),
            "kl_to_pg_norm_uniform": _stats([p[how]["kl_to_pg_norm_uniform"] for p in used]),
        }
    return summary


def markdown(out: dict[str, Any]) -> str:
    s = out["summary"]
    lines = [
        "# A kept step's KL and entropy terms against uniform's (issue 60, item 4)",
        "",
        f"Command: `{out['command']}`",
        "",
        f"Machine: {out['machine']}; {out['seconds']:.0f} s wall, {out['cpu_seconds']:.0f} s "
        f"CPU (the machine shared). Standard testbed, start weights "
        f"{out['start_weights']}, uniform runs with kl_coef {out['kl_coef']}, seeds "
        f"{out['seeds']}, batches measured at steps {out['measured_steps'][0]}-"
        f"{out['measured_steps'][-1]} (each before its own update). Kept = the batch's mixed "
        f"groups: {s['batches']} batches, kept share G/B {s['kept_share_mean']:.2f} on average.",
        "",
        f"KL per token (k3, to the start model), averaged over the batches: kept groups "
        f"{s.get('kept_kl_per_token', float('nan')):.4g}, skipped groups "
        f"{s.get('skipped_kl_per_token', float('nan')):.4g}; completion length: kept "
        f"{s.get('kept_mean_length', float('nan')):.1f}, skipped "
        f"{s.get('skipped_mean_length', float('nan')):.1f} tokens.",
        "",
        "(a) kept mean: the regulariser's row weights not scaled by G/B; (b) scaled by G/B like "
        "the policy gradient. The reference is uniform's full-batch gradient of the same term. "
        "pull = <g, g_uniform> / ||g_uniform||^2 (1 = uniform's pull along its own direction). "
        "Cosines of (a) and (b) are equal (one is the other times B/G). `per batch`: mean "
        "[min, max] over the batches; `accumulated`: the gradients summed over each seed's "
        "batches (what the steps add up to, per-batch noise averaged), mean [min, max] over "
        "the seeds. `kept vs skipped`: the kept groups' mean gradient against the skipped "
        "groups' own (is the kept mean a stand-in for the skipped groups?).",
        "",
        "| aggregation | over | term | option | norm ratio | pull | relative error | cosine |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(d: dict[str, float]) -> str:
        return f"{d['mean']:.3f} [{d['min']:.3f}, {d['max']:.3f}]"

    for how in AGGREGATIONS:
        for over in ("per_batch", "accumulated"):
            h = s[how][over]
            for term in (*REGULARISERS, "step"):
                opts = ("a", "b", "kept_vs_skipped") if term != "step" else ("a", "b")
                for opt in opts:
                    d = h[term][opt]
                    label = "kept vs skipped" if opt == "kept_vs_skipped" else f"({opt})"
                    lines.append(
                        f"| {how} | {over.replace('_', ' ')} | {term} | {label} | "
                        + " | ".join(cell(d[m]) for m in METRICS)
                        + " |"
                    )
            d = h["pg"]
            lines.append(
                f"| {how} | {over.replace('_', ' ')} | policy gradient | both | "
                + " | ".join(cell(d[m]) for m in METRICS)
                + " |"
            )
    lines += [
        "",
        "`step` = policy gradient + kl_coef x KL (entropy_coef 0, as on the testbed). The "
        "size of the KL term in uniform's step, kl_coef ||g_KL|| / ||g_PG|| per batch: "
        + ", ".join(f"{how} {cell(s[how]['kl_to_pg_norm_uniform'])}" for how in AGGREGATIONS)
        + ".",
        "",
    ]
    return "\n".join(lines)


def watch(
    trainer: Any,
    measured: list[int],
    seed: int,
    points: list[dict[str, Any]],
    sums: dict[str, Any],
    progress: Callable[[str], None],
    t0: float,
) -> None:
    """Have `trainer` (the reference trainer) measure the batches of steps `measured` before
    their update: each batch's numbers appended to `points`, its gradients added to `sums`
    (per aggregation), one JSON line to `progress`."""
    from frontier_rft.training.grpo import StepBatch

    update: Callable[[StepBatch], dict[str, float]] = trainer._update

    def measuring(batch: StepBatch) -> dict[str, float]:
        step = trainer.step_count + 1  # the step whose batch this is (1-based)
        if step in measured:
            advantages = batch.advantages.detach().cpu().numpy()
            point, grads = measure(
                trainer, list(batch.prompts), list(batch.completions), advantages
            )
            point.update(seed=seed, step=step)
            points.append(point)
            for how, g in grads.items():
                acc = sums.setdefault(how, {})
                for k, v in g.items():
                    acc[k] = acc[k] + v if k in acc else v.clone()
            kl = point.get("token_mean", {}).get("kl", {})
            line = {
                "seed": seed,
                "step": step,
                "kept": point["kept_groups"],
                "kl_per_token": round(point["kl_per_token"], 5),
                "kl_a_pull": kl.get("a", {}).get("pull"),
                "kl_b_pull": kl.get("b", {}).get("pull"),
                "s": round(time.perf_counter() - t0),
            }
            progress(json.dumps(line))
        return update(batch)

    trainer._update = measuring


def run(
    model: Path,
    *,
    command: str,
    start_weights: str = "d8e66360e158",
    seeds: list[int],
    warmup: int = 20,
    steps_measured: int = 10,
    kl_coef: float = 0.04,
    runs: Path = Path("runs/kept-kl"),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Each seed's uniform run of the standard testbed (kl_coef `kl_coef`, one torch thread,
    from `model`: a copy of the ledger's start weights `start_weights` where it has none),
    the batches of steps warmup + 1 .. warmup + steps_measured measured before their update;
    the page's numbers, with `command` (the one that made them) and the machine. Each measured
    batch is one JSON line to `progress` (None: the module's log)."""
    progress = progress or _log.info
    import torch
    from transformers.utils import logging

    from frontier_rft.bench.real_rl.entries import MAIN_ENTRIES
    from frontier_rft.bench.real_rl.testbed import testbed
    from frontier_rft.training.grpo import Trainer

    hf: Any = logging
    hf.disable_progress_bar()
    hf.set_verbosity_error()
    torch.set_num_threads(1)

    if not (model / "config.json").is_file():
        shutil.copytree(Path("benchmarks/ledger/start_models") / start_weights, model)
    tb = testbed("standard")
    uniform = next(e for e in MAIN_ENTRIES if e.label == "uniform")
    measured = list(range(warmup + 1, warmup + steps_measured + 1))
    t0, cpu0 = time.perf_counter(), time.process_time()
    points: list[dict[str, Any]] = []
    accumulated: list[dict[str, Any]] = []
    for seed in seeds:
        cfg = dataclasses.replace(
            tb.run_config(uniform, seed),
            steps=measured[-1],
            kl_coef=kl_coef,
            device="cpu",
            threads=1,
            given="prompts",
            eval_every=0,
        )
        run_dir = Path(runs) / f"seed{seed}"
        shutil.rmtree(run_dir, ignore_errors=True)
        trainer = Trainer(cfg, model, run_dir, log=lambda _: None)
        sums: dict[str, Any] = {}
        watch(trainer, measured, seed, points, sums, progress, t0)
        for _ in range(measured[-1]):
            trainer.step()
        accumulated.append({how: _report(g) for how, g in sums.items()})
    return {
        "command": command,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, one torch thread",
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - cpu0,
        "start_weights": start_weights,
        "kl_coef": kl_coef,
        "seeds": seeds,
        "measured_steps": measured,
        "summary": summarise(points, accumulated),
        "accumulated": accumulated,
        "points": points,
    }
