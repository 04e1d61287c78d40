"""What the benchmark scripts share (frontier_rft.bench.scripts): flags, command, files, cells."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from frontier_rft.bench.scripts import (
    command_line,
    file_stem,
    int_at_least,
    out_and_jobs,
    positive_ints,
    ttb_cell,
    write_outputs,
)


def test_ttb_cells_say_how_many_seeds_reached() -> None:
    assert ttb_cell({"mean": 0.625, "std": 0.0312, "reached": 5, "of": 5}) == "0.62 ± 0.03"
    assert ttb_cell({"mean": 0.9, "std": 0.05, "reached": 3, "of": 5}) == "0.90 ± 0.05 (3/5)"
    assert ttb_cell({"mean": 1.1, "std": 0.0, "reached": 1, "of": 5}) == "1.10 (1/5)"
    assert ttb_cell({"mean": None, "std": None, "reached": 0, "of": 5}) == "- (0/5)"


def test_argparse_types_refuse_a_bad_value_with_the_form_expected() -> None:
    assert positive_ints("16,8,8") == (8, 16)  # a grid: sorted, each once
    assert int_at_least(0)("0") == 0 and int_at_least(1)("3") == 3
    assert file_stem("step_cost_cpu.v2") == "step_cost_cpu.v2"
    bad = [
        (positive_ints, "0,8", "positive ints"),
        (positive_ints, "", "positive ints"),
        (positive_ints, "8,x", "positive ints"),
        (int_at_least(1), "0", ">= 1"),
        (int_at_least(0), "1.5", ">= 0"),
        (file_stem, "../x", "file stem"),
        (file_stem, "-x", "file stem"),
    ]
    for parse, text, said in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=said):
            parse(text)


def test_flags_and_the_command_that_made_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["benchmarks/x.py", "--out", "a dir", "--jobs", "3"]
    monkeypatch.setattr(sys, "argv", argv)
    args, command = out_and_jobs("First line.\n\nMore.", jobs=1)
    assert (args.out, args.jobs) == ("a dir", 3)
    assert command == command_line() == "python benchmarks/x.py --out 'a dir' --jobs 3"
    monkeypatch.setattr(sys, "argv", ["benchmarks/x.py"])
    args, _ = out_and_jobs("First line.", jobs=1)
    assert (args.out, args.jobs) == ("benchmarks/results", 1)


def test_outputs_are_a_json_and_a_markdown_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_outputs(tmp_path / "new", "stem", {"command": "python x.py", "rows": [1.5]}, ["# T", "x"])
    assert json.loads((tmp_path / "new" / "stem.json").read_text()) == {
        "command": "python x.py",
        "rows": [1.5],
    }
    assert (tmp_path / "new" / "stem.json").read_text().endswith("]\n}\n")
    assert (tmp_path / "new" / "stem.md").read_text() == "# T\nx\n"
    assert capsys.readouterr().out == "# T\nx\n"


def test_cached_runs_are_keyed_by_what_makes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun reads the cache; another entry list (or seeds) never reads its runs."""
    import tempfile

    from frontier_rft.bench.simulation import benchmark as simulated
    from frontier_rft.simulation.runner import Entry, sampler_spec

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    calls: list[list[str]] = []

    def fake(scenario, entries, seeds, *args):  # type: ignore[no-untyped-def]
        calls.append([e.label for e in entries])
        return {"runs": [{"label": e.label, "seed": s} for e in entries for s in seeds]}

    monkeypatch.setattr(simulated, "run_benchmark", fake)
    one = (Entry("uniform", "uniform"), Entry("greso", "greso"))
    first = simulated.cached_runs("t", "hard", one, [0, 1], 10, 4, 8, 1)
    assert simulated.cached_runs("t", "hard", one, [0, 1], 10, 4, 8, 1) == first
    assert len(calls) == 1
    two = (*one, Entry("greso+alloc", "greso", sampler=sampler_spec(allocation={})))
    assert len(simulated.cached_runs("t", "hard", two, [0, 1], 10, 4, 8, 1)) == 6
    simulated.cached_runs("t", "hard", one, [0, 2], 10, 4, 8, 1)
    assert len(calls) == 3
