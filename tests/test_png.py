"""Committed figures are palette PNGs (reporting/png.py): a third of the bytes, the same picture
at the page's size, written atomically."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from PIL import Image

from frontier_rft.reporting.plots import _figure
from frontier_rft.reporting.png import PALETTE_COLORS, compact_png, save_png


def _banded_figure_png(tmp_path: Path) -> tuple[bytes, Path]:
    x = np.linspace(0, 10, 200)
    with _figure(6, 3) as fig:
        ax = fig.subplots()
        for k in range(4):
            ax.fill_between(x, np.sin(x + k) - 0.2, np.sin(x + k) + 0.2, alpha=0.2)
            ax.plot(x, np.sin(x + k), ls="-.")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=150)
        path = save_png(fig, tmp_path / "sub" / "fig.png", 150)
    return buf.getvalue(), path


def test_a_figure_is_written_as_a_smaller_palette_png(tmp_path: Path) -> None:
    rgba, path = _banded_figure_png(tmp_path)
    data = path.read_bytes()
    assert len(data) < len(rgba) / 2  # bands and antialiased lines: most bytes were colour
    with Image.open(path) as image:
        assert image.mode == "P" and len(image.getcolors(PALETTE_COLORS) or []) <= PALETTE_COLORS
        with Image.open(io.BytesIO(rgba)) as original:
            assert image.size == original.size
    assert [p.name for p in path.parent.iterdir()] == ["fig.png"]  # no temporary file left


def test_a_png_that_would_not_shrink_is_left_as_it_is() -> None:
    out = io.BytesIO()
    Image.new("P", (4, 4)).save(out, format="PNG", optimize=True)
    assert compact_png(out.getvalue()) == out.getvalue()
