"""The benchmark report: the summary table's values, and a page that shows every label and figure.

Synthetic results have the shape `frontier_rft.simulation` writes (several labels, seeds,
per-step series); one test feeds the real runner's output through the report.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import struct
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft.reporting import format_summary_table
from frontier_rft.reporting.data import check_results, moving_average, step_bins

NOTE = "non-LLM heuristic judge"
LABELS = ["uniform", "bots", "prioritized", "bots[lam=0.05]", "metis"]
SEEDS = [0, 1, 2]
EDGES = [round(0.1 * k, 1) for k in range(11)]
CATEGORIES = ["level 1", "level 2", "level 3", "level 4"]
FIGURES = ("learning_curves", "effective_task_ratio", "success_heatmaps", "category_share")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def stat(mean: float | None, std: float | None, reached: int = 3, of: int = 3) -> dict[str, Any]:
    return {"mean": mean, "std": std, "reached": reached, "of": of}


def known_summary() -> dict[str, dict[str, Any]]:
    """Hand-made summary: TTB never reached, reached on some seeds, a tie, a single seed."""
    base = {
        "ttb50": stat(1.0, 0.0),
        "ttb75": stat(1.0, 0.0),
        "ttb100": stat(1.0, 0.0),
        "bsf25": stat(1.0, 0.0),
        "bsf50": stat(1.0, 0.0),
        "bsf100": stat(1.0, 0.0),
        "etr": stat(0.31, 0.02),
        "mean_abs_adv": stat(0.25, 0.01),
        "distinct_trained": stat(800.0, 12.0),
        "overhead_ms": stat(0.2, 0.01),
        "final_score": stat(0.3, 0.01),
        "best_score": stat(0.3, 0.01),
    }
    out = {label: copy.deepcopy(base) for label in LABELS}
    out["bots"].update(
        ttb50=stat(0.5, 0.1),
        ttb75=stat(0.625, 0.05),
        ttb100=stat(0.8, 0.0, reached=1),  # one seed: no std shown
        bsf50=stat(1.2, 0.05),
        etr=stat(0.62, 0.01),
        overhead_ms=stat(0.35, 0.02),
    )
    # Lower mean than bots, but on 2 of 3 seeds: bots keeps the bold.
    out["bots[lam=0.05]"].update(ttb50=stat(0.4, 0.2, reached=2), bsf50=stat(1.2, 0.07))
    out["prioritized"].update(
        ttb100=stat(None, None, reached=0),
        bsf100=stat(0.95, 0.02),
        overhead_ms=stat(0.15, 0.01),
    )
    out["metis"].update(bsf100=stat(1.25, 0.03), etr=stat(0.55, 0.02))
    return out


def make_results(
    steps: int = 40, labels: list[str] = LABELS, seeds: list[int] = SEEDS
) -> dict[str, Any]:
    """Results with realistic shapes: adaptive labels learn faster and pick mid-rate tasks."""
    rng = np.random.default_rng(0)
    batch, n_bins = 16, len(EDGES) - 1
    runs = []
    for k, label in enumerate(labels):
        for seed in seeds:
            speed = 0.02 * (1 + k) * (1 + 0.1 * seed)
            t = np.arange(steps + 1)
            score = 0.05 + 0.5 * (1 - np.exp(-speed * t)) + 0.005 * rng.standard_normal(steps + 1)
            centre = 0 if label == "uniform" else 5
            hist = [
                np.bincount(
                    np.clip(rng.normal(centre, 2.0, batch).round(), 0, n_bins - 1).astype(int),
                    minlength=n_bins,
                ).tolist()
                for _ in range(steps)
            ]
            cats = []
            for step in range(steps):
                p = np.exp(-np.abs(np.arange(len(CATEGORIES)) - 3 * step / steps))
                cats.append(rng.multinomial(batch, p / p.sum()).tolist())
            runs.append(
                {
                    "label": label,
                    "selector": label.split("[")[0],
                    "overrides": {"lam": 0.05} if "[" in label else {},
                    "seed": seed,
                    "note": NOTE if label == "metis" else "",
                    "score": score.tolist(),
                    "etr": rng.uniform(0.2, 0.8, steps).tolist(),
                    "mean_abs_adv": rng.uniform(0.1, 0.6, steps).tolist(),
                    "distinct_trained": np.cumsum(rng.integers(0, 5, steps)).tolist(),
                    "overhead_ms": rng.uniform(0.1, 0.5, steps).tolist(),
                    "success_hist": hist,
                    "category_counts": cats,
                    "selector_metrics": {f"{label}/x": [None, *[0.5] * (steps - 1)]},
                }
            )
    summary = known_summary()
    return {
        "format": "frontier-rft-benchmark/1",
        "scenario": {
            "name": "hard",
            "description": "most tasks start unsolved",
            "config": {"num_tasks": 2000, "level_step": 1.5, "domain_names": ["math"]},
        },
        "settings": {
            "steps": steps,
            "batch": batch,
            "rollouts": 8,
            "seeds": seeds,
            "baseline": "uniform",
        },
        "labels": labels,
        "category_names": CATEGORIES,
        "success_bins": EDGES,
        "runs": runs,
        "summary": {label: summary.get(label, summary["bots"]) for label in labels},
    }


def table_rows(text: str) -> dict[str, list[str]]:
    """Markdown table -> {first cell: remaining cells}, header included under 'method'."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows[cells[0]] = cells[1:]
    return rows


