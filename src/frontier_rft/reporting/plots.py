"""The report's figures, as PNG bytes (matplotlib, Agg canvas, imported only when plotting)."""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from frontier_rft.reporting.colors import BASELINE_COLOR, label_colors, selector_linestyle
from frontier_rft.reporting.data import (
    display_label,
    label_notes,
    moving_average,
    runs_by_label,
    series,
    smoothing_window,
    step_bins,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

__all__ = [
    "Plot",
    "Style",
    "category_share",
    "effective_task_ratio",
    "label_styles",
    "learning_curves",
    "make_plots",
    "success_heatmaps",
]

_DPI = 150  # pixels per inch in the PNG; the page shows 100 CSS px per inch (sharp on HiDPI)
CSS_PX_PER_INCH = 100
_RC: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",  # ships with matplotlib: the same glyphs on every machine
    "font.size": 11,
    "axes.titlesize": 11.5,
    "axes.labelsize": 11,
    "legend.fontsize": 10.5,
    "legend.title_fontsize": 10.5,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "svg.hashsalt": "frontier-rft",
}


@dataclass(frozen=True)
class Style:
    """How one label is drawn, identically in every figure."""

    color: str
    """Line and band colour."""
    linestyle: str
    """Matplotlib line style: the baseline dashed, some selectors dash-dotted (reporting.colors)."""
    name: str
    """Legend text (carries the baseline mark and any method note)."""
    baseline: bool
    """Whether this label is the benchmark's baseline."""


@dataclass(frozen=True)
class Plot:
    """One rendered figure."""

    name: str
    """File stem and key in write_report's result, e.g. 'learning_curves'."""
    title: str
    """Heading shown above the figure."""
    caption: str
    """One line on how to read the figure."""
    png: bytes
    """The PNG file."""
    width: int
    """Display width in CSS pixels."""
    height: int
    """Display height in CSS pixels."""


def label_styles(results: Mapping[str, Any]) -> dict[str, Style]:
    """Colour and line style per label: the selector's fixed colour and style
    (reporting.colors: dash-dotted where a similar colour is near), the baseline dark grey
    and dashed."""
    baseline = results["settings"].get("baseline")
    notes = label_notes(results)
    colors = label_colors([label for label in results["labels"] if label != baseline])
    styles: dict[str, Style] = {}
    for label in results["labels"]:
        name = display_label(label, results, notes)
        if label == baseline:
            styles[label] = Style(BASELINE_COLOR, "--", name, True)
        else:
            styles[label] = Style(colors[label], selector_linestyle(label), name, False)
    return styles


def _seed_note(n: int) -> str:
    return "1 seed, no band" if n == 1 else f"band: min–max over {n} seeds"


def _paired_differences(
    runs: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]], key: str
) -> np.ndarray:
    """Per-seed difference to the baseline run of the same seed: (paired seeds, T)."""
    by_seed = {str(r.get("seed")): r for r in base}
    rows = [
        np.asarray(series([r], key)[0]) - np.asarray(series([by_seed[str(r.get("seed"))]], key)[0])
        for r in runs
        if str(r.get("seed")) in by_seed
    ]
    return np.asarray(rows, dtype=float)


@contextmanager
def _figure(width: float, height: float) -> Iterator[Figure]:
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with rc_context(_RC):
        fig = Figure(figsize=(width, height), dpi=_DPI, layout="constrained")
        FigureCanvasAgg(fig)  # Agg, no pyplot: no global figure state, no display needed
        yield fig


def _render(fig: Figure, name: str, title: str, caption: str) -> Plot:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None})
    w, h = fig.get_size_inches()
    return Plot(name, title, caption, buf.getvalue(), round(w * 100), round(h * 100))


def _outside_legend(fig: Figure, ax: Axes, title: str | None = None) -> None:
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside right upper", title=title, alignment="left")


def _grid(fig: Figure, count: int) -> tuple[list[Axes], int, int]:
    ncols = min(4, count)
    nrows = math.ceil(count / ncols)
    axes = np.atleast_1d(fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False))
    flat = list(axes.ravel())
    for ax in flat[count:]:
        ax.set_visible(False)
    for ax in flat[max(0, count - ncols) : count]:  # no panel below: show its step axis
        ax.xaxis.set_tick_params(labelbottom=True)
    return flat[:count], nrows, ncols


def _step_ticks() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(nbins="auto", integer=True)  # steps are whole numbers, even in a 2-step run


_TITLE_CHARS_PER_INCH = 7
"""Figure-title characters per inch of figure width: a title wraps before it reaches a legend
in the right margin (which takes up to ~a third of the width)."""


