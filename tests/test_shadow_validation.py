"""benchmarks/shadow_validation.py: the committed comparison is rebuilt from the ledger."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "results" / "shadow_validation.json"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "shadow_validation", ROOT / "benchmarks" / "shadow_validation.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_comparison_is_rebuilt_from_the_ledger(tmp_path: Path) -> None:
    committed = json.loads(COMMITTED.read_text())
    out = tmp_path / "sv"
    _script().main(
        ["--ledger", str(ROOT / committed["ledger"]), "--seeds", "0-4", "--out", str(out)]
    )
    rebuilt = json.loads(out.with_suffix(".json").read_text())
    assert rebuilt["per_seed"] == committed["per_seed"]
    assert rebuilt["rules"] == committed["rules"]
    assert committed["same_as_uniform"] == len(committed["seeds"])  # shadows change nothing
    greso = committed["rules"]["greso"]
    assert abs(greso["rollouts_error"]["mean"]) < 0.02  # the forecast the docs quote


def test_a_missing_record_is_one_line_naming_the_entry_and_seed(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"holds 0 records of seed 0.*frontier bench-rl"):
        _script().main(["--ledger", str(tmp_path), "--seeds", "0-1", "--out", str(tmp_path / "x")])