# --- the Markdown table -------------------------------------------------------------------


def test_summary_table_shows_known_values_reached_counts_and_bold_best() -> None:
    rows = table_rows(format_summary_table(make_results()))
    assert rows["method"] == [
        "TTB50 ↓",
        "TTB75 ↓",
        "TTB100 ↓",
        "BSF25 ↑",
        "BSF50 ↑",
        "BSF100 ↑",
        "ETR",
        "ms/step ↓",
    ]
    assert list(rows)[1:] == [
        "uniform (baseline)",
        "bots",
        "prioritized",
        "bots[lam=0.05]",
        f"metis ({NOTE})",
    ]
    bots = rows["bots"]
    assert bots[0] == "**0.50 ± 0.10** (3/3)"  # best TTB50 despite bots[lam]'s 0.40 on 2/3
    assert rows["bots[lam=0.05]"][0] == "0.40 ± 0.20 (2/3)"
    assert bots[1] == "**0.62 ± 0.05** (3/3)"  # 0.625 is exact in binary: half to even
    assert bots[2] == "0.80 (1/3)"  # one seed: no std; loses to uniform's 1.00 on 3/3
    assert rows["uniform (baseline)"][2] == "**1.00 ± 0.00** (3/3)"
    assert rows["prioritized"][2] == "- (0/3)"  # never reached
    # A tie at display precision: both bold.
    assert bots[4] == "**1.200 ± 0.050**"
    assert rows["bots[lam=0.05]"][4] == "**1.200 ± 0.070**"
    assert rows[f"metis ({NOTE})"][5] == "**1.250 ± 0.030**"
    assert rows["prioritized"][5] == "0.950 ± 0.020"
    assert bots[6] == "0.62 ± 0.01"  # ETR: a mechanism a skip raises by design, never bold
    assert rows["prioritized"][7] == "**0.15 ± 0.01**"  # overhead: lower is better
    # BSF25 is 1.0 for everyone: every row is bold.
    assert all(cells[3] == "**1.000 ± 0.000**" for cells in list(rows.values())[1:])


def test_summary_table_columns_align_and_can_be_chosen() -> None:
    results = make_results()
    text = format_summary_table(results, columns=["ttb100", "distinct_trained", "final_score"])
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert len({len(line) for line in lines}) == 1, "columns are padded to one width"
    rows = table_rows(text)
    assert rows["method"] == ["TTB100 ↓", "distinct", "final ↑"]
    assert rows["bots"][1] == "800 ± 12"  # descriptive column: never bold
    bare = format_summary_table(results, legend=False)
    assert bare.splitlines()[-1].startswith(f"| metis ({NOTE})")
    assert "TTB = steps" in format_summary_table(results)
    with pytest.raises(ValueError, match="unknown column"):
        format_summary_table(results, columns=["ttb42"])


