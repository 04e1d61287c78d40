"""Round 8's wording fixes on the method and device pages (issue 91 items 9, 12, 13, 15, 17):
each page says what was measured, under its own name and settings."""

from __future__ import annotations

import re
from pathlib import Path

from frontier_rft.selectors import SELECTORS

ROOT = Path(__file__).resolve().parents[1]


def _flat(rel: str) -> str:
    text = re.sub(r"<!--/?fig[^>]*-->", "", (ROOT / rel).read_text(encoding="utf-8"))
    return " ".join(text.split())


def test_fewer_steps_evidence_says_uniform_was_not_the_one_that_stopped() -> None:
    line = " ".join(str(SELECTORS["skip"].fewer_steps_saves).split())
    assert not line.endswith("uniform stopped early")
    assert "as a uniform run stopped there would" in line


def test_a_projection_is_headed_as_one() -> None:
    page = _flat("docs/selectors/fewer_rollouts.md")
    assert "In the GPU's currency it loses" not in page
    assert "In the H200's currency, as projected, it loses" in page


def test_the_device_page_cites_what_exists_and_names_each_mode_by_what_it_does() -> None:
    page = _flat("docs/results/device_cost.md")
    assert "DESIGN §8" not in page  # no such file in the repository
    assert "as PCL sets it" not in page  # 512 rows was at neither measured knee
    # dapo-onecall sizes its one call from the previous step: not GRESO's rule
    onecall = page[page.index("DAPO's filter in one generation call") :][:900]
    assert "not GRESO's rule" in onecall and "previous step" in onecall
    assert "(GRESO's rule)" not in page
    # a step of 128 prompts x 8 is one call of 1,024 rows on one GPU only
    assert "128 rows a call on 8 processes" in page
    assert "the H200 knee" not in page and "largest measured H200 step" in page
    # pcl-b64's candidate pool and value model, as run
    pcl = page[page.index("PCL's value-model pick") :][:900]
    assert "whole 512-prompt pool" in pcl and "refresh_features_every: 0" in pcl


def test_the_pcl_page_says_how_the_bench_entry_differed_from_pcl() -> None:
    page = _flat("docs/selectors/pcl.md")
    assert "pcl-b64" in page and "whole pool" in page and "refresh_features_every" in page