def _figure_title(fig: Figure, results: Mapping[str, Any], text: str) -> None:
    """A left-aligned title over the whole figure: what a PNG shared alone must say, so it
    starts by saying the run was simulated and on which learner; wrapped so that it does not
    run into a legend placed outside the axes, top right."""
    name = (results.get("scenario") or {}).get("name", "?")
    text = f"Simulated, not real RL (learner {name!r}): {text}"
    width = max(20, int(fig.get_figwidth() * _TITLE_CHARS_PER_INCH))
    fig.suptitle("\n".join(textwrap.wrap(text, width)), x=0.01, ha="left", fontsize="medium")


def _panel_title(ax: Axes, text: str) -> None:
    ax.set_title("\n".join(textwrap.wrap(text, 26)), loc="left")


def learning_curves(results: Mapping[str, Any], styles: Mapping[str, Style]) -> Plot:
    """Held-out score per step (mean over seeds, min–max band) and its paired difference to
    the baseline (mean over seeds of the per-seed difference, min–max band)."""
    groups = runs_by_label(results)
    baseline = results["settings"]["baseline"]
    base_mean = np.nanmean(series(groups[baseline], "score"), axis=0)
    best = (results["summary"].get(baseline, {}).get("best_score") or {}).get("mean")
    target = float(best) if best is not None else float(np.nanmax(base_mean))
    seeds = max(len(r) for r in groups.values())
    with _figure(12.0, 4.6) as fig:
        ax, gap = fig.subplots(1, 2)
        x = np.arange(base_mean.shape[0])
        for label, runs in groups.items():
            st = styles[label]
            score = series(runs, "score")
            diff = _paired_differences(runs, groups[baseline], "score")
            width = 1.8 if st.baseline else 1.5
            # The baseline's own spread over seeds too (its difference to itself is 0).
            bands = ((ax, score), (gap, diff)) if not st.baseline else ((ax, score),)
            for panel, values in bands:
                if values.shape[0] > 1:
                    lo, hi = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
                    panel.fill_between(x, lo, hi, color=st.color, alpha=0.12, linewidth=0)
            ax.plot(x, np.nanmean(score, axis=0), color=st.color, ls=st.linestyle, lw=width,
                    label=st.name)  # fmt: skip
            if diff.size:
                gap.plot(x, np.nanmean(diff, axis=0), color=st.color, ls=st.linestyle, lw=width)
        ax.axhline(target, color="black", ls=":", lw=1.1, label=f"{baseline} best (TTB100 target)")
        gap.axhline(0.0, color="black", lw=0.8)
        ax.set(xlabel="training step", ylabel="held-out score")
        gap.set(xlabel="training step", ylabel=f"score − {baseline} score, same seed")
        ax.set_title("Held-out score", loc="left")
        gap.set_title(f"Difference to {baseline}, same seed", loc="left")
        n = "1 seed, no band" if seeds == 1 else f"mean over {seeds} seeds, band min–max"
        _figure_title(fig, results, f"learning curves ({n})")
        for a in (ax, gap):
            a.set_xlim(0, x[-1])
            a.xaxis.set_major_locator(_step_ticks())
        _outside_legend(fig, ax)
        caption = (
            f"Left: mean held-out score per step ({_seed_note(seeds)}); dotted line: "
            f"{baseline}'s best score, the TTB(100%) target — higher and further left is "
            f"better. Right: each seed's score minus {baseline}'s at the same seed (same learner "
            f"and pool), mean and {_seed_note(seeds).replace('band: ', 'band ')}; above zero "
            f"means ahead of {baseline} at that step."
        )
        return _render(fig, "learning_curves", "Learning curves", caption)


def effective_task_ratio(results: Mapping[str, Any], styles: Mapping[str, Style]) -> Plot:
    """Effective task ratio per step, mean over seeds, lightly smoothed."""
    groups = runs_by_label(results)
    steps = len(next(iter(groups.values()))[0]["etr"])
    window = smoothing_window(steps)
    with _figure(12.0, 4.2) as fig:
        ax = fig.subplots()
        x = np.arange(1, steps + 1)
        seeds = max(len(r) for r in groups.values())
        for label, runs in groups.items():
            st = styles[label]
            per_seed = np.asarray([moving_average(e, window) for e in series(runs, "etr")])
            etr = np.nanmean(per_seed, axis=0)
            if per_seed.shape[0] > 1:
                lo, hi = np.nanmin(per_seed, axis=0), np.nanmax(per_seed, axis=0)
                ax.fill_between(x, lo, hi, color=st.color, alpha=0.10, linewidth=0)
            dots = "o" if steps <= 20 else None  # a short run is a few points: show them
            ax.plot(x, etr, color=st.color, ls=st.linestyle, lw=1.6, marker=dots, label=st.name)
        ax.set(xlabel="training step", ylabel="effective task ratio", ylim=(0, 1.02))
        ax.set_xlim(1, max(steps, 2))
        ax.xaxis.set_major_locator(_step_ticks())
        how = "1 seed" if seeds == 1 else f"mean over {seeds} seeds, band min–max"
        smoothed = f"; moving average over {window} steps" if window > 1 else ""
        _figure_title(
            fig,
            results,
            f"share of selected prompts whose rollout group had mixed outcomes ({how}{smoothed})",
        )
        _outside_legend(fig, ax)
        smooth = f"centred moving average over {window} steps" if window > 1 else "not smoothed"
        caption = (
            f"Effective task ratio per step, mean over seeds ({smooth}; {_seed_note(seeds)}): "
            "the share of the batch that carried gradient signal. A mechanism, not a score: "
            "a selector that passes over all-equal prompts raises it by design (with kept "
            "rollouts most), and on real RL the highest ratios ended lowest on held-out tasks; "
            "uniform shows the pool's share."
        )
        return _render(fig, "effective_task_ratio", "Effective task ratio", caption)