def test_summary_table_escapes_pipes_in_labels() -> None:
    results = make_results(labels=["uniform", "a|b"])
    rows = table_rows(format_summary_table(results))
    assert "a\\|b" in rows


# --- helpers ------------------------------------------------------------------------------


def test_moving_average_keeps_constants_and_skips_nan() -> None:
    x = np.full(20, 0.4)
    x[5] = np.nan
    out = moving_average(x, 5)
    assert out.shape == x.shape
    np.testing.assert_allclose(out, 0.4)
    ramp = np.arange(10, dtype=float)
    np.testing.assert_allclose(moving_average(ramp, 3)[1:-1], ramp[1:-1])  # centred
    assert moving_average(ramp, 3)[0] == pytest.approx(0.5)  # shrinks at the edge
    np.testing.assert_array_equal(moving_average(ramp, 1), ramp)


def test_step_bins_cover_every_step_in_equal_bins() -> None:
    np.testing.assert_array_equal(step_bins(40), np.arange(41))
    edges = step_bins(120)
    assert edges[0] == 0 and edges[-1] == 120 and len(edges) - 1 <= 50
    assert set(np.diff(edges)) == {3}


def test_invalid_results_are_rejected_with_the_problem_named() -> None:
    with pytest.raises(ValueError, match="format"):
        check_results({"format": "something else"})
    bad = make_results()
    bad["runs"][4]["score"] = bad["runs"][4]["score"][:-3]
    with pytest.raises(ValueError, match=r"run 'bots' seed 1: score has"):
        check_results(bad)
    bad = make_results()
    bad["runs"][0]["success_hist"] = [[1, 2]] * 40
    with pytest.raises(ValueError, match="success_hist has shape"):
        check_results(bad)
    bad = make_results()
    bad["labels"] = [*bad["labels"], "ghost"]
    with pytest.raises(ValueError, match="ghost"):
        check_results(bad)


def test_table_works_without_matplotlib_and_report_says_how_to_install_it() -> None:
    script = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import json; from frontier_rft.reporting import format_summary_table, write_report\n"
        "r = json.loads(sys.stdin.read())\n"
        "print(format_summary_table(r).splitlines()[0])\n"
        "try:\n    write_report(r, sys.argv[1])\nexcept ImportError as e:\n    print('ERR', e)\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-c", script, tmp],
            input=json.dumps(make_results(steps=5)),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert not list(Path(tmp).iterdir()), "nothing written without matplotlib"
    assert proc.stdout.startswith("| method")
    assert "ERR" in proc.stdout and "frontier-rft[plot]" in proc.stdout


# --- the HTML report (needs matplotlib, the `plot` extra) ---------------------------------


VOID_TAGS = frozenset({"meta", "img", "br", "hr", "link", "input", "col", "wbr", "source"})


