"""ZIP-RC-Lite figures (matplotlib, Agg canvas): head calibration, and later the decoder's Pareto.

`calibration_figure(report)` takes `inference.calibration.calibration_report`'s dict:
left, a reliability diagram of value_end against the empirical success rate (marker area
~ sequences per bin); right, AUC(V -> correct) along the generation, pooled over prompts and
within a prompt (mean over prompts with both outcomes: the part selection can use), with the
pooled value_end AUC as a reference line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.reporting.plots import Plot, _figure, _outside_legend, _render

__all__ = ["calibration_figure", "write_plot"]

_COLOR = "#1f77b4"
_WITHIN = "#ff7f0e"
_REFERENCE = "#3a3a3a"


def calibration_figure(report: Mapping[str, Any]) -> Plot:
    """Reliability diagram of value_end and AUC over generation position, side by side."""
    rel = report["reliability_end"]
    count = np.asarray(rel["count"], dtype=np.float64)
    seen = count > 0
    pos = report["auc_by_position"]
    with _figure(9.0, 3.8) as fig:
        left, right = fig.subplots(1, 2)
        left.plot([0, 1], [0, 1], "--", color=_REFERENCE, linewidth=1, label="perfect")
        sizes = 12 + 240 * count[seen] / max(count.max(), 1)
        left.plot(
            np.asarray(rel["predicted"])[seen],
            np.asarray(rel["empirical"])[seen],
            "-",
            color=_COLOR,
            linewidth=1,
        )
        left.scatter(
            np.asarray(rel["predicted"])[seen],
            np.asarray(rel["empirical"])[seen],
            s=sizes,
            color=_COLOR,
            alpha=0.8,
            label="head (area ~ sequences)",
        )
        left.set(xlim=(0, 1), ylim=(0, 1), xlabel="predicted value_end", ylabel="success rate")
        left.set_title(f"Reliability (Brier {report['brier_end']:.3f})")
        left.legend(loc="upper left")
        fractions = np.asarray(pos["fractions"])
        right.plot(fractions, np.asarray(pos["auc"]), "o-", color=_COLOR, label="pooled")
        if "auc_within_prompt" in pos:
            within = np.asarray(pos["auc_within_prompt"], dtype=np.float64)
            right.plot(fractions, within, "s-", color=_WITHIN, label="within a prompt")
        right.axhline(0.5, color=_REFERENCE, linestyle=":", linewidth=1, label="chance")
        right.axhline(
            report["auc_end"], color=_COLOR, linestyle="--", linewidth=1, label="pooled value_end"
        )
        right.set(
            xlim=(0, 1),
            ylim=(0.0, 1.0),
            xlabel="position / completion length",
            ylabel="AUC(V -> correct)",
        )
        right.set_title("Separability along the generation")
        right.legend(loc="lower left")
        n, k = report["prompts"], report["samples"]
        return _render(
            fig,
            "ziprc_calibration",
            "ZIP-RC-Lite head calibration",
            f"{n} held-out prompts x {k} samples; left: reliability of value_end, right: AUC "
            "of the value read at a fraction of each completion (0 = the prompt), pooled and "
            "within a prompt.",
        )


def write_plot(plot: Plot, path: str | os.PathLike[str]) -> Path:
    """Write the PNG atomically (tmp + os.replace); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(plot.png)
    os.replace(tmp, out)
    return out


# ---------------------------------------------------------------------------- decoder Pareto
# (`frontier ziprc pareto`; rows are frontier_rft.inference.pareto.summarize's)

__all__ += ["pareto_figure"]

_PARETO_FAMILIES = {
    "none": ("#3a3a3a", "none (best-of-K)"),
    "prune": ("#d62728", "prune (threshold)"),
    "early_stop": ("#1f77b4", "early_stop (tau)"),
    "utility": ("#2ca02c", "utility (beta)"),
    "fixed": ("#7f7f7f", "fixed K (offline)"),
    "adaptive": ("#9467bd", "adaptive K (offline)"),
}
_PALETTE_FALLBACK = ("#ff7f0e", "#8c564b", "#e377c2", "#17becf")  # unknown families
_PARETO_AXES = {
    "compute": "compute: forward passes per prompt",
    "latency": "latency: decode steps per prompt",
}


def pareto_figure(rows: Sequence[Mapping[str, Any]], axis: str = "compute") -> Plot:
    """Accuracy against compute or latency, one marker per operating point, mean +- std
    error bars over seeds on both axes; a policy's sweep is joined in x order and each
    point carries its parameter; offline adaptive-K rows are hollow."""
    if axis not in _PARETO_AXES:
        raise ValueError(f"axis must be one of {sorted(_PARETO_AXES)}, got {axis!r}")
    seen = list(dict.fromkeys(str(r["family"]) for r in rows))
    families = [f for f in _PARETO_FAMILIES if f in seen] + [
        f for f in seen if f not in _PARETO_FAMILIES
    ]  # a fixed legend order, whatever order the rows come in
    with _figure(8.2, 4.6) as fig:
        ax = fig.subplots()
        for k, family in enumerate(families):
            color, name = _PARETO_FAMILIES.get(family, (_PALETTE_FALLBACK[k % 4], family))
            group = sorted(
                (r for r in rows if r["family"] == family), key=lambda r: r[axis]["mean"]
            )
            xs = np.array([r[axis]["mean"] for r in group])
            ys = np.array([r["accuracy"]["mean"] for r in group])
            if len(group) > 1:
                ax.plot(xs, ys, "-", color=color, linewidth=1, alpha=0.5)
            hollow = group[0].get("kind") == "offline"
            baseline = family == "none"
            if baseline:  # the reference every other point is read against
                ax.axhline(ys[0], color=color, linestyle=":", linewidth=1)
                ax.axvline(xs[0], color=color, linestyle=":", linewidth=1)
            ax.errorbar(
                xs,
                ys,
                xerr=[r[axis]["std"] for r in group],
                yerr=[r["accuracy"]["std"] for r in group],
                fmt="*" if baseline else ("s" if hollow else "o"),
                color=color,
                mfc="white" if hollow else color,
                capsize=3,
                markersize=12 if baseline else 6,
                linewidth=1,
                label=name,
                zorder=4 if baseline else 3,
            )
            for r, x, y in zip(group, xs, ys, strict=True):
                label = str(r["label"])
                if "=" in label:
                    ax.annotate(
                        label.split("=", 1)[1],
                        (x, y),
                        textcoords="offset points",
                        xytext=(5, 4),
                        fontsize=8,
                        color=color,
                    )
        ax.set(xlabel=_PARETO_AXES[axis], ylabel="accuracy of the returned sample")
        _outside_legend(fig, ax)
        seeds = max(int(r.get("seeds", 1)) for r in rows)
        return _render(
            fig,
            f"ziprc_pareto_{axis}",
            f"ZIP-RC-Lite decoder: accuracy vs {axis}",
            f"Mean +- std over {seeds} seeds per operating point; up and left is better; dotted "
            "lines cross at best-of-K (none). Hollow squares: adaptive-K evaluated offline on "
            "the none run's samples.",
        )
