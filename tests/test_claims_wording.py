"""Claims worded as the evidence allows, methods named for what they are (issue 63, items 3
and 4): the real-RL reports give the mean over each run's last quarter of evaluations beside
the final one, and the pages say what the bench entries are."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.bench.real_rl.report import last_quarter_mean, markdown_report, summarize_runs

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LAST_QUARTER = "pass@1 − uniform, last quarter"


def _read(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def _run(pass1: list[float]) -> dict[str, Any]:
    steps = [20 * i for i in range(len(pass1))]
    train = [
        {"train/rollouts": 128.0, "perf/step_s": 1.0, "perf/step_cpu_s": 1.0}
        for _ in range(steps[-1])
    ]
    return {
        "eval_steps": steps,
        "eval_rollouts": [128.0 * s for s in steps],
        "eval_seconds": [float(s) for s in steps],
        "pass1": pass1,
        "final": {"eval/pass@1": pass1[-1], "eval/pass@8": pass1[-1] + 0.2},
        "train": train,
        "info": {},
    }


def test_the_last_quarter_is_the_mean_of_the_last_ceil_n_over_4_evaluations() -> None:
    # 9 evaluations (step 0 included): the last ceil(9 / 4) = 3.
    assert last_quarter_mean([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) == pytest.approx(0.8)
    assert last_quarter_mean([0.1, 0.2, 0.3, 0.4]) == pytest.approx(0.4)  # 1 of 4
    assert last_quarter_mean([0.3]) == pytest.approx(0.3)


def test_the_report_gives_the_last_quarter_beside_the_final_evaluation() -> None:
    """By hand: uniform's last 2 of 5 evaluations average 0.35 and 0.45 (seeds 0, 1); the
    entry's 0.33 and 0.41, so the paired differences are -0.02 and -0.04, mean -0.03, while
    the final evaluations differ by +0.01 and -0.05."""
    runs = {
        "uniform": {0: _run([0.1, 0.2, 0.3, 0.3, 0.4]), 1: _run([0.1, 0.3, 0.4, 0.4, 0.5])},
        "skip-kept": {0: _run([0.1, 0.2, 0.3, 0.25, 0.41]), 1: _run([0.1, 0.3, 0.4, 0.37, 0.45])},
    }
    start = {"0": {"zero_variance": 0.5}, "1": {"zero_variance": 0.5}}
    summary = summarize_runs(runs, start)
    row = summary["labels"]["skip-kept"]
    assert row["last_quarter_pass1_minus_uniform"]["values"] == pytest.approx([-0.02, -0.04])
    assert row["last_quarter_pass1_minus_uniform"]["mean"] == pytest.approx(-0.03)
    assert row["final_minus_uniform"]["eval/pass@1"]["values"] == pytest.approx([0.01, -0.05])
    page = markdown_report(summary, [], list(runs), "# page")
    assert f"| {LAST_QUARTER} |" in page
    table = page[page.index("### At each run's own schedule") :].splitlines()
    header = next(ln for ln in table if ln.startswith("| selector |")).split(" | ")
    (line,) = [ln.split(" | ") for ln in table if ln.startswith("| skip-kept |")]
    assert line[header.index(LAST_QUARTER)].startswith("-0.030 [")
    assert line[header.index("pass@1 − uniform")].startswith("-0.020 [")


def _ledger_reports() -> list[str]:
    return sorted(
        p.name.removesuffix("_full.json")
        for p in RESULTS.glob("*_full.json")
        if json.loads(p.read_text(encoding="utf-8")).get("ledger")
    )


@pytest.mark.parametrize("stem", _ledger_reports())
def test_every_ledger_report_has_the_last_quarter_column(stem: str) -> None:
    assert f"| {LAST_QUARTER} |" in (RESULTS / f"{stem}.md").read_text(encoding="utf-8")
    full = json.loads((RESULTS / f"{stem}_full.json").read_text(encoding="utf-8"))
    for label, row in full["summary"]["labels"].items():
        assert row["last_quarter_pass1_minus_uniform"]["mean"] is not None, label


SCREEN_PAGES = (
    "README.md",
    "docs/shadow.md",
    "docs/selectors/fewer_rollouts.md",
    "docs/selectors/pilot_commit.md",
    "src/frontier_rft/sampling/fewer_rollouts.py",
    "src/frontier_rft/shadow/rule.py",
    "src/frontier_rft/sampling/sampler_flags.py",
    "src/frontier_rft/integrations/trl/config.py",
    "src/frontier_rft/integrations/trl/fewer_config.py",
    "src/frontier_rft/bench/real_rl/testbed.py",
)


@pytest.mark.parametrize("rel", SCREEN_PAGES)
def test_our_k_of_n_screen_is_not_called_speed_rls_rule(rel: str) -> None:
    text = " ".join(_read(rel).split())
    assert "SPEED-RL's rule" not in text and "SPEED-RL: 4 of 8" not in text
    assert "(SPEED)" not in text and "(SPEED-RL)" not in text and "SPEED-style" not in text


def test_the_fewer_rollouts_page_says_how_speed_rl_differs_and_that_no_preset_follows_it() -> None:
    page = _read("docs/selectors/fewer_rollouts.md")
    section = page[page.index("#### Ours is not SPEED-RL's shape") :]
    for fact in ("4+20 and 8+16 in groups of 24", "asserts against 4+4", "on accuracy"):
        assert fact in section
    assert "next generation call" in section and "not offered as a preset" in section


def test_the_readme_words_its_claims_as_the_evidence_allows() -> None:
    """The README's intervals live in docs/results/summary.md, which it links: the wording
    checks follow them there, and the README itself claims no more."""
    readme_flat = " ".join(_read("README.md").split())
    assert "docs/results/summary.md" in readme_flat
    assert not re.search(r"\b(ended|ends|is) level\b|no measurable|level to slightly", readme_flat)
    assert "SPEED-RL's rule" not in readme_flat and "stayed at uniform's score" not in readme_flat
    readme = re.sub(r"<!--/?fig[^>]*-->", "", _read("docs/results/summary.md"))
    flat = " ".join(readme.split())
    # Pilot-Commit's bill (2.3-4.0x uniform's) is on its own page, which the summary links
    assert "spent more than uniform and collapsed" in flat and "pilot_commit.md" in flat
    assert "2.3-4.0x uniform's" in " ".join(_read("docs/selectors/pilot_commit.md").split())
    assert "SPEED-RL's rule" not in flat and "our own k-of-n screen" in flat
    # "level" or "no measurable loss" where the data only fail to reject 0
    assert not re.search(r"\b(ended|ends|is) level\b|no measurable|level to slightly", flat)
    # the summary quotes each report's figures only (scripts/page_figures.py); the pooled
    # and post-decision figures behind `auto` stay on bill.md, which it links
    assert "keeps full batches for `skip` at every length" in flat  # where kept cost score
    assert "−0.021 [−0.032, −0.007]" in flat  # SmolLM2's last quarter at 2 epochs: a cost
    assert "mode `fixed`" in flat and "paper defaults" in flat
    assert "saves only for a run that stops early" in flat  # greso's full batches


def test_the_pages_say_within_noise_where_the_data_only_fail_to_reject_zero() -> None:
    for rel in (
        "docs/selectors/fewer_rollouts.md",
        "docs/selectors/greso.md",
        "docs/selectors/allocation.md",
        "docs/results/real_rl.md",
    ):
        flat = " ".join(_read(rel).split())
        assert not re.search(r"no measurable|\b(ended|ends|ended it) level\b", flat), rel
        assert "read it as level" not in flat and "level with uniform" not in flat, rel
    fewer = " ".join(_read("docs/selectors/fewer_rollouts.md").split())
    assert "0.76† [0.63, beyond] (3/5 reached) of uniform's rollouts" in fewer  # censored
    assert "a saving only for a run that stops there" in fewer
    assert "keeps uniform's score" not in fewer


def test_the_methods_pages_document_their_deviations_and_decisions() -> None:
    greso = " ".join(_read("docs/selectors/greso.md").split())
    assert "mixes 0 (a format error) and 0.1" in greso and "31%" in greso and "0.76" in greso
    skip = " ".join(_read("docs/selectors/skip.md").split())
    assert "**With screening**" in skip and "0.64 against 0.84" in skip
    fewer = " ".join(_read("docs/selectors/fewer_rollouts.md").split())
    assert "no optimizer step" in fewer and "weight decay" in fewer and "keep skipping" in fewer
    dapo = " ".join(_read("docs/selectors/dapo.md").split())
    assert 'three "rollouts to uniform\'s best" figures' in dapo


def test_the_bench_entry_notes_say_what_each_entry_runs() -> None:
    from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES

    by_label = {e.label: e for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES)}
    assert "mode fixed" in by_label["dapo"].note
    assert "GRESO's own setting" not in by_label["greso-dapo"].note
    assert "not GRESO's own" in by_label["greso-dapo"].note
    assert "our own k-of-n screen" in by_label["screen4"].note