class _Checker(HTMLParser):
    """Collects tags and checks that every non-void element is closed in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.imgs: list[dict[str, str | None]] = []
        self.tags: set[str] = set()
        self.decl = ""

    def handle_decl(self, decl: str) -> None:
        self.decl = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "img":
            self.imgs.append(dict(attrs))
        if tag not in VOID_TAGS:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], dict[str, Any]]:
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting import write_report

    results = make_results()
    paths = write_report(results, tmp_path_factory.mktemp("report"), command="frontier demo")
    return paths, results


@pytest.mark.integration
def test_report_writes_the_page_and_every_figure(
    report: tuple[dict[str, Path], dict[str, Any]],
) -> None:
    paths, _ = report
    assert list(paths) == ["report", *FIGURES]
    assert paths["report"].name == "report.html"
    for name in FIGURES:
        width, height = png_size(paths[name].read_bytes())
        assert 1000 <= width <= 2400 and 300 <= height <= 2400, (name, width, height)


@pytest.mark.integration
def test_report_page_is_self_contained_valid_html_with_inline_figures(
    report: tuple[dict[str, Path], dict[str, Any]],
) -> None:
    paths, _ = report
    page = paths["report"].read_text(encoding="utf-8")
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.decl.lower() == "doctype html"
    assert not checker.errors and not checker.stack, (checker.errors, checker.stack)
    assert not {"script", "link", "iframe"} & checker.tags  # nothing to fetch or run
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "no external resources"
    assert len(checker.imgs) == len(FIGURES)
    for img, name in zip(checker.imgs, FIGURES, strict=True):
        src = img["src"] or ""
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert data == paths[name].read_bytes()
        assert img["alt"] and img["width"] and img["height"]


@pytest.mark.integration
def test_report_page_shows_settings_table_values_labels_and_notes(
    report: tuple[dict[str, Path], dict[str, Any]],
) -> None:
    paths, results = report
    page = paths["report"].read_text(encoding="utf-8")
    assert "<code>hard</code>" in page and "most tasks start unsolved" in page
    assert "<code>frontier demo</code>" in page  # the exact command
    for label in results["labels"]:
        assert f"<code>{label}</code>" in page
    for value in ("<strong>0.50</strong>", "0.40", "± 0.20 · 2/3 seeds", "0/3 seeds", "1.250"):
        assert value in page, value
    # The TTB100 of prioritized is never reached: its cell shows '-'.
    row = page.split("<code>prioritized</code>", 1)[1].split("</tr>", 1)[0]
    assert "<td>-<span" in row
    # The note is next to the label in the table and in the method notes.
    metis_row = page.split("<code>metis</code>", 1)[1].split("</tr>", 1)[0]
    assert NOTE in metis_row
    notes = page.split('id="notes"', 1)[1].split("</section>", 1)[0]
    assert "<code>metis</code>" in notes and NOTE in notes
    assert 'id="definitions"' in page and "TTB(τ)" in page
    # Order: settings, table, figures, notes, definitions.
    keys = ['id="settings"', 'id="summary"', 'id="figures"', 'id="notes"', 'id="definitions"']
    assert [page.index(k) for k in keys] == sorted(page.index(k) for k in keys)


@pytest.mark.integration
def test_report_is_deterministic(
    report: tuple[dict[str, Path], dict[str, Any]], tmp_path: Path
) -> None:
    from frontier_rft.reporting import write_report

    first, results = report
    second = write_report(results, tmp_path, command="frontier demo")
    for key, path in first.items():
        assert path.read_bytes() == second[key].read_bytes(), key


@pytest.mark.integration
def test_report_skips_figures_without_data_and_says_so(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting import write_report

    results = make_results(steps=6, labels=["uniform", "bots"], seeds=[0])
    results["category_names"] = []
    for run in results["runs"]:
        run["category_counts"] = []
    paths = write_report(results, tmp_path)
    assert "category_share" not in paths and not (tmp_path / "category_share.png").exists()
    page = paths["report"].read_text(encoding="utf-8")
    assert "Not drawn" in page and "category_share" in page
    assert "1 seed, no band" in page
    assert "not recorded" in page  # no command given


@pytest.mark.integration
def test_report_of_the_real_benchmark_runner(tmp_path: Path) -> None:
    """The runner's own results.json goes through the report, METIS's note included."""
    pytest.importorskip("matplotlib")
    from frontier_rft.bench.simulation.benchmark import parse_entries, run_benchmark
    from frontier_rft.reporting import write_report

    results = run_benchmark(
        "hard", parse_entries(["bots", "metis"]), seeds=[0, 1], steps=8, batch=8, rollouts=4, jobs=1
    )
    paths = write_report(results, tmp_path, command="frontier compare --selectors bots,metis")
    page = paths["report"].read_text(encoding="utf-8")
    assert set(paths) == {"report", *FIGURES}
    assert NOTE in page
    text = format_summary_table(results)
    assert f"metis ({NOTE})" in text and "uniform (baseline)" in text


# ---------------------------------------------------------------------- figures tell the truth
def test_every_selector_has_one_fixed_distinct_colour() -> None:
    from frontier_rft import SELECTORS
    from frontier_rft.reporting.colors import BASELINE_COLOR, SELECTOR_COLORS, label_colors

    assert set(SELECTOR_COLORS) == set(SELECTORS)  # a view of the classes' `color`
    assert SELECTOR_COLORS["uniform"] == BASELINE_COLOR  # the usual baseline keeps its grey
    assert len(set(SELECTOR_COLORS.values())) == len(SELECTOR_COLORS)

    def rgb(hex_color: str) -> np.ndarray:
        return np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)

    # offline and adcl (both difficulty curricula) are far apart, not two near-identical blues
    assert np.linalg.norm(rgb(SELECTOR_COLORS["offline"]) - rgb(SELECTOR_COLORS["adcl"])) > 100
    # the same selector gets the same colour whatever the other labels and their order
    a = label_colors(["bots", "sec", "adcl"])
    b = label_colors(["adcl", "offline", "bots[lam=0.2]", "sec", "bots"])
    assert a["bots"] == b["bots"] and a["adcl"] == b["adcl"] and a["sec"] == b["sec"]
    assert b["bots[lam=0.2]"] not in SELECTOR_COLORS.values()  # a sweep point is not bots


def test_selectors_drawn_alike_have_colours_far_apart() -> None:
    """Issue 63: greso (ochre) and offline (brown) were 35 apart in RGB, both solid: one
    colour in the demo's figure. Two selectors with one line style are at least 60 apart."""
    import itertools

    from frontier_rft import SELECTORS

    def rgb(hex_color: str) -> np.ndarray:
        return np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)

    for a, b in itertools.combinations(SELECTORS.values(), 2):
        if a.linestyle == b.linestyle:
            assert np.linalg.norm(rgb(a.color) - rgb(b.color)) > 60, (a.name, b.name)


