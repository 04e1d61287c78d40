"""Issue 72 item 3: the bench pages print a wall-clock share only for arms timed in one run,
and label generated tokens derived from mean length x rollouts (the committed pages, which
tests/test_bench_ledger_reports.py rebuilds from the ledger)."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def _row(page: str, label: str, table: str = "generated tokens / uniform's") -> list[str]:
    lines = (RESULTS / page).read_text(encoding="utf-8").splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("| selector |") and table in ln)
    row = next(ln for ln in lines[head:] if ln.startswith(f"| {label} |"))
    return [c.strip() for c in row.strip("|").split("|")]


def test_a_wall_clock_share_of_arms_from_different_runs_is_not_printed() -> None:
    # backfill ran at 5131ede, uniform at b6f0f17: two runs (it printed 0.48)
    cells = _row("real_rl_backfill_512_2epoch.md", "skip-kept-backfill")
    assert cells[5] == "other runs"
    text = (RESULTS / "real_rl_backfill_512_2epoch.md").read_text(encoding="utf-8")
    assert "0.48* (5/10)" not in text and "one clean code commit" in text
    # skip-kept and uniform at 1,280: 5 of 10 seeds at one commit (it printed 1.59 over all)
    cells = _row("real_rl_screen4_1280_2epoch.md", "skip-kept")
    assert cells[5].endswith("(5/10 seeds timed in one run)") and "1.59" not in cells[5]
    # one run (b6f0f17 both): as before
    assert _row("real_rl_bill_512_2epoch.md", "skip-kept")[5] == "0.75 [0.67, 0.81]"


def test_derived_tokens_are_labelled_on_the_page() -> None:
    cells = _row("real_rl_screen4_1280_2epoch.md", "skip-kept")
    assert cells[3].endswith("(derived)")
    text = (RESULTS / "real_rl_screen4_1280_2epoch.md").read_text(encoding="utf-8")
    assert "each step's mean completion length x its rollouts" in text
    assert "(derived" not in _row("real_rl_bill_512_2epoch.md", "skip-kept")[3]


def test_no_page_calls_a_higher_etr_better() -> None:
    """ETR is what a selector reads, not a score: the current tables say "ETR", and the
    old pages' "ETR ↑" is gone."""
    root = RESULTS.parents[1]
    pages = [*(root / "docs").rglob("*.md"), *RESULTS.glob("*.md"), root / "README.md"]
    assert not [p.name for p in pages if "ETR ↑" in p.read_text(encoding="utf-8")]
