"""Benchmark report: TTB/BSF tables, figures and a self-contained HTML page.

The only package that uses matplotlib (the `plot` extra); it is imported when a report
is written, so `format_summary_table` works without it. Docs: docs/report.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontier_rft.reporting.data import check_results
from frontier_rft.reporting.tables import format_summary_table

__all__ = ["format_summary_table", "write_report"]


def _real_rl_href(results: Mapping[str, Any], out: Path) -> str | None:
    """A relative link from `out` to the real-RL results page of a source checkout, if the
    page is there (a wheel ships no docs: the report then names the path only)."""
    doc = (results.get("real_rl") or {}).get("doc")
    if not isinstance(doc, str):
        return None
    page = Path(__file__).resolve().parents[3] / doc
    if not page.is_file():
        return None
    return os.path.relpath(page, out.resolve())


def write_report(
    results: Mapping[str, Any], out_dir: str | Path, command: str | None = None
) -> dict[str, Path]:
    """Write out_dir/report.html and one PNG per figure; return {"report": path, name: path}.

    `command` is the exact command line shown on the page (default: results["command"]).
    Same results in, byte-identical files out: nothing depends on the clock.
    """
    try:
        import matplotlib  # noqa: F401  (fail here, with the fix, not deep inside a figure)
    except ImportError as exc:
        raise ImportError(
            "the benchmark report needs matplotlib: pip install 'frontier-rft[plot]'"
        ) from exc
    from frontier_rft import __version__
    from frontier_rft.reporting.html import render_html
    from frontier_rft.reporting.plots import label_styles, make_plots

    check_results(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    styles = label_styles(results)
    plots = make_plots(results)
    paths: dict[str, Path] = {}
    for plot in plots:
        paths[plot.name] = out / f"{plot.name}.png"
        paths[plot.name].write_bytes(plot.png)
    recorded = results.get("command")
    page = render_html(
        results, plots, styles, command or recorded, __version__, _real_rl_href(results, out)
    )
    paths["report"] = out / "report.html"
    paths["report"].write_text(page, encoding="utf-8")
    return {"report": paths.pop("report"), **paths}
