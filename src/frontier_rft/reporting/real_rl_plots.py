"""Figures of the real-RL benchmark (`frontier bench-rl`): one fixed colour per selector name.

Bands are 95% intervals of the mean over seeds (percentile bootstrap over seeds, the same
estimator as the tables); every figure states its seed count.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.reporting.colors import SELECTOR_COLORS
from frontier_rft.reporting.data import moving_average, smoothing_note, tenth_window
from frontier_rft.reporting.plots import _DPI, _figure
from frontier_rft.reporting.png import save_png

__all__ = [
    "SELECTOR_COLORS",
    "plot_effects",
    "plot_learning_curves",
    "plot_rollout_curves",
    "plot_training",
    "plot_ttb",
]

_VARIANT_DASH: dict[str, Any] = {
    "": "-",
    "rho0": "--",
    "lam1": "--",
    "r0.05": ":",
    "r0.15": "--",
    "alloc": "-.",
    "alloc-lean": ":",
    "alloc-lean-long": ":",
    "alloc-pilot": (0, (3, 1, 1, 1)),
    "n4": ":",
    "n4-long": ":",
}


def _style(label: str) -> tuple[str, Any]:
    # The longest selector name the label starts with (skip-audit-kept is skip-audit's, not
    # skip's): variants share their selector's colour, and differ by dash.
    names = [n for n in SELECTOR_COLORS if label == n or label.startswith(f"{n}-")]
    base = max(names, key=len, default=label.partition("-")[0])
    variant = label[len(base) :].lstrip("-")
    color = SELECTOR_COLORS.get(base, "#7f7f7f")
    dash = "--" if label == "uniform" else _VARIANT_DASH.get(variant, "-.")
    return color, dash


def _titled(context: str, text: str) -> str:
    """`text` after what the figure shows (`context`: real RL, learner, regime, device)."""
    return f"{context}. {text}" if context else text


def _smoothed_band(
    seeds: Mapping[int, Mapping[str, Any]], key: str, windows: set[int]
) -> tuple[np.ndarray, ...]:
    """One run's training metric `key` over its seeds, each smoothed over ~10% of the shortest
    seed's steps (that window added to `windows`): the steps, the mean and its 95% band."""
    n = min(len(run["train"]) for run in seeds.values())
    w = tenth_window(n)
    windows.add(w)
    logs = (seeds[s]["train"][:n] for s in sorted(seeds))
    curves = [np.array([r.get(key, np.nan) for r in log], dtype=np.float64) for log in logs]
    mean, lo, hi = _band(np.array([moving_average(c, w) for c in curves]))
    return np.arange(1, n + 1), mean, lo, hi


def _band(values: np.ndarray, resamples: int = 2000, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Mean and bootstrap 95% interval of the mean over rows (seeds), per column."""
    v = np.asarray(values, dtype=np.float64)
    mean = np.nanmean(v, axis=0)
    if v.shape[0] < 2:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.shape[0], size=(resamples, v.shape[0]))
    boot = np.nanmean(v[idx], axis=1)
    lo, hi = np.nanquantile(boot, [0.025, 0.975], axis=0)
    return mean, lo, hi


def _save(fig: Any, path: Path) -> Path:
    return save_png(fig, path, _DPI)


def _eval_matrix(runs: Mapping[int, Mapping[str, Any]], x: str) -> tuple[np.ndarray, np.ndarray]:
    seeds = sorted(runs)
    n = min(len(runs[s]["pass1"]) for s in seeds)
    xs = np.array([runs[s][x][:n] for s in seeds], dtype=np.float64)
    ys = np.array([runs[s]["pass1"][:n] for s in seeds], dtype=np.float64)
    return xs, ys


def plot_learning_curves(
    runs: Mapping[str, Mapping[int, Mapping[str, Any]]],
    labels: Sequence[str],
    path: Path,
    context: str = "",
) -> Path:
    """One panel per selector against uniform: held-out pass@1 vs steps, mean and 95% band,
    the dotted line at uniform's best (the TTB(100%) target, mean over seeds)."""
    base_x, base_y = _eval_matrix(runs["uniform"], "eval_steps")
    b_mean, b_lo, b_hi = _band(base_y)
    target = float(np.mean(base_y.max(axis=1)))
    others = [lb for lb in labels if lb != "uniform"] or ["uniform"]  # uniform-only: calibration
    ncols = min(4, len(others))
    nrows = int(np.ceil(len(others) / ncols))
    seeds = len(runs["uniform"])
    title = textwrap.wrap(  # lines that fit the figure's width (~12 characters per inch)
        _titled(
            context,
            f"Held-out pass@1, mean and bootstrap 95% band over {seeds} paired seeds; "
            "dotted: uniform's best (TTB100 target)",
        ),
        width=int(12 * 3.3 * ncols),
    )
    with _figure(3.3 * ncols, 2.7 * nrows + 0.4 + 0.2 * len(title)) as fig:
        axes = np.atleast_1d(fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False))
        for ax in axes.ravel()[len(others) :]:
            ax.set_visible(False)
        for ax, label in zip(axes.ravel(), others, strict=False):
            x = base_x.mean(axis=0)
            ax.fill_between(x, b_lo, b_hi, color=SELECTOR_COLORS["uniform"], alpha=0.15, lw=0)
            ax.plot(x, b_mean, color=SELECTOR_COLORS["uniform"], ls="--", lw=1.4, label="uniform")
            if label != "uniform":
                mx, my = _eval_matrix(runs[label], "eval_steps")
                mean, lo, hi = _band(my)
                color, dash = _style(label)
                ax.fill_between(mx.mean(axis=0), lo, hi, color=color, alpha=0.2, lw=0)
                ax.plot(mx.mean(axis=0), mean, color=color, ls=dash, lw=1.8, label=label)
            ax.axhline(target, color="black", ls=":", lw=0.9)
            head = f"{label} (n={len(runs[label])} seeds)"  # a long label wraps in its panel
            ax.set_title("\n".join(textwrap.wrap(head, 34)), loc="left", fontsize=10)
            ax.legend(loc="lower right", fontsize=8.5)
        for ax in axes.ravel()[: len(others)]:  # every panel keeps its step axis
            ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_xlabel("training step")
        for ax in axes[:, 0]:
            ax.set_ylabel("held-out pass@1")
        fig.suptitle("\n".join(title), fontsize=10.5)
        return _save(fig, path)


