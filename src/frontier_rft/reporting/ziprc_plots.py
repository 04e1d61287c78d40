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

from frontier_rft.reporting.plots import Plot, _figure, _render

__all__ = ["calibration_figure", "write_plot"]

_COLOR = "#1f77b4"
_WITHIN = "#ff7f0e"
_REFERENCE = "#3a3a3a"


def _values(values: Any) -> np.ndarray:
    """Floats of a report field; null (a calibration.json's undefined value) becomes NaN."""
    return np.asarray(values, dtype=np.float64)


def calibration_figure(report: Mapping[str, Any]) -> Plot:
    """Reliability diagram of value_end and AUC over generation position, side by side.

    `report` is calibration_report's dict, or the calibration.json it was written to."""
    rel = report["reliability_end"]
    count = _values(rel["count"])
    seen = count > 0
    pos = report["auc_by_position"]
    predicted, empirical = _values(rel["predicted"])[seen], _values(rel["empirical"])[seen]
    with _figure(9.0, 3.8) as fig:
        left, right = fig.subplots(1, 2)
        left.plot([0, 1], [0, 1], "--", color=_REFERENCE, linewidth=1, label="perfect")
        sizes = 12 + 240 * count[seen] / max(count.max(), 1)
        left.plot(
            predicted,
            empirical,
            "-",
            color=_COLOR,
            linewidth=1,
        )
        left.scatter(
            predicted,
            empirical,
            s=sizes,
            color=_COLOR,
            alpha=0.8,
            label="head (area ~ sequences)",
        )
        left.set(xlim=(0, 1), ylim=(0, 1), xlabel="predicted value_end", ylabel="success rate")
        left.set_title(f"Reliability (Brier {float(_values(report['brier_end'])):.3f})")
        left.legend(loc="upper left")
        fractions = _values(pos["fractions"])
        right.plot(fractions, _values(pos["auc"]), "o-", color=_COLOR, label="pooled")
        if "auc_within_prompt" in pos:
            within = _values(pos["auc_within_prompt"])
            right.plot(fractions, within, "s-", color=_WITHIN, label="within a prompt")
        right.axhline(0.5, color=_REFERENCE, linestyle=":", linewidth=1, label="chance")
        right.axhline(
            float(_values(report["auc_end"])),
            color=_COLOR,
            linestyle="--",
            linewidth=1,
            label="pooled value_end",
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


_PARAMETER = {"prune": "thr", "early_stop": "τ", "utility": "β", "fixed": "K", "adaptive": "K"}
"""How a family's swept parameter is written next to its points."""
# Label offsets tried in order (points; horizontal alignment): right, above, left, below...
_OFFSETS = (
    (6, 3, "left"), (6, -11, "left"), (-6, 3, "right"), (-6, -11, "right"),
    (0, 9, "center"), (0, -17, "center"), (10, 14, "left"), (-10, 14, "right"),
    (10, -24, "left"), (-10, -24, "right"), (0, 22, "center"), (0, -30, "center"),
)  # fmt: skip


def _point_labels(group: Sequence[Mapping[str, Any]], family: str, axis: str) -> list[Any]:
    """(x, y, text) per distinct point; points that coincide share one label ('τ=0.8, 0.9')."""
    merged: dict[tuple[float, float], list[str]] = {}
    for r in group:
        label = str(r["label"])
        if "=" not in label:
            continue
        key = (round(float(r[axis]["mean"]), 6), round(float(r["accuracy"]["mean"]), 6))
        merged.setdefault(key, []).append(label.split("=", 1)[1])
    name = _PARAMETER.get(family, "")
    return [(x, y, f"{name}={', '.join(values)}") for (x, y), values in merged.items()]


def _place_labels(
    fig: Any,
    ax: Any,
    items: Sequence[tuple[float, float, str, str]],
    bars: Sequence[tuple[float, float, float, float]] = (),
) -> None:
    """Annotate each (x, y, text, colour) at the first offset whose text box overlaps no
    other label, no marker, no error bar (x, y, x_err, y_err) and stays inside the axes
    (else the least overlapping one)."""
    from matplotlib.transforms import Bbox

    fig.canvas.draw()  # run the layout once, then freeze it: boxes are in final positions
    fig.set_layout_engine("none")
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    markers = [
        Bbox.from_extents(px - 6, py - 6, px + 6, py + 6)
        for px, py in ax.transData.transform([(x, y) for x, y, _, _ in items])
    ]
    lines = []  # error bars as thin boxes: a label on top of one is hard to read
    for x, y, dx, dy in bars:
        (x0, y0), (x1, y1) = ax.transData.transform([(x - dx, y - dy), (x + dx, y + dy)])
        (cx, cy) = ax.transData.transform([(x, y)])[0]
        lines += [Bbox.from_extents(cx - 1.5, y0, cx + 1.5, y1)]
        lines += [Bbox.from_extents(x0, cy - 1.5, x1, cy + 1.5)]
    placed: list[Any] = []
    scale = fig.dpi / 72.0
    for i, (x, y, text, color) in enumerate(items):
        best: tuple[float, Any, Any] | None = None
        for dx, dy, align in _OFFSETS:
            note = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy),
                               ha=align, fontsize=8, color=color)  # fmt: skip
            box = note.get_window_extent(renderer).expanded(1.05, 1.1)
            others = placed + lines + [m for j, m in enumerate(markers) if j != i]
            overlap = sum(
                max(0.0, min(box.x1, o.x1) - max(box.x0, o.x0))
                * max(0.0, min(box.y1, o.y1) - max(box.y0, o.y0))
                for o in others
            )
            outside = box.x0 < frame.x0 or box.x1 > frame.x1 or box.y0 < frame.y0
            outside = outside or box.y1 > frame.y1
            cost = overlap + (1e6 if outside else 0.0) + 1e-3 * scale * (abs(dx) + abs(dy))
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, note, box)
            else:
                note.remove()
            if overlap == 0 and not outside:
                break
        assert best is not None
        placed.append(best[2])