def test_near_coloured_selectors_differ_in_line_style() -> None:
    from frontier_rft.reporting.colors import selector_linestyle

    pairs = [("bots", "dots"), ("bots", "mopps"), ("offline", "adcl"), ("pcl", "metis")]
    for solid, dashed in pairs:
        assert selector_linestyle(solid) == "-" and selector_linestyle(dashed) == "-."
    assert selector_linestyle("dots + refs") == "-." and selector_linestyle("dots[lam=1]") == "-."


@pytest.mark.integration
def test_metric_series_beyond_the_cap_are_counted_and_reported(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from frontier_rft.bench.simulation.benchmark import parse_entries, run_benchmark
    from frontier_rft.reporting import write_report
    from frontier_rft.simulation.runner import MAX_METRIC_SERIES

    results = run_benchmark("hard", parse_entries(["sec"]), seeds=[0], steps=3, jobs=1)
    run = next(r for r in results["runs"] if r["label"] == "sec")
    keys = list(run["selector_metrics"])
    assert len(keys) == MAX_METRIC_SERIES and run["selector_metrics_dropped"] > 0
    rewards = [k for k in keys if k.startswith("sec/reward/")]
    assert rewards == sorted(rewards, key=lambda k: int(k.rsplit("/", 1)[1]))  # 2 before 10
    page = write_report(results, tmp_path)["report"].read_text(encoding="utf-8")
    assert f"{run['selector_metrics_dropped']} more not recorded" in page


def test_label_styles_follow_the_selector_not_its_position() -> None:
    from frontier_rft.reporting.colors import SELECTOR_COLORS
    from frontier_rft.reporting.plots import label_styles

    one = {"labels": ["uniform", "bots", "sec"], "settings": {"baseline": "uniform"}, "runs": []}
    two = {"labels": ["uniform", "sec", "bots"], "settings": {"baseline": "uniform"}, "runs": []}
    for results in (one, two):
        styles = label_styles(results)
        assert styles["bots"].color == SELECTOR_COLORS["bots"]
        assert styles["uniform"].linestyle == "--"


def test_success_bins_are_labelled_by_what_they_hold() -> None:
    from frontier_rft.reporting.plots import bin_labels
    from frontier_rft.simulation.runner import SUCCESS_BINS

    assert bin_labels(SUCCESS_BINS) == [
        "0: all failed", "(0, 0.2)", "[0.2, 0.4)", "[0.4, 0.6)", "[0.6, 0.8)", "[0.8, 1)",
        "1: all solved",
    ]  # fmt: skip
    assert bin_labels([0, 0.5, 1]) == ["[0, 0.5)", "[0.5, 1]"]


def test_difference_to_the_baseline_is_paired_by_seed() -> None:
    from frontier_rft.reporting.plots import _paired_differences

    base = [{"seed": 0, "score": [0.0, 1.0]}, {"seed": 1, "score": [0.0, 3.0]}]
    runs = [{"seed": 1, "score": [0.0, 4.0]}, {"seed": 0, "score": [0.0, 1.5]}]
    np.testing.assert_allclose(_paired_differences(runs, base, "score"), [[0, 1], [0, 0.5]])


def test_pareto_labels_do_not_collide() -> None:
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting.plots import _figure
    from frontier_rft.reporting.ziprc_plots import _place_labels

    items = [(1.0, 1.0, f"β=0.0{i}", "#2ca02c") for i in range(4)]  # four coinciding points
    items += [(1.02, 1.0, "τ=0.5", "#1f77b4"), (0.98, 1.01, "thr=0.3", "#d62728")]
    with _figure(4.0, 3.0) as fig:
        ax = fig.subplots()
        ax.set(xlim=(0.5, 1.5), ylim=(0.5, 1.5))
        _place_labels(fig, ax, items)
        renderer = fig.canvas.get_renderer()
        boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert len(boxes) == len(items)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)