def plot_ttb(
    summary: Mapping[str, Any], labels: Sequence[str], path: Path, context: str = ""
) -> Path:
    """TTB(100%) per selector: each seed (dots; x at the right edge = never reached), the mean
    and its 95% CI (bar), with the 1.0 (uniform) and 0.7 (target) lines."""
    rows = summary["labels"]
    reached = [
        v
        for label in labels
        for v in [*rows[label]["ttb100"]["values"], *(rows[label]["ttb100"]["ci"] or [])]
        if v is not None
    ]
    cap = max(2.0, np.ceil(2.0 * max(reached, default=0.0) * 1.05) / 2.0)  # every value shown
    with _figure(7.5, 0.45 * len(labels) + 1.4) as fig:
        ax = fig.subplots()
        for i, label in enumerate(labels):
            cell = rows[label]["ttb100"]
            color, _ = _style(label)
            vals = [cap if v is None else v for v in cell["values"]]
            never = [v is None for v in cell["values"]]
            jitter = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else [0.0]
            for v, j, nv in zip(vals, jitter, never, strict=True):
                ax.plot(v, i + j, marker="x" if nv else "o", color=color, ms=5, alpha=0.8, ls="")
            if cell["mean"] is not None:
                lo, hi = cell["ci"]
                ax.errorbar(
                    cell["mean"],
                    i,
                    xerr=[[cell["mean"] - lo], [hi - cell["mean"]]],
                    color=color,
                    marker="D",
                    ms=7,
                    capsize=4,
                    lw=2,
                )
        ax.axvline(1.0, color="black", lw=0.9)
        ax.axvline(0.7, color="black", ls=":", lw=0.9)
        ax.set_yticks(range(len(labels)), labels)
        ax.invert_yaxis()
        ax.set_xlim(0, cap + 0.05)
        ax.set_xlabel(
            f"TTB(100%) vs uniform (lower is faster; x = never reached, drawn at {cap:g})"
        )
        n = len(rows["uniform"]["seeds"])
        title = _titled(
            context,
            f"TTB(100%) over {n} seeds: each seed (dots), mean ± bootstrap 95% CI (diamond, "
            "only where every seed reached it); dotted: 0.7",
        )
        ax.set_title("\n".join(textwrap.wrap(title, 72)), loc="left", fontsize=10)
        return _save(fig, path)