def pareto_figure(rows: Sequence[Mapping[str, Any]], axis: str = "compute") -> Plot:
    """Accuracy against compute or latency, one marker per operating point with error bars of
    ±1 std over seeds on both axes; a policy's sweep is joined in x order and each point is
    labelled with its parameter, placed so labels do not collide; offline rows are hollow."""
    if axis not in _PARETO_AXES:
        raise ValueError(f"axis must be one of {sorted(_PARETO_AXES)}, got {axis!r}")
    seen = list(dict.fromkeys(str(r["family"]) for r in rows))
    families = [f for f in _PARETO_FAMILIES if f in seen] + [
        f for f in seen if f not in _PARETO_FAMILIES
    ]  # a fixed legend order, whatever order the rows come in
    seeds = max(int(r.get("seeds", 1)) for r in rows)
    spread = "1 seed: no error bars" if seeds == 1 else f"error bars: ±1 std over {seeds} seeds"
    labels: list[tuple[float, float, str, str]] = []
    bars: list[tuple[float, float, float, float]] = []
    with _figure(8.6, 4.8) as fig:
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
                xerr=[r[axis]["std"] for r in group] if seeds > 1 else None,
                yerr=[r["accuracy"]["std"] for r in group] if seeds > 1 else None,
                fmt="*" if baseline else ("s" if hollow else "o"),
                color=color,
                mfc="white" if hollow else color,
                capsize=3,
                markersize=12 if baseline else 6,
                linewidth=1,
                label=name,
                zorder=4 if baseline else 3,
            )
            labels += [(x, y, text, color) for x, y, text in _point_labels(group, family, axis)]
            if seeds > 1:
                bars += [
                    (r[axis]["mean"], r["accuracy"]["mean"], r[axis]["std"], r["accuracy"]["std"])
                    for r in group
                ]
        ax.set(xlabel=_PARETO_AXES[axis], ylabel="accuracy of the returned sample")
        handles, names = ax.get_legend_handles_labels()
        fig.legend(handles, names, loc="outside right upper", alignment="left",
                   title=f"operating point\n({spread})")  # fmt: skip
        _place_labels(fig, ax, labels, bars)
        return _render(
            fig,
            f"ziprc_pareto_{axis}",
            f"ZIP-RC-Lite decoder: accuracy vs {axis}",
            f"Mean over {seeds} seed(s) per operating point ({spread} on both axes; the seeds "
            "share the prompts, so the bars show sampling noise, not prompt noise: the "
            "results table gives paired 95% CIs over prompts). Up and left is better; dotted "
            "lines cross at best-of-K (none). Hollow squares: fixed and adaptive K evaluated "
            "offline on the none run's samples. Labels name each point's parameter; "
            "coinciding points share one label.",
        )
