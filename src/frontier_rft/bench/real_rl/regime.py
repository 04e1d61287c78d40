"""How a testbed's policy learns, from the run ledger alone: the four statistics that say
whether a CPU regime learns like the pretrained LM (issue 70, item 1), per testbed.

From uniform's runs (paired seeds of one testbed and device class):

- **gain**: held-out pass@1 at the end over its start (the first evaluation);
- **start zero-variance share**: of the training pool under the start model (each seed's
  start state), with its all-wrong and all-correct sides;
- **epoch-2 mixed share**: mixed groups among uniform's groups of epoch 2, with the flat
  groups by side where the records count them (`train/all_correct_groups`,
  `train/flat_unsolved_groups`; older records do not);

and from the default skip (`skip-kept`) against uniform: the mixed rate of the groups it left
out in epoch 2 over the base rate (`skip_cost`), the check that matters: near 1, evidence from
epoch 1 no longer says which prompts are flat.

Where the ledger holds uniform's reward logs (`bench-rl --reward-log`), `epoch_transitions`
says why, from one run instead of a pair: epoch 2's groups split by the prompt's last outcome
in epoch 1 (all-wrong, all-correct, mixed), with each part's epoch-2 mixed rate over the base
rate. A flat side whose ratio is near 1 is one that passing over loses as much from as a
random pick would.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import mean_ci
from frontier_rft.bench.real_rl.skip_cost import ledger_runs, ledger_skip_cost
from frontier_rft.shadow.replay import read_reward_log

__all__ = [
    "OUTCOMES",
    "REGIME_TARGETS",
    "epoch_transitions",
    "regime_lines",
    "regime_stats",
    "transition_lines",
    "transition_stats",
]

REGIME_TARGETS = {
    "gain": ">= 2.5x",
    "start_zero_variance": "0.6-0.8",
    "epoch2_mixed": "0.2-0.4",
    "skip_rate_ratio": ">= 0.7",
}
"""Issue 70's targets for a CPU regime that learns like SmolLM2-135M."""
OUTCOMES = ("all-wrong", "all-correct", "mixed")
"""A prompt's group outcome: flat and not all solved (all-wrong, or all at a partial reward),
flat and all solved (every reward 1, as `train/all_correct_groups` counts), or mixed."""
MIN_GROUPS = 20
"""Fewest epoch-2 groups of one outcome in a seed for its mixed rate to count (a side the
policy barely reaches gives a ratio of a handful of groups)."""


def _uniform_runs(roots: Sequence[Path], digest: str, device: str) -> tuple[Path, int, int]:
    """Uniform's folder of testbed `digest` in the first ledger that holds one, the testbed's
    batch size and its steps an epoch."""
    root = next((r for r in roots if (r / digest / device / "uniform").is_dir()), None)
    if root is None:
        raise ValueError(f"no uniform runs of testbed {digest}/{device} in the ledgers")
    train = json.loads((root / digest / "testbed.json").read_text(encoding="utf-8"))["train"]
    batch = int(train["batch_size"])
    return root / digest / device / "uniform", batch, int(train["train_size"]) // batch


def regime_stats(
    roots: Sequence[Path], digest: str, device: str, seeds: Sequence[int]
) -> dict[str, Any]:
    """The four statistics (mean and bootstrap CI over seeds) of testbed `digest`."""
    uniform, batch, epoch = _uniform_runs(roots, digest, device)
    runs = ledger_runs(uniform, seeds)
    gain = [r["pass1"][-1] / r["pass1"][0] for r in runs.values() if r["pass1"][0] > 0]
    start, end = [r["pass1"][0] for r in runs.values()], [r["pass1"][-1] for r in runs.values()]
    mixed, correct, unsolved = [], [], []
    for run in runs.values():
        rows = run["train"][epoch : 2 * epoch]
        if len(rows) < epoch:
            continue
        mixed.append(float(np.mean([r["train/informative_groups"] for r in rows])) / batch)
        if all("train/all_correct_groups" in r for r in rows):
            correct.append(float(np.mean([r["train/all_correct_groups"] for r in rows])) / batch)
            unsolved.append(float(np.mean([r["train/flat_unsolved_groups"] for r in rows])) / batch)
    states = [r["start_state"] for r in runs.values() if isinstance(r.get("start_state"), dict)]
    cost = ledger_skip_cost(roots, digest, device, ["skip-kept"], seeds)
    epoch2 = cost.get("skip-kept", {}).get("epochs", {}).get("2", {})
    return {
        "seeds": len(runs),
        "pass1_start": mean_ci(start),
        "pass1_end": mean_ci(end),
        "gain": mean_ci(gain),
        "start_zero_variance": mean_ci([float(s["zero_variance"]) for s in states]),
        "start_all_wrong": mean_ci([float(s["never_solved"]) for s in states]),
        "start_all_correct": mean_ci([float(s["always_solved"]) for s in states]),
        "epoch2_mixed": mean_ci(mixed),
        "epoch2_all_correct": mean_ci(correct),
        "epoch2_flat_unsolved": mean_ci(unsolved),
        "skip_rate_ratio": epoch2.get("rate_ratio", mean_ci([])),
        "skip_lost_share": epoch2.get("lost_share", mean_ci([])),
        "skip_seeds": len(cost.get("skip-kept", {}).get("seeds", [])),
    }


