"""benchmarks/step_cost.py: a tiny grid's curve (JSON, markdown ratios, figure) and its flags."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import benchmark_script


@pytest.fixture(scope="module")
def script() -> Iterator[Any]:
    with benchmark_script("step_cost") as module:
        yield module


def test_a_tiny_grid_writes_every_cell_and_ratios_to_the_largest_rows(
    script: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--rows", "4,2", "--lengths", "3", "--repeats", "1", "--warmup", "0"]
    assert script.main([*argv, "--out", str(tmp_path), "--plot"]) == 0
    capsys.readouterr()
    out = json.loads((tmp_path / "step_cost_cpu.json").read_text())
    assert out["grid"] == {"rows": [2, 4], "lengths": [3]}  # sorted: the last is the reference
    assert (out["device"], out["repeats"], out["warmup"], out["complete"]) == ("cpu", 1, 0, True)
    assert "tiny Llama" in out["model"] and out["torch"] and out["device_name"]
    assert "policy_loss" in out["update"] and "AdamW" in out["update"]
    assert [(c["rows"], c["length"]) for c in out["cells"]] == [(2, 3), (4, 3)]
    for cell in out["cells"]:
        for part in ("generate_s", "update_s"):
            assert cell[part]["median"] > 0 and cell[part]["min"] > 0
            assert len(cell[part]["all"]) == 1
    table = [
        line.strip("|").split("|")
        for line in (tmp_path / "step_cost_cpu.md").read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| rows")
    ]
    assert [row[0].strip() for row in table] == ["2", "4"]
    assert [row[i].strip() for row in table[1:] for i in (2, 4, 6)] == ["1.00"] * 3
    assert (tmp_path / "step_cost_cpu.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--rows", "0,8"], "--rows must be positive"),
        (["--lengths", "24,x"], "comma-separated ints"),
        (["--repeats", "0"], "--repeats must be >= 1"),
        (["--warmup", "-1"], "--warmup must be >= 0"),
        (["--device", "gpu"], "--device must be"),
        (["--model", "no/such/dir"], "no such directory"),
        (["--name", "../x"], "--name must be a file stem"),
    ],
)
def test_a_bad_flag_ends_in_one_error_line(
    script: Any, flags: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        script.main(flags)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and says in errors[0], err
    assert "Traceback" not in err and len(err.splitlines()) <= 2  # the error and --help's hint
