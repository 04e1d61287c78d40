"""The figure of `frontier shadow replay --figure`: per rule, the rollouts it would have saved
against the signal it would have lost, step by step on a logged run (docs/shadow.md).

One column per rule. Top: cumulative rollouts saved (x) against cumulative informative
groups lost (y); bottom: against the cumulative share of |GRPO advantage| lost. Each pass
over the pool has its own colour, with a marker where it ends, so a rule that saves only
from its second pass (greso) shows it. The title says it is a replay of logged rewards and
the caveat is written under the panels: first order only.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from frontier_rft.reporting.plots import _DPI, _figure
from frontier_rft.reporting.png import save_png

__all__ = ["SHADOW_CAVEAT", "plot_shadow_replay"]

SHADOW_CAVEAT = (
    "First order: the run's trajectory would have changed under the rule (it would have "
    "trained other groups), so later savings and losses are estimates on this run's path."
)
_LEGEND_PASSES = 6
"""Up to this many passes each has a legend entry; beyond, the first and the last only."""


def plot_shadow_replay(
    curves: Mapping[str, Mapping[str, NDArray[np.float64]]],
    log_name: str,
    out_png: str | os.PathLike[str],
) -> Path:
    """Write the figure to `out_png`; returns its path. `curves`: rule -> per-step arrays
    'saved' (rollouts saved, cumulative), 'informative_lost' (cumulative), 'abs_lost_share'
    (cumulative share of |advantage|) and 'pass' (the pass each step counts in, from 1)."""
    if not curves:
        raise ValueError("the figure needs at least one rule")
    from matplotlib import colormaps

    out = Path(out_png)
    n = len(curves)
    last = max(int(np.max(c["pass"])) for c in curves.values())
    named = set(range(1, last + 1)) if last <= _LEGEND_PASSES else {1, last}
    cmap = colormaps["viridis"]
    with _figure(max(5.0, 4.2 * n), 7.6) as fig:
        axes = np.atleast_2d(fig.subplots(2, n, sharex="col", squeeze=False))
        seen: set[int] = set()
        for col, (rule, c) in enumerate(curves.items()):
            top, bottom = axes[0, col], axes[1, col]
            saved = np.concatenate([[0.0], np.asarray(c["saved"], dtype=float)])
            lost = np.concatenate([[0.0], np.asarray(c["informative_lost"], dtype=float)])
            share = 100 * np.nan_to_num(np.asarray(c["abs_lost_share"], dtype=float))
            share = np.concatenate([share[:1], share])  # a share has no origin: start at step 1
            passes = np.asarray(c["pass"], dtype=int)
            for p in np.unique(passes):
                idx = np.flatnonzero(passes == p) + 1  # +1: the origin is point 0
                span = np.concatenate([[idx[0] - 1], idx])  # join on to the previous pass
                color = cmap(0.85 * (p - 1) / max(1, last - 1))  # dark to light green
                label = f"pass {p}" if p in named and p not in seen else None
                seen.add(int(p))
                for ax, y in ((top, lost), (bottom, share)):
                    ax.plot(saved[span], y[span], color=color, lw=1.6, label=label)
                    ax.plot(saved[idx[-1]], y[idx[-1]], "o", color=color, ms=5)
                    label = None
            top.set_title(rule, loc="left", fontsize=11)
            top.set(ylabel="informative groups lost (cumulative)")
            bottom.set(
                xlabel="rollouts saved (cumulative)",
                ylabel="share of |advantage| lost, cumulative (%)",
            )
        fig.legend(loc="outside right upper", title="pass over the pool")
        title = (
            f"Replay of logged rewards ({log_name}): per rule, rollouts it would have saved "
            "against the signal it would have lost; a dot ends each pass"
        )
        width = int(fig.get_figwidth() * 7)  # characters: stop short of the legend
        fig.suptitle("\n".join(textwrap.wrap(title, width)), x=0.01, ha="left")
        fig.supxlabel(
            "\n".join(textwrap.wrap(SHADOW_CAVEAT, width + 20)), fontsize=10, color="#7a2e2e"
        )
        save_png(fig, out, _DPI)
    return out
