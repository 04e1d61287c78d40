"""The README's and the evidence summary's figures are what the committed reports say
(scripts/page_figures.py): a stale figure, or a figure no marker names, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from frontier_rft.bench.real_rl.page_figures import (
    CHECKED,
    FIGURES,
    PAGES,
    compute,
    differences,
    render,
    unmarked,
)

REPO = Path(__file__).resolve().parents[1]
VALUES = compute(REPO / "benchmarks" / "results")


@pytest.mark.parametrize("name", PAGES)
def test_every_figure_on_the_page_is_the_reports(name: str) -> None:
    page = (REPO / name).read_text(encoding="utf-8")
    assert differences(page, VALUES) == [], "run: python scripts/page_figures.py --write"
    assert unmarked(page) == [], "mark it <!--fig:NAME-->...<!--/fig--> (page_figures.FIGURES)"
    assert render(page, VALUES) == page


@pytest.mark.parametrize("name", CHECKED)
def test_a_checked_pages_marked_figures_are_the_reports(name: str) -> None:
    page = (REPO / name).read_text(encoding="utf-8")
    assert differences(page, VALUES) == [], "run: python scripts/page_figures.py --write"


def test_the_pages_quote_figures() -> None:
    quoted = "".join((REPO / name).read_text(encoding="utf-8") for name in (*PAGES, *CHECKED))
    assert len(set(re.findall(r"<!--fig:([\w.@-]+)-->", quoted))) >= 50


def test_a_stale_or_unmarked_figure_is_caught() -> None:
    name = next(iter(FIGURES))
    page = f"lost <!--fig:{name}-->+9.999 [+9.000, +9.999]<!--/fig--> a step\n"
    assert differences(page, VALUES) and render(page, VALUES) != page
    assert unmarked("uniform-b32 reached it in 0.25x [0.17, 0.34] the seconds\n")
    assert unmarked("at 0.78x the rollouts\n")
    assert not unmarked("    frontier bench-rl --lr 0.0004\n")  # a command is no figure
    with pytest.raises(ValueError, match="no report produces: nope"):
        render("<!--fig:nope-->1<!--/fig-->", VALUES)
