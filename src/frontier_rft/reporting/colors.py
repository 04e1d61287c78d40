"""One fixed colour per selector, the same in every figure (report, training runs, docs).

Each selector's class declares its colour and line style (`Selector.color`,
`Selector.linestyle`); this module reads them from the registry, so a new selector needs no
entry here. Labels that are not plain selector names (sweep points such as `bots[lam=0.2]`)
take sequential colours in label order, so a sweep reads light to dark with its values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from frontier_rft.core.selector import Selector

__all__ = [
    "BASELINE_COLOR",
    "SELECTOR_COLORS",
    "label_colors",
    "selector_color",
    "selector_linestyle",
]

BASELINE_COLOR = "#3a3a3a"
"""Dark grey: the baseline of a comparison, drawn dashed (uniform declares it as its colour,
being the usual baseline)."""
_SEQUENTIAL = ("#fdae61", "#f46d43", "#d73027", "#a50026", "#74add1", "#4575b4", "#313695")


def _registered() -> Mapping[str, type[Selector]]:
    # Read at use, not at import: the colours are the registry's, whatever it holds then.
    from frontier_rft.selectors import SELECTORS

    return SELECTORS


class _SelectorColors(Mapping[str, str]):
    """Read-only view name -> `cls.color` over the registry."""

    def __getitem__(self, name: str) -> str:
        return _registered()[name].color

    def __iter__(self) -> Iterator[str]:
        return iter(_registered())

    def __len__(self) -> int:
        return len(_registered())

    def __repr__(self) -> str:
        return f"SELECTOR_COLORS({dict(self)!r})"


SELECTOR_COLORS: Mapping[str, str] = _SelectorColors()
"""Every registered selector's colour, a view of the classes' `color`."""


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
    """The line style its selector declares, for a selector name and labels starting with
    one (e.g. '-.' where a similar colour could hide the curve); '-' for anything else."""
    head = label.split(" ")[0].split("[")[0]
    cls = _registered().get(head)
    return cls.linestyle if cls is not None else "-"
