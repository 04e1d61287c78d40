"""One fixed colour per selector, the same in every figure (report, training runs, docs).

Related selectors share a hue family but stay apart: the BOTS family is blue (bots mid,
mopps light, dots navy); the two difficulty curricula are brown (offline) and olive (adcl);
the baseline (uniform) is dark grey and dashed. Labels that are not plain selector names
(sweep points such as `bots[lam=0.2]`) take sequential colours in label order, so a sweep
reads light to dark with its values.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BASELINE_COLOR",
    "SELECTOR_COLORS",
    "label_colors",
    "selector_color",
    "selector_linestyle",
]

BASELINE_COLOR = "#3a3a3a"
SELECTOR_COLORS = {
    "uniform": BASELINE_COLOR,
    "offline": "#8c564b",  # brown
    "adcl": "#bcbd22",  # olive
    "prioritized": "#ff7f0e",  # orange
    "bots": "#1f77b4",  # blue
    "mopps": "#17becf",  # cyan
    "dots": "#393b79",  # navy
    "sec": "#2ca02c",  # green
    "frontier": "#d62728",  # red
    "metis": "#9467bd",  # purple
    "pcl": "#e377c2",  # pink
}
"""Every registered selector's colour (a test checks the registry is covered)."""
DASH_DOT = "-."
SECOND_STYLE = frozenset({"dots", "mopps", "adcl", "metis"})
"""Selectors drawn dash-dotted: each sits next to a similar colour (dots/bots, mopps/bots,
adcl/offline, metis/pcl) and can trace the same curve, so colour alone would hide one."""
_SEQUENTIAL = ("#fdae61", "#f46d43", "#d73027", "#a50026", "#74add1", "#4575b4", "#313695")


def selector_color(label: str) -> str | None:
    """The fixed colour of a selector name, or of the selector a label starts with
    ('bots + refs' -> bots); None for anything else (a sweep point, an unknown name)."""
    if label in SELECTOR_COLORS:
        return SELECTOR_COLORS[label]
    head = label.split(" ")[0]
    return SELECTOR_COLORS.get(head) if "[" not in label else None


def label_colors(labels: Sequence[str]) -> dict[str, str]:
    """A colour per label: fixed ones for selector names, sequential ones for the rest."""
    out: dict[str, str] = {}
    k = 0
    for label in labels:
        color = selector_color(label)
        if color is None:
            color = _SEQUENTIAL[k % len(_SEQUENTIAL)]
            k += 1
        out[label] = color
    return out


def selector_linestyle(label: str) -> str:
    """'-.' for the selectors of SECOND_STYLE (and labels starting with one), else '-'."""
    head = label.split(" ")[0].split("[")[0]
    return DASH_DOT if head in SECOND_STYLE else "-"