def plot_training(
    runs: Mapping[str, Mapping[int, Mapping[str, Any]]],
    labels: Sequence[str],
    path: Path,
    context: str = "",
) -> Path:
    """Effective task ratio and mean |advantage| of the rolled-out groups over training
    (smoothed over ~10% of the run, mean and 95% band over seeds)."""
    keys = (
        (
            "train/effective_task_ratio",
            "effective task ratio (rolled-out prompts)",
            "share of prompts, mixed outcomes",
        ),
        ("train/mean_abs_advantage", "mean |advantage| (rolled-out)", "mean |advantage|"),
        (
            "train/success_rate",
            "success rate of selected prompts' rollouts "
            "(dotted: 0.5, where pass/fail variance peaks)",
            "success rate",
        ),
    )
    windows: set[int] = set()
    with _figure(14.0, 4.0) as fig:
        axes = fig.subplots(1, len(keys))
        for ax, (key, title, ylabel) in zip(axes, keys, strict=True):
            for label in labels:
                x, mean, lo, hi = _smoothed_band(runs[label], key, windows)
                color, dash = _style(label)
                ax.fill_between(x, lo, hi, color=color, alpha=0.12, lw=0)
                ax.plot(x, mean, color=color, ls=dash, lw=1.5, label=label)
            ax.set_title("\n".join(textwrap.wrap(title, 48)), loc="left", fontsize=10)
            ax.set(xlabel="training step", ylabel=ylabel)
        axes[-1].axhline(0.5, color="black", ls=":", lw=0.8)
        axes[0].legend(fontsize=8.5, ncols=2)
        n_seeds = len(runs["uniform"])
        title = _titled(
            context,
            f"Training signal, mean and bootstrap 95% band over {n_seeds} seeds; "
            f"{smoothing_note(windows)}",
        )
        fig.suptitle("\n".join(textwrap.wrap(title, 150)), fontsize=10.5)
        return _save(fig, path)


def plot_rollout_curves(
    runs: Mapping[str, Mapping[int, Mapping[str, Any]]],
    labels: Sequence[str],
    path: Path,
    context: str = "",
) -> Path:
    """Every entry in one panel: held-out pass@1 against cumulative rollouts (mean over seeds
    of each evaluation's rollouts), mean and 95% band; dotted: uniform's best. The view that
    compares entries spending different rollouts a step."""
    seeds = len(runs["uniform"])
    target = float(np.mean(_eval_matrix(runs["uniform"], "eval_rollouts")[1].max(axis=1)))
    title = textwrap.wrap(
        _titled(
            context or "Real RL",
            f"Held-out pass@1 against cumulative rollouts, mean and bootstrap 95% band "
            f"over {seeds} paired seeds; dotted: uniform's best (TTB100 target)",
        ),
        width=60,
    )
    with _figure(5.6, 4.2 + 0.2 * len(title)) as fig:
        ax = fig.subplots()
        for label in labels:
            xs, ys = _eval_matrix(runs[label], "eval_rollouts")
            mean, lo, hi = _band(ys)
            color, dash = _style(label)
            x = xs.mean(axis=0) / 1e3
            ax.fill_between(x, lo, hi, color=color, alpha=0.12, lw=0)
            ax.plot(x, mean, color=color, ls=dash, lw=1.7, label=label)
        ax.axhline(target, color="black", ls=":", lw=0.9)
        ax.set_xlabel("cumulative rollouts (thousands)")
        ax.set_ylabel("held-out pass@1")
        ax.legend(loc="lower right", fontsize=8.5)
        fig.suptitle("\n".join(title), fontsize=10)
        return _save(fig, path)


def _across(labels: tuple[str, ...], key: str) -> list[tuple[str, str, str]]:
    """A panel's curves: metric `key` of each run in `labels`, named by the run."""
    return [(label, key, "") for label in labels]


