"""The `frontier` command line: simulate/compare/demo write results and a report."""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from frontier_rft import SELECTORS
from frontier_rft.cli.main import main
from frontier_rft.cli.selectors import describe


def test_selectors_lists_every_registered_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selectors"]) == 0
    out = capsys.readouterr().out
    for name in SELECTORS:
        assert f"{name}: " in out


def test_selectors_name_shows_fields_defaults_and_docs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["selectors", "bots"]) == 0
    out = capsys.readouterr().out
    assert "lam = 0.1" in out and "rho = 0.1" in out
    assert "reference_pass_rates" in out  # what richer metadata it can take


def test_unknown_selector_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selectors", "botz"]) == 2
    assert "unknown selector 'botz'" in capsys.readouterr().err


def test_selectors_print_whole_summaries_and_point_dapo_to_its_wrapper(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["selectors"]) == 0
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if line.split(":")[0] in SELECTORS]
    assert len(heads) == len(SELECTORS)
    for line in heads:  # a whole first paragraph: its sentence ends
        assert line.rstrip().endswith((".", ")")), line
    assert "with a probability that grows with the streak." in out  # greso's, two lines long
    assert "DynamicSampling(selector" in out
    assert main(["selectors", "dapo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DynamicSampling(make_selector('uniform'" in err[0]
    assert "docs/selectors/dapo.md" in err[0] and "unknown selector" not in err[0]


def test_every_selector_says_what_it_needs_and_the_claims_hold() -> None:
    """`frontier selectors` prints, per selector, the evidence its class declares it derives
    from prompts alone (`cls.needs`); building each from prompts only must report exactly
    those evidence keys."""
    import warnings

    from frontier_rft import TaskPool, make_selector

    prompts = [f"task {i}: add {i} and {i % 7} then multiply by {i % 3}" for i in range(60)]
    pool = TaskPool(num_tasks=len(prompts), prompts=prompts)
    for name, cls in SELECTORS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sel = make_selector(name, pool, seed=0, **cls.default_collaborators())
        sel.select(4)
        evidence = {k for k in sel.metrics() if k.startswith("evidence/")}
        assert evidence == set(cls.needs.evidence), name
        assert cls.needs.from_prompts in describe(name, full=False), name


def _all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _all_parsers(sub)
    return found


def test_every_option_help_states_its_default() -> None:
    from frontier_rft.cli.common import HelpFormatter
    from frontier_rft.cli.main import build_parser

    formatter = HelpFormatter("frontier")
    missing = []
    for parser in _all_parsers(build_parser()):
        for action in parser._actions:
            if not action.option_strings or action.required:
                continue
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            text = formatter._get_help_string(action) or ""
            if "(default" not in text and action.dest != "debug":
                missing.append(f"{parser.prog} {action.option_strings[0]}")
    assert missing == []


def test_help_shows_the_defaults_that_apply() -> None:
    """demo writes to runs/demo (not simulate's runs/<scenario>-...); a help text that says
    'defaults' in passing still gets its own default appended."""
    from frontier_rft.cli.main import build_parser

    parsers = {p.prog.split()[-1]: p for p in _all_parsers(build_parser())}
    assert "(default: runs/demo)" in " ".join(parsers["demo"].format_help().split())
    assert "(default: runs/<scenario>-...)" in " ".join(parsers["simulate"].format_help().split())
    sft_help = " ".join(parsers["sft"].format_help().split())
    assert "(0 = skip) (default: 0)" in sft_help


def test_the_command_line_starts_without_torch_or_matplotlib() -> None:
    code = (
        "import sys; from frontier_rft.cli.main import build_parser; build_parser(); "
        "print(sorted(m for m in ('torch', 'transformers', 'matplotlib', 'trl') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_config_file_sets_flags_and_the_command_line_wins(tmp_path: Path) -> None:
    config = tmp_path / "sim.yaml"
    config.write_text(
        "selector: bots\nsteps: 3\nseeds: 1\nbatch: 4\nrollouts: 2\njobs: 1\n"
        "set: {lam: 0.2}\nscenario: multidomain\n"
    )
    out = tmp_path / "run"
    assert main(["simulate", "--config", str(config), "--steps", "4", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["steps"] == 4  # the flag wins over the file's 3
    assert results["scenario"]["name"] == "multidomain"
    assert {r["label"]: r["overrides"] for r in results["runs"]}["bots"] == {"lam": 0.2}


TINY = ["--steps", "6", "--seeds", "2", "--batch", "8", "--rollouts", "4", "--jobs", "1"]


def test_compare_writes_results_records_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp"
    args = ["compare", "--scenario", "multidomain", "--selectors", "bots,sec,metis"]
    assert main([*args, *TINY, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == ["uniform", "bots", "sec", "metis"]
    assert len(results["runs"]) == 8 and results["settings"]["seeds"] == [0, 1]
    with open(out / "records.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8 * 6 and {"score", "etr", "label", "seed", "step"} <= set(rows[0])
    assert (out / "report.html").stat().st_size > 1000
    assert "bots" in printed and "sec" in printed


def test_simulate_sweep_labels_each_value(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = ["simulate", "--selector", "bots", "--sweep", "rho=0,0.1", "--set", "lam=0.2"]
    assert main([*args, *TINY, "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == ["uniform", "bots[rho=0]", "bots[rho=0.1]"]
    overrides = {r["label"]: r["overrides"] for r in results["runs"]}
    assert overrides["bots[rho=0]"] == {"lam": 0.2, "rho": 0}


def test_bad_set_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--selector", "bots", *TINY, "--out", str(tmp_path)]
    assert main([*argv, "--set", "lam"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main([*argv, "--set", "lamda=1"]) == 2
    assert "did you mean 'lam'" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()  # refused before any run


def test_demo_console_entry_point_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "frontier_rft.cli.main", "demo", *TINY, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "prioritized" in done.stdout and (tmp_path / "report.html").exists()
    # It ends by saying what to use, on real-RL evidence, and its report says it too.
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("What to use: selector uniform") and "not this simulator" in last
    page = (tmp_path / "report.html").read_text()
    assert '<p class="lede" id="advice">What to use: selector uniform' in page


def test_without_matplotlib_the_table_prints_and_the_fix_is_said_once(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from frontier_rft.cli.main import main\n"
        f"sys.exit(main(['simulate', '--selector', 'dots', *{TINY!r}, '--out', {str(tmp_path)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "| dots" in done.stdout
    assert "No report:" in done.stderr and done.stderr.count("frontier-rft[plot]") == 1
    assert (tmp_path / "results.json").exists() and not (tmp_path / "report.html").exists()


def test_set_values_parse_json_and_pythons_booleans() -> None:
    from frontier_rft.cli.common import parse_value

    assert parse_value("0.1") == 0.1 and parse_value("[1, 2]") == [1, 2]
    assert parse_value("true") is True and parse_value("True") is True
    assert parse_value("False") is False and parse_value("grpo") == "grpo"
