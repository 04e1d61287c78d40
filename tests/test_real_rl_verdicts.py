"""The real-RL verdicts a simulated table is read against match the committed GPU results,
and tables and reports say they are simulated and withhold bold from unconfirmed wins."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from frontier_rft.bench.real_rl.verdicts import (
    REAL_RL_SOURCES,
    REAL_RL_VERDICTS,
    RECOMMENDED,
    real_rl_context,
)
from frontier_rft.bench.simulation.benchmark import parse_entries, run_benchmark
from frontier_rft.reporting.tables import (
    format_summary_table,
    learner_title,
    real_rl_note,
    summary_cells,
    withheld_bold,
)
from frontier_rft.simulation import get_scenario
from frontier_rft.simulation.runner import Entry, sampler_spec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _verdict(ci: list[float]) -> str:
    return "helps" if ci[0] > 0 else "hurts" if ci[1] < 0 else "noise"


def _measured(source: str) -> dict[str, str]:
    """Each entry's verdict in one committed results file, by its bench-rl label."""
    full = json.loads((ROOT / source).read_text(encoding="utf-8"))
    # a ledger report names each entry's definition: one measured before its selector
    # changed is not today's selector's verdict
    earlier = {k for k, v in (full.get("definitions") or {}).items() if not v["today"]}
    return {
        label: _verdict(row["final_minus_uniform"]["eval/pass@1"]["ci"])
        for label, row in full["summary"]["labels"].items()
        if label != "uniform" and label not in earlier
    }


@pytest.mark.parametrize("pool", sorted(REAL_RL_VERDICTS))
def test_verdicts_are_the_committed_real_results(pool: str) -> None:
    """Every verdict is recomputed from each results file it names, and every entry those
    files measured has its verdict and names them: a stale or partial table fails."""
    sources = REAL_RL_SOURCES[pool]
    assert set(sources) == set(REAL_RL_VERDICTS[pool])
    measured = {name: _measured(name) for named in sources.values() for name in named}
    for label, named in sources.items():
        assert named and all(
            measured[name][label] == REAL_RL_VERDICTS[pool][label] for name in named
        )
    for name, verdicts in measured.items():
        assert {label for label, named in sources.items() if name in named} == set(verdicts), name


def test_the_recommendation_quotes_the_committed_real_results_and_the_default() -> None:
    """The demo's closing quotes a 2-epoch run of the opt-in the default follows as a shadow
    (skip with kept), on uniform's schedule (issue 63: it quoted 11 epochs)."""
    from frontier_rft.bench.simulation.demo import OPT_IN
    from frontier_rft.integrations.plan import resolve_auto
    from frontier_rft.integrations.trl.config import FrontierConfig
    from frontier_rft.integrations.verl.config import VerlSamplerConfig
    from frontier_rft.selectors import SELECTORS

    page = ROOT / RECOMMENDED.source
    full = json.loads(page.with_name(page.stem + "_full.json").read_text(encoding="utf-8"))
    row = full["summary"]["labels"][RECOMMENDED.entry]
    uniform = full["summary"]["labels"]["uniform"]
    assert row["steps_run"]["values"] == uniform["steps_run"]["values"]
    # uniform's schedule: the saving is on the user's own steps, not by stopping early
    for quoted, cell, digits in (
        (RECOMMENDED.rollouts_vs_uniform, row["rollouts_vs_uniform"], 2),
        (RECOMMENDED.generated_tokens_vs_uniform, row["generated_tokens_vs_uniform"], 2),
        (RECOMMENDED.final_minus_uniform, row["final_minus_uniform"]["eval/pass@1"], 3),
    ):
        measured = (cell["mean"], *cell["ci"])
        assert quoted == tuple(round(x, digits) for x in measured)
    assert RECOMMENDED.seeds == len(row["rollouts_vs_uniform"]["values"])
    assert RECOMMENDED.entry == f"{RECOMMENDED.selector}-kept"
    # The default trains uniform's batches and follows the recommended rule as a shadow, on
    # every adapter; `auto` keeps full batches for it (its kept_loses), here 2 epochs long.
    default = FrontierConfig()
    verl = VerlSamplerConfig(batch_size=4)
    for config in (default, verl):
        assert (config.selector, config.rollouts) == ("uniform", "auto")
        assert [r.selector for r in config.shadow_configs()] == [RECOMMENDED.selector] == [OPT_IN]
    steps, batch = uniform["steps_run"]["values"][0], 16
    pool = int(re.search(r"([\d,]+) prompts", RECOMMENDED.regime).group(1).replace(",", ""))
    assert steps * batch / pool == 2.0
    assert resolve_auto(SELECTORS[OPT_IN], [], 2.0)[0] == "full"


def test_context_by_regime() -> None:
    entries = [Entry(n, n) for n in ("uniform", "dots", "pcl", "greso")]
    entries.append(Entry("uniform+dapo", "uniform", sampler=sampler_spec(dynamic_sampling="fixed")))
    small = real_rl_context("small-pool", entries)
    assert small["calibrated"] and small["verdicts"] == {
        "dots": "hurts", "pcl": "hurts", "greso": "noise", "uniform+dapo": "helps"
    }  # fmt: skip
    assert real_rl_context("large-pool", entries)["verdicts"]["pcl"] == "noise"
    other = real_rl_context("hard", entries)  # not calibrated: what both pools agree on
    assert not other["calibrated"] and other["verdicts"]["pcl"] == "noise"
    assert other["verdicts"]["dots"] == "hurts" and other["verdicts"]["greso"] == "noise"
    skip = [Entry("skip", "skip")]
    assert "skip" not in real_rl_context("hard", skip)["verdicts"]  # never run as it is today
    assert not real_rl_context("small-pool", entries, modified=True)["calibrated"]