def plot_effects(runs: Mapping[str, Mapping[int, Mapping[str, Any]]], path: Path) -> Path | None:
    """The papers' effects on this learner, one panel each, for the runs that exist: a panel
    needs a run other than uniform, and names only the comparisons it shows."""
    bots = " (rho = 0.1 vs 0)" if "bots-rho0" in runs else ""
    lam = " (lam 0.01 vs 1)" if "metis-lam1" in runs else ""
    panels: list[tuple[str, list[tuple[str, str, str]], str]] = [
        (
            f"BOTS: effective task ratio{bots}",
            _across(("uniform", "bots", "bots-rho0"), "train/effective_task_ratio"),
            "effective task ratio",
        ),
        (
            "Prioritized: pool sizes (tasks)",
            [
                ("prioritized", f"prioritized/{key}", name)
                for key, name in (
                    ("heap_size", "heap"),
                    ("unsolved_pool", "unsolved"),
                    ("solved_pool", "solved"),
                    ("never_selected", "never selected"),
                )
            ],
            "tasks",
        ),
        (
            "SEC: mean level of selected prompts",
            _across(("uniform", "sec"), "train/selected_level_mean"),
            "level (0 = the first of --levels)",
        ),
        (
            f"METIS: selected prompts' success rate{lam}",
            _across(("uniform", "metis", "metis-lam1"), "train/success_rate"),
            "success rate",
        ),
        (
            f"METIS: judge prediction mean{lam}",
            _across(("metis", "metis-lam1"), "metis/prediction_mean"),
            "predicted variance",
        ),
    ]
    panels = [p for p in panels if any(lb in runs for lb, _, _ in p[1] if lb != "uniform")]
    ratios = {"frontier-r0.05": "0.05", "frontier": "0.10", "frontier-r0.15": "0.15"}
    shown = [lb for lb in ratios if lb in runs]
    curves = ["uniform", *shown] if "uniform" in runs and shown else shown
    if not panels and not shown:
        return None
    count = len(panels) + (1 if shown else 0)
    ncols = 3
    nrows = int(np.ceil(count / ncols))
    windows: set[int] = set()
    with _figure(4.6 * ncols, 3.4 * nrows) as fig:
        axes = list(np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel())
        for ax in axes[count:]:
            ax.set_visible(False)
        for ax, (title, series, ylabel) in zip(axes, panels, strict=False):
            markers = ["-", "--", ":", "-."]
            for k, (label, key, name) in enumerate(series):
                if label not in runs:
                    continue
                x, mean, lo, hi = _smoothed_band(runs[label], key, windows)
                color, dash = _style(label)
                if name:
                    dash = markers[k % len(markers)]
                ax.fill_between(x, lo, hi, color=color, alpha=0.12, lw=0)
                ax.plot(
                    x,
                    mean,
                    color=color,
                    ls=dash,
                    lw=1.5,
                    label=f"{label} {name} (n={len(runs[label])})".strip(),
                )
            ax.set_title(title, loc="left", fontsize=10)
            ax.set_ylabel(ylabel)
            ax.set_xlabel("training step")
            ax.legend(fontsize=8)
        if shown:
            ax = axes[len(panels)]
            for label in curves:
                xs, ys = _eval_matrix(runs[label], "eval_steps")
                mean, lo, hi = _band(ys)
                color, dash = _style(label)
                ax.fill_between(xs.mean(axis=0), lo, hi, color=color, alpha=0.1, lw=0)
                name = f"frontier, replay {ratios[label]}" if label in ratios else label
                ax.plot(
                    xs.mean(axis=0),
                    mean,
                    color=color,
                    ls=dash,
                    lw=1.5,
                    label=f"{name} (n={len(runs[label])})",
                )
            title = f"Frontier replay ratio {' / '.join(ratios[lb] for lb in shown)}"
            ax.set_title(f"{title}: held-out pass@1 (not smoothed)", loc="left", fontsize=10)
            ax.set_ylabel("held-out pass@1")
            ax.set_xlabel("training step")
            ax.legend(fontsize=8)
        fig.suptitle(
            f"The papers' effects on the real learner (mean, bootstrap 95% band over seeds; "
            f"training curves {smoothing_note(windows)})",
            fontsize=10.5,
        )
        return _save(fig, path)


def plot_uniform_calibration(calibration: Mapping[str, Any], path: Path) -> Path:
    """Held-out pass@1 of every uniform calibration run (one seed each), from
    benchmarks/results/real_rl_calibration.json; the dotted line is the +0.10 target."""
    run = calibration["uniform_run"]
    series = [("2x20,3x20 lr 1e-4 (the testbed)", run["eval_steps"], run["pass1"], "-")]
    styles = {"lr 3e-4": "--", "lr 2e-4": ":", "250-step": "-."}
    for name, other in calibration["other_configurations"].items():
        if "pass1" in other:
            dash = next((d for key, d in styles.items() if key in name), "-.")
            series.append((name, other["eval_steps"], other["pass1"], dash))
    with _figure(8.5, 4.2) as fig:
        ax = fig.subplots()
        for i, (name, x, y, dash) in enumerate(series):
            color = SELECTOR_COLORS["uniform"] if i == 0 else f"C{i}"
            ax.plot(x, y, ls=dash, marker="o", ms=3, lw=1.6, color=color, label=name)
            ax.axhline(y[0] + 0.10, color=color, ls=":", lw=0.7)
        ax.set_xlabel("training step")
        ax.set_ylabel("held-out pass@1")
        ax.set_title(
            "Uniform RL on the tiny Countdown policy (one seed per curve); dotted: start + 0.10",
            loc="left",
            fontsize=10,
        )
        ax.legend(fontsize=8)
        return _save(fig, path)