def _finished_run(run: Path, selector: str, score: float) -> str:
    """A frontier train run directory as it is once finished (what --compare reads)."""
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"config": {"selector": selector}}))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 0, "eval/mean_score": 0.1}) + "\n")
    (run / "eval.json").write_text(json.dumps({"selector": selector, "eval/mean_score": score}))
    record = {"reward": 0.0, "success": False, "failure": "format_error"}
    (run / "eval_records.jsonl").write_text(json.dumps(record) + "\n")
    return str(run)


def test_compared_runs_are_labelled_by_run_and_selector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from frontier_rft.cli.main import main
    from frontier_rft.reporting.runs import compare_runs, failure_taxonomy_table

    a = _finished_run(tmp_path / "bots-seed0", "bots", 0.25)
    b = _finished_run(tmp_path / "bots-seed1", "bots", 0.5)
    c = _finished_run(tmp_path / "other" / "bots-seed1", "bots", 0.75)  # same name as b
    d = _finished_run(tmp_path / "uniform", "uniform", 0.0)  # named after its selector
    table = compare_runs([a, b, d])
    assert "| bots-seed0 (bots) | 0.100 | 0.250 |" in table
    assert "| bots-seed1 (bots) | 0.100 | 0.500 |" in table
    assert "| uniform | 0.100 | 0.000 |" in table
    assert f"| {b} (bots) |" in compare_runs([b, c]) and f"| {c} (bots) |" in compare_runs([b, c])
    assert "| bots-seed0 (bots) | 1 |" in failure_taxonomy_table([a, b])
    assert main(["evaluate", "--compare", a, b]) == 0
    out = capsys.readouterr().out
    assert "| bots-seed0 (bots) |" in out and "| bots-seed1 (bots) |" in out
    assert "| bots | 2 | 0.100 ± 0.000 | 0.375 ± 0.177 |" in out  # seeds still grouped