def _cell(ci: Mapping[str, Any], fmt: str = ".2f", suffix: str = "") -> str:
    if ci.get("mean") is None:
        return "—"
    lo, hi = ci["ci"]
    return f"{ci['mean']:{fmt}}{suffix} [{lo:{fmt}}, {hi:{fmt}}]"


def regime_lines(rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A markdown table, a row per named testbed, a column per statistic."""
    t = REGIME_TARGETS
    lines = [
        "| regime | uniform seeds | pass@1 start → end | gain (target "
        f"{t['gain']}) | start zero-variance (target {t['start_zero_variance']}): all-wrong, "
        f"all-correct | epoch-2 mixed share (target {t['epoch2_mixed']}) | epoch-2 flat: "
        "all-correct, unsolved | skip-kept's left-out mixed rate / base rate, epoch 2 (target "
        f"{t['skip_rate_ratio']}) | epoch-2 mixed groups skip-kept lost |",
        "|---|---:|---|---|---|---|---|---|---|",
    ]
    for name, s in rows.items():
        lines.append(
            f"| {name} | {s['seeds']} | {_cell(s['pass1_start'], '.3f')} → "
            f"{_cell(s['pass1_end'], '.3f')} | {_cell(s['gain'], '.2f', 'x')} | "
            f"{_cell(s['start_zero_variance'])}: {_cell(s['start_all_wrong'])}, "
            f"{_cell(s['start_all_correct'])} | {_cell(s['epoch2_mixed'])} | "
            f"{_cell(s['epoch2_all_correct'])}, {_cell(s['epoch2_flat_unsolved'])} | "
            f"{_cell(s['skip_rate_ratio'])} ({s['skip_seeds']} pairs) | "
            f"{_cell(s['skip_lost_share'], '.0%')} |"
        )
    return lines


def epoch_transitions(log: Path, epoch: int) -> dict[str, tuple[int, int]]:
    """From a uniform run's reward log with `epoch` steps an epoch: per outcome of a prompt's
    last group in epoch 1 (`OUTCOMES`), epoch 2's groups of such prompts and the mixed ones
    among them (prompts untried in epoch 1 are left out)."""
    last: dict[int, int] = {}
    counts = np.zeros((len(OUTCOMES), 2), dtype=np.int64)
    for step in read_reward_log(log):
        if step.step >= 2 * epoch:
            break
        low, high = step.rewards.min(axis=1), step.rewards.max(axis=1)
        outcome = np.where(low != high, 2, np.where(low >= 1.0, 1, 0))
        for task, got in zip(step.task_ids.tolist(), outcome.tolist(), strict=True):
            if step.step >= epoch and task in last:
                counts[last[task]] += (1, got == 2)
            elif step.step < epoch:
                last[task] = got
    return {name: (int(n), int(m)) for name, (n, m) in zip(OUTCOMES, counts, strict=True)}


def transition_stats(
    roots: Sequence[Path], digest: str, device: str, seeds: Sequence[int]
) -> dict[str, Any]:
    """Per epoch-1 outcome, over the seeds whose uniform run left a reward log in the ledger:
    its share of epoch 2's groups, their mixed rate, and that rate over the base rate (mean
    and bootstrap CI over seeds)."""
    uniform, _, epoch = _uniform_runs(roots, digest, device)
    definitions = sorted(p for p in uniform.glob("*") if p.is_dir())
    per_seed = []
    for s in seeds:  # a seed's log from the first definition that holds one
        logs = [d / f"seed{s}.rewards.jsonl.gz" for d in definitions]
        log = next((f for f in logs if f.is_file()), None)
        if log is not None:
            got = epoch_transitions(log, epoch)
            groups = sum(n for n, _ in got.values())
            base = sum(m for _, m in got.values()) / groups if groups else float("nan")
            per_seed.append((got, groups, base))
    nan = float("nan")
    out: dict[str, Any] = {"seeds": len(per_seed)}
    for name in OUTCOMES:
        share, rate, ratio = [], [], []
        for got, groups, base in per_seed:
            n, m = got[name]
            counted = n >= MIN_GROUPS
            share.append(n / groups if groups else nan)
            rate.append(m / n if counted else nan)
            ratio.append(m / n / base if counted and base > 0 else nan)
        out[name] = {"share": mean_ci(share), "rate": mean_ci(rate), "ratio": mean_ci(ratio)}
    return out


def transition_lines(rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A markdown table, a row per named testbed: per epoch-1 outcome, its share of epoch 2's
    groups and their epoch-2 mixed rate over the base rate."""
    head = " | ".join(f"{o} in epoch 1: share of epoch 2; mixed rate / base" for o in OUTCOMES)
    lines = [f"| regime | uniform seeds with a reward log | {head} |", "|---|---:|---|---|---|"]
    for name, s in rows.items():
        cells = " | ".join(f"{_cell(s[o]['share'])}; {_cell(s[o]['ratio'])}" for o in OUTCOMES)
        lines.append(f"| {name} | {s['seeds']} | {cells} |")
    return lines
