"""One figure comparing `frontier train` runs: training ETR and reward, held-out pass@1.

Runs are grouped by label (usually the selector); several run directories under one label
are seeds, drawn as their mean with a min–max band (curves) and mean ± std (bars); a label
with one run says "1 seed" and has neither. Colours are the selectors' fixed ones.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.metrics_log import read_metrics_jsonl
from frontier_rft.reporting.colors import BASELINE_COLOR, label_colors
from frontier_rft.reporting.data import moving_average, smoothing_note, tenth_window
from frontier_rft.reporting.plots import _figure
from frontier_rft.reporting.png import save_png
from frontier_rft.selectors.metis import METISSelector

__all__ = ["load_run_curves", "plot_judge_metrics", "plot_training_runs"]


def load_run_curves(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Per-step training ETR and reward, plus start and final held-out pass@1 of one run."""
    rows = read_metrics_jsonl(Path(run_dir) / "metrics.jsonl")
    train = [r for r in rows if "train/reward_mean" in r]
    evals = [r for r in rows if "eval/pass@1" in r]
    if not train or not evals:
        raise ValueError(f"{run_dir}: metrics.jsonl has no training steps or evaluations yet")
    return {
        "steps": np.array([r["step"] for r in train]),
        "etr": np.array([r["train/effective_task_ratio"] for r in train]),
        "reward": np.array([r["train/reward_mean"] for r in train]),
        "start_pass1": float(evals[0]["eval/pass@1"]),
        "final_pass1": float(evals[-1]["eval/pass@1"]),
    }


def plot_training_runs(
    runs: Mapping[str, Sequence[str | os.PathLike[str]]], out_png: str | os.PathLike[str]
) -> Path:
    """Write a 3-panel PNG (smoothed ETR, smoothed reward, pass@1 bars); returns its path."""
    curves = {label: [load_run_curves(d) for d in dirs] for label, dirs in runs.items() if dirs}
    if not curves:
        raise ValueError("plot_training_runs needs at least one run directory")
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    colors = label_colors(list(curves))
    seeds = {label: len(group) for label, group in curves.items()}
    windows: set[int] = set()
    with _figure(13.0, 4.0) as fig:
        ax_etr, ax_rew, ax_bar = fig.subplots(1, 3)
        starts, tops = [], []
        for i, (label, group) in enumerate(curves.items()):
            color = colors[label]
            n = min(len(c["steps"]) for c in group)
            steps = group[0]["steps"][:n]
            window = tenth_window(n)
            windows.add(window)
            mixed = len(set(seeds.values())) > 1  # label the seed count only where it differs
            name = f"{label} ({len(group)} seed{'s' * (len(group) > 1)})" if mixed else label
            for ax, key in ((ax_etr, "etr"), (ax_rew, "reward")):
                smoothed = np.array([moving_average(c[key][:n], window) for c in group])
                if len(group) > 1:
                    ax.fill_between(steps, smoothed.min(0), smoothed.max(0), color=color,
                                    alpha=0.15, linewidth=0)  # fmt: skip
                ax.plot(steps, smoothed.mean(0), color=color, label=name)
            finals = np.array([c["final_pass1"] for c in group])
            spread = finals.std(ddof=1) if len(finals) > 1 else 0.0
            ax_bar.bar(i, finals.mean(), color=color, yerr=spread if len(finals) > 1 else None,
                       capsize=4)  # fmt: skip
            starts += [c["start_pass1"] for c in group]
            tops.append(finals.mean() + spread)
        counts = sorted(set(seeds.values()))
        if counts == [1]:
            what, bar_note = "1 seed each", "1 seed each, no error bars"
        elif counts[0] == 1:  # some labels with seeds, some with one
            what = "mean over seeds, band min–max (1 seed: no band)"
            bar_note = "mean ± std over seeds (1 seed: no error bar)"
        else:
            what = "mean over seeds, band min–max"
            bar_note = "mean ± std over seeds"
        ax_etr.set(xlabel="training step", ylabel="effective task ratio", ylim=(0, 1))
        ax_etr.set_title("mixed-reward share of selected prompts", fontsize=10)
        ax_rew.set(xlabel="training step", ylabel="mean training reward")
        ax_rew.set_title("training reward (depends on what was selected)", fontsize=10)
        ax_bar.axhline(float(np.mean(starts)), color="#3a3a3a", ls="--", lw=1,
                       label="before training")  # fmt: skip
        ax_bar.set_xticks(range(len(curves)), list(curves), rotation=30, ha="right")
        ax_bar.set(ylabel="held-out pass@1 after training")
        ax_bar.set_title("held-out pass@1", fontsize=10)
        ax_bar.set_ylim(0, 1.3 * max([*tops, *starts, 1e-3]))
        ax_bar.legend(loc="upper right")
        handles, names = ax_etr.get_legend_handles_labels()
        fig.legend(handles, names, loc="outside lower center", ncols=min(6, len(names)))
        title = (
            f"Curves: {what}; {smoothing_note(windows)}. Bars: {bar_note}; dashed: the "
            "held-out pass@1 before training."
        )
        fig.suptitle("\n".join(textwrap.wrap(title, 130)), x=0.01, ha="left", fontsize=10)
        save_png(fig, out, 120)
    return out


