"""PNG files of figures, small enough to commit: a palette of 256 colours, compressed.

A line figure holds a few hundred distinct colours (lines, translucent bands, antialiased
edges); stored as RGBA it takes about three times the bytes of the same picture in a 256-colour
palette, which renders the same at the page's size. The committed results are carried to a GPU
machine with every device call, under a size limit (scripts/device_stage.sh), so every figure
a benchmark commits is written through `save_png`. Pillow is matplotlib's own dependency.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["PALETTE_COLORS", "compact_png", "save_png"]

PALETTE_COLORS = 256
"""Colours kept: the most a PNG palette holds."""


def compact_png(data: bytes) -> bytes:
    """`data` (a PNG) as a palette PNG of at most PALETTE_COLORS colours, no dithering (flat
    areas stay flat), compressed; unchanged when that is not smaller."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        quantized = image.convert("RGB").quantize(
            colors=PALETTE_COLORS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    out = io.BytesIO()
    quantized.save(out, format="PNG", optimize=True)
    return out.getvalue() if out.tell() < len(data) else data


def save_png(fig: Any, path: str | os.PathLike[str], dpi: float) -> Path:
    """Write matplotlib figure `fig` to `path` as a compact PNG, atomically (a reader never
    sees half a file)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(compact_png(buf.getvalue()))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