def _shares(counts: np.ndarray) -> np.ndarray:
    """Rows normalised to sum to 1; rows with no selections become NaN."""
    totals = counts.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = np.where(totals > 0, counts / np.maximum(totals, 1e-300), np.nan)
    return out


_POINT = 1e-6  # a histogram bin narrower than this holds one value (e.g. exactly 0)


def _num(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".")


def bin_labels(edges: Sequence[float]) -> list[str]:
    """What each histogram bin [e_i, e_i+1) holds (np.histogram: the last one is closed).

    A bin narrower than 1e-6 holds one value and is labelled by it ('0: all failed');
    an edge 1e-6 away from a round number is that number, open ('(0, 0.2)')."""
    out = []
    for i in range(len(edges) - 1):
        lo, hi, last = float(edges[i]), float(edges[i + 1]), i == len(edges) - 2
        if hi - lo < _POINT:
            value = round(lo, 6)
            note = {0.0: ": all failed", 1.0: ": all solved"}.get(value, "")
            out.append(f"{_num(value)}{note}")
            continue
        lo_r, hi_r = round(lo, 6), round(hi, 6)
        left = "(" if lo > lo_r else "["
        right = "]" if last and hi >= hi_r else ")"
        out.append(f"{left}{_num(lo_r)}, {_num(hi_r)}{right}")
    return out


def success_heatmaps(results: Mapping[str, Any], styles: Mapping[str, Style]) -> Plot:
    """Per label: which empirical success rates the selected tasks had, step by step."""
    from matplotlib.colors import PowerNorm
    from matplotlib.patches import Rectangle

    groups = runs_by_label(results)
    edges = [float(e) for e in results["success_bins"]]
    n_bins = len(edges) - 1
    steps = len(next(iter(groups.values()))[0]["success_hist"])
    xedges = step_bins(steps)
    shares, ever = {}, np.zeros(n_bins, dtype=bool)
    for label, runs in groups.items():
        counts = np.nansum(series(runs, "success_hist"), axis=0)  # pooled over seeds: (T, E)
        ever |= counts.sum(axis=0) > 0
        shares[label] = _shares(np.add.reduceat(counts, xedges[:-1], axis=0))
    vmax = max(float(np.nanmax(s)) if np.isfinite(s).any() else 0.0 for s in shares.values())
    # Square-root colour scale: a share spread over many middle bins stays visible next to
    # a selector that piles everything into one bin.
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=vmax or 1.0)
    nrows = math.ceil(len(groups) / min(4, len(groups)))
    with _figure(12.0, 2.5 * nrows + 0.5) as fig:
        axes, nrows, ncols = _grid(fig, len(groups))
        mesh = None
        for i, (ax, (label, share)) in enumerate(zip(axes, shares.items(), strict=True)):
            mesh = ax.pcolormesh(xedges, np.arange(n_bins + 1), share.T, cmap="YlGnBu", norm=norm)
            for row in np.flatnonzero(~ever):  # no group of any method ever landed here
                box = Rectangle((0.0, float(row)), steps, 1, fc="#f0f0f0", ec="#b0b0b0", lw=0)
                box.set_hatch("///")
                ax.add_patch(box)
            ax.grid(False)
            _panel_title(ax, styles[label].name)
            if i % ncols == 0:
                ax.set_ylabel("group success rate (bin)")
            if i >= len(axes) - ncols:
                ax.set_xlabel("training step")
        # One labelled row per bin: the bins differ in width (exactly 0, (0, 0.2), ...,
        # exactly 1), so rows are categories, not a linear success-rate axis.
        names = bin_labels(edges)
        axes[0].set_yticks(np.arange(n_bins) + 0.5, names)
        points = [i for i, name in enumerate(names) if ":" in name]
        rules = sorted({y for p in points for y in (p, p + 1) if 0 < y < n_bins})
        for ax in axes:  # a white rule sets the single-value rows apart
            for y in rules:
                ax.axhline(float(y), color="white", lw=1.5)
        axes[0].set_xlim(0, steps)
        axes[0].xaxis.set_major_locator(_step_ticks())
        assert mesh is not None
        fig.colorbar(
            mesh,
            ax=axes,
            shrink=0.8,
            aspect=30,
            label="share of the selected tasks\n(square-root scale)",  # fits a 1-row figure
        )
        width = int(xedges[1] - xedges[0]) if len(xedges) > 1 else 1
        binned = f", steps pooled in bins of {width}" if width > 1 else ""
        _figure_title(
            fig, results, f"group success rate of the selected tasks (pooled over seeds{binned})"
        )
        n = results["settings"].get("rollouts", "n")
        empty = (
            f"; hatched rows: no group of any method had that success rate (with {n} rollouts "
            f"a group's rate is a multiple of 1/{n})"
            if not ever.all()
            else ""
        )
        caption = (
            "Each column: the selected tasks of one step by the empirical success rate of their "
            f"rollout group (pooled over seeds{binned}; square-root colour scale shared by all "
            "panels). Rows are bins of unequal width, labelled by what they hold: groups that "
            f"all failed, {', '.join(names[1:-1])}, groups that all solved. The middle rows "
            f"carry the most signal, the bottom and top rows none; uniform shows the pool's "
            f"spread{empty}."
        )
        return _render(fig, "success_heatmaps", "Success rate of the selected tasks", caption)