def _captured(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    """Figures handed to `module.name` (a function taking the figure first), kept drawn."""
    figures: list[Any] = []
    original = getattr(module, name)

    def keep(fig: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(fig, *args, **kwargs)
        fig.canvas.draw()
        figures.append(fig)
        return out

    monkeypatch.setattr(module, name, keep)
    return figures


def _inside(box: Any, frame: Any) -> bool:
    return bool(
        box.x0 >= frame.x0 - 1
        and box.y0 >= frame.y0 - 1
        and box.x1 <= frame.x1 + 1
        and box.y1 <= frame.y1 + 1
    )


def test_report_figures_keep_titles_bands_and_labels_readable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long figure title wraps before the outside legend; the baseline has its seed band
    like every label (the title says 'band min–max'); a one-row heatmap's colour-bar label
    fits in the figure."""
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting import plots

    figures = _captured(monkeypatch, plots, "_render")
    results = make_results(steps=60)
    styles = plots.label_styles(results)
    plots.effective_task_ratio(results, styles)
    plots.learning_curves(results, styles)
    two = make_results(steps=12, labels=["uniform", "bots"])
    plots.success_heatmaps(two, plots.label_styles(two))
    etr, curves, heatmap = figures

    renderer = etr.canvas.get_renderer()
    title = etr._suptitle.get_window_extent(renderer)
    assert "\n" in etr._suptitle.get_text()  # wrapped
    assert not title.overlaps(etr.legends[0].get_window_extent(renderer))

    score = curves.axes[0]
    assert len(score.collections) == len(LABELS)  # one min–max band per label, uniform too

    renderer = heatmap.canvas.get_renderer()
    bar = heatmap.axes[-1]  # the colour bar
    label = bar.yaxis.label.get_window_extent(renderer)
    assert _inside(label, heatmap.bbox)


def test_every_report_figure_says_it_is_simulated_and_names_the_learner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A PNG shared on its own must say it is not real RL (the HTML page around it does)."""
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting import plots

    figures = _captured(monkeypatch, plots, "_render")
    results = make_results(steps=30)
    made = plots.make_plots(results)
    assert len(figures) == len(made) >= 3
    name = results["scenario"]["name"]
    for fig in figures:
        title = fig._suptitle.get_text().replace("\n", " ")
        assert title.startswith(f"Simulated, not real RL (learner {name!r}): "), title


def _metrics_run(root: Path, name: str, steps: int, *, metis: bool = False) -> Path:
    run = root / name
    run.mkdir(parents=True)
    rows: list[dict[str, Any]] = [{"step": 0, "eval/pass@1": 0.1}]
    for step in range(1, steps + 1):
        row: dict[str, Any] = {
            "step": step,
            "train/reward_mean": 0.2 + 0.001 * step,
            "train/effective_task_ratio": 0.5,
        }
        if metis:
            row.update({
                "metis/prediction_mean": 0.2, "metis/prediction_std": 0.08,
                "metis/selected_prediction_mean": 0.25, "metis/judge_failure_rate": 0.1,
                "metis/judge_reward_mean": 0.6,
            })  # fmt: skip
        rows.append(row)
    rows.append({"step": steps, "eval/pass@1": 0.2})
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_training_run_figures_state_smoothing_and_bands_and_keep_legends_off_curves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    from contextlib import contextmanager

    from frontier_rft.reporting import training_plots
    from frontier_rft.reporting.colors import SELECTOR_COLORS

    figures: list[Any] = []
    original = training_plots._figure

    @contextmanager
    def keep(*args: Any) -> Any:
        with original(*args) as fig:
            yield fig
            fig.canvas.draw()
            figures.append(fig)

    monkeypatch.setattr(training_plots, "_figure", keep)
    runs = {
        "uniform": [_metrics_run(tmp_path, f"u{s}", 40) for s in range(2)],
        "bots": [_metrics_run(tmp_path, "b0", 40)],
    }
    training_plots.plot_training_runs(runs, tmp_path / "runs.png")
    title = figures[0]._suptitle.get_text().replace("\n", " ")
    assert "moving average over 5 steps" in title  # 40 steps: a 5-step window
    assert "band min–max (1 seed: no band)" in title and "1 seed: no error bar" in title

    judge = _metrics_run(tmp_path / "metis", "seed0", 40, metis=True)
    training_plots.plot_judge_metrics(judge, tmp_path / "judge.png")
    fig = figures[1]
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    assert not any(legend.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    assert "moving average over 5 steps" in fig._suptitle.get_text()
    colours = {line.get_color() for ax in fig.axes for line in ax.get_lines()}
    others = set(SELECTOR_COLORS.values()) - {SELECTOR_COLORS["metis"], SELECTOR_COLORS["uniform"]}
    assert not colours & others  # no other selector's colour in a METIS figure
    top = fig.axes[2].get_ylim()[1]
    assert top >= 0.28  # the mean + std band (0.28) is not cut off


def _bench_runs(labels: list[str], seeds: int = 2, steps: int = 40) -> dict[str, Any]:
    train = [
        {
            "train/effective_task_ratio": 0.5,
            "train/success_rate": 0.3,
            "train/selected_level_mean": 1.0,
            "train/mean_abs_advantage": 0.4,
            "metis/prediction_mean": 0.2,
        }
        for _ in range(steps)
    ]
    run = {"train": train, "eval_steps": [0, 20, 40], "pass1": [0.1, 0.2, 0.3]}
    return {label: {s: run for s in range(seeds)} for label in labels}


def test_real_rl_effects_show_only_the_comparisons_that_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting import real_rl_plots

    figures = _captured(monkeypatch, real_rl_plots, "_save")
    real_rl_plots.plot_effects(_bench_runs(["uniform", "sec", "frontier"]), tmp_path / "e.png")
    fig = figures[0]
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_visible()]
    assert len(titles) == 2  # SEC and frontier: no panel of uniform alone
    assert titles[0].startswith("SEC") and "0.05" not in titles[1] and "0.10" in titles[1]
    assert "moving average over 5 steps" in fig._suptitle.get_text()

    full = ["uniform", "bots", "bots-rho0", "metis", "metis-lam1", "frontier-r0.05", "frontier"]
    real_rl_plots.plot_effects(_bench_runs(full), tmp_path / "e2.png")
    titles = [ax.get_title(loc="left") for ax in figures[1].axes if ax.get_visible()]
    assert any("rho = 0.1 vs 0" in t for t in titles) and any("lam 0.01 vs 1" in t for t in titles)
    assert any("0.05 / 0.10:" in t for t in titles)


def test_real_rl_ttb_shows_values_beyond_twice_uniform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting import real_rl_plots

    figures = _captured(monkeypatch, real_rl_plots, "_save")
    cell = {"values": [1.0, 1.0], "mean": 1.0, "ci": [1.0, 1.0]}
    slow = {"values": [2.6, None], "mean": None, "ci": None}
    summary = {"labels": {"uniform": {"ttb100": cell, "seeds": [0, 1]}, "pcl": {"ttb100": slow}}}
    real_rl_plots.plot_ttb(summary, ["uniform", "pcl"], tmp_path / "ttb.png")
    ax = figures[0].axes[0]
    assert ax.get_xlim()[1] > 2.6
    assert "drawn at 3" in ax.get_xlabel()
    xs = [x for line in ax.get_lines() for x in np.atleast_1d(line.get_xdata())]
    assert 2.6 in xs and 3.0 in xs  # the slow seed where it is, 'never' at the edge


@pytest.mark.parametrize("panels", [1, 2, 3, 8])
def test_real_rl_curves_title_stays_inside_the_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, panels: int
) -> None:
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting import real_rl_plots

    figures = _captured(monkeypatch, real_rl_plots, "_save")
    labels = [
        "uniform",
        *["dots", "bots", "sec", "frontier", "pcl", "metis", "adcl", "mopps"][:panels],
    ]
    real_rl_plots.plot_learning_curves(_bench_runs(labels), labels, tmp_path / "c.png")
    fig = figures[0]
    renderer = fig.canvas.get_renderer()
    assert _inside(fig._suptitle.get_window_extent(renderer), fig.bbox)