def plot_judge_metrics(run_dir: str | os.PathLike[str], out_png: str | os.PathLike[str]) -> Path:
    """METIS's judge over training (the paper's figure 6): failure rate, judge reward, and
    the mean +- std of its predicted variances, smoothed."""
    rows = read_metrics_jsonl(Path(run_dir) / "metrics.jsonl")
    rows = [r for r in rows if "metis/prediction_mean" in r]
    if not rows:
        raise ValueError(f"{run_dir}: no METIS judge metrics (was it a --selector metis run?)")
    steps = np.array([r["step"] for r in rows])
    window = tenth_window(len(rows))

    def smooth(key: str) -> np.ndarray:
        return moving_average(np.array([r.get(key, np.nan) for r in rows], float), window)

    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    metis, other = METISSelector.color, BASELINE_COLOR  # no other selector's colour
    with _figure(13.0, 4.0) as fig:
        ax_fail, ax_rew, ax_pred = fig.subplots(1, 3)
        ax_fail.plot(steps, smooth("metis/judge_failure_rate"), color=metis)
        ax_fail.set(xlabel="training step", ylabel="judge failure rate", ylim=(0, None))
        ax_fail.set_title("unparseable or out-of-range judgments")
        ax_rew.plot(steps, smooth("metis/judge_reward_mean"), color=metis)
        ax_rew.set(xlabel="training step", ylabel="judge reward 1 - (4 (v_hat - v))^2")
        ax_rew.set_title("judge reward of scored judgments")
        mean, std = smooth("metis/prediction_mean"), smooth("metis/prediction_std")
        ax_pred.plot(steps, mean, color=other, label="all candidates (mean ± std)")
        ax_pred.fill_between(steps, mean - std, mean + std, color=other, alpha=0.15, lw=0)
        selected = smooth("metis/selected_prediction_mean")
        ax_pred.plot(steps, selected, color=metis, ls="-.", label="selected")
        top = np.nanmax(np.concatenate([mean + std, selected, [0.25]]))
        ax_pred.set(
            xlabel="training step", ylabel="predicted reward variance", ylim=(0, 1.05 * top)
        )
        ax_pred.set_title("the policy's predictions")
        fig.legend(loc="outside lower right", ncols=2)  # below: never over a curve
        fig.suptitle(
            f"METIS judge, {'/'.join(Path(run_dir).parts[-2:])} ({smoothing_note({window})})",
            x=0.01,
            ha="left",
            fontsize=10,
        )
        save_png(fig, out, 120)
    return out