def category_share(results: Mapping[str, Any], styles: Mapping[str, Style]) -> Plot:
    """Per label: stacked share of each category among the selected tasks over time."""
    from matplotlib import colormaps

    groups = runs_by_label(results)
    names: Sequence[str] = results["category_names"]
    steps = len(next(iter(groups.values()))[0]["category_counts"])
    window = smoothing_window(steps)
    colors = colormaps["viridis"](np.linspace(0.05, 0.92, len(names)))
    nrows = math.ceil(len(groups) / min(4, len(groups)))
    with _figure(12.0, 2.5 * nrows + 0.5) as fig:
        axes, nrows, ncols = _grid(fig, len(groups))
        # Short runs as blocks (step t fills [t-1, t), so even one step shows), long ones smooth.
        blocks = steps <= 50
        x = np.arange(steps + 1) if blocks else np.arange(1, steps + 1)
        for i, (ax, (label, runs)) in enumerate(zip(axes, groups.items(), strict=True)):
            share = _shares(np.nansum(series(runs, "category_counts"), axis=0))  # (T, C)
            share = np.nan_to_num(moving_average(share.T, window))
            if blocks:
                share = np.concatenate([share, share[:, -1:]], axis=1)
            ax.stackplot(
                x, share, colors=colors, labels=list(names), lw=0, step="post" if blocks else None
            )
            ax.grid(False)
            _panel_title(ax, styles[label].name)
            if i % ncols == 0:
                ax.set_ylabel("share of selected tasks")
            if i >= len(axes) - ncols:
                ax.set_xlabel("training step")
        axes[0].set_xlim(0, steps)
        axes[0].xaxis.set_major_locator(_step_ticks())
        axes[0].set_ylim(0, 1)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(
            handles[::-1],  # top of the stack first, as drawn
            labels[::-1],
            loc="outside right upper",
            title="category",
            alignment="left",
            ncols=max(1, math.ceil(len(names) / 20)),
        )
        smooth = f"centred moving average over {window} steps" if window > 1 else "not smoothed"
        _figure_title(
            fig, results, f"category share of the selected tasks (pooled over seeds, {smooth})"
        )
        caption = (
            "Share of each category among the selected tasks per step (pooled over seeds, "
            f"{smooth}); a curriculum shows as the colour mass moving from easy to hard over time."
        )
        return _render(fig, "category_share", "Category share of the selected tasks", caption)


def make_plots(results: Mapping[str, Any]) -> list[Plot]:
    """Every figure the results support, in report order (heatmaps and categories need data)."""
    styles = label_styles(results)
    plots = [learning_curves(results, styles)]
    if all("etr" in run for run in results["runs"]):
        plots.append(effective_task_ratio(results, styles))
    if len(results.get("success_bins") or []) >= 2 and all(
        run.get("success_hist") for run in results["runs"]
    ):
        plots.append(success_heatmaps(results, styles))
    if results.get("category_names") and all(run.get("category_counts") for run in results["runs"]):
        plots.append(category_share(results, styles))
    return plots
