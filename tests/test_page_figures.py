"""The README's and the evidence summary's figures are what the committed reports say
(scripts/page_figures.py): a stale figure, or a figure no marker names, fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from frontier_rft.bench.real_rl.page_figures import (
    CHECKED,
    FIGURES,
    PAGES,
    PlannerFigure,
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


def test_a_planner_figure_reads_its_results_file(tmp_path: Path) -> None:
    cell = {"ratio": 1.25, "ci": [1.0, None], "n": 10, "reached": 9}
    axis = {
        "best": "uniform-b64",
        "over_best": cell,
        "over_each": {"uniform": {**cell, "ratio": 0.5, "reached": 10}},
        "over_others": {"uniform-auto": {**cell, "ratio": None}},
        "equal_pass1": {"mean": -0.004, "ci": [-0.012, 0.003]},
    }
    data = {
        "comparison": {"axes": {"h200": axis}},
        "meter": {"b_simple": 1234.4, "ci": [700.2, 1999.6]},
    }
    (tmp_path / "plan.json").write_text(json.dumps(data), encoding="utf-8")
    got = {
        key: PlannerFigure("plan", "h200", key).value(tmp_path)
        for key in ("over_best", "over:uniform", "over:uniform-auto", "best", "equal", "meter")
    }
    assert got == {
        "over_best": "1.25x [1.00, beyond] (9/10 reached)",
        "over:uniform": "0.50x [1.00, beyond]",
        "over:uniform-auto": "not reached by half (9/10 reached)",
        "best": "uniform-b64",
        "equal": "−0.004 [−0.012, +0.003]",
        "meter": "1,234 [700, 2,000] rows",
    }
