"""The figure of `frontier ab compare`: two arms of real training runs, held-out score
against the rollouts spent and against the distinct prompts trained (docs/ab_test.md).

Each run is one line (seeds of an arm share its colour); the first arm is drawn wide and
pale under the second's narrow line, with other markers, so that both show where they
overlap (identical arms included). The dotted line marks the rollout count where the arms
are compared, and the title says what the figure shows and the verdict.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from frontier_rft.reporting.colors import label_colors, selector_linestyle
from frontier_rft.reporting.plots import _figure
from frontier_rft.reporting.png import save_png

__all__ = ["plot_ab"]

Curve = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]
"""(rollouts, distinct prompts trained, held-out score) at each evaluation of one run."""


def plot_ab(
    arms: Mapping[str, Sequence[Curve]],
    metric: str,
    budget: float,
    verdict: str,
    out_png: str | os.PathLike[str],
) -> Path:
    """Write the two-panel PNG to `out_png`; returns its path. `arms`: label -> one curve
    per run (seed)."""
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    colors = label_colors([_head(label) for label in arms])
    with _figure(12.0, 4.6) as fig:
        ax_r, ax_d = fig.subplots(1, 2, sharey=True)
        for rank, (label, curves) in enumerate(arms.items()):
            color, style = colors[_head(label)], selector_linestyle(_head(label))
            under = rank == 0  # wide and pale, so a line drawn over it still shows it
            look = {
                "color": color,
                "ls": style,
                "lw": 4.0 if under else 1.4,
                "alpha": 0.45 if under else 1.0,
                "marker": "o" if under else "x",
                "ms": 7 if under else 5,
            }
            for i, (rollouts, distinct, score) in enumerate(curves):
                name = f"{label} ({len(curves)} run{'s' * (len(curves) > 1)})" if i == 0 else None
                ax_r.plot(rollouts, score, label=name, **look)
                known = np.isfinite(distinct)
                ax_d.plot(distinct[known], score[known], **look)
        ax_r.axvline(budget, color="#3a3a3a", ls=":", lw=1, label="compared here")
        ax_r.set(xlabel="rollouts spent (cumulative)", ylabel=f"held-out {metric}")
        ax_r.set_title("held-out score against rollouts spent", loc="left", fontsize=10)
        ax_d.set(xlabel="distinct prompts trained (groups with mixed rewards, cumulative)")
        ax_d.set_title("held-out score against distinct prompts trained", loc="left", fontsize=10)
        fig.legend(loc="outside lower center", ncols=len(arms) + 1)
        title = (
            f"A/B of real training runs (your logs, not a simulation): held-out {metric} at "
            f"each evaluation. {verdict}"
        )
        fig.suptitle("\n".join(textwrap.wrap(title, 140)), x=0.01, ha="left", fontsize=10)
        save_png(fig, out, 120)
    return out


def _head(label: str) -> str:
    """The selector name a label starts with ('greso' of 'greso (B)'), for its colour."""
    return label.split(" ")[0]