def test_each_verdict_is_of_one_spec() -> None:
    """A spec leaves out what a simulated entry has no word for (group size, steps,
    shadows): no other bench-rl entry may share the spec of an entry with a verdict, or a
    simulated entry could get a verdict of a run that differs in those."""
    from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES
    from frontier_rft.bench.real_rl.verdicts import run_spec

    entries = (*MAIN_ENTRIES, *EFFECT_ENTRIES)
    for pool, verdicts in REAL_RL_VERDICTS.items():
        for label in verdicts:
            spec = run_spec(next(e for e in entries if e.label == label))
            alike = [e.label for e in entries if run_spec(e) == spec and e.label != label]
            assert not alike, (pool, label, alike)


def test_a_simulated_entry_gets_the_verdict_of_the_real_run_with_its_spec() -> None:
    """Joined on what runs (selector, overrides, step sampler), not on labels: no table
    translates the simulator's names into the bench's."""
    same = [
        Entry(
            "greso+dapo-adaptive", "greso", sampler=sampler_spec(dynamic_sampling="adaptive")
        ),  # bench: greso-dapo
        Entry("greso+alloc", "greso", sampler=sampler_spec(allocation={})),  # bench: greso-alloc
        Entry("my-dapo", "uniform", sampler=sampler_spec(dynamic_sampling="fixed")),  # bench: dapo
    ]
    other = [
        Entry(
            "greso", "greso", sampler=sampler_spec(dynamic_sampling="fixed")
        ),  # the label alone is not enough
        Entry("bots-epoch", "bots", {"coverage": "epoch"}),  # other overrides
        Entry(
            "greso+alloc+oracle", "greso", sampler=sampler_spec(allocation={}), oracle=True
        ),  # no real run
        Entry(
            "greso+alloc-lean", "greso", sampler=sampler_spec(allocation={"budget": 0.5})
        ),  # a run with no verdict
    ]
    got = real_rl_context("small-pool", same + other)["verdicts"]
    real = REAL_RL_VERDICTS["512"]
    assert got == {
        "greso+dapo-adaptive": real["greso-dapo"],
        "greso+alloc": real["greso-alloc"],
        "my-dapo": real["dapo"],
    }


@pytest.fixture(scope="module")
def results() -> dict:
    return run_benchmark(
        "hard", parse_entries(["dots", "bots"]), seeds=[0, 1], steps=30, batch=16, rollouts=8,
        jobs=1,
    )  # fmt: skip


def test_a_simulated_win_real_rl_did_not_confirm_is_not_bold(results: dict) -> None:
    # On the learner that transfers by construction dots wins every outcome column;
    # real RL measured it below uniform on both pools.
    cells = summary_cells(results)
    columns = [c for c in results["summary"]["dots"] if c.startswith("ttb")]
    assert columns and not any(cell.best for cell in cells["dots"][:6])
    assert withheld_bold(results) == {"dots": "hurts"}
    table = format_summary_table(results)
    dots_row = table.split("\n")[3].split("|")
    assert dots_row[1].strip() == "dots" and "**" not in "".join(dots_row[2:8])  # TTB, BSF
    assert "**" not in dots_row[8]  # ETR is mechanics, neither better nor worse: no bold
    assert "Not bold although best in a column: dots (below uniform)" in table
    assert "docs/results/real_rl.md" in table


def test_titles_name_the_simulated_learner_and_its_regime(results: dict) -> None:
    title = learner_title(results)
    assert title.startswith("Simulated learner 'hard' (2,000 prompts, 0.2 epochs of 30 steps)")
    assert "transfer by construction" in title and "not a real-RL result" in title
    modified = run_benchmark(
        get_scenario("small-pool", num_tasks=64), [], seeds=[0], steps=3, jobs=1
    )
    assert "with fields overridden" in learner_title(modified)
    assert not modified["real_rl"]["calibrated"]


def test_html_report_is_titled_simulated_and_links_real_results(
    results: dict, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting import write_report

    out = tmp_path / "report"
    page = write_report(results, out)["report"].read_text(encoding="utf-8")
    assert "<h1>Simulated selector benchmark: learner <code>hard</code></h1>" in page
    assert 'id="advice"' not in page  # only the demo, which says what to use, has one
    assert "A simulation, not a real-RL result." in page
    href = page.split('<p class="lede" id="real-rl">')[1].split('href="')[1].split('"')[0]
    assert (out / href).resolve() == (ROOT / "docs/results/real_rl.md").resolve()


def test_a_bold_without_a_verdict_is_not_called_unmeasured(results: dict) -> None:
    """skip ran on real RL under an earlier definition: the note says it has no verdict for
    the selector as defined today, not that it has no real-RL result."""
    real = dict(results["real_rl"], verdicts={})  # as if dots had none
    note = real_rl_note({**results, "real_rl": real})
    assert "no real-RL result yet" not in note
    assert "no real-RL verdict for the selector as defined today (simulated only): dots" in note
